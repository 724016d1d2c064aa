/* httpget.h - GET for flamectl --server, through libcurl: http:// or https://, bounded. */
#ifndef FLAMECTL_HTTPGET_H
#define FLAMECTL_HTTPGET_H

#include <stddef.h>
#include <stdio.h>

/* The most body bytes accepted; more is an error (-EFBIG). */
#define HTTPGET_MAX_BODY (1ULL << 30)

/* TLS for https:// servers: the CA certificates to trust (PEM; NULL: the system's), and a client
 * certificate and its key (PEM; NULL: none) for a server that requires one. */
struct http_tls {
	const char *cacert, *cert, *key;
};

/* GETs base_url (http[s]://HOST[:PORT][/prefix]) + target ("/api/v1/...?..."), with tls (NULL: the
 * defaults), connecting within timeout_s seconds and failing when no byte comes for timeout_s; up to 5
 * redirects; proxies as libcurl takes them from the environment (https_proxy, no_proxy...). A 2xx body
 * is written to out; any other body is kept (up to errlen - 1 bytes) in errbuf. *status is the HTTP
 * status. bearer: sent as "Authorization: Bearer" when not NULL. Returns 0 when a response was read
 * (whatever its status), or with what failed in errbuf: -EINVAL (not an http or https URL),
 * -ECONNREFUSED, -EHOSTUNREACH, -ETIMEDOUT, -EPROTO (TLS: a certificate not trusted, a handshake
 * refused; a malformed answer), -EFBIG (a body over HTTPGET_MAX_BODY), -EIO (out could not be written),
 * -ENOMEM. */
int http_get(const char *base_url, const struct http_tls *tls, const char *target, const char *bearer,
	     unsigned timeout_s, FILE *out, int *status, char *errbuf, size_t errlen);

/* Appends "&name=value" (or "?name=value" first) to the target in buf, percent-encoding value.
 * Returns 0 or -ENOSPC. */
int http_add_param(char *buf, size_t len, const char *name, const char *value);

#endif
