/* handlers.c - one handler per endpoint: the dashboard, /healthz, and the queries (processes,
 * services, threads, profile, top, timeline, diff, /debug/pprof/profile) run against a store opened per request. */
#include <errno.h>
#include <malloc.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http/http_impl.h"

#define DEFAULT_PPROF_S 30
#define TIMELINE_POINTS 200          /* the default step cuts the window into about this many */

static void set_format(struct request *rq, enum query_format f)
{
	rq->type = query_content_type(f);
	if (f == QUERY_PPROF)
		rq->disposition = "attachment; filename=\"profile.pb.gz\"";
}

/* Takes one of the QUERIES_MAX turns to have the database open, waiting for one when all are taken.
 * false when the server stops meanwhile. */
static bool take_turn(struct http *h)
{
	bool waited = false, ok;

	pthread_mutex_lock(&h->lock);
	while (h->queries >= QUERIES_MAX && !h->stopping) {
		waited = true;
		pthread_cond_wait(&h->query_done, &h->lock);
	}
	ok = !h->stopping;
	if (ok)
		h->queries++;
	pthread_mutex_unlock(&h->lock);
	if (waited)
		atomic_fetch_add_explicit(&h->queries_waited, 1, memory_order_relaxed);
	return ok;
}

/* Gives the turn up; the last query out hands the memory the queries freed back to the system (a
 * query's page cache and answer are megabytes, which malloc would otherwise keep). */
static void give_turn(struct http *h)
{
	bool last;

	pthread_mutex_lock(&h->lock);
	last = !--h->queries;
	pthread_cond_signal(&h->query_done);
	pthread_mutex_unlock(&h->lock);
	if (last)
		malloc_trim(0);
}

/* Opens the store for one request (in its turn: take_turn), after storing what was sampled up to now when
 * it asks (flush=1); NULL (and the error reply) when it cannot. */
static struct store *open_store(struct http *h, struct request *rq)
{
	struct store *st = NULL;
	bool flush = false;
	int err;

	if (http_arg_bool(rq, P_FLUSH, &flush) < 0)
		return NULL;
	if (flush && h->flush_now && (err = h->flush_now(h->ctx))) {
		if (err == -ECANCELED)
			http_fail(rq, 503, "flamed is shutting down");
		else
			http_fail(rq, 500, "flush=1: cannot store what was sampled: %s", strerror(-err));
		return NULL;
	}
	if (!take_turn(h)) {
		http_fail(rq, 503, "flamed is shutting down");
		return NULL;
	}
	err = store_open(h->db_path, STORE_READ_ONLY, &st);
	if (!err)
		store_set_namer(st, h->namer);
	else
		give_turn(h);

	if (err == -ENOENT)
		http_fail(rq, 503, "no database yet: flamed creates it at its first flush; try again shortly");
	else if (err == -EBUSY)
		http_fail(rq, 503, "the database is busy: try again shortly");
	else if (err)
		http_fail(rq, 500, "cannot open the database: %s", strerror(-err));
	return err ? NULL : st;
}

/* Turns a query's result into the error reply when it failed, closes the store and gives its turn up. */
static void end_query(struct http *h, struct request *rq, struct store *st, int err)
{
	if (err == -EINVAL && !rq->body.full) /* the filter, as the store checked it */
		http_fail(rq, 400, "%s", store_errmsg(st));
	else if (err && !rq->body.full)
		http_fail(rq, err == -EBUSY ? 503 : 500, "query failed: %s (%s)", store_errmsg(st),
		     strerror(err < 0 ? -err : EIO));
	store_close(st);
	give_turn(h);
}

/* The dashboard, embedded by dashboard.S. */
extern const char flamed_dashboard_html[], flamed_dashboard_html_end[];

/* The dashboard page: one self-contained document that talks to this API, nothing else. */
void http_handle_dashboard(struct http *h, struct request *rq)
{
	(void)h;
	rq->type = "text/html; charset=utf-8";
	rq->csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
		  "connect-src 'self'; img-src 'self' data: blob:; frame-src 'self'; base-uri 'none'; "
		  "form-action 'none'";
	fwrite(flamed_dashboard_html, 1, (size_t)(flamed_dashboard_html_end - flamed_dashboard_html), rq->out);
}

void http_handle_healthz(struct http *h, struct request *rq)
{
	(void)h;
	rq->type = "text/plain; charset=utf-8";
	fputs("ok\n", rq->out);
}

/* A listing of the window (what: its name in errors) as JSON, text or TSV (format=). */
static void listing(struct http *h, struct request *rq, const char *what,
		    int (*query)(struct store *, const struct store_filter *, bool json, bool tty, FILE *))
{
	struct store_filter f;
	struct store *st;
	int table;

	if (http_arg_filter(h, rq, &f) < 0 || http_arg_table(rq, &table) < 0)
		return;
	if (f.pid >= 0 && !f.children) {
		http_fail(rq, 400, "pid: %s takes a pid with children=1 (the process and its descendants)", what);
		return;
	}
	if (!(st = open_store(h, rq)))
		return;
	rq->type = table ? "text/plain; charset=utf-8" : "application/json";
	end_query(h, rq, st, query(st, &f, table == 0, table == 1, rq->out));
}

void http_handle_processes(struct http *h, struct request *rq)
{
	listing(h, rq, "processes", query_processes);
}

void http_handle_services(struct http *h, struct request *rq)
{
	listing(h, rq, "services", query_services);
}

void http_handle_threads(struct http *h, struct request *rq)
{
	struct store_filter f;
	struct store *st;

	if (http_arg_filter(h, rq, &f) < 0)
		return;
	if (f.pid < 0) {
		http_fail(rq, 400, "pid: required (the process whose threads to list)");
		return;
	}
	if (!(st = open_store(h, rq)))
		return;
	rq->type = "application/json";
	end_query(h, rq, st, query_threads(st, &f, rq->out));
}

void http_handle_profile(struct http *h, struct request *rq)
{
	struct store_filter f;
	struct query_graph g;
	enum query_format fmt;
	unsigned limit = 0;
	struct store *st;

	if (http_arg_filter(h, rq, &f) < 0 || http_arg_format(rq, QUERY_FOLDED, &fmt) < 0 || http_arg_graph(h, rq, &g) < 0 ||
	    http_arg_uint(rq, P_LIMIT, 0, 100000, &limit) < 0 || http_arg_bool(rq, P_LINES, &g.lines) < 0 ||
	    !(st = open_store(h, rq)))
		return;
	set_format(rq, fmt);
	end_query(h, rq, st, query_profile(st, &f, fmt, &g, limit, rq->out));
}

void http_handle_top(struct http *h, struct request *rq)
{
	struct store_filter f;
	unsigned limit = 0;
	struct store *st;
	bool lines = false;
	int table;

	if (http_arg_filter(h, rq, &f) < 0 || http_arg_uint(rq, P_LIMIT, 0, 100000, &limit) < 0 || http_arg_table(rq, &table) < 0 ||
	    http_arg_bool(rq, P_LINES, &lines) < 0 || !(st = open_store(h, rq)))
		return;
	rq->type = table ? "text/plain; charset=utf-8" : "application/json";
	end_query(h, rq, st, table ? query_top_text(st, &f, limit, table == 1, lines, rq->out) :
				  query_top_json(st, &f, limit, lines, rq->out));
}

void http_handle_timeline(struct http *h, struct request *rq)
{
	struct store_filter f;
	bool per_thread = false;
	int64_t step;
	struct store *st;

	if (http_arg_filter(h, rq, &f) < 0)
		return;
	step = (f.to - f.from + TIMELINE_POINTS - 1) / TIMELINE_POINTS;
	step = step < 1 ? 1 : step > 86400 ? 86400 : step;
	if (http_arg_int(rq, P_STEP, 1, 86400, &step) < 0 || http_arg_bool(rq, P_PER_THREAD, &per_thread) < 0 ||
	    !(st = open_store(h, rq)))
		return;
	rq->type = "application/json";
	end_query(h, rq, st, query_timeline(st, &f, step, per_thread, rq->out));
}

/* The base of a diff: base_pid (default pid) and, when base_unit or base_container is given, the
 * samples of that unit or container (else those of the window's filters) over [base_from, base_to). When neither bound is given the base window is the one just
 * before [from, to), of the same length; but when base_pid, base_unit or base_container names another
 * process, unit or container it is [from, to) itself, so the two are compared over the same time. One
 * bound given: the other follows at the same length. */
static int arg_base(struct request *rq, const struct store_filter *now, struct store_filter *base)
{
	int64_t len = now->to - now->from;
	int from_given, to_given;
	bool other;

	*base = *now;
	if (http_arg_int(rq, P_BASE_PID, 0, QUERY_PID_LIMIT, &base->pid) < 0)
		return -EINVAL;
	other = base->pid != now->pid;
	if (rq->arg[P_BASE_UNIT] || rq->arg[P_BASE_CONTAINER]) { /* the base's cgroups are those alone */
		base->unit = rq->arg[P_BASE_UNIT];
		base->container = rq->arg[P_BASE_CONTAINER];
		base->pod = base->cgroup = NULL;
		other = true;
	}
	from_given = http_arg_time(rq, P_BASE_FROM, &base->from);
	if (from_given < 0)
		return -EINVAL;
	to_given = http_arg_time(rq, P_BASE_TO, &base->to);
	if (to_given < 0)
		return -EINVAL;
	if (!from_given && !to_given && !other) {
		base->to = now->from;
		base->from = now->from - len;
	} else if (from_given && !to_given) {
		base->to = base->from + len;
	} else if (!from_given && to_given) {
		base->from = base->to - len;
	}
	if (base->from >= base->to)
		return http_fail(rq, 400, "base_from: must be before base_to (base_from %" PRId64 ", base_to %" PRId64
			    ")", base->from, base->to);
	return 0;
}

void http_handle_diff(struct http *h, struct request *rq)
{
	struct store_filter now, base;
	struct query_graph g;
	enum query_format fmt;
	struct store *st;

	if (http_arg_filter(h, rq, &now) < 0 || arg_base(rq, &now, &base) < 0 ||
	    http_arg_format(rq, QUERY_FOLDED, &fmt) < 0 || http_arg_graph(h, rq, &g) < 0 || !(st = open_store(h, rq)))
		return;
	set_format(rq, fmt);
	end_query(h, rq, st, query_diff(st, &base, &now, fmt, &g, rq->out));
}

/* Sleeps for seconds, or less when http_free stops the server. 0, or -ECANCELED when stopped. */
static int sleep_window(struct http *h, unsigned seconds)
{
	struct timespec deadline;
	bool stopped;
	int r = 0;

	if (clock_gettime(CLOCK_MONOTONIC, &deadline) < 0)
		return -errno;
	deadline.tv_sec += seconds;
	pthread_mutex_lock(&h->lock);
	while (!h->stopping && r == 0)
		r = pthread_cond_timedwait(&h->wake, &h->lock, &deadline);
	stopped = h->stopping;
	pthread_mutex_unlock(&h->lock);
	return stopped ? -ECANCELED : r == ETIMEDOUT ? 0 : -r;
}

void http_handle_pprof(struct http *h, struct request *rq)
{
	unsigned seconds = DEFAULT_PPROF_S < h->max_pprof_s ? DEFAULT_PPROF_S : h->max_pprof_s;
	struct store_filter f = { .pid = -1, .tid = -1, .from = rq->now, .unit = rq->arg[P_UNIT],
				  .container = rq->arg[P_CONTAINER], .pod = rq->arg[P_POD], .cgroup = rq->arg[P_CGROUP] };
	struct query_graph g;
	struct store *st;
	int err;

	if (http_arg_uint(rq, P_SECONDS, 1, h->max_pprof_s, &seconds) < 0)
		return;
	http_default_graph(h, &g);
	f.to = f.from + seconds;
	err = sleep_window(h, seconds);
	if (err == -ECANCELED) {
		http_fail(rq, 503, "flamed is shutting down");
		return;
	}
	if (!err && h->flush_now)
		err = h->flush_now(h->ctx);
	if (err) {
		http_fail(rq, 500, "cannot store the samples of the window: %s", strerror(-err));
		return;
	}
	if (!(st = open_store(h, rq)))
		return;
	set_format(rq, QUERY_PPROF);
	end_query(h, rq, st, query_profile(st, &f, QUERY_PPROF, &g, 0, rq->out));
}
