/* test_cgroups.c - where samples ran, in the store: each sample's cgroup stored once by path, queries
 * by unit, container (a unique prefix of its id), pod and cgroup path, from raw rows and rollups alike;
 * a process that moved counted where it ran; the processes listing's cgroup; bad paths and filters
 * refused; a database of schema version 6 read as it is and upgraded. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "testutil.h"
#include "testsql.h"
#include "store/store.h"

#define T0 INT64_C(1700000000)
#define TB (T0 - T0 % 3600)

#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CID2 "0123ffff89abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "1a2b3c4d-5e6f-7a8b-9c0d-112233445566"
#define WEB "/system.slice/web.service"
#define DOCKER "/system.slice/docker-" CID ".scope"
#define POD "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1a2b3c4d_5e6f_7a8b_9c0d_112233445566.slice"
#define KUBE POD "/cri-containerd-" CID2 ".scope"

struct row {
	int64_t ts;
	uint32_t pid;
	const char *comm, *folded, *cgroup;
	uint64_t count;
};

/* web.service: 100 and its short-lived child 101; a container: 200; a pod's container: 300; 400 moved
 * from web.service into the container at TB + 31; 500 and 600 with no cgroup known. */
static const struct row rows[] = {
	{ TB + 10, 100, "web", "main;serve", WEB, 10 },
	{ TB + 11, 101, "web", "main;child", WEB, 3 },
	{ TB + 12, 200, "app", "main;app", DOCKER, 20 },
	{ TB + 13, 300, "pod", "main;pod", KUBE, 40 },
	{ TB + 20, 400, "mover", "main;before", WEB, 5 },
	{ TB + 30, 400, "mover", "main;before", WEB, 1 }, /* the same second, before the move */
	{ TB + 31, 400, "mover", "main;after", DOCKER, 7 },
	{ TB + 40, 500, "none", "main;none", NULL, 100 },
	{ TB + 1800, 600, "later", "main;later", NULL, 1 }, /* so that the first minute is folded */
};

static int write_all(struct store *st)
{
	int err = store_begin(st);

	for (size_t i = 0; !err && i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct store_sample s = { .ts = rows[i].ts, .pid = rows[i].pid, .tid = rows[i].pid, .comm = rows[i].comm,
					  .thread = rows[i].comm, .folded = rows[i].folded, .count = rows[i].count,
					  .cgroup = rows[i].cgroup };

		err = store_add(st, &s);
	}
	return err ?: store_commit(st);
}

struct sum {
	uint64_t total;
	char seen[1024];
	size_t len;
};

static int stack_cb(const char *comm, const char *folded, uint64_t count, void *ctx)
{
	struct sum *s = ctx;
	int n = snprintf(s->seen + s->len, sizeof(s->seen) - s->len, "%s:%s ", comm, folded);

	s->total += count;
	if (n > 0 && (size_t)n < sizeof(s->seen) - s->len)
		s->len += (size_t)n;
	return 0;
}

static int process_cb(const struct store_process *p, void *ctx)
{
	struct sum *s = ctx;
	int n = snprintf(s->seen + s->len, sizeof(s->seen) - s->len, "%u@%s ", p->pid, p->cgroup);

	s->total += p->samples;
	if (n > 0 && (size_t)n < sizeof(s->seen) - s->len)
		s->len += (size_t)n;
	return 0;
}

static int cgroup_cb(const struct store_cgroup_total *c, void *ctx)
{
	struct sum *s = ctx;
	int n = snprintf(s->seen + s->len, sizeof(s->seen) - s->len, "%s=%" PRIu64 "/%u ", c->path[0] ? c->path : "-",
			 c->samples, c->processes);

	s->total += c->samples;
	if (n > 0 && (size_t)n < sizeof(s->seen) - s->len)
		s->len += (size_t)n;
	return 0;
}

static int point_cb(const struct store_point *p, void *ctx)
{
	((struct sum *)ctx)->total += p->count;
	return 0;
}

/* The samples f takes (UINT64_MAX on an error), its stacks in s. */
static uint64_t take(struct store *st, struct store_filter f, struct sum *s)
{
	f.tid = -1;
	f.from = TB;
	f.to = TB + 3600;
	memset(s, 0, sizeof(*s));
	return store_query_stacks(st, &f, stack_cb, s) ? UINT64_MAX : s->total;
}

static void check_filters(struct store *st, const char *from)
{
	struct store_filter f = { .pid = -1, .tid = -1, .from = TB, .to = TB + 3600, .unit = "web.service" };
	struct sum s;

	CHECK(take(st, (struct store_filter){ .pid = -1, .unit = "web.service" }, &s) == 19 && strstr(s.seen, "main;child") &&
		      strstr(s.seen, "mover:main;before") && !strstr(s.seen, "main;after"),
	      "%s: unit web.service: its process, its child and the mover before it moved (19: %s)", from, s.seen);
	CHECK(take(st, (struct store_filter){ .pid = -1, .unit = "system.slice" }, &s) == 46,
	      "%s: unit system.slice: web.service and the docker container (46: %" PRIu64 ")", from, s.total);
	CHECK(take(st, (struct store_filter){ .pid = -1, .container = "0123456789ab" }, &s) == 27 &&
		      strstr(s.seen, "mover:main;after") && !strstr(s.seen, "before"),
	      "%s: container by a 12-character prefix: the app and the mover after it moved (27: %s)", from, s.seen);
	CHECK(take(st, (struct store_filter){ .pid = -1, .container = CID2 }, &s) == 40,
	      "%s: container by its whole id: the pod's (40)", from);
	CHECK(take(st, (struct store_filter){ .pid = -1, .pod = UID }, &s) == 40 &&
		      take(st, (struct store_filter){ .pid = -1, .pod = "1a2b3c4d" }, &s) == 40,
	      "%s: pod by uid and by a prefix of it (40)", from);
	CHECK(take(st, (struct store_filter){ .pid = -1, .cgroup = "/kubepods.slice" }, &s) == 40 &&
		      take(st, (struct store_filter){ .pid = -1, .cgroup = "/kubepods.sl" }, &s) == 0,
	      "%s: cgroup by a path prefix of whole components", from);
	CHECK(take(st, (struct store_filter){ .pid = 400, .unit = "web.service" }, &s) == 6,
	      "%s: pid and unit together: the mover's samples in web.service (6)", from);
	CHECK(take(st, (struct store_filter){ .pid = -1, .unit = "nginx.service" }, &s) == 0,
	      "%s: a unit nothing ran in: nothing, no error", from);
	CHECK(take(st, (struct store_filter){ .pid = -1, .container = "0123" }, &s) == UINT64_MAX &&
		      strstr(store_errmsg(st), "more than one"),
	      "%s: a container prefix two ids start with is refused (%s)", from, store_errmsg(st));
	memset(&s, 0, sizeof(s));
	CHECK(store_query_timeline(st, &f, 60, 0, point_cb, &s) == 0 && s.total == 19,
	      "%s: the timeline of web.service sums 19 (%" PRIu64 ")", from, s.total);
	memset(&s, 0, sizeof(s));
	CHECK(store_query_processes(st, &f, process_cb, &s) == 0 && s.total == 19 && strstr(s.seen, "100@" WEB " ") &&
		      strstr(s.seen, "101@" WEB " ") && strstr(s.seen, "400@") && !strstr(s.seen, "200@"),
	      "%s: processes of web.service (%s)", from, s.seen);
	memset(&s, 0, sizeof(s));
	f.unit = NULL;
	CHECK(store_query_cgroups(st, &f, cgroup_cb, &s) == 0 && s.total == 187 &&
		      !strncmp(s.seen, "-=101/2 " KUBE "=40/1 " DOCKER "=27/2 " WEB "=19/3 ", s.len),
	      "%s: the cgroups by samples, with their processes; the mover in both (%s)", from, s.seen);
	memset(&s, 0, sizeof(s));
	f.unit = "system.slice";
	CHECK(store_query_cgroups(st, &f, cgroup_cb, &s) == 0 && s.total == 46,
	      "%s: the cgroups of system.slice (%s)", from, s.seen);
	f.unit = NULL;
	memset(&s, 0, sizeof(s));
	CHECK(store_query_processes(st, &f, process_cb, &s) == 0 && strstr(s.seen, "200@" DOCKER " ") &&
		      strstr(s.seen, "500@ ") && strstr(s.seen, "400@" DOCKER " "),
	      "%s: every process with the cgroup of its newest sample (%s)", from, s.seen);
}

static void test_filters(const char *dir)
{
	char path[512];
	struct store *st = NULL, *ro = NULL;
	struct sum s;
	int err;

	snprintf(path, sizeof(path), "%s/cg.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: write_all(st);
	CHECK(err == 0, "samples with their cgroups written (%s)", err ? store_errmsg(st) : "ok");
	if (err) {
		store_close(st);
		return;
	}
	CHECK(sql_value(path, "SELECT count(*) FROM cgroups") == 3, "each cgroup path stored once (3)");
	CHECK(sql_value(path, "SELECT count(*) FROM samples WHERE cg = 0") == 2, "a sample with no cgroup known keeps 0");
	check_filters(st, "raw rows");
	CHECK(store_open(path, STORE_READ_ONLY, &ro) == 0 && take(ro, (struct store_filter){ .pid = -1, .unit = "web.service" }, &s) == 19,
	      "a read-only store answers the same (19)");
	store_close(ro);
	err = store_set_rollups(st, &(struct store_rollup_opts){ .raw_seconds = 60, .minute_seconds = 7200 }) ?:
	      store_prune(st, TB - 86400, 0, NULL);
	CHECK(err == 0 && sql_value(path, "SELECT count(*) FROM samples") == 1 &&
		      sql_value(path, "SELECT count(DISTINCT cg) FROM rollups") == 4,
	      "folded into rollups, each cgroup apart (%s)", err ? store_errmsg(st) : "ok");
	check_filters(st, "rollups");
	store_close(st);
}

static void test_bad(const char *dir)
{
	char path[512], longpath[600];
	struct store *st = NULL;
	struct store_sample s = { .ts = TB, .pid = 1, .tid = 1, .comm = "c", .thread = "c", .folded = "main", .count = 1 };
	struct sum sum;
	int err;

	snprintf(path, sizeof(path), "%s/bad.db", dir);
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: store_begin(st);
	s.cgroup = longpath;
	CHECK(!err && store_add(st, &s) == -EINVAL, "a cgroup path over 511 bytes is refused");
	s.cgroup = "/a\nb";
	CHECK(!err && store_add(st, &s) == -EINVAL, "a cgroup path with a control character is refused");
	s.cgroup = "relative";
	CHECK(!err && store_add(st, &s) == -EINVAL, "a cgroup path not starting with '/' is refused");
	store_rollback(st);
	CHECK(take(st, (struct store_filter){ .pid = -1, .unit = "a/b" }, &sum) == UINT64_MAX &&
		      strstr(store_errmsg(st), "'/'"),
	      "a unit with '/' is refused (%s)", store_errmsg(st));
	CHECK(take(st, (struct store_filter){ .pid = -1, .cgroup = "system.slice" }, &sum) == UINT64_MAX,
	      "a cgroup filter not starting with '/' is refused (%s)", store_errmsg(st));
	CHECK(take(st, (struct store_filter){ .pid = -1, .container = "ab\x01" }, &sum) == UINT64_MAX,
	      "a container filter with a control character is refused (%s)", store_errmsg(st));
	store_close(st);
}

/* A database of schema version 6: read-only, nothing is in a cgroup; read-write, it is upgraded. */
static void test_older(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	uint64_t total;
	int64_t rows6;
	struct sum s;
	int err;

	snprintf(path, sizeof(path), "%s/v6.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: write_all(st);
	err = err ?: store_set_rollups(st, &(struct store_rollup_opts){ .raw_seconds = 60, .minute_seconds = 7200 });
	err = err ?: store_prune(st, TB - 86400, 0, NULL);
	store_close(st);
	CHECK(err == 0 && sql_run(path, SQL_BACK_TO_V6), "a schema version 6 database with rollups");
	rows6 = sql_value(path, "SELECT count(*) FROM rollups");
	err = store_open(path, STORE_READ_ONLY, &st);
	total = err ? 0 : take(st, (struct store_filter){ .pid = -1 }, &s);
	CHECK(err == 0 && total > 100 && total < 187 && take(st, (struct store_filter){ .pid = -1, .unit = "web.service" }, &s) == 0,
	      "read-only, version 6: its samples (%" PRIu64 "), none in a unit (%s)", total,
	      err ? strerror(-err) : store_errmsg(st));
	memset(&s, 0, sizeof(s));
	CHECK(!err && store_query_cgroups(st, &(struct store_filter){ .pid = -1, .tid = -1, .from = TB, .to = TB + 3600 },
					  cgroup_cb, &s) == 0 && s.total == total && !strncmp(s.seen, "-=", 2) && strchr(s.seen, ' ') == s.seen + s.len - 1,
	      "read-only, version 6: one cgroup, not known, with every sample (%s)", s.seen);
	store_close(st);
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0 && sql_value(path, "SELECT value FROM meta WHERE key = 'schema_version'") == 7 &&
		      take(st, (struct store_filter){ .pid = -1 }, &s) == total &&
		      sql_value(path, "SELECT count(*) FROM rollups") == rows6 &&
		      sql_value(path, "SELECT count(*) FROM rollups WHERE cg != 0") == 0,
	      "read-write: upgraded to version 7, its rollups kept (%" PRId64 " rows), none in a cgroup (%s)", rows6,
	      err ? strerror(-err) : store_errmsg(st));
	store_close(st);
}

int main(void)
{
	char dir[] = "/tmp/test_cgroups.XXXXXX";

	if (!mkdtemp(dir)) {
		printf("FAIL: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	test_filters(dir);
	test_bad(dir);
	test_older(dir);
	run_quiet("rm -rf %s", dir);
	return CHECK_EXIT();
}
