/* http.c - the HTTP API: libmicrohttpd on its own threads, reading the store, never the BPF maps. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/types.h> /* status.h -> profile.h needs __u32 */
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http.h"
#include "query.h"
#include "render/json.h"
#include "status_python.h"
#include "store.h"
#include "window.h"

#define DEFAULT_LISTEN "127.0.0.1:7070"
#define DEFAULT_MAX_CONNECTIONS 64
#define DEFAULT_TIMEOUT_S 30
#define DEFAULT_MAX_PPROF_S 300
#define DEFAULT_PPROF_S 30
#define DEFAULT_WINDOW_S 3600
#define TIMELINE_POINTS 200          /* the default step cuts the window into about this many */
#define URL_MAX 4096                 /* bytes of the request target, query string included */
#define VALUE_MAX 256                /* bytes of one parameter's value */
#define BODY_MAX ((size_t)256 << 20) /* bytes of one response */
#define CONN_MEMORY_LIMIT ((size_t)32 << 10)
#define STOP_GRACE_S 3                /* http_free waits this long for requests in flight */
#define CODES 600                    /* HTTP status codes counted: 0..599 */
#define TIME_LIMIT (INT64_C(1) << 40) /* |instants| users give, so window arithmetic cannot overflow */

struct http {
	struct MHD_Daemon *mhd;
	char *db_path;
	unsigned port;
	unsigned max_pprof_s;
	char *token;      /* NULL: no authentication */
	size_t token_len;
	void (*get_status)(struct daemon_status *out, void *ctx);
	int (*flush_now)(void *ctx);
	void *ctx;
	/* http_free sets stopping and wakes /debug/pprof/profile requests asleep in their window; it then
	 * waits (a while) for active to fall to 0, so requests in flight get their answer. */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
	unsigned active; /* requests between the access handler and MHD's completion notice */
	_Atomic uint64_t responses[CODES]; /* by status code */
	_Atomic uint64_t too_large;        /* responses refused for passing BODY_MAX */
	/* Their addresses tag a request (via *req_cls) as having a short or an overlong URL, and as
	 * seen by the access handler once (the _seen pair). */
	char tag_url_ok, tag_url_long, tag_seen_ok, tag_seen_long;
};

/* The query parameters; a route lists the ones it takes. */
enum param {
	P_PID, P_TID, P_COMM, P_FROM, P_TO, P_FORMAT, P_REVERSE, P_TITLE, P_WIDTH, P_MINWIDTH, P_LIMIT,
	P_STEP, P_PER_THREAD, P_BASE_PID, P_BASE_FROM, P_BASE_TO, P_SECONDS, P_LINES, P_COUNT,
};

static const char *const param_names[P_COUNT] = {
	[P_PID] = "pid", [P_TID] = "tid", [P_COMM] = "comm", [P_FROM] = "from", [P_TO] = "to",
	[P_FORMAT] = "format", [P_REVERSE] = "reverse", [P_TITLE] = "title", [P_WIDTH] = "width",
	[P_MINWIDTH] = "minwidth", [P_LIMIT] = "limit", [P_STEP] = "step", [P_PER_THREAD] = "per_thread",
	[P_BASE_PID] = "base_pid", [P_BASE_FROM] = "base_from", [P_BASE_TO] = "base_to",
	[P_SECONDS] = "seconds", [P_LINES] = "lines",
};

/* A response body being written: grows by doubling, refuses to pass BODY_MAX. (A cookie stream, not
 * open_memstream, so an oversized answer fails as it passes the cap instead of after allocating it.) */
struct body {
	char *buf;
	size_t len, cap;
	bool overflow;
};

struct request;

/* One endpoint: its path, its handler and what it accepts. */
struct route {
	const char *path;
	void (*handle)(struct http *h, struct request *rq);
	uint32_t params;  /* 1 << enum param, for each parameter it takes */
	uint32_t formats; /* 1 << enum query_format, for each format= it writes */
};

/* One request and the reply being built for it. */
struct request {
	const struct route *route;
	const char *arg[P_COUNT]; /* NULL: not given */
	int64_t now;              /* unix seconds when the request was read */
	unsigned status;
	const char *type;
	const char *disposition;  /* Content-Disposition, or NULL */
	const char *allow;        /* Allow (405), or NULL */
	const char *csp;          /* Content-Security-Policy, or NULL */
	const char *challenge;    /* WWW-Authenticate (401), or NULL */
	char error[384];          /* the message of an error reply (status >= 400) */
	struct body body;
	FILE *out;                /* writes into body */
};

/* Makes rq an error reply: status and message (the message is JSON-escaped later). Returns -EINVAL,
 * so a parser can end with "return fail(...)". */
__attribute__((format(printf, 3, 4)))
static int fail(struct request *rq, unsigned status, const char *fmt, ...)
{
	va_list ap;

	rq->status = status;
	va_start(ap, fmt);
	vsnprintf(rq->error, sizeof(rq->error), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Copies a user's value into buf for an error message: at most 64 bytes, each byte that is not
 * printable ASCII, a quote or a backslash shown as '?' (the message stays readable, valid UTF-8). */
static const char *shown(const char *v, char *buf, size_t size)
{
	size_t i;

	for (i = 0; v[i] && i + 1 < size && i < 64; i++)
		buf[i] = v[i] >= 0x20 && v[i] < 0x7f && v[i] != '"' && v[i] != '\\' ? v[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* ---- response bodies ---- */

static ssize_t body_write(void *cookie, const char *data, size_t n)
{
	struct body *b = cookie;
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (n > BODY_MAX - b->len) {
		b->overflow = true;
		errno = EFBIG;
		return 0;
	}
	while (cap - b->len < n)
		cap = cap > BODY_MAX / 2 ? BODY_MAX : cap * 2;
	if (cap != b->cap) {
		p = realloc(b->buf, cap);
		if (!p) {
			errno = ENOMEM;
			return 0;
		}
		b->buf = p;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, data, n);
	b->len += n;
	return (ssize_t)n;
}

/* A stream writing into b (empty). NULL with errno on failure. */
static FILE *body_open(struct body *b)
{
	static const cookie_io_functions_t io = { .write = body_write };

	memset(b, 0, sizeof(*b));
	return fopencookie(b, "w", io);
}

/* Replaces the body with {"error": rq->error}. Returns 0 or -ENOMEM. */
static int error_body(struct request *rq)
{
	FILE *out;

	free(rq->body.buf);
	out = body_open(&rq->body);
	if (!out)
		return -ENOMEM;
	fputs("{\"error\": ", out);
	json_write_string(out, rq->error);
	fputs("}\n", out);
	if (fclose(out) != 0)
		return -ENOMEM;
	rq->type = "application/json";
	rq->disposition = NULL;
	return 0;
}

static void count_response(struct http *h, unsigned status)
{
	atomic_fetch_add_explicit(&h->responses[status < CODES ? status : 0], 1, memory_order_relaxed);
}

static bool add_headers(struct MHD_Response *resp, const struct request *rq)
{
	return MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rq->type) == MHD_YES &&
	       MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") == MHD_YES &&
	       MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff") == MHD_YES &&
	       (!rq->disposition ||
		MHD_add_response_header(resp, "Content-Disposition", rq->disposition) == MHD_YES) &&
	       (!rq->allow || MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, rq->allow) == MHD_YES) &&
	       (!rq->csp || MHD_add_response_header(resp, "Content-Security-Policy", rq->csp) == MHD_YES) &&
	       (!rq->challenge ||
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, rq->challenge) == MHD_YES);
}

/* Finishes rq's body (or replaces it by the error) and queues the response. */
static enum MHD_Result respond(struct http *h, struct MHD_Connection *conn, struct request *rq)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	bool closed = !rq->out || fclose(rq->out) == 0;

	rq->out = NULL;
	if (rq->body.overflow) {
		atomic_fetch_add_explicit(&h->too_large, 1, memory_order_relaxed);
		fail(rq, 500, "the response would pass %zu MiB: ask for a shorter window, one pid or a limit",
		     BODY_MAX >> 20);
	} else if (!closed && rq->status < 400) {
		fail(rq, 500, "out of memory writing the response");
	}
	if (rq->status >= 400 && error_body(rq) < 0) {
		free(rq->body.buf);
		return MHD_NO;
	}
	resp = MHD_create_response_from_buffer(rq->body.len, rq->body.buf, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(rq->body.buf);
		return MHD_NO;
	}
	ret = add_headers(resp, rq) ? MHD_queue_response(conn, rq->status, resp) : MHD_NO;
	MHD_destroy_response(resp);
	count_response(h, rq->status);
	return ret;
}

/* ---- parameters ---- */

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
static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
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
		fail(rq, 400, "unknown parameter \"%s\": %s takes %s", shown(key, show, sizeof(show)),
		     rq->route->path, name_list(param_names, P_COUNT, rq->route->params, buf, sizeof(buf)));
		return MHD_NO;
	}
	if (rq->arg[p]) {
		fail(rq, 400, "%s: given twice; give it once", key);
		return MHD_NO;
	}
	if (!value)
		value = "";
	if (value_size > VALUE_MAX) {
		fail(rq, 400, "%s: longer than %d bytes", key, VALUE_MAX);
		return MHD_NO;
	}
	if (strlen(value) != value_size) {
		fail(rq, 400, "%s: contains a NUL byte", key);
		return MHD_NO;
	}
	rq->arg[p] = value;
	return MHD_YES;
}

/* Reads parameter p, when given, as a whole number in min..max into *out. 0 or -EINVAL. */
static int arg_int(struct request *rq, enum param p, int64_t min, int64_t max, int64_t *out)
{
	const char *v = rq->arg[p];
	char show[72], *end;
	long long n;

	if (!v)
		return 0;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (*v < '0' || *v > '9' || *end || errno || n < min || n > max)
		return fail(rq, 400, "%s: wants a whole number in %" PRId64 "..%" PRId64 ", got \"%s\"",
			    param_names[p], min, max, shown(v, show, sizeof(show)));
	*out = n;
	return 0;
}

static int arg_uint(struct request *rq, enum param p, unsigned min, unsigned max, unsigned *out)
{
	int64_t n = *out;
	int err = arg_int(rq, p, min, max, &n);

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
		return fail(rq, 400, "%s: wants a number in %g..%g, got \"%s\"", param_names[p], min, max,
			    shown(v, show, sizeof(show)));
	*out = d;
	return 0;
}

/* Reads parameter p, when given, as 0 or 1. */
static int arg_bool(struct request *rq, enum param p, bool *out)
{
	const char *v = rq->arg[p];
	char show[72];

	if (!v)
		return 0;
	if (strcmp(v, "0") && strcmp(v, "1"))
		return fail(rq, 400, "%s: wants 0 or 1, got \"%s\"", param_names[p], shown(v, show, sizeof(show)));
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
static int arg_time(struct request *rq, enum param p, int64_t *out)
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
	return fail(rq, 400, "%s: wants unix seconds, RFC 3339 (2024-05-01T10:00:00Z) or a time ago "
		    "(-10m, -2h, -1d), got \"%s\"", param_names[p], shown(v, show, sizeof(show)));
}

/* Reads from= and to= (defaults: to now + 1, from an hour before to). */
static int arg_window(struct request *rq, int64_t *from, int64_t *to)
{
	int from_given, to_given;

	from_given = arg_time(rq, P_FROM, from);
	if (from_given < 0)
		return -EINVAL;
	to_given = arg_time(rq, P_TO, to);
	if (to_given < 0)
		return -EINVAL;
	if (!to_given)
		*to = rq->now + 1;
	if (!from_given)
		*from = *to - DEFAULT_WINDOW_S;
	if (*from >= *to)
		return fail(rq, 400, "from: must be before to (from %" PRId64 ", to %" PRId64 ")", *from, *to);
	return 0;
}

/* Reads the samples a query covers: pid=, tid=, comm=, from=, to= (absent: any). */
static int arg_filter(struct request *rq, struct store_filter *f)
{
	*f = (struct store_filter){ .pid = -1, .tid = -1, .comm = rq->arg[P_COMM] };
	if (f->comm && !f->comm[0])
		return fail(rq, 400, "comm: wants a process name, got an empty one");
	if (arg_int(rq, P_PID, 0, QUERY_PID_LIMIT, &f->pid) < 0 || arg_int(rq, P_TID, 0, QUERY_PID_LIMIT, &f->tid) < 0)
		return -EINVAL;
	return arg_window(rq, &f->from, &f->to);
}

/* Reads format= (default dflt), one of the formats the route writes. */
static int arg_format(struct request *rq, enum query_format dflt, enum query_format *out)
{
	const char *v = rq->arg[P_FORMAT];
	const char *names[QUERY_FORMAT_COUNT];
	char buf[64], show[72];
	enum query_format f = dflt;

	for (unsigned i = 0; i < QUERY_FORMAT_COUNT; i++)
		names[i] = query_format_name((enum query_format)i);
	if (v && (query_parse_format(v, &f) < 0 || !(rq->route->formats & (1u << f))))
		return fail(rq, 400, "format: wants %s, got \"%s\"",
			    name_list(names, QUERY_FORMAT_COUNT, rq->route->formats, buf, sizeof(buf)),
			    shown(v, show, sizeof(show)));
	*out = f;
	return 0;
}

/* The daemon's live state (zeros when it gave no get_status callback). */
static void read_status(struct http *h, struct daemon_status *s)
{
	memset(s, 0, sizeof(*s));
	if (h->get_status)
		h->get_status(s, h->ctx);
	if (!s->version)
		s->version = "unknown";
}

/* The renderers' defaults, with the daemon's sampling frequency (for pprof's period). */
static void default_graph(struct http *h, struct query_graph *g)
{
	struct daemon_status s;

	read_status(h, &s);
	*g = (struct query_graph){ .minwidth = -1, .frequency = s.frequency };
}

/* Reads how a flame graph is drawn: reverse=, title=, width=, minwidth=. */
static int arg_graph(struct http *h, struct request *rq, struct query_graph *g)
{
	default_graph(h, g);
	g->title = rq->arg[P_TITLE];
	if (arg_bool(rq, P_REVERSE, &g->reverse) < 0 || arg_uint(rq, P_WIDTH, 100, 10000, &g->width) < 0)
		return -EINVAL;
	return arg_double(rq, P_MINWIDTH, 0, 1000, &g->minwidth);
}

/* ---- running queries ---- */

static void set_format(struct request *rq, enum query_format f)
{
	rq->type = query_content_type(f);
	if (f == QUERY_PPROF)
		rq->disposition = "attachment; filename=\"profile.pb.gz\"";
}

/* Opens the store for one request; NULL (and the error reply) when it cannot. */
static struct store *open_store(struct http *h, struct request *rq)
{
	struct store *st = NULL;
	int err = store_open(h->db_path, STORE_READ_ONLY, &st);

	if (err == -ENOENT)
		fail(rq, 503, "no database yet: flamed creates it at its first flush; try again shortly");
	else if (err == -EBUSY)
		fail(rq, 503, "the database is busy: try again shortly");
	else if (err)
		fail(rq, 500, "cannot open the database: %s", strerror(-err));
	return err ? NULL : st;
}

/* Turns a query's result into the error reply when it failed, and closes the store. */
static void end_query(struct request *rq, struct store *st, int err)
{
	if (err && !rq->body.overflow)
		fail(rq, err == -EBUSY ? 503 : 500, "query failed: %s (%s)", store_errmsg(st),
		     strerror(err < 0 ? -err : EIO));
	store_close(st);
}

/* ---- handlers, one per endpoint ---- */

/* The dashboard, embedded by dashboard.S. */
extern const char flamed_dashboard_html[], flamed_dashboard_html_end[];

/* The dashboard page: one self-contained document that talks to this API, nothing else. */
static void handle_dashboard(struct http *h, struct request *rq)
{
	(void)h;
	rq->type = "text/html; charset=utf-8";
	rq->csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
		  "connect-src 'self'; img-src 'self' data: blob:; frame-src 'self'; base-uri 'none'; "
		  "form-action 'none'";
	fwrite(flamed_dashboard_html, 1, (size_t)(flamed_dashboard_html_end - flamed_dashboard_html), rq->out);
}

static void handle_healthz(struct http *h, struct request *rq)
{
	(void)h;
	rq->type = "text/plain; charset=utf-8";
	fputs("ok\n", rq->out);
}

/* The names of enum profile_stat's loss counters; NULL: not a loss. */
static const char *const lost_kinds[STAT_MAX] = {
	[STAT_KSTACK_ERROR] = "kernel_stack_error",
	[STAT_USTACK_ERROR] = "user_stack_error",
	[STAT_STACK_MAP_FULL] = "stack_map_full",
	[STAT_STACK_NOMEM] = "stack_alloc_failed",
	[STAT_COUNTS_FULL] = "counts_full",
};

static double finite_or_zero(double d)
{
	return isfinite(d) ? d : 0;
}

/* Reads format= of the table endpoints: "json" (default), "text" (aligned, for a terminal) or "tsv". */
static int arg_table(struct request *rq, int *out)
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
	return fail(rq, 400, "format: wants json, text or tsv, got \"%s\"", v);
}

/* The user-stack walks of enum profile_stat, by how they went. */
static const char *const unwind_kinds[STAT_MAX] = {
	[STAT_UNWIND_FP] = "fp",
	[STAT_UNWIND_DWARF] = "dwarf",
	[STAT_UNWIND_MIXED] = "mixed",
	[STAT_UNWIND_TRUNCATED] = "truncated",
	[STAT_UNWIND_FAILED] = "failed",
};

/* Status as "name value" lines, one per field. */
static void status_text(FILE *o, const struct daemon_status *s, int64_t now)
{
	fprintf(o, "version %s\nuptime_seconds %" PRId64 "\nfrequency %u\nflush_interval %u\ncpus %u\n"
		"samples %" PRIu64 "\n", s->version ? s->version : "", s->start_time ? now - s->start_time : 0,
		s->frequency, s->flush_interval, s->cpus, s->samples);
	for (unsigned i = 0; i < STAT_MAX; i++)
		if (lost_kinds[i])
			fprintf(o, "samples_lost_%s %" PRIu64 "\n", lost_kinds[i], s->lost[i]);
	fprintf(o, "samples_pruned %" PRIu64 "\n", s->samples_pruned);
	fprintf(o, "idle_excluded %" PRIu64 "\nsamples_stored %" PRIu64 "\nsamples_unstored %" PRIu64 "\nflushes %"
		PRIu64 "\nlast_flush_time %" PRId64 "\nlast_flush_seconds %.6f\ndb_bytes %" PRIu64 "\nstacks_stored %"
		PRIu64 "\nsymbolized_user %" PRIu64 " hits %" PRIu64 " misses\nsymbolized_kernel %" PRIu64 " hits %"
		PRIu64 " misses\nbinaries_cached %" PRIu64 "\nprocesses_cached %" PRIu64 "\nsymbol_cache_bytes %"
		PRIu64 "\nbinaries_evicted %" PRIu64 "\n",
		s->lost[STAT_IDLE], s->samples_stored, s->samples_unstored, s->flushes, s->last_flush_time,
		finite_or_zero(s->last_flush_seconds), s->db_bytes, s->stacks_stored, s->sym_user_hits,
		s->sym_user_misses, s->sym_kernel_hits, s->sym_kernel_misses, s->sym_binaries_cached,
		s->sym_processes_cached, s->sym_cache_bytes, s->sym_binaries_evicted);
	fprintf(o, "unwind_mode %s\n", s->unwind_mode ? s->unwind_mode : "");
	for (unsigned i = 0; i < STAT_MAX; i++)
		if (unwind_kinds[i])
			fprintf(o, "unwind_samples_%s %" PRIu64 "\n", unwind_kinds[i], s->lost[i]);
	fprintf(o, "unwind_refresh_requests %" PRIu64 "\nunwind_tables %" PRIu64 "\nunwind_table_bytes %" PRIu64
		"\nunwind_table_rows %" PRIu64 "\nunwind_tables_built %" PRIu64 "\nunwind_tables_evicted %" PRIu64
		"\nunwind_tables_refused %" PRIu64 "\nunwind_binaries_without_cfi %" PRIu64 "\nunwind_processes %"
		PRIu64 "\nunwind_processes_refused %" PRIu64 "\nunwind_mappings_dropped %" PRIu64
		"\nunwind_build_seconds %.6f\nunwind_requests_dropped %" PRIu64 "\nunwind_requests_pending %" PRIu64 "\n",
		s->lost[STAT_UNWIND_REFRESH], s->unwind.tables, s->unwind.table_bytes,
		s->unwind.table_rows, s->unwind.tables_built, s->unwind.tables_evicted, s->unwind.tables_refused,
		s->unwind.binaries_without, s->unwind.processes, s->unwind.processes_refused,
		s->unwind.mappings_dropped, finite_or_zero(s->unwind.build_seconds), s->unwind.requests_dropped,
		s->unwind.requests_pending);
}

/* The "unwind" object of the JSON status. */
static void status_unwind_json(FILE *o, const struct daemon_status *s)
{
	int n = 0;

	fputs(", \"unwind\": {\"mode\": ", o);
	json_write_string(o, s->unwind_mode ? s->unwind_mode : "");
	fputs(", \"samples\": {", o);
	for (unsigned i = 0; i < STAT_MAX; i++)
		if (unwind_kinds[i])
			fprintf(o, "%s\"%s\": %" PRIu64, n++ ? ", " : "", unwind_kinds[i], s->lost[i]);
	fprintf(o, "}, \"refresh_requests\": %" PRIu64 ", \"tables\": %" PRIu64 ", \"table_bytes\": %" PRIu64
		", \"table_rows\": %" PRIu64 ", \"tables_built\": %" PRIu64 ", \"tables_evicted\": %" PRIu64
		", \"tables_refused\": %" PRIu64 ", \"binaries_without_cfi\": %" PRIu64 ", \"processes\": %" PRIu64
		", \"processes_refused\": %" PRIu64 ", \"mappings_dropped\": %" PRIu64 ", \"build_seconds\": %.6f"
		", \"requests_dropped\": %" PRIu64 ", \"requests_pending\": %" PRIu64 "}",
		s->lost[STAT_UNWIND_REFRESH], s->unwind.tables, s->unwind.table_bytes, s->unwind.table_rows,
		s->unwind.tables_built, s->unwind.tables_evicted, s->unwind.tables_refused, s->unwind.binaries_without,
		s->unwind.processes, s->unwind.processes_refused, s->unwind.mappings_dropped,
		finite_or_zero(s->unwind.build_seconds), s->unwind.requests_dropped, s->unwind.requests_pending);
}

static void handle_status(struct http *h, struct request *rq)
{
	struct daemon_status s;
	FILE *o = rq->out;
	int n = 0, table;

	if (arg_table(rq, &table) < 0)
		return;
	read_status(h, &s);
	if (table) {
		rq->type = "text/plain; charset=utf-8";
		status_text(o, &s, rq->now);
		status_python_text(o, &s);
		return;
	}
	rq->type = "application/json";
	fputs("{\"version\": ", o);
	json_write_string(o, s.version);
	fprintf(o, ", \"uptime_seconds\": %" PRId64 ", \"start_time\": %" PRId64 ", \"frequency\": %u, "
		"\"flush_interval\": %u, \"cpus\": %u, \"samples\": %" PRIu64 ", \"samples_lost\": {",
		s.start_time ? rq->now - s.start_time : 0, s.start_time, s.frequency, s.flush_interval, s.cpus,
		s.samples);
	for (unsigned i = 0; i < STAT_MAX; i++)
		if (lost_kinds[i])
			fprintf(o, "%s\"%s\": %" PRIu64, n++ ? ", " : "", lost_kinds[i], s.lost[i]);
	fprintf(o, "}, \"idle_excluded\": %" PRIu64 ", \"samples_stored\": %" PRIu64 ", \"samples_unstored\": %"
		PRIu64 ", \"flushes\": %" PRIu64 ", \"last_flush_time\": %" PRId64 ", \"last_flush_seconds\": %.6f"
		", \"db_bytes\": %" PRIu64 ", \"stacks_stored\": %" PRIu64 ", ", s.lost[STAT_IDLE],
		s.samples_stored, s.samples_unstored, s.flushes, s.last_flush_time,
		finite_or_zero(s.last_flush_seconds), s.db_bytes, s.stacks_stored);
	fprintf(o, "\"samples_pruned\": %" PRIu64 ", ", s.samples_pruned);
	fprintf(o, "\"symbolizer\": {\"user_hits\": %" PRIu64 ", \"user_misses\": %" PRIu64 ", \"kernel_hits\": %"
		PRIu64 ", \"kernel_misses\": %" PRIu64 ", \"binaries_cached\": %" PRIu64 ", \"processes_cached\": %"
		PRIu64 ", \"symbol_cache_bytes\": %" PRIu64 ", \"binaries_evicted\": %" PRIu64 "}", s.sym_user_hits,
		s.sym_user_misses, s.sym_kernel_hits, s.sym_kernel_misses, s.sym_binaries_cached, s.sym_processes_cached,
		s.sym_cache_bytes, s.sym_binaries_evicted);
	fprintf(o, ", \"fold_cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64 ", \"full\": %" PRIu64 "}",
		s.fold_hits, s.fold_misses, s.fold_full);
	status_unwind_json(o, &s);
	status_python_json(o, &s);
	fputs("}\n", o);
}

/* Writes a metric's HELP and TYPE lines. */
static void metric(FILE *o, const char *name, const char *type, const char *help)
{
	fprintf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void metric_u64(FILE *o, const char *name, const char *type, const char *help, uint64_t v)
{
	metric(o, name, type, help);
	fprintf(o, "%s %" PRIu64 "\n", name, v);
}

static void metric_double(FILE *o, const char *name, const char *type, const char *help, double v)
{
	metric(o, name, type, help);
	fprintf(o, "%s %.9g\n", name, finite_or_zero(v));
}

/* A label value: backslash, quote and newline escaped. */
static void label_value(FILE *o, const char *s)
{
	for (; *s; s++)
		if (*s == '\\' || *s == '"')
			fprintf(o, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", o);
		else
			fputc(*s, o);
}

static void metrics_samples(FILE *o, const struct daemon_status *s)
{
	metric_u64(o, "flamed_samples_total", "counter", "CPU samples counted by BPF.", s->samples);
	metric(o, "flamed_samples_lost_total", "counter", "Samples or stacks lost, by kind.");
	for (unsigned i = 0; i < STAT_MAX; i++)
		if (lost_kinds[i])
			fprintf(o, "flamed_samples_lost_total{kind=\"%s\"} %" PRIu64 "\n", lost_kinds[i], s->lost[i]);
	metric_u64(o, "flamed_samples_idle_excluded_total", "counter", "Idle samples (pid 0) left out.",
		   s->lost[STAT_IDLE]);
	metric_u64(o, "flamed_samples_stored_total", "counter", "Samples written to the database.",
		   s->samples_stored);
	metric_u64(o, "flamed_samples_unstored_total", "counter", "Samples drained but lost to a failed flush.",
		   s->samples_unstored);
	metric_u64(o, "flamed_flushes_total", "counter", "Flushes of samples into the database.", s->flushes);
	metric_double(o, "flamed_flush_seconds_total", "counter", "Time spent flushing.", s->flush_seconds_total);
	metric_double(o, "flamed_last_flush_seconds", "gauge", "Duration of the last flush.",
		      s->last_flush_seconds);
	metric_u64(o, "flamed_last_flush_timestamp_seconds", "gauge", "Unix time of the last flush (0: none).",
		   (uint64_t)(s->last_flush_time > 0 ? s->last_flush_time : 0));
}

static void metrics_symbolizer(FILE *o, const struct daemon_status *s)
{
	metric(o, "flamed_symbolize_hits_total", "counter", "Frames named, by kind.");
	fprintf(o, "flamed_symbolize_hits_total{kind=\"user\"} %" PRIu64 "\n", s->sym_user_hits);
	fprintf(o, "flamed_symbolize_hits_total{kind=\"kernel\"} %" PRIu64 "\n", s->sym_kernel_hits);
	metric(o, "flamed_symbolize_misses_total", "counter", "Frames left unnamed, by kind.");
	fprintf(o, "flamed_symbolize_misses_total{kind=\"user\"} %" PRIu64 "\n", s->sym_user_misses);
	fprintf(o, "flamed_symbolize_misses_total{kind=\"kernel\"} %" PRIu64 "\n", s->sym_kernel_misses);
	metric_u64(o, "flamed_symbolizer_binaries_cached", "gauge", "Binaries in the symbolizer's cache.",
		   s->sym_binaries_cached);
	metric_u64(o, "flamed_symbolizer_processes_cached", "gauge", "Processes in the symbolizer's cache.",
		   s->sym_processes_cached);
	metric_u64(o, "flamed_samples_pruned_total", "counter",
		   "Sample rows deleted by --retention and --max-db-size.", s->samples_pruned);
	metric_u64(o, "flamed_symbolizer_cache_bytes", "gauge", "Memory held by cached symbol tables.",
		   s->sym_cache_bytes);
	metric_u64(o, "flamed_symbolizer_binaries_evicted_total", "counter",
		   "Binaries dropped from the symbolizer's cache to stay within --symbol-cache-mb.",
		   s->sym_binaries_evicted);
	metric(o, "flamed_fold_cache_total", "counter",
	       "Drained keys whose stacks were folded already this flush (hit), folded (miss), or folded and not "
	       "kept: the cache was full (full).");
	fprintf(o, "flamed_fold_cache_total{result=\"hit\"} %" PRIu64 "\nflamed_fold_cache_total{result=\"miss\"} %"
		PRIu64 "\nflamed_fold_cache_total{result=\"full\"} %" PRIu64 "\n", s->fold_hits, s->fold_misses,
		s->fold_full);
}

static void metrics_unwind(FILE *o, const struct daemon_status *s)
{
	metric(o, "flamed_unwind_samples_total", "counter", "User stacks walked, by how (truncated and failed "
	       "also count in one of fp, dwarf and mixed).");
	for (unsigned i = 0; i < STAT_MAX; i++)
		if (unwind_kinds[i])
			fprintf(o, "flamed_unwind_samples_total{kind=\"%s\"} %" PRIu64 "\n", unwind_kinds[i], s->lost[i]);
	metric_u64(o, "flamed_unwind_refresh_requests_total", "counter",
		   "Mappings read again: a stack met an address in none of its process's known mappings.",
		   s->lost[STAT_UNWIND_REFRESH]);
	metric_u64(o, "flamed_unwind_tables", "gauge", "Binaries with unwind tables loaded.", s->unwind.tables);
	metric_u64(o, "flamed_unwind_table_bytes", "gauge", "Kernel memory the unwind tables' rows take.",
		   s->unwind.table_bytes);
	metric_u64(o, "flamed_unwind_tables_evicted_total", "counter",
		   "Unused unwind tables dropped to stay within --unwind-tables-mb.", s->unwind.tables_evicted);
	metric_u64(o, "flamed_unwind_tables_refused_total", "counter",
		   "Unwind tables not loaded for want of room.", s->unwind.tables_refused);
	metric_u64(o, "flamed_unwind_processes", "gauge", "Processes with unwind tables.", s->unwind.processes);
	metric_u64(o, "flamed_unwind_processes_refused_total", "counter",
		   "Processes not given unwind tables: --unwind-processes reached.", s->unwind.processes_refused);
}

static void metrics_http(struct http *h, FILE *o)
{
	metric(o, "flamed_http_requests_total", "counter", "HTTP requests answered, by status code.");
	for (unsigned c = 0; c < CODES; c++) {
		uint64_t n = atomic_load_explicit(&h->responses[c], memory_order_relaxed);

		if (n)
			fprintf(o, "flamed_http_requests_total{code=\"%u\"} %" PRIu64 "\n", c, n);
	}
	metric_u64(o, "flamed_http_responses_too_large_total", "counter",
		   "Responses refused (500) for passing 256 MiB.",
		   atomic_load_explicit(&h->too_large, memory_order_relaxed));
}

static void handle_metrics(struct http *h, struct request *rq)
{
	struct daemon_status s;
	FILE *o = rq->out;

	read_status(h, &s);
	rq->type = "text/plain; version=0.0.4; charset=utf-8";
	metric(o, "flamed_build_info", "gauge", "Always 1; the version in a label.");
	fputs("flamed_build_info{version=\"", o);
	label_value(o, s.version);
	fputs("\"} 1\n", o);
	metric_u64(o, "flamed_start_time_seconds", "gauge", "Unix time flamed started.",
		   (uint64_t)(s.start_time > 0 ? s.start_time : 0));
	metric_u64(o, "flamed_frequency_hertz", "gauge", "Sampling frequency per CPU.", s.frequency);
	metric_u64(o, "flamed_cpus", "gauge", "CPUs being sampled.", s.cpus);
	metrics_samples(o, &s);
	metrics_symbolizer(o, &s);
	metrics_unwind(o, &s);
	status_python_metrics(o, &s);
	metric_u64(o, "flamed_database_bytes", "gauge", "Size of the database.", s.db_bytes);
	metric_u64(o, "flamed_stacks_stored", "gauge", "Distinct stacks in the database.", s.stacks_stored);
	metrics_http(h, o);
}

static void handle_processes(struct http *h, struct request *rq)
{
	struct store_filter f;
	struct store *st;

	int table;

	if (arg_filter(rq, &f) < 0 || arg_table(rq, &table) < 0 || !(st = open_store(h, rq)))
		return;
	rq->type = table ? "text/plain; charset=utf-8" : "application/json";
	end_query(rq, st, query_processes(st, &f, table == 0, table == 1, rq->out));
}

static void handle_threads(struct http *h, struct request *rq)
{
	struct store_filter f;
	struct store *st;

	if (arg_filter(rq, &f) < 0)
		return;
	if (f.pid < 0) {
		fail(rq, 400, "pid: required (the process whose threads to list)");
		return;
	}
	if (!(st = open_store(h, rq)))
		return;
	rq->type = "application/json";
	end_query(rq, st, query_threads(st, &f, rq->out));
}

static void handle_profile(struct http *h, struct request *rq)
{
	struct store_filter f;
	struct query_graph g;
	enum query_format fmt;
	unsigned limit = 0;
	struct store *st;

	if (arg_filter(rq, &f) < 0 || arg_format(rq, QUERY_FOLDED, &fmt) < 0 || arg_graph(h, rq, &g) < 0 ||
	    arg_uint(rq, P_LIMIT, 0, 100000, &limit) < 0 || arg_bool(rq, P_LINES, &g.lines) < 0 ||
	    !(st = open_store(h, rq)))
		return;
	set_format(rq, fmt);
	end_query(rq, st, query_profile(st, &f, fmt, &g, limit, rq->out));
}

static void handle_top(struct http *h, struct request *rq)
{
	struct store_filter f;
	unsigned limit = 0;
	struct store *st;
	bool lines = false;
	int table;

	if (arg_filter(rq, &f) < 0 || arg_uint(rq, P_LIMIT, 0, 100000, &limit) < 0 || arg_table(rq, &table) < 0 ||
	    arg_bool(rq, P_LINES, &lines) < 0 || !(st = open_store(h, rq)))
		return;
	rq->type = table ? "text/plain; charset=utf-8" : "application/json";
	end_query(rq, st, table ? query_top_text(st, &f, limit, table == 1, lines, rq->out) :
				  query_top_json(st, &f, limit, lines, rq->out));
}

static void handle_timeline(struct http *h, struct request *rq)
{
	struct store_filter f;
	bool per_thread = false;
	int64_t step;
	struct store *st;

	if (arg_filter(rq, &f) < 0)
		return;
	step = (f.to - f.from + TIMELINE_POINTS - 1) / TIMELINE_POINTS;
	step = step < 1 ? 1 : step > 86400 ? 86400 : step;
	if (arg_int(rq, P_STEP, 1, 86400, &step) < 0 || arg_bool(rq, P_PER_THREAD, &per_thread) < 0 ||
	    !(st = open_store(h, rq)))
		return;
	rq->type = "application/json";
	end_query(rq, st, query_timeline(st, &f, step, per_thread, rq->out));
}

/* The base of a diff: base_pid (default pid) over [base_from, base_to). When neither bound is given
 * the base window is the one just before [from, to), of the same length; but when base_pid names
 * another process it is [from, to) itself, so two processes are compared over the same time. One
 * bound given: the other follows at the same length. */
static int arg_base(struct request *rq, const struct store_filter *now, struct store_filter *base)
{
	int64_t len = now->to - now->from;
	int from_given, to_given;

	*base = *now;
	if (arg_int(rq, P_BASE_PID, 0, QUERY_PID_LIMIT, &base->pid) < 0)
		return -EINVAL;
	from_given = arg_time(rq, P_BASE_FROM, &base->from);
	if (from_given < 0)
		return -EINVAL;
	to_given = arg_time(rq, P_BASE_TO, &base->to);
	if (to_given < 0)
		return -EINVAL;
	if (!from_given && !to_given && base->pid == now->pid) {
		base->to = now->from;
		base->from = now->from - len;
	} else if (from_given && !to_given) {
		base->to = base->from + len;
	} else if (!from_given && to_given) {
		base->from = base->to - len;
	}
	if (base->from >= base->to)
		return fail(rq, 400, "base_from: must be before base_to (base_from %" PRId64 ", base_to %" PRId64
			    ")", base->from, base->to);
	return 0;
}

static void handle_diff(struct http *h, struct request *rq)
{
	struct store_filter now, base;
	struct query_graph g;
	enum query_format fmt;
	struct store *st;

	if (arg_filter(rq, &now) < 0 || arg_base(rq, &now, &base) < 0 ||
	    arg_format(rq, QUERY_FOLDED, &fmt) < 0 || arg_graph(h, rq, &g) < 0 || !(st = open_store(h, rq)))
		return;
	set_format(rq, fmt);
	end_query(rq, st, query_diff(st, &base, &now, fmt, &g, rq->out));
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

static void handle_pprof(struct http *h, struct request *rq)
{
	unsigned seconds = DEFAULT_PPROF_S < h->max_pprof_s ? DEFAULT_PPROF_S : h->max_pprof_s;
	struct store_filter f = { .pid = -1, .tid = -1, .from = rq->now };
	struct query_graph g;
	struct store *st;
	int err;

	if (arg_uint(rq, P_SECONDS, 1, h->max_pprof_s, &seconds) < 0)
		return;
	default_graph(h, &g);
	f.to = f.from + seconds;
	err = sleep_window(h, seconds);
	if (err == -ECANCELED) {
		fail(rq, 503, "flamed is shutting down");
		return;
	}
	if (!err && h->flush_now)
		err = h->flush_now(h->ctx);
	if (err) {
		fail(rq, 500, "cannot store the samples of the window: %s", strerror(-err));
		return;
	}
	if (!(st = open_store(h, rq)))
		return;
	set_format(rq, QUERY_PPROF);
	end_query(rq, st, query_profile(st, &f, QUERY_PPROF, &g, 0, rq->out));
}

#define B(p) (1u << (p))
#define FILTER (B(P_PID) | B(P_TID) | B(P_COMM) | B(P_FROM) | B(P_TO))
#define GRAPH (B(P_REVERSE) | B(P_TITLE) | B(P_WIDTH) | B(P_MINWIDTH))

static const struct route routes[] = {
	{ "/", handle_dashboard, 0, 0 },
	{ "/healthz", handle_healthz, 0, 0 },
	{ "/metrics", handle_metrics, 0, 0 },
	{ "/api/v1/status", handle_status, B(P_FORMAT), 0 },
	{ "/api/v1/processes", handle_processes, B(P_FROM) | B(P_TO) | B(P_FORMAT), 0 },
	{ "/api/v1/threads", handle_threads, B(P_PID) | B(P_FROM) | B(P_TO), 0 },
	{ "/api/v1/profile", handle_profile, FILTER | GRAPH | B(P_FORMAT) | B(P_LIMIT) | B(P_LINES),
	  B(QUERY_FOLDED) | B(QUERY_JSON) | B(QUERY_SVG) | B(QUERY_PPROF) | B(QUERY_TOP) },
	{ "/api/v1/top", handle_top, FILTER | B(P_LIMIT) | B(P_FORMAT) | B(P_LINES), 0 },
	{ "/api/v1/timeline", handle_timeline, FILTER | B(P_STEP) | B(P_PER_THREAD), 0 },
	{ "/api/v1/diff", handle_diff,
	  B(P_PID) | B(P_FROM) | B(P_TO) | B(P_BASE_PID) | B(P_BASE_FROM) | B(P_BASE_TO) | B(P_FORMAT) | GRAPH,
	  B(QUERY_FOLDED) | B(QUERY_JSON) | B(QUERY_SVG) },
	{ "/debug/pprof/profile", handle_pprof, B(P_SECONDS), 0 },
};

/* ---- the server ---- */

/* MHD's URI logger, called once per request with the whole request target: tags the request as
 * having a URL within URL_MAX or not (the access handler answers 414 then). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct http *h = cls;

	(void)conn;
	return strnlen(uri, URL_MAX + 1) > URL_MAX ? &h->tag_url_long : &h->tag_url_ok;
}

/* Checks the request line and arguments, then runs the route's handler. */
/* Does the request carry "Authorization: Bearer TOKEN" with the daemon's token? Compared in time
 * that depends on the token's length only, not on where a guess goes wrong. */
static bool authorized(const struct http *h, struct MHD_Connection *conn)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	size_t len;
	unsigned char diff;

	if (!v || strncmp(v, "Bearer ", 7))
		return false;
	v += 7;
	len = strlen(v);
	diff = len != h->token_len;
	for (size_t i = 0; i < h->token_len; i++)
		diff |= (unsigned char)h->token[i] ^ (unsigned char)(i < len ? v[i] : 0);
	return diff == 0;
}

/* Endpoints anyone may read: liveness, and the dashboard page (static; it asks for the token and
 * sends it with its own requests). */
static bool is_public(const struct route *r)
{
	return r->handle == handle_healthz || r->handle == handle_dashboard;
}

static void dispatch(struct http *h, struct MHD_Connection *conn, const char *url, const char *method,
		     bool url_long, struct request *rq)
{
	char show[72];
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]) && strcmp(url, routes[i].path); i++)
		;
	if (url_long) {
		fail(rq, 414, "the URL passes %d bytes", URL_MAX);
		return;
	}
	if (i == sizeof(routes) / sizeof(routes[0])) {
		fail(rq, 404, "no such endpoint: see /api/v1/status, /api/v1/profile, /metrics, /healthz");
		return;
	}
	rq->route = &routes[i];
	if (h->token && !is_public(rq->route) && !authorized(h, conn)) {
		rq->challenge = "Bearer realm=\"flamed\"";
		fail(rq, 401, "this endpoint needs the header Authorization: Bearer TOKEN (flamed --auth-token-file)");
		return;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		rq->allow = "GET, HEAD";
		fail(rq, 405, "method %s not allowed: use GET", shown(method, show, sizeof(show)));
		return;
	}
	if (MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, collect_arg, rq) < 0)
		fail(rq, 500, "cannot read the query string");
	if (rq->status < 400)
		rq->route->handle(h, rq);
}

/* MHD's completion notice, for each request the access handler saw: answered, or its connection
 * gone. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode code)
{
	struct http *h = cls;

	(void)conn;
	(void)req_cls;
	(void)code;
	pthread_mutex_lock(&h->lock);
	if (h->active && --h->active == 0 && h->stopping)
		pthread_cond_broadcast(&h->wake);
	pthread_mutex_unlock(&h->lock);
}

/* Does the request announce a body? */
static bool has_body(struct MHD_Connection *conn)
{
	const char *len = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	return (len && strcmp(len, "0")) ||
	       MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/* MHD's access handler. A request without a body is answered at the second call, once MHD has read
 * all of it: answered at the first, MHD cannot tell that no body follows and closes the connection
 * after the answer, so no connection is kept alive and clients that reconnect at once meet the
 * connection limit. A request with a body (no endpoint reads one) is answered at the first call, and
 * MHD closes that connection. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct http *h = cls;
	struct request rq = { .status = 200, .type = "text/plain; charset=utf-8", .now = (int64_t)time(NULL) };

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	if (*req_cls != &h->tag_seen_ok && *req_cls != &h->tag_seen_long) {
		*req_cls = *req_cls == &h->tag_url_long ? &h->tag_seen_long : &h->tag_seen_ok;
		pthread_mutex_lock(&h->lock);
		h->active++;
		pthread_mutex_unlock(&h->lock);
		if (!has_body(conn))
			return MHD_YES;
	}
	rq.out = body_open(&rq.body);
	if (!rq.out)
		fail(&rq, 500, "out of memory");
	else
		dispatch(h, conn, url, method, *req_cls == &h->tag_seen_long, &rq);
	return respond(h, conn, &rq);
}

int http_parse_listen(const char *s, struct sockaddr_storage *out, unsigned *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *port_s;
	char *end;
	unsigned long port;
	size_t hlen;

	if (!s || !out || !len || !(colon = strrchr(s, ':')))
		return -EINVAL;
	port_s = colon + 1;
	hlen = (size_t)(colon - s);
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (*port_s < '0' || *port_s > '9' || *end || errno || port > 65535 || hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (s[0] == '[') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)out;

		if (hlen < 3 || s[hlen - 1] != ']')
			return -EINVAL;
		memcpy(host, s + 1, hlen - 2);
		host[hlen - 2] = '\0';
		if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
			return -EINVAL;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)out;

		memcpy(host, s, hlen);
		host[hlen] = '\0';
		if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			return -EINVAL;
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof(*a4);
	}
	return 0;
}

/* Fills h from opts; 0 or -EINVAL / -ENOMEM. */
static int http_init(struct http *h, const struct http_opts *opts)
{
	pthread_condattr_t attr;
	int err;

	h->get_status = opts->get_status;
	h->flush_now = opts->flush_now;
	h->ctx = opts->ctx;
	h->max_pprof_s = opts->max_pprof_seconds ? opts->max_pprof_seconds : DEFAULT_MAX_PPROF_S;
	h->db_path = strdup(opts->db_path);
	if (!h->db_path)
		return -ENOMEM;
	if (opts->auth_token) {
		h->token_len = strlen(opts->auth_token);
		h->token = strdup(opts->auth_token);
		if (!h->token_len || !h->token)
			return h->token ? -EINVAL : -ENOMEM;
	}
	err = pthread_condattr_init(&attr);
	if (err)
		return -err;
	err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(&h->wake, &attr);
	pthread_condattr_destroy(&attr);
	return -err;
}

int http_new(const struct http_opts *opts, struct http **out)
{
	struct sockaddr_storage addr;
	const union MHD_DaemonInfo *info;
	unsigned addr_len, flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			    MHD_USE_POLL | MHD_USE_ITC;
	struct http *h;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!opts || !opts->db_path)
		return -EINVAL;
	err = http_parse_listen(opts->listen ? opts->listen : DEFAULT_LISTEN, &addr, &addr_len);
	if (err)
		return err;
	if (addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	/* The mutex first: http_free destroys it and the condition whatever else failed. */
	pthread_mutex_init(&h->lock, NULL);
	err = http_init(h, opts);
	if (err) {
		pthread_mutex_destroy(&h->lock);
		free(h->db_path);
		free(h->token);
		free(h);
		return err;
	}
	errno = 0;
	h->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
				  MHD_OPTION_CONNECTION_LIMIT,
				  opts->max_connections ? opts->max_connections : DEFAULT_MAX_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT, opts->timeout_s ? opts->timeout_s : DEFAULT_TIMEOUT_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONN_MEMORY_LIMIT,
				  MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				  MHD_OPTION_END);
	/* MHD says nothing of why it failed; errno is what bind() or pthread_create() left. */
	err = !h->mhd ? (errno ? -errno : -EIO) : 0;
	info = h->mhd ? MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT) : NULL;
	if (!err && !info)
		err = -EIO;
	if (err) {
		http_free(h);
		return err;
	}
	h->port = info->port;
	*out = h;
	return 0;
}

unsigned http_port(const struct http *h)
{
	return h ? h->port : 0;
}

/* Stops accepting, wakes the sleepers, and gives the requests in flight STOP_GRACE_S to be answered. */
static void http_drain(struct http *h)
{
	struct timespec deadline;
	int r = 0;

	if (clock_gettime(CLOCK_MONOTONIC, &deadline) < 0)
		return;
	deadline.tv_sec += STOP_GRACE_S;
	pthread_mutex_lock(&h->lock);
	h->stopping = true;
	pthread_cond_broadcast(&h->wake);
	while (h->active && r == 0)
		r = pthread_cond_timedwait(&h->wake, &h->lock, &deadline);
	pthread_mutex_unlock(&h->lock);
}

void http_free(struct http *h)
{
	MHD_socket listen_fd;

	if (!h)
		return;
	if (h->mhd) {
		/* Quiesced, MHD hands the listening socket back: it is closed once MHD's threads are gone. */
		listen_fd = MHD_quiesce_daemon(h->mhd);
		http_drain(h);
		MHD_stop_daemon(h->mhd); /* closes the connections left and joins their threads */
		if (listen_fd != MHD_INVALID_SOCKET)
			close(listen_fd);
	}
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
	free(h->db_path);
	if (h->token)
		explicit_bzero(h->token, h->token_len);
	free(h->token);
	free(h);
}
