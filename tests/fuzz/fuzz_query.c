/* fuzz_query.c - libFuzzer target: query strings end to end through the HTTP API on loopback. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include "fuzz.h"
#include "http/http.h"
#include "store/store.h"

/* One server on 127.0.0.1:0 over a small store. Each input is one request "GET PATH?QUERY": its first
 * byte chooses the endpoint (and GET or HEAD), the rest is the query string. The server must answer
 * each with a status line (200, 400 or 414) and live on. */

/* Every endpoint with parameters but /debug/pprof/profile, which sleeps out its window. */
static const char *const paths[] = {
	"/api/v1/profile", "/api/v1/top", "/api/v1/timeline", "/api/v1/diff", "/api/v1/processes",
	"/api/v1/threads", "/api/v1/status", "/metrics", "/healthz",
};
#define NPATHS (sizeof(paths) / sizeof(paths[0]))

static struct http *server;
static char dir[] = "/tmp/fuzz_query.XXXXXX";
static char db_path[64];

/* Where the two processes ran: a systemd unit and a container. */
#define SERVER_CG "/system.slice/server.service"
#define BATCH_CG "/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope"

/* Two processes, a few stacks (one with frames, for pprof), a minute ago, each in its cgroup. */
static void make_store(void)
{
	const struct store_frame frames[] = {
		{ .name = "main", .module = "/usr/bin/server", .build_id = "0123abcd" },
		{ .name = "handle", .module = "/usr/bin/server", .build_id = "0123abcd" },
		{ .name = "read_k", .module = "[kernel]", .build_id = "" },
	};
	int64_t t = (int64_t)time(NULL) - 60;
	const struct store_sample samples[] = {
		{ t, 100, 100, "server", "server", "main;handle;read_k", 5, frames, 3, STORE_CPU, SERVER_CG, NULL },
		{ t, 100, 101, "server", "worker", "main;handle", 3, NULL, 0, STORE_CPU, SERVER_CG, NULL },
		{ t - 600, 100, 101, "server", "worker", "main;idle", 2, NULL, 0, STORE_CPU, SERVER_CG, NULL },
		{ t - 1200, 200, 200, "batch", "batch", "main;crunch;[unknown]", 7, NULL, 0, STORE_CPU, BATCH_CG, NULL },
	};
	struct store *st;

	FUZZ_ASSERT(store_open(db_path, STORE_READ_WRITE, &st) == 0);
	FUZZ_ASSERT(store_begin(st) == 0);
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
		FUZZ_ASSERT(store_add(st, &samples[i]) == 0);
	FUZZ_ASSERT(store_commit(st) == 0);
	store_close(st);
}

static void cleanup(void)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	char path[80];

	http_free(server);
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", db_path, suffixes[i]);
		unlink(path);
	}
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct http_opts o = { .listen = "127.0.0.1:0", .db_path = db_path, .timeout_s = 10 };

	(void)argc;
	(void)argv;
	FUZZ_ASSERT(mkdtemp(dir));
	snprintf(db_path, sizeof(db_path), "%s/fuzz.db", dir);
	make_store();
	FUZZ_ASSERT(http_new(&o, &server) == 0);
	atexit(cleanup);
	return 0;
}

/* Appends data to buf as a request target may carry it: bytes that would end or split the request
 * line (space, controls, non-ASCII, '#') percent-encoded, the rest ('%', '&', '=', '+') as they are. */
static size_t encode(char *buf, const uint8_t *data, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (size_t i = 0; i < size; i++) {
		if (data[i] <= ' ' || data[i] >= 0x7f || data[i] == '#') {
			buf[n++] = '%';
			buf[n++] = hex[data[i] >> 4];
			buf[n++] = hex[data[i] & 15];
		} else {
			buf[n++] = (char)data[i];
		}
	}
	return n;
}

/* Sends req (len bytes) on a new connection and reads the whole answer; returns its status code, or
 * -1 when there was none, with why (no connection, an error or timeout, no status line) in why. */
static int exchange(const char *req, size_t len, char *why, size_t why_size)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)http_port(server)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 20 };
	struct linger reset = { .l_onoff = 1, .l_linger = 0 }; /* no TIME_WAIT pile-up over millions of runs */
	char head[64] = "", buf[65536];
	const char *step = "connect";
	size_t got = 0;
	ssize_t n = -1;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	FUZZ_ASSERT(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    (step = "send", send(fd, req, len, MSG_NOSIGNAL) == (ssize_t)len)) {
		step = "recv";
		while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
			size_t take = (size_t)n < sizeof(head) - 1 - got ? (size_t)n : sizeof(head) - 1 - got;

			memcpy(head + got, buf, take);
			got += take;
		}
	}
	if (n < 0)
		snprintf(why, why_size, "%s: %s", step, strerror(errno));
	close(fd);
	if (n == 0 && strncmp(head, "HTTP/1.1 ", 9) == 0)
		return atoi(head + 9);
	if (n == 0)
		snprintf(why, why_size, "no status line in \"%s\"", head);
	return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path, *method;
	char *req, why[128] = "";
	size_t len;
	int status;

	if (size == 0)
		return 0;
	path = paths[data[0] % NPATHS];
	method = (data[0] / NPATHS) % 2 ? "HEAD" : "GET";
	req = malloc(size * 3 + 128);
	FUZZ_ASSERT(req);
	len = (size_t)sprintf(req, "%s %s?", method, path);
	len += encode(req + len, data + 1, size - 1);
	len += (size_t)sprintf(req + len, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
	/* A connection closed a moment ago may still count against the server's connection limit, which
	 * then closes a new one unanswered: only a server that never answers again is a finding. */
	for (int tries = 0; (status = exchange(req, len, why, sizeof(why))) < 0 && tries < 100; tries++)
		usleep(10000);
	free(req);
	if (status < 0) {
		fprintf(stderr, "fuzz_query: %s %s: no answer in 1 s of retries (%s)\n", method, path, why);
		abort();
	}
	if (status != 200 && status != 400 && status != 414) {
		fprintf(stderr, "fuzz_query: %s %s: status %d\n", method, path, status);
		abort();
	}
	return 0;
}
