/* reply.c - a reply being built: its body (a bounded stream), an error reply's JSON, headers, and
 * the response handed to MHD, counted by status code. */
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
#include "render/json.h"

#define BODY_MAX ((size_t)256 << 20) /* bytes of one response */

/* Makes rq an error reply: status and message (the message is JSON-escaped later). Returns -EINVAL,
 * so a parser can end with "return http_fail(...)". */
__attribute__((format(printf, 3, 4)))
int http_fail(struct request *rq, unsigned status, const char *fmt, ...)
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
const char *http_shown(const char *v, char *buf, size_t size)
{
	size_t i;

	for (i = 0; v[i] && i + 1 < size && i < 64; i++)
		buf[i] = v[i] >= 0x20 && v[i] < 0x7f && v[i] != '"' && v[i] != '\\' ? v[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* A stream writing into b (empty), up to BODY_MAX bytes. NULL with errno on failure. */
FILE *http_body_open(struct capstream *b)
{
	return capstream_open(b, BODY_MAX);
}

/* Replaces the body with {"error": rq->error}. Returns 0 or -ENOMEM. */
static int error_body(struct request *rq)
{
	FILE *out;

	free(rq->body.data);
	out = http_body_open(&rq->body);
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
enum MHD_Result http_respond(struct http *h, struct MHD_Connection *conn, struct request *rq)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	bool closed = !rq->out || fclose(rq->out) == 0;

	rq->out = NULL;
	if (rq->body.full) {
		atomic_fetch_add_explicit(&h->too_large, 1, memory_order_relaxed);
		http_fail(rq, 500, "the response would pass %zu MiB: ask for a shorter window, one pid or a limit",
		     BODY_MAX >> 20);
	} else if (!closed && rq->status < 400) {
		http_fail(rq, 500, "out of memory writing the response");
	}
	if (rq->status >= 400 && error_body(rq) < 0) {
		free(rq->body.data);
		return MHD_NO;
	}
	resp = MHD_create_response_from_buffer(rq->body.len, rq->body.data, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(rq->body.data);
		return MHD_NO;
	}
	ret = add_headers(resp, rq) ? MHD_queue_response(conn, rq->status, resp) : MHD_NO;
	MHD_destroy_response(resp);
	count_response(h, rq->status);
	return ret;
}
