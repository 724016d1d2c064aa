/* httpget.c - GET with libcurl: http:// and https:// (the CA, client certificate and key given, else
 * the system's CAs), proxies from the environment, bounded in time and body. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <curl/curl.h>

#include "httpget.h"

#define MAX_URL 8192
#define MAX_REDIRECTS 5

/* Where a response's body goes: out for a 2xx, errbuf (cut) otherwise, and at most HTTPGET_MAX_BODY. */
struct sink {
	CURL *curl;
	FILE *out;
	char *errbuf;
	size_t errlen, errn;
	uint64_t total;
	bool too_big, write_failed;
};

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct sink *k = ctx;
	size_t len = size * n;
	long code = 0;

	if (k->total + len > HTTPGET_MAX_BODY) {
		k->too_big = true;
		return 0; /* stops the transfer */
	}
	k->total += len;
	curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code / 100 == 2) {
		if (fwrite(data, 1, len, k->out) != len) {
			k->write_failed = true;
			return 0;
		}
		return len;
	}
	if (k->errn + 1 < k->errlen) {
		size_t room = k->errlen - 1 - k->errn, take = len < room ? len : room;

		memcpy(k->errbuf + k->errn, data, take);
		k->errn += take;
		k->errbuf[k->errn] = '\0';
	}
	return len;
}

/* -errno for a libcurl failure; its message in errbuf. */
static int failure(CURLcode rc, const char *detail, char *errbuf, size_t errlen)
{
	snprintf(errbuf, errlen, "%s", detail[0] ? detail : curl_easy_strerror(rc));
	switch (rc) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
		return -EINVAL;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EPROTO; /* TLS (a certificate not trusted, refused), a malformed answer */
	}
}

int http_get(const char *base_url, const struct http_tls *tls, const char *target, const char *bearer,
	     unsigned timeout_s, FILE *out, int *status, char *errbuf, size_t errlen)
{
	static bool ready;
	char url[MAX_URL], detail[CURL_ERROR_SIZE] = "", auth[600];
	struct sink k = { .out = out, .errbuf = errbuf, .errlen = errlen };
	struct curl_slist *headers = NULL;
	size_t blen = strlen(base_url);
	long code = 0;
	CURLcode rc;
	int err = 0;

	*status = 0;
	if (errlen)
		errbuf[0] = '\0';
	if (strncmp(base_url, "http://", 7) && strncmp(base_url, "https://", 8))
		return -EINVAL;
	while (blen && base_url[blen - 1] == '/')
		blen--;
	if (blen + strlen(target) >= sizeof(url))
		return -EINVAL;
	memcpy(url, base_url, blen);
	strcpy(url + blen, target);
	if (!ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT))
			return -ENOMEM;
		ready = true;
	}
	if (!(k.curl = curl_easy_init()))
		return -ENOMEM;
	if (bearer) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", bearer);
		if (!(headers = curl_slist_append(NULL, auth))) {
			curl_easy_cleanup(k.curl);
			explicit_bzero(auth, sizeof(auth));
			return -ENOMEM;
		}
	}
	curl_easy_setopt(k.curl, CURLOPT_URL, url);
	curl_easy_setopt(k.curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(k.curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(k.curl, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(k.curl, CURLOPT_MAXREDIRS, (long)MAX_REDIRECTS);
	curl_easy_setopt(k.curl, CURLOPT_CONNECTTIMEOUT, (long)timeout_s);
	/* no byte for timeout_s: the step is stuck (a whole answer may take longer: a big profile) */
	curl_easy_setopt(k.curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(k.curl, CURLOPT_LOW_SPEED_TIME, (long)timeout_s);
	curl_easy_setopt(k.curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(k.curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(k.curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(k.curl, CURLOPT_WRITEDATA, &k);
	curl_easy_setopt(k.curl, CURLOPT_ERRORBUFFER, detail);
	curl_easy_setopt(k.curl, CURLOPT_USERAGENT, "flamectl/" FLAMED_VERSION);
	if (tls && tls->cacert)
		curl_easy_setopt(k.curl, CURLOPT_CAINFO, tls->cacert);
	if (tls && tls->cert)
		curl_easy_setopt(k.curl, CURLOPT_SSLCERT, tls->cert);
	if (tls && tls->key)
		curl_easy_setopt(k.curl, CURLOPT_SSLKEY, tls->key);
	rc = curl_easy_perform(k.curl);
	curl_easy_getinfo(k.curl, CURLINFO_RESPONSE_CODE, &code);
	if (k.too_big)
		err = -EFBIG;
	else if (k.write_failed)
		err = -EIO;
	else if (rc != CURLE_OK)
		err = failure(rc, detail, errbuf, errlen);
	*status = (int)code;
	curl_slist_free_all(headers);
	explicit_bzero(auth, sizeof(auth));
	curl_easy_cleanup(k.curl);
	return err;
}

int http_add_param(char *buf, size_t len, const char *name, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(buf);

	if (n + strlen(name) + 2 >= len)
		return -ENOSPC;
	n += (size_t)sprintf(buf + n, "%c%s=", strchr(buf, '?') ? '&' : '?', name);
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			     strchr("-._~", *p);

		if (n + (plain ? 1 : 3) >= len)
			return -ENOSPC;
		if (plain) {
			buf[n++] = (char)*p;
		} else {
			buf[n++] = '%';
			buf[n++] = hex[*p >> 4];
			buf[n++] = hex[*p & 15];
		}
	}
	buf[n] = '\0';
	return 0;
}
