/* unwqueue.c - the unwinder's requests and the thread that does them (see unwinder.h): a fast queue of
 * processes given the tables built so far, a slow one of processes waiting for a table's build. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "unwind/unwinder.h"
#include "unwind/unwinder_impl.h"

/* Puts pid's request in r, asked since then, or updates the one waiting there, taking *maps over (NULL
 * then; a request keeps the mappings it has when given none). Returns false when r is full (*maps left
 * to the caller). */
static bool ring_put(struct ring *r, uint32_t pid, uint64_t token, uint64_t cost, double since,
		     struct procmap **maps, size_t nmaps, double maps_at)
{
	struct request *q = NULL;

	for (size_t i = 0; i < r->count && !q; i++)
		if (r->e[(r->head + i) % UNWINDER_QUEUE].pid == pid)
			q = &r->e[(r->head + i) % UNWINDER_QUEUE];
	if (!q) {
		if (r->count == UNWINDER_QUEUE)
			return false;
		q = &r->e[(r->head + r->count++) % UNWINDER_QUEUE];
		*q = (struct request){ .pid = pid, .since = since };
	}
	if (token)
		q->token = token;
	q->cost = cost;
	q->maps_at = 0; /* a request without mappings asks for a read: those it has are older */
	if (maps && *maps) {
		procmaps_free(q->maps, q->nmaps);
		q->maps = *maps;
		q->nmaps = nmaps;
		q->maps_at = maps_at;
		*maps = NULL;
	}
	return true;
}

static bool ring_has(const struct ring *r, uint32_t pid)
{
	for (size_t i = 0; i < r->count; i++)
		if (r->e[(r->head + i) % UNWINDER_QUEUE].pid == pid)
			return true;
	return false;
}

/* Takes the first request of r, or with cheapest, the one of least cost (the first of those), unless
 * one has waited SLOW_AGE_S: then the one waiting longest (a stream of new processes with small
 * binaries must not keep a big one from being built). */
static struct request ring_take(struct ring *r, bool cheapest)
{
	struct request q, *best = &r->e[r->head], *oldest = best;

	for (size_t i = 1; cheapest && i < r->count; i++) {
		struct request *c = &r->e[(r->head + i) % UNWINDER_QUEUE];

		if (c->cost < best->cost)
			best = c;
		if (c->since < oldest->since)
			oldest = c;
	}
	if (cheapest && unwinder_now() - oldest->since >= SLOW_AGE_S)
		best = oldest;
	q = *best;
	*best = r->e[r->head]; /* the head's request takes its place */
	r->head = (r->head + 1) % UNWINDER_QUEUE;
	r->count--;
	return q;
}

/* Asks for pid's JIT code to be read again (unwinder_jit_changed found its list changed). */
static void unwinder_request_jit(struct unwinder *u, uint32_t pid)
{
	unwinder_request(u, pid, 0);
}

/* The thread. A new process first gets the tables already built (fast), so that one big binary being
 * built never holds up the processes whose binaries are known; the binaries it still lacks are built
 * one per turn of the slow queue, between fast requests, the smallest first (shortest job first:
 * a library just loaded is not kept waiting behind libLLVM), but a process waiting SLOW_AGE_S first of
 * all. Sweeps come when both queues are empty. */
static void *worker(void *arg)
{
	struct unwinder *u = arg;
	struct budget b;
	struct request rq;
	bool fast;

	pthread_mutex_lock(&u->mu);
	for (;;) {
		while (!u->stop && !u->fast.count && !u->slow.count && !u->sweep_wanted)
			pthread_cond_wait(&u->wake, &u->mu);
		if (u->stop)
			break;
		if (!u->fast.count && !u->slow.count) {
			u->sweep_wanted = false;
			pthread_mutex_unlock(&u->mu);
			unwinder_sweep(u);
			unwinder_jit_changed(u, unwinder_request_jit);
			pthread_mutex_lock(&u->mu);
			continue;
		}
		/* Fast first, but a stream of new processes (a shell loop) must not starve the builds. */
		fast = u->fast.count > 0 && (!u->slow.count || u->fast_streak < FAST_STREAK);
		u->fast_streak = fast ? u->fast_streak + 1 : 0;
		rq = fast ? ring_take(&u->fast, false) : ring_take(&u->slow, true);
		u->busy = true;
		pthread_mutex_unlock(&u->mu);
		u->busy_pid = rq.pid;
		b = (struct budget){ .builds = fast ? 0 : 1, .max_size = fast ? 0 : rq.cost };
		int err = unwinder_add_process(u, rq.pid, rq.token, &b, rq.maps, rq.nmaps,
					       rq.maps_at && unwinder_now() - rq.maps_at < MAPS_CURRENT_S);
		pthread_mutex_lock(&u->mu);
		/* Again for the binaries left, unless a build failed (no room for another binary, or no
		 * memory): the next would fail too, turn after turn, its samples waiting all along. */
		if (!err && b.missing && !b.failed && !ring_put(&u->slow, rq.pid, 0, b.smallest, rq.since, &rq.maps, rq.nmaps, 0))
			u->dropped++;
		procmaps_free(rq.maps, rq.nmaps); /* unless the slow queue took it over */
		u->busy = false;
	}
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

void unwinder_request(struct unwinder *u, uint32_t pid, uint64_t token)
{
	unwinder_request_maps(u, pid, token, NULL, 0, false);
}

void unwinder_request_maps(struct unwinder *u, uint32_t pid, uint64_t token, const struct procmap *maps, size_t n,
			   bool current)
{
	struct procmap *copy = NULL;
	bool queued;

	if (n > UNWIND_MAX_MAPPINGS)
		n = UNWIND_MAX_MAPPINGS;
	if (maps && n)
		procmaps_copy(maps, n, &copy); /* none (out of memory): the live read alone */
	pthread_mutex_lock(&u->mu);
	queued = ring_put(&u->fast, pid, token, 0, unwinder_now(), &copy, n, copy && current ? unwinder_now() : 0);
	if (!queued)
		u->dropped++;
	pthread_mutex_unlock(&u->mu);
	/* After the unlock: woken with the mutex held, the thread would wait for it at once. */
	if (queued)
		pthread_cond_signal(&u->wake);
	procmaps_free(copy, n);
}

bool unwinder_pending(struct unwinder *u, uint32_t pid)
{
	bool pending;

	pthread_mutex_lock(&u->mu);
	pending = (u->busy && u->busy_pid == pid) || ring_has(&u->fast, pid) || ring_has(&u->slow, pid);
	pthread_mutex_unlock(&u->mu);
	return pending;
}

void unwinder_request_sweep(struct unwinder *u)
{
	pthread_mutex_lock(&u->mu);
	u->sweep_wanted = true;
	pthread_cond_signal(&u->wake);
	pthread_mutex_unlock(&u->mu);
}

int unwinder_new(const struct unwinder_opts *opts, struct unwinder **out)
{
	struct unwinder *u;
	int err = unwinder_state_new(opts, &u);

	if (err)
		return err;
	err = pthread_create(&u->thread, NULL, worker, u);
	if (err) {
		unwinder_state_free(u);
		return -err;
	}
	*out = u;
	return 0;
}

void unwinder_get_stats(struct unwinder *u, struct unwinder_stats *out)
{
	pthread_mutex_lock(&u->mu);
	*out = u->published;
	out->requests_pending = u->fast.count + u->slow.count + u->sweep_wanted + u->busy;
	pthread_mutex_unlock(&u->mu);
}

static void ring_free(struct ring *r)
{
	for (size_t i = 0; i < r->count; i++)
		procmaps_free(r->e[(r->head + i) % UNWINDER_QUEUE].maps, r->e[(r->head + i) % UNWINDER_QUEUE].nmaps);
	r->count = 0;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	pthread_mutex_lock(&u->mu);
	u->stop = true;
	pthread_cond_signal(&u->wake);
	pthread_mutex_unlock(&u->mu);
	pthread_join(u->thread, NULL);
	ring_free(&u->fast);
	ring_free(&u->slow);
	unwinder_state_free(u);
}
