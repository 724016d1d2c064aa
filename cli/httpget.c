/* httpget.c - GET over a TCP socket: parse the URL, send one request, read status, headers and body. */
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "httpget.h"

#define MAX_HEADER 16384

struct url {
	char host[256];
	char port[8];
	char prefix[512];
};

/* Splits "http://host[:port][/prefix]" ("[v6]" hosts too). Returns 0 or -EINVAL. */
static int parse_url(const char *s, struct url *u)
{
	const char *h, *end, *colon = NULL, *slash;
	size_t hl;

	if (strncmp(s, "http://", 7))
		return -EINVAL;
	h = s + 7;
	slash = strchr(h, '/');
	end = slash ? slash : h + strlen(h);
	if (*h == '[') {
		const char *rb = memchr(h, ']', end - h);

		if (!rb)
			return -EINVAL;
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
		if (!colon && rb + 1 != end)
			return -EINVAL;
		h++;
		hl = rb - h;
	} else {
		colon = memchr(h, ':', end - h);
		hl = (colon ? colon : end) - h;
	}
	if (!hl || hl >= sizeof(u->host))
		return -EINVAL;
	memcpy(u->host, h, hl);
	u->host[hl] = '\0';
	if (colon) {
		size_t pl = end - colon - 1;

		if (!pl || pl >= sizeof(u->port) || strspn(colon + 1, "0123456789") < pl)
			return -EINVAL;
		memcpy(u->port, colon + 1, pl);
		u->port[pl] = '\0';
	} else {
		strcpy(u->port, "80");
	}
	snprintf(u->prefix, sizeof(u->prefix), "%s", slash ? slash : "");
	if (u->prefix[0] && u->prefix[strlen(u->prefix) - 1] == '/')
		u->prefix[strlen(u->prefix) - 1] = '\0';
	return 0;
}

static int connect_to(const struct url *u, unsigned timeout_s)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	struct timeval tv = { .tv_sec = timeout_s };
	int fd = -1, err = -ECONNREFUSED;

	if (getaddrinfo(u->host, u->port, &hints, &res))
		return -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		err = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd >= 0 ? fd : err;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A buffered reader over the socket. */
struct reader {
	int fd;
	char buf[65536];
	size_t pos, len;
};

/* Next byte, or -1 at EOF / -2 on error. */
static int next_byte(struct reader *r)
{
	if (r->pos == r->len) {
		ssize_t n;

		do
			n = recv(r->fd, r->buf, sizeof(r->buf), 0);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return -2;
		if (n == 0)
			return -1;
		r->pos = 0;
		r->len = (size_t)n;
	}
	return (unsigned char)r->buf[r->pos++];
}

/* Reads one CRLF-terminated line (without CRLF). Returns 0, -EPROTO or -EIO. */
static int read_line(struct reader *r, char *line, size_t cap)
{
	size_t n = 0;
	int c;

	while ((c = next_byte(r)) >= 0 && c != '\n') {
		if (n + 1 >= cap)
			return -EPROTO;
		line[n++] = (char)c;
	}
	if (c == -2)
		return -EIO;
	if (c == -1 && n == 0)
		return -EPROTO;
	if (n && line[n - 1] == '\r')
		n--;
	line[n] = '\0';
	return 0;
}

/* The body goes to out (2xx) or, trimmed, to errbuf. */
struct sink {
	FILE *out;
	char *err;
	size_t errlen, errused;
	unsigned long long total;
};

static int put(struct sink *s, const char *p, size_t n)
{
	s->total += n;
	if (s->total > HTTPGET_MAX_BODY)
		return -EFBIG;
	if (s->out)
		return fwrite(p, 1, n, s->out) == n ? 0 : -EIO;
	while (n-- && s->errused + 1 < s->errlen)
		s->err[s->errused++] = *p++;
	return 0;
}

/* Copies len bytes (or until EOF when len is -1) of the body. */
static int copy_body(struct reader *r, struct sink *s, long long len)
{
	while (len != 0) {
		if (r->pos == r->len) {
			int c = next_byte(r);

			if (c == -1)
				return len < 0 ? 0 : -EPROTO;
			if (c == -2)
				return -EIO;
			r->pos--; /* put it back */
		}
		size_t n = r->len - r->pos;
		if (len > 0 && (long long)n > len)
			n = (size_t)len;
		int err = put(s, r->buf + r->pos, n);
		if (err)
			return err;
		r->pos += n;
		if (len > 0)
			len -= (long long)n;
	}
	return 0;
}

static int copy_chunked(struct reader *r, struct sink *s)
{
	char line[128];

	for (;;) {
		char *end;
		int err = read_line(r, line, sizeof(line));

		if (err)
			return err;
		unsigned long long n = strtoull(line, &end, 16);
		if (end == line)
			return -EPROTO;
		if (n == 0)
			return 0;
		if (n > HTTPGET_MAX_BODY)
			return -EFBIG;
		err = copy_body(r, s, (long long)n);
		if (!err)
			err = read_line(r, line, sizeof(line));
		if (err)
			return err;
	}
}

static int read_response(struct reader *r, FILE *out, int *status, char *errbuf, size_t errlen)
{
	char line[MAX_HEADER];
	long long len = -1;
	bool chunked = false;
	int err = read_line(r, line, sizeof(line));

	if (err)
		return err;
	if (sscanf(line, "HTTP/1.%*d %d", status) != 1)
		return -EPROTO;
	while (!(err = read_line(r, line, sizeof(line))) && line[0]) {
		if (!strncasecmp(line, "Content-Length:", 15))
			len = strtoll(line + 15, NULL, 10);
		else if (!strncasecmp(line, "Transfer-Encoding:", 18) && strcasestr(line + 18, "chunked"))
			chunked = true;
	}
	if (err)
		return err;
	struct sink s = { .out = *status / 100 == 2 ? out : NULL, .err = errbuf, .errlen = errlen };
	err = chunked ? copy_chunked(r, &s) : copy_body(r, &s, len);
	if (errlen)
		errbuf[s.errused < errlen ? s.errused : errlen - 1] = '\0';
	return err;
}

int http_get(const char *base_url, const char *target, const char *bearer, unsigned timeout_s, FILE *out,
	     int *status, char *errbuf, size_t errlen)
{
	static struct reader r; /* 64 KiB: off the stack; flamectl makes one request at a time */
	struct url u;
	char req[8192];
	int fd, n, err;

	if (errlen)
		errbuf[0] = '\0';
	if (parse_url(base_url, &u))
		return -EINVAL;
	n = snprintf(req, sizeof(req),
		     "GET %s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: flamectl\r\nConnection: close\r\n%s%s%s\r\n",
		     u.prefix, target, strchr(u.host, ':') ? "[" : "", u.host, strchr(u.host, ':') ? "]" : "", u.port,
		     bearer ? "Authorization: Bearer " : "", bearer ? bearer : "", bearer ? "\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(req))
		return -EINVAL;
	fd = connect_to(&u, timeout_s);
	if (fd < 0)
		return fd;
	err = send_all(fd, req, (size_t)n);
	if (!err) {
		r.fd = fd;
		r.pos = r.len = 0;
		err = read_response(&r, out, status, errbuf, errlen);
	}
	close(fd);
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
