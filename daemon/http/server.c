/* server.c - the HTTP server: MHD set up on the listen address, each request routed (URL bound,
 * token checked, method allowed) to its handler and answered, and a clean stop. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http/http_impl.h"
#include "http/tls.h"

#define DEFAULT_LISTEN "127.0.0.1:7070"
#define DEFAULT_MAX_CONNECTIONS 64
#define DEFAULT_TIMEOUT_S 30
#define DEFAULT_MAX_PPROF_S 300
#define URL_MAX 4096                 /* bytes of the request target, query string included */
#define CONN_MEMORY_LIMIT ((size_t)32 << 10)
#define STOP_GRACE_S 3                /* http_free waits this long for requests in flight */

#define B(p) (1u << (p))
#define GROUPS (B(P_UNIT) | B(P_CONTAINER) | B(P_POD) | B(P_CGROUP))
#define FILTER (B(P_PID) | B(P_TID) | B(P_COMM) | B(P_FROM) | B(P_TO) | B(P_KIND) | B(P_CHILDREN) | B(P_MERGE) | B(P_FLUSH) | \
		GROUPS)
#define GRAPH (B(P_REVERSE) | B(P_TITLE) | B(P_WIDTH) | B(P_MINWIDTH))

static const struct route routes[] = {
	{ "/", http_handle_dashboard, 0, 0 },
	{ "/healthz", http_handle_healthz, 0, 0 },
	{ "/metrics", http_handle_metrics, 0, 0 },
	{ "/api/v1/status", http_handle_status, B(P_FORMAT), 0 },
	{ "/api/v1/processes", http_handle_processes,
	  B(P_PID) | B(P_CHILDREN) | B(P_FROM) | B(P_TO) | B(P_FORMAT) | B(P_KIND) | B(P_FLUSH) | GROUPS, 0 },
	{ "/api/v1/services", http_handle_services,
	  B(P_PID) | B(P_CHILDREN) | B(P_FROM) | B(P_TO) | B(P_FORMAT) | B(P_KIND) | B(P_FLUSH) | B(P_COMM) | GROUPS, 0 },
	{ "/api/v1/threads", http_handle_threads, B(P_PID) | B(P_FROM) | B(P_TO) | B(P_KIND) | B(P_FLUSH) | GROUPS, 0 },
	{ "/api/v1/profile", http_handle_profile,
	  FILTER | GRAPH | B(P_FORMAT) | B(P_LIMIT) | B(P_LINES) | B(P_DEMANGLE) | B(P_GROUP),
	  B(QUERY_FOLDED) | B(QUERY_JSON) | B(QUERY_SVG) | B(QUERY_PPROF) | B(QUERY_TOP) },
	{ "/api/v1/top", http_handle_top, FILTER | B(P_LIMIT) | B(P_FORMAT) | B(P_LINES) | B(P_DEMANGLE), 0 },
	{ "/api/v1/timeline", http_handle_timeline, FILTER | B(P_STEP) | B(P_PER_THREAD), 0 },
	{ "/api/v1/diff", http_handle_diff,
	  B(P_PID) | B(P_FROM) | B(P_TO) | B(P_BASE_PID) | B(P_BASE_FROM) | B(P_BASE_TO) | B(P_FORMAT) | B(P_KIND) |
	  B(P_CHILDREN) | B(P_FLUSH) | B(P_DEMANGLE) | GRAPH | GROUPS | B(P_BASE_UNIT) | B(P_BASE_CONTAINER),
	  B(QUERY_FOLDED) | B(QUERY_JSON) | B(QUERY_SVG) },
	{ "/debug/pprof/profile", http_handle_pprof, B(P_SECONDS) | GROUPS, 0 },
};

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
	return r->handle == http_handle_healthz || r->handle == http_handle_dashboard;
}

static void dispatch(struct http *h, struct MHD_Connection *conn, const char *url, const char *method,
		     bool url_long, struct request *rq)
{
	char show[72];
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]) && strcmp(url, routes[i].path); i++)
		;
	if (url_long) {
		http_fail(rq, 414, "the URL passes %d bytes", URL_MAX);
		return;
	}
	if (i == sizeof(routes) / sizeof(routes[0])) {
		http_fail(rq, 404, "no such endpoint: see /api/v1/status, /api/v1/profile, /metrics, /healthz");
		return;
	}
	rq->route = &routes[i];
	if (h->token && !is_public(rq->route) && !authorized(h, conn)) {
		rq->challenge = "Bearer realm=\"flamed\"";
		http_fail(rq, 401, "this endpoint needs the header Authorization: Bearer TOKEN (flamed --auth-token-file)");
		return;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		rq->allow = "GET, HEAD";
		http_fail(rq, 405, "method %s not allowed: use GET", http_shown(method, show, sizeof(show)));
		return;
	}
	if (MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, http_collect_arg, rq) < 0)
		http_fail(rq, 500, "cannot read the query string");
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
	rq.out = http_body_open(&rq.body);
	if (!rq.out)
		http_fail(&rq, 500, "out of memory");
	else
		dispatch(h, conn, url, method, *req_cls == &h->tag_seen_long, &rq);
	return http_respond(h, conn, &rq);
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

bool http_addr_is_loopback(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
	return a->ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
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
	h->namer = opts->namer;
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
	if (!err && (err = pthread_cond_init(&h->query_done, NULL)))
		pthread_cond_destroy(&h->wake);
	pthread_condattr_destroy(&attr);
	return -err;
}

/* Whether the listen address can be bound, tried as MHD binds it (SO_REUSEADDR; an IPv6 address for
 * IPv6 only) on a socket closed at once: 0, or -errno of the bind (-EADDRINUSE, -EACCES,
 * -EADDRNOTAVAIL) or of the socket. */
static int bind_error(const struct sockaddr_storage *addr, unsigned addr_len)
{
	int one = 1, err = 0;
	int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (addr->ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, (const struct sockaddr *)addr, addr_len) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* An empty MHD_OPTION_ARRAY: the place of the certificate option when serving plain HTTP. */
static struct MHD_OptionItem no_options[] = { { MHD_OPTION_END, 0, NULL } };

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
	/* The address is tried first: MHD does not say why a bind failed (below), and libmicrohttpd 1.0.1
	 * closes the socket of a failed bind twice, which may close a descriptor another thread has just
	 * opened. */
	err = bind_error(&addr, addr_len);
	if (err)
		return err;
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
	if (opts->tls)
		flags |= MHD_USE_TLS;
	h->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
				  /* the certificate: from opts->tls at each handshake (so a reload takes), or
				   * no option at all for plain HTTP */
				  opts->tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_ARRAY,
				  opts->tls ? (void *)tls_retrieve_function() : (void *)no_options,
				  /* the CAs of client certificates, when asked for */
				  opts->tls && tls_client_ca(opts->tls) ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_ARRAY,
				  opts->tls && tls_client_ca(opts->tls) ? (void *)tls_client_ca(opts->tls) : (void *)no_options,
				  MHD_OPTION_CONNECTION_LIMIT,
				  opts->max_connections ? opts->max_connections : DEFAULT_MAX_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT, opts->timeout_s ? opts->timeout_s : DEFAULT_TIMEOUT_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONN_MEMORY_LIMIT,
				  MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				  MHD_OPTION_END);
	/* MHD says nothing of why it failed, and its errno cannot be trusted: 0.9.75 leaves what bind() or
	 * pthread_create() left, 1.0.1 the EBADF of closing a failed bind's socket twice. The address is
	 * tried again (it may have been taken since): its error first, else MHD's errno but EBADF. */
	if (!h->mhd) {
		int saved = errno;

		err = bind_error(&addr, addr_len);
		if (!err)
			err = saved && saved != EBADF ? -saved : -EIO;
	}
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
	pthread_cond_broadcast(&h->query_done);
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
	pthread_cond_destroy(&h->query_done);
	pthread_mutex_destroy(&h->lock);
	free(h->db_path);
	if (h->token)
		explicit_bzero(h->token, h->token_len);
	free(h->token);
	free(h);
}
