/* query_bench.c - times one query (profile, top, timeline, diff) through query.h: the first run in this process (cold when the caller dropped the OS caches) and the median of warm repeats. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "query/query.h"
#include "store/store.h"
#include "query/window.h"

#define REPEAT_MAX 100
#define TIMELINE_POINTS 360 /* timeline step: the window in this many points */
#define TOP_LIMIT 50

enum query_kind { Q_NONE = -1, Q_PROFILE, Q_TOP, Q_TIMELINE, Q_DIFF };

struct bench_opts {
	const char *db;
	enum query_kind kind;
	int64_t pid, from, to;
	unsigned repeat;
};

/* Counts what a query writes, without keeping it. */
struct sink {
	uint64_t bytes;
};

static ssize_t sink_write(void *cookie, const char *buf, size_t size)
{
	struct sink *s = cookie;

	(void)buf;
	s->bytes += size;
	return (ssize_t)size;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Runs the query once into out. profile: folded stacks; top: the top table; timeline: TIMELINE_POINTS
 * steps; diff: the second half of the window against the first, folded. */
static int run_query(struct store *st, const struct bench_opts *o, FILE *out)
{
	struct store_filter f = { .pid = o->pid, .tid = -1, .from = o->from, .to = o->to };
	struct query_graph g = { .minwidth = -1 };
	struct store_filter base = f, now = f;
	int64_t step = (o->to - o->from) / TIMELINE_POINTS;

	switch (o->kind) {
	case Q_PROFILE: return query_profile(st, &f, QUERY_FOLDED, &g, 0, out);
	case Q_TOP: return query_top_text(st, &f, TOP_LIMIT, false, false, out);
	case Q_TIMELINE: return query_timeline(st, &f, step > 0 ? step : 1, false, out);
	case Q_DIFF:
		base.to = now.from = o->from + (o->to - o->from) / 2;
		return query_diff(st, &base, &now, QUERY_FOLDED, &g, out);
	case Q_NONE: break;
	}
	return -EINVAL;
}

/* One timed run: opens the store when *st is NULL (the first run pays for that too). */
static int timed_run(struct store **st, const struct bench_opts *o, double *ms, uint64_t *bytes)
{
	struct sink sink = { 0 };
	cookie_io_functions_t io = { .write = sink_write };
	double t0 = now_ms();
	FILE *out;
	int err;

	if (!*st) {
		err = store_open(o->db, STORE_READ_ONLY, st);
		if (err) {
			fprintf(stderr, "query_bench: cannot open %s: %s\n", o->db, strerror(-err));
			return err;
		}
	}
	out = fopencookie(&sink, "w", io);
	if (!out)
		return -errno;
	err = run_query(*st, o, out);
	if (fclose(out) != 0 && !err)
		err = -EIO;
	*ms = now_ms() - t0;
	*bytes = sink.bytes;
	if (err)
		fprintf(stderr, "query_bench: query failed (%s): %s\n", strerror(-err), store_errmsg(*st));
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The peak resident size of this process, in KiB (0 when unknown). */
static unsigned long peak_rss_kb(void)
{
	char line[256];
	unsigned long kb = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int bench(const struct bench_opts *o)
{
	double first, warm[REPEAT_MAX];
	struct store *st = NULL;
	uint64_t bytes;
	int err = timed_run(&st, o, &first, &bytes);

	for (unsigned i = 0; !err && i < o->repeat; i++)
		err = timed_run(&st, o, &warm[i], &bytes);
	store_close(st);
	if (err)
		return err;
	qsort(warm, o->repeat, sizeof(*warm), cmp_double);
	printf("first_ms=%.1f warm_ms=%.1f output_bytes=%llu peak_rss_kb=%lu\n", first,
	       o->repeat ? warm[o->repeat / 2] : first, (unsigned long long)bytes, peak_rss_kb());
	return fflush(stdout) ? -EIO : 0;
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: query_bench --db PATH --query profile|top|timeline|diff [--pid N] --from UNIX --to UNIX\n"
		   "                   [--repeat N (default 5)]\n"
		   "Prints \"first_ms=X warm_ms=Y output_bytes=N peak_rss_kb=N\": the first run (store_open\n"
		   "included) and the median of N more in the same process.\n");
	return rc;
}

static int parse_kind(const char *s, enum query_kind *out)
{
	static const char *const names[] = { "profile", "top", "timeline", "diff" };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*out = (enum query_kind)i;
			return 0;
		}
	return -EINVAL;
}

static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_opt(int c, const char *arg, struct bench_opts *o)
{
	int64_t v;
	int err;

	switch (c) {
	case 'D': o->db = arg; return 0;
	case 'q': return parse_kind(arg, &o->kind);
	case 'p': return parse_int(arg, 0, UINT32_MAX, &o->pid);
	case 'f': return window_parse_time(arg, &o->from);
	case 't': return window_parse_time(arg, &o->to);
	case 'r':
		err = parse_int(arg, 0, REPEAT_MAX, &v);
		o->repeat = (unsigned)v;
		return err;
	}
	return -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, 'D' }, { "query", required_argument, NULL, 'q' },
		{ "pid", required_argument, NULL, 'p' }, { "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' }, { "repeat", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct bench_opts o = { .kind = Q_NONE, .pid = -1, .from = -1, .to = -1, .repeat = 5 };
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
		if (c == 'h' || parse_opt(c, optarg, &o))
			return usage(c == 'h' ? stdout : stderr, c == 'h' ? 0 : 2);
	if (optind != argc || !o.db || o.kind == Q_NONE || o.from < 0 || o.to <= o.from)
		return usage(stderr, 2);
	return bench(&o) ? 1 : 0;
}
