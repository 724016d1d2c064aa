/* test_http.c - the HTTP API over loopback: every endpoint, /metrics' format, bad input, limits, shutdown. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/types.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "http/http.h"
#include "store/store.h"

/* The fixture's fixed time: 2023-11-14T22:13:20Z. */
#define T0 INT64_C(1700000000)
#define MAX_PPROF 5

/* ---- a small HTTP/1.1 client ---- */

struct reply {
	int status;    /* -1: no answer */
	char head[8192];
	char *body;    /* NUL-terminated (the body may hold NULs; len counts them) */
	size_t len;
	double seconds; /* time to the whole answer */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int connect_to(int family, unsigned port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	struct timeval tv = { .tv_sec = 60 };
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends "METHOD target" and reads the whole answer (the server closes: Connection: close). */
static void request_with(int family, unsigned port, const char *method, const char *target, const char *extra,
			 struct reply *r)
{
	size_t cap = 1 << 16, got = 0;
	char *buf = malloc(cap), *sep, *req = NULL;
	double t = now_s();
	ssize_t n;
	int fd;

	memset(r, 0, sizeof(*r));
	r->status = -1;
	fd = connect_to(family, port);
	if (fd < 0 || !buf ||
	    asprintf(&req, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n%s%s\r\n", method, target,
		     extra ? extra : "", extra ? "\r\n" : "") < 0)
		goto out;
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		goto out;
	while ((n = read(fd, buf + got, cap - got - 1)) > 0) {
		got += (size_t)n;
		if (cap - got < 2) {
			char *p = realloc(buf, cap * 2);

			if (!p)
				goto out;
			buf = p;
			cap *= 2;
		}
	}
	buf[got] = '\0';
	sep = strstr(buf, "\r\n\r\n");
	if (!sep || sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1)
		goto out;
	snprintf(r->head, sizeof(r->head), "%.*s", (int)(sep - buf), buf);
	r->len = got - (size_t)(sep + 4 - buf);
	r->body = malloc(r->len + 1);
	if (r->body) {
		memcpy(r->body, sep + 4, r->len);
		r->body[r->len] = '\0';
	}
out:
	r->seconds = now_s() - t;
	if (!r->body) {
		r->body = strdup("");
		r->len = 0;
	}
	free(req);
	free(buf);
	if (fd >= 0)
		close(fd);
}

static void request_on(int family, unsigned port, const char *method, const char *target, struct reply *r)
{
	request_with(family, port, method, target, NULL, r);
}

static void get(unsigned port, const char *target, struct reply *r)
{
	request_on(AF_INET, port, "GET", target, r);
}

static void reply_free(struct reply *r)
{
	free(r->body);
	r->body = NULL;
}

/* The value of header name in r (case-insensitive name), or "" when absent. */
static const char *header(const struct reply *r, const char *name, char *buf, size_t size)
{
	size_t nlen = strlen(name);

	buf[0] = '\0';
	for (const char *l = strstr(r->head, "\r\n"); l; l = strstr(l + 2, "\r\n")) {
		const char *v = l + 2, *end;

		if (strncasecmp(v, name, nlen) || v[nlen] != ':')
			continue;
		v += nlen + 1;
		v += strspn(v, " ");
		end = strstr(v, "\r\n");
		snprintf(buf, size, "%.*s", (int)(end ? end - v : (long)strlen(v)), v);
		break;
	}
	return buf;
}

/* The body without blanks, so JSON can be matched whatever its spacing. */
static char *squeezed(const struct reply *r)
{
	char *s = malloc(r->len + 1);
	size_t j = 0;

	if (!s)
		return NULL;
	for (size_t i = 0; i < r->len; i++)
		if (r->body[i] != ' ' && r->body[i] != '\n' && r->body[i] != '\t')
			s[j++] = r->body[i];
	s[j] = '\0';
	return s;
}

/* Turns line breaks into '|' (for a body shown in a check's name). */
static const char *flat(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = '|';
	return s;
}

static bool has(const char *s, const char *needle)
{
	return s && strstr(s, needle);
}

/* ---- fakes for the daemon ---- */

struct fake {
	atomic_int status_calls, flush_calls;
	int flush_err;
};

static void fake_status(struct daemon_status *out, void *ctx)
{
	struct fake *f = ctx;

	atomic_fetch_add(&f->status_calls, 1);
	memset(out, 0, sizeof(*out));
	out->version = "9.9.9-\"test\"";
	out->start_time = (int64_t)time(NULL) - 100;
	out->frequency = 19;
	out->flush_interval = 10;
	out->cpus = 4;
	out->samples = 1000;
	out->lost[STAT_IDLE] = 11;
	out->lost[STAT_KSTACK_ERROR] = 1;
	out->lost[STAT_USTACK_ERROR] = 2;
	out->lost[STAT_STACK_MAP_FULL] = 3;
	out->lost[STAT_STACK_NOMEM] = 4;
	out->lost[STAT_COUNTS_FULL] = 5;
	out->samples_stored = 900;
	out->samples_unstored = 7;
	out->flushes = 12;
	out->last_flush_time = out->start_time + 90;
	out->last_flush_seconds = 0.25;
	out->flush_seconds_total = 3.5;
	out->db_bytes = 65536;
	out->stacks_stored = 42;
	out->sym_user_hits = 100;
	out->sym_user_misses = 10;
	out->sym_kernel_hits = 200;
	out->sym_kernel_misses = 20;
	out->sym_binaries_cached = 8;
	out->sym_processes_cached = 9;
	out->sym_symbols_dropped = 13;
	out->symbolizer.binaries_over_bound = 14;
	out->symbolizer.maps_reads = (struct proccache_stats){ .opens = 15, .fd_reads = 16, .fds_full = 17, .fds_held = 18 };
	out->off_cpu = true;
	out->bpf.feature[BPF_FEATURE_OFFCPU].asked = true; /* --off-cpu, and its program loaded */
	out->bpf.feature[BPF_FEATURE_OFFCPU].on = true;
	out->off_cpu_min_us = 250;
	out->off_cpu_max_stacks = 8192;
	for (unsigned i = STAT_OFFCPU_BLOCKS; i <= STAT_OFFCPU_COUNTS_FULL; i++)
		out->lost[i] = 31 + i - STAT_OFFCPU_BLOCKS; /* blocks 31 ... counts_full 39 */
	out->lost[STAT_OFFCPU_DEFERRED] = 41;
	out->offcpu_keys_stored = 40;
	out->offcpu_us_stored = 1500000;
	out->offcpu_us_unstored = 250;
}

static int fake_flush(void *ctx)
{
	struct fake *f = ctx;

	atomic_fetch_add(&f->flush_calls, 1);
	return f->flush_err;
}

/* Where pid 100 and pid 200 ran. */
#define SERVER_CG "/system.slice/server.service"
#define BATCH_CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define BATCH_CG "/system.slice/docker-" BATCH_CID ".scope"

/* pid 100 "server" (threads 100 and 101) and pid 200 "batch" around T0, one older sample of pid 100
 * for a diff's base window, and pid 300 "recent" a minute ago (for the default window); server in a
 * systemd unit, batch in a container, recent in no known cgroup. */
static int make_db(const char *path)
{
	const int64_t recent = (int64_t)time(NULL) - 60;
	const struct store_sample samples[] = {
		{ T0 + 0, 100, 100, "server", "server", "main;handle;parse", 5, NULL, 0, STORE_CPU, SERVER_CG, NULL },
		{ T0 + 0, 100, 101, "server", "worker", "main;handle;parse", 3, NULL, 0, STORE_CPU, SERVER_CG, NULL },
		{ T0 + 10, 100, 101, "server", "worker", "main;idle", 2, NULL, 0, STORE_CPU, SERVER_CG, NULL },
		{ T0 + 20, 200, 200, "batch", "batch", "main;crunch", 7, NULL, 0, STORE_CPU, BATCH_CG, NULL },
		{ T0 - 50, 100, 100, "server", "server", "main;handle;parse", 1, NULL, 0, STORE_CPU, SERVER_CG, NULL },
		{ recent, 300, 300, "recent", "recent", "main;recent", 9, NULL, 0, STORE_CPU, NULL, NULL },
	};
	struct store *st = NULL;
	int err = store_open(path, STORE_READ_WRITE, &st);

	if (!err)
		err = store_begin(st);
	for (size_t i = 0; !err && i < sizeof(samples) / sizeof(samples[0]); i++)
		err = store_add(st, &samples[i]);
	if (!err)
		err = store_commit(st);
	if (err && st)
		fprintf(stderr, "test_http: %s\n", store_errmsg(st));
	store_close(st);
	return err;
}

/* ---- checks ---- */

static void test_parse_listen(void)
{
	struct sockaddr_storage ss;
	unsigned len = 0;
	static const char *const bad[] = {
		"127.0.0.1", "127.0.0.1:", ":7070", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:+80",
		"127.0.0.1:80x", "127.0.0.1: 80", "localhost:80", "1.2.3:80", "::1:80", "[::1]", "[::1]80",
		"[::1:80", "[]:80", "[1.2.3.4]:80", "garbage", "", "[::1]:99999999999999999999",
	};

	CHECK(http_parse_listen("127.0.0.1:7070", &ss, &len) == 0 && ss.ss_family == AF_INET &&
	      len == sizeof(struct sockaddr_in) && ntohs(((struct sockaddr_in *)&ss)->sin_port) == 7070 &&
	      ((struct sockaddr_in *)&ss)->sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	      "parse_listen: 127.0.0.1:7070");
	CHECK(http_parse_listen("0.0.0.0:0", &ss, &len) == 0 && ss.ss_family == AF_INET &&
	      ((struct sockaddr_in *)&ss)->sin_port == 0, "parse_listen: 0.0.0.0:0 (all interfaces, when asked)");
	CHECK(http_parse_listen("[::1]:8080", &ss, &len) == 0 && ss.ss_family == AF_INET6 &&
	      len == sizeof(struct sockaddr_in6) && ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) == 8080 &&
	      !memcmp(&((struct sockaddr_in6 *)&ss)->sin6_addr, &in6addr_loopback, sizeof(in6addr_loopback)),
	      "parse_listen: [::1]:8080");
	CHECK(http_parse_listen("[::]:65535", &ss, &len) == 0 && ss.ss_family == AF_INET6,
	      "parse_listen: [::]:65535");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(http_parse_listen(bad[i], &ss, &len) == -EINVAL, "parse_listen: \"%s\" is -EINVAL", bad[i]);
	CHECK(http_parse_listen(NULL, &ss, &len) == -EINVAL, "parse_listen: NULL is -EINVAL");
}

/* Does this network namespace let a socket bind addresses it does not have? */
static bool nonlocal_bind(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_nonlocal_bind", "r");
	int v = 0;

	if (!f)
		return false;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v != 0;
}

static void test_new_errors(const char *db, unsigned port)
{
	struct http_opts o = { .db_path = db };
	struct http *h = (struct http *)1;
	char listen[64];

	CHECK(http_new(NULL, &h) == -EINVAL && h == NULL, "http_new: NULL opts is -EINVAL");
	o.listen = "nonsense";
	CHECK(http_new(&o, &h) == -EINVAL && h == NULL, "http_new: bad listen address is -EINVAL");
	o.listen = "127.0.0.1:0";
	o.db_path = NULL;
	CHECK(http_new(&o, &h) == -EINVAL, "http_new: no db_path is -EINVAL");
	o.db_path = db;
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
	o.listen = listen;
	h = NULL;
	CHECK(http_new(&o, &h) == -EADDRINUSE && h == NULL, "http_new: a port in use is -EADDRINUSE");
	http_free(h);
	http_free(NULL);
	/* An address of no interface here (TEST-NET-1): bind()'s own error, whatever MHD says of it. */
	if (nonlocal_bind()) {
		SKIP("http_new: an address not on this host", "net.ipv4.ip_nonlocal_bind is on: any address binds");
	} else {
		o.listen = "192.0.2.1:0";
		h = NULL;
		CHECK(http_new(&o, &h) == -EADDRNOTAVAIL && h == NULL,
		      "http_new: an address not on this host is -EADDRNOTAVAIL");
		http_free(h);
	}
}

static void test_healthz(unsigned port)
{
	struct reply r;
	char v[256];

	get(port, "/healthz", &r);
	CHECK(r.status == 200 && !strcmp(r.body, "ok\n"), "/healthz: 200 \"ok\\n\" (got %d)", r.status);
	CHECK(!strcmp(header(&r, "Content-Type", v, sizeof(v)), "text/plain; charset=utf-8"),
	      "/healthz: text/plain; charset=utf-8 (got \"%s\")", v);
	CHECK(!strcmp(header(&r, "Cache-Control", v, sizeof(v)), "no-store"), "/healthz: Cache-Control: no-store");
	reply_free(&r);
	request_on(AF_INET, port, "HEAD", "/healthz", &r);
	CHECK(r.status == 200 && r.len == 0, "HEAD /healthz: 200 without a body (got %d, %zu bytes)", r.status,
	      r.len);
	reply_free(&r);
}

static void test_status(unsigned port, struct fake *fake)
{
	static const char *const want[] = {
		"\"version\":\"9.9.9-\\\"test\\\"\"", "\"start_time\":", "\"frequency\":19", "\"flush_interval\":10",
		"\"cpus\":4", "\"samples\":1000", "\"kernel_stack_error\":1", "\"user_stack_error\":2",
		"\"stack_map_full\":3", "\"stack_alloc_failed\":4", "\"counts_full\":5", "\"idle_excluded\":11",
		"\"samples_stored\":900", "\"samples_unstored\":7", "\"flushes\":12", "\"last_flush_time\":",
		"\"last_flush_seconds\":0.25", "\"db_bytes\":65536", "\"stacks_stored\":42",
		"\"symbolizer\":{\"user_hits\":100,\"user_misses\":10,\"kernel_hits\":200,\"kernel_misses\":20,"
		"\"binaries_cached\":8,\"processes_cached\":9,\"symbol_cache_bytes\":0,\"binaries_evicted\":0,\"binaries_over_bound\":14,"
		"\"symbols_dropped\":13,\"maps_opens\":15,\"maps_fd_reads\":16,\"maps_fds_full\":17,\"maps_fds_held\":18}",
		"\"off_cpu\":{\"enabled\":true,\"asked\":true,\"min_wait_us\":250,\"max_stacks\":8192,\"blocks\":31,\"walked\":32,"
		"\"reused\":33,\"waits\":35,\"short_waits\":36,\"ongoing\":37,\"deferred\":41,\"lost\":{\"no_storage\":34,"
		"\"stack_evicted\":38,\"counts_full\":39},\"keys_stored\":40,\"us_stored\":1500000,\"us_unstored\":250}",
	};
	int calls = atomic_load(&fake->status_calls);
	struct reply r;
	char v[256], *s;
	long up = -1;

	get(port, "/api/v1/status", &r);
	s = squeezed(&r);
	CHECK(r.status == 200 && !strcmp(header(&r, "Content-Type", v, sizeof(v)), "application/json"),
	      "/api/v1/status: 200 application/json (got %d %s)", r.status, v);
	CHECK(atomic_load(&fake->status_calls) > calls, "/api/v1/status: calls get_status");
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(has(s, want[i]), "/api/v1/status: has %s", want[i]);
	CHECK(has(s, "\"uptime_seconds\":") && sscanf(strstr(s, "\"uptime_seconds\":") + 17, "%ld", &up) == 1 &&
	      up >= 100 && up < 200, "/api/v1/status: uptime_seconds ~ 100 (got %ld)", up);
	CHECK(s && s[0] == '{' && s[strlen(s) - 1] == '}', "/api/v1/status: one JSON object");
	free(s);
	reply_free(&r);
}

/* Whether a metric line "name{labels} value" is well formed; copies its name. */
static bool metric_line(const char *l, char *name, size_t size)
{
	size_t n = strspn(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:");
	const char *p = l + n;
	char *end;

	if (n == 0 || n >= size)
		return false;
	snprintf(name, size, "%.*s", (int)n, l);
	if (*p == '{') {
		do {
			size_t k = strspn(++p, "abcdefghijklmnopqrstuvwxyz_");

			if (k == 0 || p[k] != '=' || p[k + 1] != '"')
				return false;
			for (p += k + 2; *p && *p != '"'; p++)
				if (*p == '\\' && !*++p)
					return false;
			if (*p++ != '"')
				return false;
		} while (*p == ',');
		if (*p++ != '}')
			return false;
	}
	if (*p++ != ' ')
		return false;
	strtod(p, &end);
	return end != p && *end == '\0';
}

static void test_metrics(unsigned port)
{
	static const char *const want[] = {
		"flamed_samples_total 1000", "flamed_samples_lost_total{kind=\"kernel_stack_error\"} 1",
		"flamed_samples_lost_total{kind=\"user_stack_error\"} 2",
		"flamed_samples_lost_total{kind=\"stack_map_full\"} 3",
		"flamed_samples_lost_total{kind=\"stack_alloc_failed\"} 4", "flamed_samples_lost_total{kind=\"counts_full\"} 5",
		"flamed_samples_idle_excluded_total 11", "flamed_samples_stored_total 900",
		"flamed_samples_unstored_total 7", "flamed_flushes_total 12", "flamed_flush_seconds_total 3.5",
		"flamed_last_flush_seconds 0.25", "flamed_symbolize_hits_total{kind=\"user\"} 100",
		"flamed_symbolize_hits_total{kind=\"kernel\"} 200", "flamed_symbolize_misses_total{kind=\"user\"} 10",
		"flamed_symbolize_misses_total{kind=\"kernel\"} 20", "flamed_symbolizer_binaries_cached 8",
		"flamed_symbolizer_processes_cached 9", "flamed_symbolizer_symbols_dropped_total 13", "flamed_database_bytes 65536", "flamed_stacks_stored 42",
		"flamed_symbolizer_maps_opens_total 15", "flamed_symbolizer_maps_fd_reads_total 16",
		"flamed_symbolizer_maps_fds_full_total 17", "flamed_symbolizer_maps_fds_held 18",
		"flamed_build_info{version=\"9.9.9-\\\"test\\\"\"} 1", "flamed_http_requests_total{code=\"200\"} ",
		"flamed_http_requests_total{code=\"400\"} ", "flamed_http_requests_total{code=\"404\"} ",
		"flamed_offcpu_enabled 1", "flamed_offcpu_min_wait_seconds 0.000250", "flamed_offcpu_blocks_total 31",
		"flamed_offcpu_stack_walks_total 32", "flamed_offcpu_stacks_reused_total 33", "flamed_offcpu_waits_total 35",
		"flamed_offcpu_short_waits_total 36", "flamed_offcpu_ongoing_waits_total 37",
		"flamed_offcpu_lost_total{kind=\"no_storage\"} 34", "flamed_offcpu_lost_total{kind=\"stack_evicted\"} 38",
		"flamed_offcpu_lost_total{kind=\"counts_full\"} 39", "flamed_offcpu_keys_stored_total 40",
		"flamed_offcpu_seconds_total 1.500000", "flamed_offcpu_unstored_seconds_total 0.000250",
	};
	char helped[256][96] = { 0 }, typed[256][96] = { 0 }, types[256][16] = { 0 };
	int nhelp = 0, ntype = 0, lines = 0, bad = 0, orphans = 0, counters_ok = 1;
	struct reply r;
	char v[256], *save = NULL, *copy;

	get(port, "/metrics", &r);
	CHECK(r.status == 200 && has(header(&r, "Content-Type", v, sizeof(v)), "text/plain; version=0.0.4"),
	      "/metrics: 200 text/plain; version=0.0.4 (got %d %s)", r.status, v);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(has(r.body, want[i]), "/metrics: has \"%s\"", want[i]);
	copy = strdup(r.body);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[96];

		lines++;
		if (!strncmp(l, "# HELP ", 7) && nhelp < 256) {
			sscanf(l + 7, "%95s", helped[nhelp++]);
		} else if (!strncmp(l, "# TYPE ", 7) && ntype < 256) {
			sscanf(l + 7, "%95s %15s", typed[ntype], types[ntype]);
			if (!strcmp(types[ntype], "counter") &&
			    (strlen(typed[ntype]) < 6 || strcmp(typed[ntype] + strlen(typed[ntype]) - 6, "_total")))
				counters_ok = 0;
			ntype++;
		} else if (l[0] == '#' || !metric_line(l, name, sizeof(name))) {
			printf("  bad metric line: %s\n", l);
			bad++;
		} else {
			bool h = false, t = false;

			for (int i = 0; i < nhelp; i++)
				h |= !strcmp(helped[i], name);
			for (int i = 0; i < ntype; i++)
				t |= !strcmp(typed[i], name);
			if (!h || !t) {
				printf("  metric without HELP or TYPE before it: %s\n", name);
				orphans++;
			}
		}
	}
	CHECK(lines > 40 && bad == 0, "/metrics: every sample line is name{labels} float (%d lines, %d bad)", lines,
	      bad);
	CHECK(orphans == 0 && nhelp == ntype, "/metrics: every metric has HELP and TYPE (%d orphans)", orphans);
	CHECK(counters_ok, "/metrics: every counter's name ends in _total");
	free(copy);
	reply_free(&r);
}

/* One data request: status, content type, and substrings its body (blanks removed) must and must not
 * hold. */
static void expect(unsigned port, const char *target, int status, const char *type, const char *must,
		   const char *must_not)
{
	struct reply r;
	char v[256], *s;

	get(port, target, &r);
	s = squeezed(&r);
	CHECK(r.status == status, "%s: status %d (got %d: %.200s)", target, status, r.status, flat(s));
	if (type)
		CHECK(!strcmp(header(&r, "Content-Type", v, sizeof(v)), type), "%s: Content-Type %s (got \"%s\")",
		      target, type, v);
	if (must)
		CHECK(has(s, must), "%s: body has %s", target, must);
	if (must_not)
		CHECK(!has(s, must_not), "%s: body has no %s", target, must_not);
	free(s);
	reply_free(&r);
}

#define W "from=1700000000&to=1700000060" /* [T0, T0 + 60) */

static void test_profile(unsigned port)
{
	const char *json = "application/json", *text = "text/plain; charset=utf-8";
	struct reply r;
	char v[256];

	expect(port, "/api/v1/profile?pid=100&" W, 200, text, "server;main;handle;parse8", "batch");
	expect(port, "/api/v1/profile?pid=100&" W, 200, text, "server;main;idle2", NULL);
	expect(port, "/api/v1/profile?" W, 200, text, "batch;main;crunch7", "recent");
	expect(port, "/api/v1/profile?tid=101&" W, 200, text, "server;main;handle;parse3", "parse8");
	expect(port, "/api/v1/profile?comm=batch&" W, 200, text, "batch;main;crunch7", "server");
	expect(port, "/api/v1/profile?pid=100&from=2023-11-14T22:13:20Z&to=2023-11-14T23:14:20%2B01:00", 200, text,
	       "server;main;handle;parse8", NULL);
	expect(port, "/api/v1/profile?pid=100&from=2023-11-14T22:13:20Z&to=2023-11-14T23:14:20+01:00", 200, text,
	       "server;main;handle;parse8", NULL);
	expect(port, "/api/v1/profile", 200, text, "recent;main;recent9", "server");
	expect(port, "/api/v1/profile?from=-10m", 200, text, "recent;main;recent9", "server");
	expect(port, "/api/v1/profile?from=-30&to=-1", 200, text, NULL, "recent");
	expect(port, "/api/v1/profile?pid=100&format=folded&" W, 200, text, "server;main;handle;parse8", NULL);
	expect(port, "/api/v1/profile?pid=100&format=json&" W, 200, json, "{", NULL);
	expect(port, "/api/v1/profile?pid=100&format=svg&title=x&width=800&minwidth=0.5&reverse=1&" W, 200,
	       "image/svg+xml", "<svg", NULL);
	expect(port, "/api/v1/profile?pid=100&format=svg&width=800&" W, 200, "image/svg+xml", "width=\"800\"", NULL);
	expect(port, "/api/v1/profile?pid=100&format=top&limit=5&" W, 200, text, NULL, NULL);
	get(port, "/api/v1/profile?pid=100&format=pprof&" W, &r);
	CHECK(r.status == 200 && r.len > 2 && (unsigned char)r.body[0] == 0x1f && (unsigned char)r.body[1] == 0x8b,
	      "profile format=pprof: 200, gzip (got %d)", r.status);
	CHECK(!strcmp(header(&r, "Content-Type", v, sizeof(v)), "application/octet-stream") &&
	      has(header(&r, "Content-Disposition", v, sizeof(v)), "attachment"),
	      "profile format=pprof: application/octet-stream, Content-Disposition attachment");
	reply_free(&r);
}

static void test_other_queries(unsigned port)
{
	const char *json = "application/json", *text = "text/plain; charset=utf-8";

	expect(port, "/api/v1/top?pid=100&limit=10&" W, 200, json, "\"total\":10", NULL);
	expect(port, "/api/v1/top?" W, 200, json, "\"functions\":[", NULL);
	expect(port, "/api/v1/processes?" W, 200, json, "\"pid\":100", "\"pid\":300");
	expect(port, "/api/v1/processes?" W, 200, json, "\"pid\":200", NULL);
	expect(port, "/api/v1/processes", 200, json, "\"pid\":300", "\"pid\":100");
	expect(port, "/api/v1/threads?pid=100&" W, 200, json, "\"tid\":101", "\"tid\":200");
	expect(port, "/api/v1/threads?pid=100&" W, 200, json, "\"tid\":100", NULL);
	expect(port, "/api/v1/timeline?pid=100&step=10&" W, 200, json, "\"count\":8", NULL);
	expect(port, "/api/v1/timeline?pid=100&step=10&" W, 200, json, "\"count\":2", "\"tid\"");
	expect(port, "/api/v1/timeline?pid=100&step=10&per_thread=1&" W, 200, json, "\"tid\":101", NULL);
	expect(port, "/api/v1/timeline?" W, 200, json, "\"points\":[", NULL);
	/* The base window is [T0 - 100, T0): pid 100 had one sample of parse there. */
	expect(port, "/api/v1/diff?pid=100&from=1700000000&to=1700000100", 200, text, "server;main;idle02", NULL);
	expect(port, "/api/v1/diff?pid=100&from=1700000000&to=1700000100", 200, text, "server;main;handle;parse",
	       "batch");
	/* Two pids over the same window. */
	expect(port, "/api/v1/diff?pid=100&base_pid=200&" W, 200, text, "batch;main;crunch", NULL);
	expect(port, "/api/v1/diff?pid=100&base_from=1699999900&base_to=1700000000&" W "&format=json", 200, json,
	       "{", NULL);
	expect(port, "/api/v1/diff?pid=100&base_from=1699999900&" W "&format=svg", 200, "image/svg+xml", "<svg",
	       NULL);
	/* Kinds: the store holds CPU samples only; wall counts each as 1e6 / 19 Hz = 52632 us. */
	expect(port, "/api/v1/profile?pid=100&kind=cpu&" W, 200, text, "server;main;handle;parse8", NULL);
	expect(port, "/api/v1/profile?pid=100&demangle=full&" W, 200, text, "server;main;handle;parse8", NULL);
	expect(port, "/api/v1/top?pid=100&demangle=none&" W, 200, "application/json", "{\"name\":\"parse\",\"self\":8", NULL);
	expect(port, "/api/v1/profile?pid=100&kind=wall&" W, 200, text, "server;main;handle;parse421056", NULL);
	expect(port, "/api/v1/profile?pid=100&kind=offcpu&" W, 200, text, NULL, "server");
	expect(port, "/api/v1/profile?pid=100&kind=wall&format=json&" W, 200, json, "\"unit\":\"microseconds\"", NULL);
	expect(port, "/api/v1/profile?pid=100&format=json&" W, 200, json, "\"unit\":\"samples\"", NULL);
	expect(port, "/api/v1/top?pid=100&kind=wall&" W, 200, json, "\"unit\":\"microseconds\",\"total\":526320", NULL);
	expect(port, "/api/v1/processes?kind=offcpu&" W, 200, json, "\"processes\":[]", NULL);
	expect(port, "/api/v1/threads?pid=100&kind=wall&" W, 200, json, "\"unit\":\"microseconds\"", NULL);
	expect(port, "/api/v1/timeline?pid=100&step=10&kind=wall&" W, 200, json, "\"count\":421056", NULL);
	expect(port, "/api/v1/diff?pid=100&base_pid=200&kind=wall&" W, 200, text, "batch;main;crunch", NULL);
}

/* Where samples ran: server in server.service, batch in a container, recent in no known cgroup. */
static void test_services(unsigned port)
{
	const char *json = "application/json", *text = "text/plain; charset=utf-8";

	expect(port, "/api/v1/profile?unit=server.service&" W, 200, text, "server;main;handle;parse8", "batch");
	expect(port, "/api/v1/profile?unit=system.slice&" W, 200, text, "batch;main;crunch7", NULL);
	expect(port, "/api/v1/profile?container=0123456789ab&" W, 200, text, "batch;main;crunch7", "server");
	expect(port, "/api/v1/profile?cgroup=/system.slice/server.service&" W, 200, text, "server;main;idle2", "batch");
	expect(port, "/api/v1/profile?unit=nginx.service&" W, 200, text, NULL, "main");
	expect(port, "/api/v1/top?unit=server.service&" W, 200, json, "\"total\":10", NULL);
	expect(port, "/api/v1/timeline?container=0123456789ab&step=60&" W, 200, json, "\"count\":7", NULL);
	expect(port, "/api/v1/threads?pid=100&unit=server.service&" W, 200, json, "\"tid\":101", NULL);
	expect(port, "/api/v1/processes?" W, 200, json,
	       "\"cgroup\":\"" SERVER_CG "\",\"unit\":\"server.service\",\"slice\":\"system.slice\",\"container\":\"\"", NULL);
	expect(port, "/api/v1/processes?" W, 200, json, "\"container\":\"" BATCH_CID "\",\"runtime\":\"docker\"", NULL);
	expect(port, "/api/v1/processes?unit=server.service&" W, 200, json, "\"pid\":100", "\"pid\":200");
	expect(port, "/api/v1/services?" W, 200, json, "{\"kind\":\"unit\",\"name\":\"server.service\"", NULL);
	expect(port, "/api/v1/services?" W, 200, json, "{\"kind\":\"container\",\"name\":\"" BATCH_CID "\"", NULL);
	expect(port, "/api/v1/services?" W, 200, json, "\"samples\":10,\"share\":0.5882,\"processes\":1", NULL);
	expect(port, "/api/v1/services?format=tsv&" W, 200, text, "unitserver.service101", NULL);
	expect(port, "/api/v1/services?unit=server.service&" W, 200, json, "\"total\":10,", NULL);
	/* server.service against the container, over the same window. */
	expect(port, "/api/v1/diff?unit=server.service&base_container=0123456789ab&" W, 200, text, "batch;main;crunch",
	       NULL);
	/* Each stack under its service: the unit, the container (runtime and the id's first 12). */
	expect(port, "/api/v1/profile?group=unit&" W, 200, text, "server.service;server;main;handle;parse8", NULL);
	expect(port, "/api/v1/profile?group=unit&" W, 200, text, "docker0123456789ab;batch;main;crunch7", NULL);
	expect(port, "/api/v1/profile?group=unit&format=json&" W, 200, json, "\"name\":\"server.service\"", NULL);
	expect(port, "/api/v1/profile?group=unit&format=svg&" W, 200, "image/svg+xml", "server.service", NULL);
	expect(port, "/api/v1/profile?group=pid&" W, 400, json, "group:wantsunit", NULL);
	expect(port, "/api/v1/profile?unit=a/b&" W, 400, json, "'/'", NULL);
	expect(port, "/api/v1/profile?cgroup=system.slice&" W, 400, json, "startswith'/'", NULL);
	expect(port, "/api/v1/profile?container=0123%01&" W, 400, json, "controlcharacter", NULL);
}

/* Bad requests: each is 4xx with {"error": "..."} naming what is wrong. */
static void test_bad_input(unsigned port)
{
	static const struct {
		const char *target;
		int status;
		const char *names; /* the error message mentions this */
	} bad[] = {
		{ "/api/v1/profile?pid=abc", 400, "pid" },
		{ "/api/v1/profile?kind=idle", 400, "kind" },
		{ "/api/v1/profile?demangle=yes", 400, "demangle" },
		{ "/api/v1/top?demangle=", 400, "demangle" },
		{ "/api/v1/timeline?demangle=short", 400, "demangle" },
		{ "/api/v1/profile?kind=", 400, "kind" },
		{ "/debug/pprof/profile?kind=cpu", 400, "kind" },
		{ "/api/v1/profile?pid=-1", 400, "pid" },
		{ "/api/v1/profile?pid=4194305", 400, "pid" },
		{ "/api/v1/profile?pid=1x", 400, "pid" },
		{ "/api/v1/profile?pid=", 400, "pid" },
		{ "/api/v1/profile?pid", 400, "pid" },
		{ "/api/v1/profile?pid=%2B5", 400, "pid" },
		{ "/api/v1/profile?pid=%205", 400, "pid" },
		{ "/api/v1/profile?pid=1%00", 400, "pid" },
		{ "/api/v1/profile?tid=99999999999999999999", 400, "tid" },
		{ "/api/v1/profile?from=yesterday", 400, "from" },
		{ "/api/v1/profile?from=-10x", 400, "from" },
		{ "/api/v1/profile?to=2023-13-01T00:00:00Z", 400, "to" },
		{ "/api/v1/profile?from=99999999999999999", 400, "from" },
		{ "/api/v1/profile?from=200&to=100", 400, "from" },
		{ "/api/v1/profile?from=100&to=100", 400, "from" },
		{ "/api/v1/profile?format=xml", 400, "format" },
		{ "/api/v1/profile?format=JSON", 400, "format" },
		{ "/api/v1/profile?width=99", 400, "width" },
		{ "/api/v1/profile?width=10001", 400, "width" },
		{ "/api/v1/profile?minwidth=-1", 400, "minwidth" },
		{ "/api/v1/profile?minwidth=1000.5", 400, "minwidth" },
		{ "/api/v1/profile?minwidth=nan", 400, "minwidth" },
		{ "/api/v1/profile?minwidth=1e2", 400, "minwidth" },
		{ "/api/v1/profile?limit=100001", 400, "limit" },
		{ "/api/v1/profile?reverse=yes", 400, "reverse" },
		{ "/api/v1/profile?comm=", 400, "comm" },
		{ "/api/v1/profile?bogus=1", 400, "bogus" },
		{ "/api/v1/profile?pid=1&pid=2", 400, "pid" },
		{ "/api/v1/profile?step=10", 400, "step" },
		{ "/api/v1/diff?format=pprof", 400, "format" },
		{ "/api/v1/diff?format=top", 400, "format" },
		{ "/api/v1/diff?base_from=200&base_to=100", 400, "base_from" },
		{ "/api/v1/diff?base_pid=x", 400, "base_pid" },
		{ "/api/v1/diff?tid=1", 400, "tid" },
		{ "/api/v1/top?format=svg", 400, "format" },
		{ "/api/v1/processes?format=folded", 400, "format" },
		{ "/api/v1/status?format=xml", 400, "format" },
		{ "/api/v1/top?limit=-5", 400, "limit" },
		{ "/api/v1/timeline?step=0", 400, "step" },
		{ "/api/v1/timeline?step=86401", 400, "step" },
		{ "/api/v1/timeline?per_thread=2", 400, "per_thread" },
		{ "/api/v1/threads", 400, "pid" },
		{ "/api/v1/threads?pid=1&tid=1", 400, "tid" },
		{ "/api/v1/processes?pid=1", 400, "pid" },
		{ "/api/v1/status?verbose=1", 400, "verbose" },
		{ "/healthz?x=1", 400, "x" },
		{ "/metrics?format=json", 400, "format" },
		{ "/debug/pprof/profile?seconds=0", 400, "seconds" },
		{ "/debug/pprof/profile?seconds=6", 400, "seconds" },
		{ "/debug/pprof/profile?seconds=1s", 400, "seconds" },
		{ "/nope", 404, "endpoint" },
		{ "/api/v1/", 404, "endpoint" },
		{ "/healthz/", 404, "endpoint" },
	};
	char long_value[400], long_url[5200], v[256], want[64];
	struct reply r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bool ok;

		get(port, bad[i].target, &r);
		snprintf(want, sizeof(want), "%s", bad[i].names);
		ok = r.status == bad[i].status && !strcmp(header(&r, "Content-Type", v, sizeof(v)), "application/json") &&
		     !strncmp(r.body, "{\"error\": \"", 11) && has(r.body, want) && r.len > 3 &&
		     !strcmp(r.body + r.len - 3, "\"}\n");
		CHECK(ok, "%s: %d with a JSON error naming %s (got %d %s)", bad[i].target, bad[i].status, want,
		      r.status, flat(r.body));
		reply_free(&r);
	}
	memset(long_value, 'a', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	snprintf(long_url, sizeof(long_url), "/api/v1/profile?title=%s", long_value);
	get(port, long_url, &r);
	CHECK(r.status == 400 && has(r.body, "title"), "a 399-byte title is 400 naming title (got %d)", r.status);
	reply_free(&r);
	memset(long_url, 'a', sizeof(long_url) - 1);
	long_url[sizeof(long_url) - 1] = '\0';
	memcpy(long_url, "/api/v1/profile?title=", 22);
	get(port, long_url, &r);
	CHECK(r.status == 414 && has(r.body, "\"error\""), "a 5 KB URL is 414 with a JSON error (got %d)", r.status);
	reply_free(&r);

	request_on(AF_INET, port, "POST", "/api/v1/profile", &r);
	CHECK(r.status == 405 && !strcmp(header(&r, "Allow", v, sizeof(v)), "GET, HEAD") && has(r.body, "\"error\""),
	      "POST /api/v1/profile: 405, Allow: GET, HEAD (got %d, \"%s\")", r.status, v);
	reply_free(&r);
	request_on(AF_INET, port, "DELETE", "/healthz", &r);
	CHECK(r.status == 405, "DELETE /healthz: 405 (got %d)", r.status);
	reply_free(&r);
	request_on(AF_INET, port, "POST", "/nope", &r);
	CHECK(r.status == 404, "POST /nope: 404 (got %d)", r.status);
	reply_free(&r);
	get(port, "/healthz", &r);
	CHECK(r.status == 200, "/healthz still answers after the bad requests");
	reply_free(&r);
}

struct job {
	unsigned port;
	const char *target;
	struct reply r;
};

static void *job_run(void *arg)
{
	struct job *j = arg;

	get(j->port, j->target, &j->r);
	return NULL;
}

/* /debug/pprof/profile waits its window out in its own thread, flushes, then answers. */
static void test_pprof(unsigned port, struct fake *fake)
{
	struct job j = { .port = port, .target = "/debug/pprof/profile?seconds=2" };
	int flushes = atomic_load(&fake->flush_calls);
	pthread_t t;
	struct reply r;
	char v[256];

	if (pthread_create(&t, NULL, job_run, &j) != 0) {
		SKIP("pprof", "pthread_create failed");
		return;
	}
	usleep(300 * 1000);
	get(port, "/healthz", &r);
	CHECK(r.status == 200 && r.seconds < 1, "/healthz answers while a pprof request waits (%.3f s)", r.seconds);
	reply_free(&r);
	pthread_join(t, NULL);
	CHECK(j.r.status == 200 && j.r.seconds >= 1.5 && j.r.seconds < 4,
	      "pprof?seconds=2: 200 after its window (%d, %.2f s)", j.r.status, j.r.seconds);
	CHECK(atomic_load(&fake->flush_calls) == flushes + 1, "pprof: flushed once before the query");
	CHECK(!strcmp(header(&j.r, "Content-Type", v, sizeof(v)), "application/octet-stream") &&
	      has(header(&j.r, "Content-Disposition", v, sizeof(v)), "attachment"),
	      "pprof: application/octet-stream with Content-Disposition");
	CHECK(j.r.len > 2 && (unsigned char)j.r.body[0] == 0x1f && (unsigned char)j.r.body[1] == 0x8b,
	      "pprof: gzip body");
	reply_free(&j.r);

	/* A collector may scrape one service. */
	get(port, "/debug/pprof/profile?seconds=1&unit=server.service&container=0123", &r);
	CHECK(r.status == 200 && r.len > 2 && (unsigned char)r.body[0] == 0x1f, "pprof?unit=&container=: 200, gzip (got %d)",
	      r.status);
	reply_free(&r);
	get(port, "/debug/pprof/profile?seconds=1&unit=a/b", &r);
	CHECK(r.status == 400 && has(r.body, "'/'"), "pprof?unit=a/b: 400 saying why (got %d)", r.status);
	reply_free(&r);

	fake->flush_err = -EIO;
	get(port, "/debug/pprof/profile?seconds=1", &r);
	CHECK(r.status == 500 && has(r.body, "\"error\""), "pprof: a failed flush is 500 with a JSON error (got %d)",
	      r.status);
	reply_free(&r);
	fake->flush_err = 0;
}

/* http_free wakes a pprof request asleep in a 5 s window instead of waiting it out. */
static void test_free_during_pprof(const char *db, struct fake *fake)
{
	struct http_opts o = { .listen = "127.0.0.1:0", .db_path = db, .max_pprof_seconds = MAX_PPROF,
			       .get_status = fake_status, .flush_now = fake_flush, .ctx = fake };
	struct job j = { .target = "/debug/pprof/profile?seconds=5" };
	struct http *h = NULL;
	pthread_t t;
	double t0;

	if (http_new(&o, &h) != 0) {
		CHECK(0, "http_new for the shutdown test");
		return;
	}
	j.port = http_port(h);
	if (pthread_create(&t, NULL, job_run, &j) != 0) {
		http_free(h);
		SKIP("free during pprof", "pthread_create failed");
		return;
	}
	usleep(300 * 1000);
	t0 = now_s();
	http_free(h);
	pthread_join(t, NULL);
	CHECK(now_s() - t0 < 2, "http_free during a 5 s pprof window returns at once (%.2f s)", now_s() - t0);
	CHECK(j.r.status == 503 && has(j.r.body, "shutting down"), "the pprof request gets 503 shutting down (got %d)",
	      j.r.status);
	reply_free(&j.r);
}

/* No database yet: data endpoints are 503 with a JSON error, the others still answer. */
static void test_no_database(const char *dir, struct fake *fake)
{
	char path[4096];
	struct http_opts o = { .db_path = path, .get_status = fake_status, .flush_now = fake_flush, .ctx = fake,
			       .listen = "127.0.0.1:0" };
	struct http *h = NULL;
	struct reply r;
	char v[256];

	snprintf(path, sizeof(path), "%s/missing.db", dir);
	if (http_new(&o, &h) != 0) {
		CHECK(0, "http_new without a database");
		return;
	}
	get(http_port(h), "/api/v1/profile?pid=1", &r);
	CHECK(r.status == 503 && !strcmp(header(&r, "Content-Type", v, sizeof(v)), "application/json") &&
	      has(r.body, "\"error\"") && has(r.body, "database"),
	      "no database: /api/v1/profile is 503 with a JSON error (got %d %s)", r.status, flat(r.body));
	reply_free(&r);
	get(http_port(h), "/api/v1/processes", &r);
	CHECK(r.status == 503, "no database: /api/v1/processes is 503 (got %d)", r.status);
	reply_free(&r);
	get(http_port(h), "/healthz", &r);
	CHECK(r.status == 200, "no database: /healthz is 200");
	reply_free(&r);
	get(http_port(h), "/api/v1/status", &r);
	CHECK(r.status == 200, "no database: /api/v1/status is 200");
	reply_free(&r);
	http_free(h);
}

/* max_connections and timeout_s: two idle connections fill a server of two, which turns a third
 * away, closes the idle ones after its 1 s timeout, and then serves again. */
static void test_limits(const char *db)
{
	struct http_opts o = { .listen = "127.0.0.1:0", .db_path = db, .max_connections = 2, .timeout_s = 1 };
	struct http *h = NULL;
	struct reply r;
	char c;
	double t0;
	int fd[2];

	if (http_new(&o, &h) != 0) {
		CHECK(0, "http_new with max_connections 2");
		return;
	}
	fd[0] = connect_to(AF_INET, http_port(h));
	fd[1] = connect_to(AF_INET, http_port(h));
	usleep(200 * 1000);
	get(http_port(h), "/healthz", &r);
	CHECK(r.status == -1, "max_connections 2: a third connection is turned away (got %d)", r.status);
	reply_free(&r);
	t0 = now_s();
	CHECK(fd[0] >= 0 && read(fd[0], &c, 1) == 0 && now_s() - t0 < 3,
	      "an idle connection is closed after timeout_s (%.2f s)", now_s() - t0);
	for (int i = 0; i < 2; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	/* MHD frees a closed connection's slot in its own time. */
	for (int i = 0; i < 50; i++) {
		get(http_port(h), "/api/v1/status", &r);
		if (r.status != -1)
			break;
		reply_free(&r);
		usleep(100 * 1000);
	}
	CHECK(r.status == 200 && has(r.body, "\"version\": \"unknown\""),
	      "without get_status, /api/v1/status reports zeros and version unknown (got %d)", r.status);
	reply_free(&r);
	get(http_port(h), "/api/v1/profile?kind=wall", &r);
	CHECK(r.status == 503 && has(r.body, "frequency"),
	      "without get_status, kind=wall is 503: the sampling period is not known (got %d)", r.status);
	reply_free(&r);
	http_free(h);
}

static void test_ipv6(const char *db)
{
	struct http_opts o = { .listen = "[::1]:0", .db_path = db };
	struct http *h = NULL;
	struct reply r;
	int err = http_new(&o, &h);

	if (err == -EADDRNOTAVAIL || err == -EAFNOSUPPORT) {
		SKIP("IPv6 [::1]:0", "no IPv6 loopback here");
		return;
	}
	CHECK(err == 0 && http_port(h) > 0, "http_new on [::1]:0 (err %d)", err);
	if (!err) {
		struct http *again = NULL;
		char listen[64];

		request_on(AF_INET6, http_port(h), "GET", "/healthz", &r);
		CHECK(r.status == 200, "/healthz over IPv6 (got %d)", r.status);
		reply_free(&r);
		snprintf(listen, sizeof(listen), "[::1]:%u", http_port(h));
		o.listen = listen;
		err = http_new(&o, &again);
		CHECK(err == -EADDRINUSE && again == NULL, "http_new: an IPv6 port in use is -EADDRINUSE (err %d)", err);
		http_free(again);
	}
	http_free(h);
}

static void remove_db(const char *path)
{
	char p[4200];

	unlink(path);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
}

/* --auth-token-file: data needs "Authorization: Bearer TOKEN"; /healthz and the page do not. */
static void test_auth(const char *db, struct fake *fake)
{
	struct http_opts o = { .db_path = db, .get_status = fake_status, .flush_now = fake_flush, .ctx = fake,
			       .listen = "127.0.0.1:0", .auth_token = "s3cret-token" };
	static const char *const guarded[] = { "/api/v1/status", "/api/v1/profile?pid=100", "/metrics",
					       "/api/v1/processes", "/debug/pprof/profile?seconds=1" };
	struct http *h = NULL;
	struct reply r;
	char v[256];

	if (http_new(&o, &h) != 0) {
		CHECK(0, "auth: http_new with a token");
		return;
	}
	for (size_t i = 0; i < sizeof(guarded) / sizeof(guarded[0]); i++) {
		request_with(AF_INET, http_port(h), "GET", guarded[i], NULL, &r);
		CHECK(r.status == 401 && has(header(&r, "WWW-Authenticate", v, sizeof(v)), "Bearer") && has(r.body, "\"error\""),
		      "auth: %s without a token is 401 with a Bearer challenge (got %d)", guarded[i], r.status);
		reply_free(&r);
	}
	request_with(AF_INET, http_port(h), "GET", "/api/v1/status", "Authorization: Bearer s3cret-tokem", &r);
	CHECK(r.status == 401, "auth: a wrong token is 401 (got %d)", r.status);
	reply_free(&r);
	request_with(AF_INET, http_port(h), "GET", "/api/v1/status", "Authorization: Bearer s3cret-token-and-more", &r);
	CHECK(r.status == 401, "auth: a longer token is 401 (got %d)", r.status);
	reply_free(&r);
	request_with(AF_INET, http_port(h), "GET", "/api/v1/status", "Authorization: Basic czNjcmV0LXRva2Vu", &r);
	CHECK(r.status == 401, "auth: another scheme is 401 (got %d)", r.status);
	reply_free(&r);
	request_with(AF_INET, http_port(h), "GET", "/api/v1/status", "Authorization: Bearer s3cret-token", &r);
	CHECK(r.status == 200, "auth: the right token is 200 (got %d)", r.status);
	reply_free(&r);
	request_with(AF_INET, http_port(h), "GET", "/api/v1/profile?pid=100&format=folded&from=0&to=4000000000",
		     "Authorization: Bearer s3cret-token", &r);
	CHECK(r.status == 200 && r.body && r.body[0], "auth: data with the right token (got %d)", r.status);
	reply_free(&r);
	get(http_port(h), "/healthz", &r);
	CHECK(r.status == 200, "auth: /healthz needs no token (got %d)", r.status);
	reply_free(&r);
	get(http_port(h), "/", &r);
	CHECK(r.status == 200 && has(header(&r, "Content-Type", v, sizeof(v)), "text/html"),
	      "auth: the dashboard page needs no token (got %d)", r.status);
	reply_free(&r);
	http_free(h);
}

int main(void)
{
	char dir[] = "/tmp/test_http.XXXXXX", db[4096];
	struct fake fake = { 0 };
	/* timeout_s 1: a pprof request of 2 s shows a handler may outlast the idle timeout. */
	struct http_opts o = { .listen = "127.0.0.1:0", .db_path = db, .max_pprof_seconds = MAX_PPROF,
			       .timeout_s = 1, .get_status = fake_status, .flush_now = fake_flush, .ctx = &fake };
	struct http *h = NULL;
	unsigned port;
	int err;

	test_parse_listen();
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return CHECK_EXIT();
	}
	snprintf(db, sizeof(db), "%s/flamed.db", dir);
	err = make_db(db);
	CHECK(err == 0, "the fixture database is written (%d)", err);
	err = http_new(&o, &h);
	port = http_port(h);
	CHECK(err == 0 && port > 0, "http_new on 127.0.0.1:0 binds a port (err %d, port %u)", err, port);
	if (!err) {
		test_new_errors(db, port);
		test_healthz(port);
		test_status(port, &fake);
		test_profile(port);
		test_other_queries(port);
		test_services(port);
		test_bad_input(port);
		test_pprof(port, &fake);
		test_metrics(port);
	}
	http_free(h);
	test_free_during_pprof(db, &fake);
	test_no_database(dir, &fake);
	test_limits(db);
	test_ipv6(db);
	test_auth(db, &fake);
	remove_db(db);
	rmdir(dir);
	return CHECK_EXIT();
}
