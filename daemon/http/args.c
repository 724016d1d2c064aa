/* args.c - a request's parameters: collected from the query string (only those its route takes, once
 * each, bounded), then read as integers, booleans, instants, windows, filters, formats and graphs. */
#include <errno.h>
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
#include "query/window.h"

#define DEFAULT_WINDOW_S 3600
#define VALUE_MAX 256                /* bytes of one parameter's value */
#define TIME_LIMIT (INT64_C(1) << 40) /* |instants| users give, so window arithmetic cannot overflow */

_Static_assert(P_COUNT <= 32, "a route's parameters are bits of a uint32_t");

static const char *const param_names[P_COUNT] = {
	[P_PID] = "pid", [P_TID] = "tid", [P_COMM] = "comm", [P_FROM] = "from", [P_TO] = "to",
	[P_FORMAT] = "format", [P_REVERSE] = "reverse", [P_TITLE] = "title", [P_WIDTH] = "width",
	[P_MINWIDTH] = "minwidth", [P_LIMIT] = "limit", [P_STEP] = "step", [P_PER_THREAD] = "per_thread",
	[P_BASE_PID] = "base_pid", [P_BASE_FROM] = "base_from", [P_BASE_TO] = "base_to",
	[P_SECONDS] = "seconds", [P_LINES] = "lines", [P_KIND] = "kind", [P_CHILDREN] = "children",
	[P_MERGE] = "merge", [P_FLUSH] = "flush", [P_DEMANGLE] = "demangle", [P_UNIT] = "unit",
	[P_CONTAINER] = "container", [P_POD] = "pod", [P_CGROUP] = "cgroup", [P_BASE_UNIT] = "base_unit",
	[P_BASE_CONTAINER] = "base_container", [P_GROUP] = "group",
};

/* Lists the names of the bits set in mask, ", " between them, into buf. */
static const char *name_list(const char *const *names, unsigned n, uint32_t mask, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < n && len < size; i++)
		if (mask & (1u << i))
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", names[i]);
	if (!buf[0])
		snprintf(buf, size, "none");
	return buf;
}

/* MHD_KeyValueIterator over the query string: files each argument the route takes, refuses any
 * other, a repeated one, a NUL byte inside one, and an overlong value. Stops at the first error. */
enum MHD_Result http_collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
				   const char *value, size_t value_size)
{
	struct request *rq = cls;
	char buf[160], show[72];
	unsigned p;

	(void)kind;
	if (key_size == 0 && value_size == 0)
		return MHD_YES; /* "a=1&&b=2" or a trailing '&' */
	for (p = 0; p < P_COUNT && strcmp(key, param_names[p]); p++)
		;
	if (p == P_COUNT || !(rq->route->params & (1u << p)) || strlen(key) != key_size) {
		http_fail(rq, 400, "unknown parameter \"%s\": %s takes %s", http_shown(key, show, sizeof(show)),
		     rq->route->path, name_list(param_names, P_COUNT, rq->route->params, buf, sizeof(buf)));
		return MHD_NO;
	}
	if (rq->arg[p]) {
		http_fail(rq, 400, "%s: given twice; give it once", key);
		return MHD_NO;
	}
	if (!value)
		value = "";
	if (value_size > VALUE_MAX) {
		http_fail(rq, 400, "%s: longer than %d bytes", key, VALUE_MAX);
		return MHD_NO;
	}
	if (strlen(value) != value_size) {
		http_fail(rq, 400, "%s: contains a NUL byte", key);
		return MHD_NO;
	}
	rq->arg[p] = value;
	return MHD_YES;
}

/* Reads parameter p, when given, as a whole number in min..max into *out. 0 or -EINVAL. */
int http_arg_int(struct request *rq, enum param p, int64_t min, int64_t max, int64_t *out)
{
	const char *v = rq->arg[p];
	char show[72], *end;
	long long n;

	if (!v)
		return 0;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (*v < '0' || *v > '9' || *end || errno || n < min || n > max)
		return http_fail(rq, 400, "%s: wants a whole number in %" PRId64 "..%" PRId64 ", got \"%s\"",
			    param_names[p], min, max, http_shown(v, show, sizeof(show)));
	*out = n;
	return 0;
}

int http_arg_uint(struct request *rq, enum param p, unsigned min, unsigned max, unsigned *out)
{
	int64_t n = *out;
	int err = http_arg_int(rq, p, min, max, &n);

	*out = (unsigned)n;
	return err;
}

/* Reads parameter p, when given, as a decimal number ("2", "0.5") in min..max. */
static int arg_double(struct request *rq, enum param p, double min, double max, double *out)
{
	const char *v = rq->arg[p];
	char show[72], *end;
	double d;

	if (!v)
		return 0;
	errno = 0;
	d = strtod(v, &end);
	if (!*v || strspn(v, "0123456789.") != strlen(v) || *end || errno || !(d >= min && d <= max))
		return http_fail(rq, 400, "%s: wants a number in %g..%g, got \"%s\"", param_names[p], min, max,
			    http_shown(v, show, sizeof(show)));
	*out = d;
	return 0;
}

/* Reads parameter p, when given, as 0 or 1. */
int http_arg_bool(struct request *rq, enum param p, bool *out)
{
	const char *v = rq->arg[p];
	char show[72];

	if (!v)
		return 0;
	if (strcmp(v, "0") && strcmp(v, "1"))
		return http_fail(rq, 400, "%s: wants 0 or 1, got \"%s\"", param_names[p], http_shown(v, show, sizeof(show)));
	*out = v[0] == '1';
	return 0;
}

/* Parses an RFC 3339 instant or unix seconds. A query string decodes '+' to a space, so a space
 * where a "+hh:mm" offset starts is read as the '+' the user typed. */
static int parse_instant(const char *v, int64_t *out)
{
	char buf[VALUE_MAX + 1];
	size_t len = strlen(v);

	if (len < 6 || len > VALUE_MAX || v[len - 6] != ' ')
		return window_parse_time(v, out);
	memcpy(buf, v, len + 1);
	buf[len - 6] = '+';
	return window_parse_time(buf, out);
}

/* Reads parameter p, when given, as an instant: unix seconds, RFC 3339, or "-DURATION" (that long
 * before now: "-10m", "-90", "-2h"). Returns 1 when given, 0 when not, or -EINVAL. */
int http_arg_time(struct request *rq, enum param p, int64_t *out)
{
	const char *v = rq->arg[p];
	char show[72];
	int64_t t;
	bool ok;

	if (!v)
		return 0;
	if (v[0] == '-') {
		ok = window_parse_duration(v + 1, &t) == 0 && t <= TIME_LIMIT;
		if (ok)
			t = rq->now - t;
	} else {
		ok = parse_instant(v, &t) == 0;
	}
	if (ok && t >= -TIME_LIMIT && t <= TIME_LIMIT) {
		*out = t;
		return 1;
	}
	return http_fail(rq, 400, "%s: wants unix seconds, RFC 3339 (2024-05-01T10:00:00Z) or a time ago "
		    "(-10m, -2h, -1d), got \"%s\"", param_names[p], http_shown(v, show, sizeof(show)));
}

/* Reads from= and to= (defaults: to now + 1, from an hour before to). */
static int arg_window(struct request *rq, int64_t *from, int64_t *to)
{
	int from_given, to_given;

	from_given = http_arg_time(rq, P_FROM, from);
	if (from_given < 0)
		return -EINVAL;
	to_given = http_arg_time(rq, P_TO, to);
	if (to_given < 0)
		return -EINVAL;
	if (!to_given)
		*to = rq->now + 1;
	if (!from_given)
		*from = *to - DEFAULT_WINDOW_S;
	if (*from >= *to)
		return http_fail(rq, 400, "from: must be before to (from %" PRId64 ", to %" PRId64 ")", *from, *to);
	return 0;
}

/* Reads kind= (default cpu); wall gets the period of the daemon's sampling frequency. */
static int arg_kind(struct http *h, struct request *rq, struct store_filter *f)
{
	const char *v = rq->arg[P_KIND];
	struct daemon_status s;
	char show[72];

	if (v && query_parse_kind(v, &f->kind) < 0)
		return http_fail(rq, 400, "kind: wants cpu, offcpu or wall, got \"%s\"", http_shown(v, show, sizeof(show)));
	if (f->kind == STORE_WALL) {
		http_read_status(h, &s);
		if (!s.frequency)
			return http_fail(rq, 503, "kind=wall: the sampling frequency is not known yet");
		f->cpu_period_us = query_cpu_period_us(s.frequency);
	}
	return 0;
}

int http_arg_filter(struct http *h, struct request *rq, struct store_filter *f)
{
	*f = (struct store_filter){ .pid = -1, .tid = -1, .comm = rq->arg[P_COMM], .unit = rq->arg[P_UNIT],
				    .container = rq->arg[P_CONTAINER], .pod = rq->arg[P_POD], .cgroup = rq->arg[P_CGROUP] };
	if (f->comm && !f->comm[0])
		return http_fail(rq, 400, "comm: wants a process name, got an empty one");
	if (arg_kind(h, rq, f) < 0)
		return -EINVAL;
	if (rq->arg[P_DEMANGLE] && demangle_parse_mode(rq->arg[P_DEMANGLE], &f->demangle) < 0) {
		char show[72];

		return http_fail(rq, 400, "demangle: wants short, full or none, got \"%s\"",
				 http_shown(rq->arg[P_DEMANGLE], show, sizeof(show)));
	}
	if (http_arg_int(rq, P_PID, 0, QUERY_PID_LIMIT, &f->pid) < 0 || http_arg_int(rq, P_TID, 0, QUERY_PID_LIMIT, &f->tid) < 0 ||
	    http_arg_bool(rq, P_CHILDREN, &f->children) < 0 || http_arg_bool(rq, P_MERGE, &f->merge) < 0)
		return -EINVAL;
	if (f->children && f->pid < 0)
		return http_fail(rq, 400, "children: needs pid (the process whose descendants to take)");
	if (f->merge && !f->children)
		return http_fail(rq, 400, "merge: needs children=1 (it merges a process's family into one)");
	if (f->children && f->tid >= 0)
		return http_fail(rq, 400, "children: takes a process, not one thread (tid)");
	return arg_window(rq, &f->from, &f->to);
}

/* Reads format= (default dflt), one of the formats the route writes. */
int http_arg_format(struct request *rq, enum query_format dflt, enum query_format *out)
{
	const char *v = rq->arg[P_FORMAT];
	const char *names[QUERY_FORMAT_COUNT];
	char buf[64], show[72];
	enum query_format f = dflt;

	for (unsigned i = 0; i < QUERY_FORMAT_COUNT; i++)
		names[i] = query_format_name((enum query_format)i);
	if (v && (query_parse_format(v, &f) < 0 || !(rq->route->formats & (1u << f))))
		return http_fail(rq, 400, "format: wants %s, got \"%s\"",
			    name_list(names, QUERY_FORMAT_COUNT, rq->route->formats, buf, sizeof(buf)),
			    http_shown(v, show, sizeof(show)));
	*out = f;
	return 0;
}

/* The daemon's live state (zeros when it gave no get_status callback). */
void http_read_status(struct http *h, struct daemon_status *s)
{
	memset(s, 0, sizeof(*s));
	if (h->get_status)
		h->get_status(s, h->ctx);
	if (!s->version)
		s->version = "unknown";
}

/* The renderers' defaults, with the daemon's sampling frequency (for pprof's period). */
void http_default_graph(struct http *h, struct query_graph *g)
{
	struct daemon_status s;

	http_read_status(h, &s);
	*g = (struct query_graph){ .minwidth = -1, .frequency = s.frequency };
}

/* Reads how a flame graph is drawn: reverse=, title=, width=, minwidth=. */
int http_arg_graph(struct http *h, struct request *rq, struct query_graph *g)
{
	http_default_graph(h, g);
	g->title = rq->arg[P_TITLE];
	if (http_arg_bool(rq, P_REVERSE, &g->reverse) < 0 || http_arg_uint(rq, P_WIDTH, 100, 10000, &g->width) < 0)
		return -EINVAL;
	if (rq->arg[P_GROUP] && strcmp(rq->arg[P_GROUP], "unit")) {
		char show[72];

		return http_fail(rq, 400, "group: wants unit (each stack under its service), got \"%s\"",
				 http_shown(rq->arg[P_GROUP], show, sizeof(show)));
	}
	g->by_service = rq->arg[P_GROUP] != NULL;
	return arg_double(rq, P_MINWIDTH, 0, 1000, &g->minwidth);
}

/* Reads format= of the table endpoints: "json" (default), "text" (aligned, for a terminal) or "tsv". */
int http_arg_table(struct request *rq, int *out)
{
	static const char *const names[] = { "json", "text", "tsv" };
	const char *v = rq->arg[P_FORMAT];

	*out = 0;
	if (!v)
		return 0;
	for (int i = 0; i < 3; i++) {
		if (!strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
	}
	return http_fail(rq, 400, "format: wants json, text or tsv, got \"%s\"", v);
}
