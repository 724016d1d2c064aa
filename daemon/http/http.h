/* http.h - the HTTP API: libmicrohttpd on its own threads, reading the store, never the BPF maps. */
#ifndef FLAMED_HTTP_H
#define FLAMED_HTTP_H

#include <stdbool.h>

#include "status.h"

/*
 * Endpoints (GET or HEAD; other methods 405 with Allow; unknown paths 404):
 *   /healthz                 "ok\n"
 *   /metrics                 Prometheus text format 0.0.4 (flamed_* and flamed_http_requests_total{code})
 *   /api/v1/status           the daemon's live state as JSON
 *   /api/v1/processes        from to [pid children=1]                   -> query_processes (JSON)
 *   /api/v1/threads          pid (required) from to                     -> query_threads
 *   /api/v1/profile          pid tid comm from to format reverse title width minwidth limit children merge
 *                            -> query_profile; format folded (default) | json | svg | pprof | top
 *   /api/v1/top              pid tid comm from to limit children merge  -> query_top_json
 *   /api/v1/timeline         pid tid comm from to step per_thread children merge -> query_timeline
 *   /api/v1/diff             pid base_pid from to base_from base_to format reverse title width minwidth
 *                            children -> query_diff; format folded (default) | json | svg
 *   /debug/pprof/profile     seconds: waits that long, calls flush_now, answers the whole host's
 *                            samples of those seconds as pprof (default 30, at most max_pprof_seconds)
 *
 * Parameters. from/to: unix seconds, RFC 3339 ("2024-05-01T10:00:00Z"; a '+' of an offset may come
 * unencoded, as the space a query string makes of it) or "-DURATION", that long before now ("-10m",
 * "-90", "-2h", "-1d"). Windows are [from, to); to defaults to now + 1, from to an hour before to.
 * pid, tid, base_pid: 0..4194304 (absent: any). comm: a process name. width 100..10000, minwidth
 * 0..1000 (decimal), limit 0..100000 (0: all), step 1..86400 (default: the window in about 200 steps),
 * reverse and per_thread 0 or 1. children=1 (needs pid, not tid): the process and its descendants;
 * merge=1 (needs children=1): their stacks as one process's. Every query route takes flush=1: calls
 * flush_now first, so what was sampled up to the request is in the answer. diff: base_pid defaults to pid; without base_from/base_to the base
 * window is the one of the same length just before [from, to), unless base_pid names another process:
 * then it is [from, to) itself (two processes, same time); with one bound the other follows at the
 * same length.
 *
 * Errors are {"error": "..."} (application/json) naming the parameter and what it wants: 400 for an
 * unknown parameter, one given twice, an empty or malformed value, one out of range or over 256
 * bytes, from >= to, a format the endpoint does not write; 414 for a URL over 4096 bytes; 503 while
 * the database does not exist yet (or is busy), or when shutting down; 500 for other store errors,
 * a failed flush_now, and a body that would pass 256 MiB. Every response has Cache-Control: no-store.
 *
 * Threads: one per connection (at most max_connections), so a /debug/pprof/profile request waiting
 * out its window blocks nobody. Every data request opens the store READ_ONLY for itself.
 */

struct http;

struct tls;

struct http_opts {
	const char *listen;       /* "ADDR:PORT" ("[::1]:7070" for IPv6); NULL: "127.0.0.1:7070" */
	const char *db_path;      /* the store, opened read-only per request */
	const char *auth_token;   /* NULL: open; else every request but /healthz and the dashboard page
				   * needs "Authorization: Bearer TOKEN" (401 otherwise) */
	unsigned max_connections; /* 0: 64 */
	unsigned timeout_s;       /* idle connection timeout; 0: 30 */
	unsigned max_pprof_seconds; /* upper bound of /debug/pprof/profile?seconds=; 0: 300 */
	/* NULL: plain HTTP; else HTTPS with the certificate and key it holds (the caller's: alive until
	 * http_free, reloaded by the caller with tls_reload) */
	struct tls *tls;
	/* Copies the daemon's live state; called from HTTP threads, must be thread-safe. */
	void (*get_status)(struct daemon_status *out, void *ctx);
	/* Stores what is pending now and returns when it is stored (or failed: -errno); called from
	 * HTTP threads, must be thread-safe. */
	/* It must also return (an error) once the daemon no longer flushes: http_free joins the thread
	 * of a request blocked in it. Either callback may be NULL (zeros; no flush). */
	int (*flush_now)(void *ctx);
	void *ctx;
	/* NULL, or what names the frames a request reads that were stored unnamed (store_set_namer);
	 * thread-safe, alive until http_free. */
	const struct store_namer *namer;
};

/* Parses "ADDR:PORT" / "[ADDR6]:PORT" into a sockaddr; 0 or -EINVAL. Exposed for tests. */
/* Numeric addresses only (no host names, no scope ids); PORT is 0..65535 in decimal, 0 for any free
 * port. "0.0.0.0:PORT" or "[::]:PORT" listens on all interfaces. */
struct sockaddr_storage;
int http_parse_listen(const char *s, struct sockaddr_storage *out, unsigned *len);

/* Whether an address http_parse_listen gave is a loopback one: 127.0.0.0/8 or ::1. */
bool http_addr_is_loopback(const struct sockaddr_storage *a);

/* Starts serving. Returns 0, -EINVAL (bad listen address), -EADDRINUSE, or -errno. */
/* Also -EINVAL without opts or db_path (which may not exist yet: data requests are 503 until it
 * does). An address that cannot be bound gives bind()'s error (-EADDRINUSE, -EACCES, -EADDRNOTAVAIL)
 * with every libmicrohttpd; other errors are what thread creation left in errno, -EIO when
 * libmicrohttpd gave no reason. opts' strings are copied. On failure *out is NULL. */
int http_new(const struct http_opts *opts, struct http **out);

/* The port actually bound (useful with port 0). */
unsigned http_port(const struct http *h);

/* Stops serving (waits for requests in flight); NULL is safe. */
/* Stops accepting, wakes /debug/pprof/profile requests asleep in their window (they answer 503),
 * gives the requests in flight up to 3 s to be answered, then closes what is left and joins every
 * thread. Call it before closing what get_status and flush_now use. */
void http_free(struct http *h);

#endif
