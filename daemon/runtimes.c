/* runtimes.c - the runtimes flamed walks, and calls to each (see runtimes.h). */
#include <stdio.h>
#include <string.h>

#include "python/pyruntime.h"
#include "runtimes.h"

const struct runtime_kind runtime_kinds[RUNTIMES] = {
	{ &python_runtime, BPF_FEATURE_PYTHON },
};

_Static_assert(sizeof(struct python_stats) <= RUNTIME_STATS_MAX, "RUNTIME_STATS_MAX holds Python's counters");

int runtimes_start(struct runtimes *r, unsigned i, const struct runtime_config *c)
{
	int err = runtime_kinds[i].ops->start(c, &r->rt[i]);

	if (err) {
		r->rt[i] = NULL;
		fprintf(stderr, "flamed: cannot start the %s frame walker: %s\n", runtime_kinds[i].ops->name,
			strerror(-err));
	}
	return err;
}

void runtimes_process(struct runtimes *r, uint32_t pid, uint64_t token, const struct procmap *maps, size_t n)
{
	for (unsigned i = 0; i < RUNTIMES; i++)
		if (r->rt[i])
			runtime_kinds[i].ops->process(r->rt[i], pid, token, maps, n);
}

void runtimes_reported(struct runtimes *r, uint32_t pid, uint64_t addr)
{
	const void *proc;
	int i = runtimes_find(r, pid, &proc);

	if (i >= 0)
		runtime_kinds[i].ops->reported(r->rt[i], pid, addr);
}

int runtimes_retry(struct runtimes *r)
{
	int next = -1;

	for (unsigned i = 0; i < RUNTIMES; i++) {
		int t = r->rt[i] ? runtime_kinds[i].ops->retry(r->rt[i]) : -1;

		if (t >= 0 && (next < 0 || t < next))
			next = t;
	}
	return next;
}

void runtimes_flush_begin(struct runtimes *r)
{
	for (unsigned i = 0; i < RUNTIMES; i++)
		if (r->rt[i])
			runtime_kinds[i].ops->flush_begin(r->rt[i]);
}

void runtimes_flush_end(struct runtimes *r)
{
	for (unsigned i = 0; i < RUNTIMES; i++)
		if (r->rt[i])
			runtime_kinds[i].ops->flush_end(r->rt[i]);
}

int runtimes_find(const struct runtimes *r, uint32_t pid, const void **proc)
{
	for (unsigned i = 0; i < RUNTIMES; i++)
		if (r->rt[i] && (*proc = runtime_kinds[i].ops->find(r->rt[i], pid)))
			return (int)i;
	*proc = NULL;
	return -1;
}

void runtimes_get_stats(const struct runtimes *r, unsigned i, void *out)
{
	memset(out, 0, RUNTIME_STATS_MAX);
	if (r->rt[i])
		runtime_kinds[i].ops->get_stats(r->rt[i], out);
}

void runtimes_free(struct runtimes *r)
{
	for (unsigned i = 0; i < RUNTIMES; i++) {
		if (r->rt[i])
			runtime_kinds[i].ops->free(r->rt[i]);
		r->rt[i] = NULL;
	}
}
