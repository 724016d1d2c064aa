/* httpget.h - a minimal HTTP/1.1 GET client for flamectl --server (plain http, bounded). */
#ifndef FLAMECTL_HTTPGET_H
#define FLAMECTL_HTTPGET_H

#include <stddef.h>
#include <stdio.h>

/* The most body bytes accepted; more is an error (-EFBIG). */
#define HTTPGET_MAX_BODY (1ULL << 30)

/* GETs base_url (http://HOST[:PORT][/prefix]) + target ("/api/v1/...?..."), waiting at most timeout_s
 * seconds for each network step. A 2xx body is written to out; any other body is kept (up to
 * errlen - 1 bytes) in errbuf. *status is the HTTP status. bearer: sent as "Authorization: Bearer"
 * when not NULL. Returns 0 when a response was read (whatever its status), -EINVAL (bad URL),
 * -ECONNREFUSED and other -errno for network failures, -EPROTO (malformed response), -EFBIG. */
int http_get(const char *base_url, const char *target, const char *bearer, unsigned timeout_s, FILE *out,
	     int *status, char *errbuf, size_t errlen);

/* Appends "&name=value" (or "?name=value" first) to the target in buf, percent-encoding value.
 * Returns 0 or -ENOSPC. */
int http_add_param(char *buf, size_t len, const char *name, const char *value);

#endif
