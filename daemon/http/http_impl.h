/* http_impl.h - what the HTTP server's files share: the server's state, a request and its route, the
 * query parameters; each file's functions for the files above it (server.c -> handlers.c, status.c
 * -> args.c -> reply.c). Not for other modules: they use http.h. */
#ifndef FLAMED_HTTP_IMPL_H
#define FLAMED_HTTP_IMPL_H

#include <linux/types.h> /* status.h -> profile.h needs __u32 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <microhttpd.h>

#include "http/http.h"
#include "query/query.h"
#include "query/services.h"
#include "status.h"
#include "store/store.h"
#include "util/capstream.h"

#define CODES 600                    /* HTTP status codes counted: 0..599 */
/* Queries answered at once. Each opens the database read-only: SQLite's page cache, its statements and
 * the answer being built take megabytes, so 64 connections asking at once took 200 MB (4 at once, 66
 * MB). More wait their turn (counted); /metrics, the status and the dashboard page do not. A query is
 * CPU-bound: two at once served as many per second as four on two CPUs. */
#define QUERIES_MAX 2

struct http {
	struct MHD_Daemon *mhd;
	char *db_path;
	const struct store_namer *namer; /* NULL: frames are shown as stored */
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
	unsigned queries; /* requests with the database open (at most QUERIES_MAX) */
	pthread_cond_t query_done; /* a query closed the database: the next may open it */
	_Atomic uint64_t queries_waited;   /* queries that waited for one of the QUERIES_MAX */
	_Atomic uint64_t responses[CODES]; /* by status code */
	_Atomic uint64_t too_large;        /* responses refused for passing BODY_MAX */
	/* Their addresses tag a request (via *req_cls) as having a short or an overlong URL, and as
	 * seen by the access handler once (the _seen pair). */
	char tag_url_ok, tag_url_long, tag_seen_ok, tag_seen_long;
};

/* The query parameters; a route lists the ones it takes. */
enum param {
	P_PID, P_TID, P_COMM, P_FROM, P_TO, P_FORMAT, P_REVERSE, P_TITLE, P_WIDTH, P_MINWIDTH, P_LIMIT,
	P_STEP, P_PER_THREAD, P_BASE_PID, P_BASE_FROM, P_BASE_TO, P_SECONDS, P_LINES, P_KIND, P_CHILDREN, P_MERGE,
	P_FLUSH, P_DEMANGLE, P_UNIT, P_CONTAINER, P_POD, P_CGROUP, P_BASE_UNIT,
	P_BASE_CONTAINER, P_GROUP, P_COUNT,
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
	struct capstream body;    /* the response being written, up to BODY_MAX bytes (full: it would pass) */
	FILE *out;                /* writes into body */
};

/* reply.c: replies. */
/* Makes rq an error reply: status and message (the message is JSON-escaped later). Returns -EINVAL,
 * so a parser can end with "return http_fail(...)". */
__attribute__((format(printf, 3, 4)))
int http_fail(struct request *rq, unsigned status, const char *fmt, ...);

/* Copies a user's value into buf for an error message: at most 64 bytes, each byte that is not
 * printable ASCII, a quote or a backslash shown as '?' (the message stays readable, valid UTF-8). */
const char *http_shown(const char *v, char *buf, size_t size);

/* A stream writing into b (empty). NULL with errno on failure. */
FILE *http_body_open(struct capstream *b);

/* Finishes rq's body (or replaces it by the error) and queues the response. */
enum MHD_Result http_respond(struct http *h, struct MHD_Connection *conn, struct request *rq);

/* args.c: parameters. */
/* MHD_KeyValueIterator over the query string: files each argument the route takes, refuses any
 * other, a repeated one, a NUL byte inside one, and an overlong value. Stops at the first error. */
enum MHD_Result http_collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
				   const char *value, size_t value_size);

/* Reads parameter p, when given, as a whole number in min..max into *out. 0 or -EINVAL. */
int http_arg_int(struct request *rq, enum param p, int64_t min, int64_t max, int64_t *out);

int http_arg_uint(struct request *rq, enum param p, unsigned min, unsigned max, unsigned *out);

/* Reads parameter p, when given, as 0 or 1. */
int http_arg_bool(struct request *rq, enum param p, bool *out);

/* Reads parameter p, when given, as an instant: unix seconds, RFC 3339, or "-DURATION" (that long
 * before now: "-10m", "-90", "-2h"). Returns 1 when given, 0 when not, or -EINVAL. */
int http_arg_time(struct request *rq, enum param p, int64_t *out);

/* Reads the samples a query covers: pid=, tid=, comm=, from=, to= (absent: any), kind= (cpu, offcpu
 * or wall; default cpu; wall takes its sampling period from the daemon's frequency), children= (1: the
 * pid's descendants too; needs pid) and merge= (1: the family's stacks as one process's; needs
 * children). */
int http_arg_filter(struct http *h, struct request *rq, struct store_filter *f);

/* Reads format= (default dflt), one of the formats the route writes. */
int http_arg_format(struct request *rq, enum query_format dflt, enum query_format *out);

/* The daemon's live state (zeros when it gave no get_status callback). */
void http_read_status(struct http *h, struct daemon_status *s);

/* The renderers' defaults, with the daemon's sampling frequency (for pprof's period). */
void http_default_graph(struct http *h, struct query_graph *g);

/* Reads how a flame graph is drawn: reverse=, title=, width=, minwidth=. */
int http_arg_graph(struct http *h, struct request *rq, struct query_graph *g);

/* Reads format= of the table endpoints: "json" (default), "text" (aligned, for a terminal) or "tsv". */
int http_arg_table(struct request *rq, int *out);

/* handlers.c: the endpoints (route handlers). */
/* The dashboard page: one self-contained document that talks to this API, nothing else. */
void http_handle_dashboard(struct http *h, struct request *rq);

void http_handle_healthz(struct http *h, struct request *rq);

void http_handle_processes(struct http *h, struct request *rq);
void http_handle_services(struct http *h, struct request *rq);

void http_handle_threads(struct http *h, struct request *rq);

void http_handle_profile(struct http *h, struct request *rq);

void http_handle_top(struct http *h, struct request *rq);

void http_handle_timeline(struct http *h, struct request *rq);

void http_handle_diff(struct http *h, struct request *rq);

void http_handle_pprof(struct http *h, struct request *rq);

/* status.c: /api/v1/status and /metrics. */
void http_handle_status(struct http *h, struct request *rq);

void http_handle_metrics(struct http *h, struct request *rq);

#endif
