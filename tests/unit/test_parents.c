/* test_parents.c - who started whom in the store: parent records written with a flush, a process's
 * family in queries (stacks, timeline, processes) from raw rows and rollups, a pid used again, an
 * ancestor never sampled, records that loop, bad records refused, retention. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "testutil.h"
#include "testsql.h"
#include "store/store.h"

/* An hour boundary, so minute and hour rollups line up with the window. */
#define T0 INT64_C(1700000000)
#define TB (T0 - T0 % 3600)

/* The tree: sh (100) started python3 (101), which started a worker (102); sh also started a
 * shell (104) never sampled, which started leaf (105). other (103) is not of the family. Later pid
 * 102 is used again by an unrelated process (started by 50). 200 and 201 name each other as parent. */
static const struct store_parent tree[] = {
	{ .pid = 100, .ppid = 1, .start = TB + 10 },
	{ .pid = 101, .ppid = 100, .start = TB + 11 },
	{ .pid = 102, .ppid = 101, .start = TB + 12 },
	{ .pid = 103, .ppid = 1, .start = TB + 11 },
	{ .pid = 104, .ppid = 100, .start = TB + 13 },
	{ .pid = 105, .ppid = 104, .start = TB + 14 },
	{ .pid = 102, .ppid = 50, .start = TB + 1800 },
	{ .pid = 200, .ppid = 201, .start = TB + 10 },
	{ .pid = 201, .ppid = 200, .start = TB + 10 },
};

struct row {
	int64_t ts;
	uint32_t pid;
	const char *comm, *folded;
	uint64_t count;
};

static const struct row rows[] = {
	{ TB + 20, 100, "sh", "main;wait", 1 },
	{ TB + 21, 101, "python3", "main;work", 10 },
	{ TB + 22, 102, "python3", "main;worker", 20 },
	{ TB + 23, 103, "other", "main;other", 40 },
	{ TB + 24, 105, "leaf", "main;leaf", 5 },
	{ TB + 1810, 102, "reuse", "main;reuse", 7 },
	{ TB + 20, 200, "loop", "main;a", 2 },
	{ TB + 20, 201, "loop", "main;b", 3 },
};

static int write_all(struct store *st)
{
	int err = store_begin(st);

	for (size_t i = 0; !err && i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct store_sample s = { .ts = rows[i].ts, .pid = rows[i].pid, .tid = rows[i].pid, .comm = rows[i].comm,
					  .thread = rows[i].comm, .folded = rows[i].folded, .count = rows[i].count };

		err = store_add(st, &s);
	}
	for (size_t i = 0; !err && i < sizeof(tree) / sizeof(tree[0]); i++) {
		struct store_parent p = tree[i];

		p.seen = p.start + 100;
		err = store_add_parent(st, &p);
	}
	return err ?: store_commit(st);
}

struct sum {
	uint64_t total;
	char seen[512];
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

static int point_cb(const struct store_point *p, void *ctx)
{
	((struct sum *)ctx)->total += p->count;
	return 0;
}

static int process_cb(const struct store_process *p, void *ctx)
{
	struct sum *s = ctx;
	int n = snprintf(s->seen + s->len, sizeof(s->seen) - s->len, "%u<%u(%u) ", p->pid, p->parent, p->ppid);

	s->total += p->samples;
	if (n > 0 && (size_t)n < sizeof(s->seen) - s->len)
		s->len += (size_t)n;
	return 0;
}

static uint64_t stacks(struct store *st, int64_t pid, bool children, int64_t from, int64_t to, struct sum *s)
{
	struct store_filter f = { .pid = pid, .tid = -1, .from = from, .to = to, .children = children };

	memset(s, 0, sizeof(*s));
	return store_query_stacks(st, &f, stack_cb, s) ? UINT64_MAX : s->total;
}

/* Family queries answer the same from raw rows and, after a fold, from minute rollups. */
static void check_family(struct store *st, const char *from)
{
	struct store_filter f = { .pid = 100, .tid = -1, .from = TB, .to = TB + 3600, .children = true };
	struct sum s;

	CHECK(stacks(st, 100, true, TB, TB + 3600, &s) == 36 && !strstr(s.seen, "other") && !strstr(s.seen, "reuse"),
	      "family, %s: sh with its children: 36 samples (itself, python3, the worker, leaf under an unsampled "
	      "shell), not other's nor the later process with the worker's pid (%s)", from, s.seen);
	CHECK(stacks(st, 100, false, TB, TB + 3600, &s) == 1, "family, %s: sh alone: 1 sample", from);
	CHECK(stacks(st, 101, true, TB, TB + 3600, &s) == 30, "family, %s: python3 with its worker: 30 samples", from);
	CHECK(stacks(st, 102, true, TB + 1700, TB + 3600, &s) == 7 && strstr(s.seen, "reuse"),
	      "family, %s: the pid used again, asked later: the later process alone (%s)", from, s.seen);
	CHECK(stacks(st, 200, true, TB, TB + 3600, &s) == 5, "family, %s: records that loop end (2 + 3 samples)", from);
	CHECK(stacks(st, 999, true, TB, TB + 3600, &s) == 0, "family, %s: a pid never seen: nothing, no error", from);
	memset(&s, 0, sizeof(s));
	CHECK(store_query_timeline(st, &f, 60, 0, point_cb, &s) == 0 && s.total == 36,
	      "family, %s: the timeline of sh with its children sums 36", from);
	memset(&s, 0, sizeof(s));
	CHECK(store_query_processes(st, &f, process_cb, &s) == 0 && s.total == 36 &&
		      strstr(s.seen, "102<101(101) ") && strstr(s.seen, "101<100(100) ") && strstr(s.seen, "105<100(104) ") &&
		      strstr(s.seen, "100<0(1) ") && !strstr(s.seen, "103<"),
	      "family, %s: processes of sh's family, each under its nearest listed ancestor (%s)", from, s.seen);
}

static void test_family(const char *dir)
{
	char path[512];
	struct store *st = NULL, *ro = NULL;
	struct store_filter host = { .pid = -1, .tid = -1, .from = TB, .to = TB + 3600 };
	struct sum s = { 0 };
	int err;

	snprintf(path, sizeof(path), "%s/family.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: write_all(st);
	CHECK(err == 0, "samples and parent records written in one flush (%s)", err ? store_errmsg(st) : "ok");
	if (err) {
		store_close(st);
		return;
	}
	check_family(st, "raw rows");
	CHECK(store_query_processes(st, &host, process_cb, &s) == 0 && strstr(s.seen, "103<0(1) ") &&
		      strstr(s.seen, "102<0(50) "),
	      "processes of the host: other is a root; pid 102 is named by its latest parent (%s)", s.seen);
	CHECK(store_open(path, STORE_READ_ONLY, &ro) == 0 && stacks(ro, 100, true, TB, TB + 3600, &s) == 36,
	      "family, read-only store: 36 samples");
	store_close(ro);
	err = store_set_rollups(st, &(struct store_rollup_opts){ .raw_seconds = 60, .minute_seconds = 7200 }) ?:
	      store_prune(st, TB - 86400, 0, NULL);
	CHECK(err == 0 && sql_value(path, "SELECT count(*) FROM samples") == 1 && sql_value(path, "SELECT count(*) FROM rollups") > 0,
	      "the first minute's raw rows folded into rollups, the newest kept (%s)", err ? store_errmsg(st) : "ok");
	check_family(st, "rollups");
	store_close(st);
}

static void test_bad_records(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	const struct store_parent bad[] = {
		{ .pid = 0, .ppid = 1, .start = 5, .seen = 5 },
		{ .pid = 1, .ppid = 0, .start = 5, .seen = 5 },
		{ .pid = 7, .ppid = 7, .start = 5, .seen = 5 },
		{ .pid = 7, .ppid = 1, .start = -1, .seen = 5 },
		{ .pid = 7, .ppid = 1, .start = 6, .seen = 5 },
	};
	int err;

	snprintf(path, sizeof(path), "%s/bad.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0 && store_add_parent(st, &(struct store_parent){ .pid = 7, .ppid = 1, .start = 5, .seen = 5 }) == -EINVAL,
	      "a parent record outside a flush is refused");
	err = err ?: store_begin(st);
	for (size_t i = 0; !err && i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(store_add_parent(st, &bad[i]) == -EINVAL, "bad parent record %zu refused (%s)", i, store_errmsg(st));
	CHECK(!err && store_add_parent(st, NULL) == -EINVAL, "a NULL parent record is refused");
	/* The same process twice: the later seen is kept, and a parent of 1 gives way to a real one. */
	err = err ?: store_add_parent(st, &(struct store_parent){ .pid = 7, .ppid = 1, .start = 5, .seen = 9 });
	err = err ?: store_add_parent(st, &(struct store_parent){ .pid = 7, .ppid = 3, .start = 5, .seen = 6 });
	err = err ?: store_add_parent(st, &(struct store_parent){ .pid = 7, .ppid = 4, .start = 5, .seen = 7 });
	err = err ?: store_commit(st);
	CHECK(err == 0 && sql_value(path, "SELECT count(*) FROM parents") == 1 &&
		      sql_value(path, "SELECT seen FROM parents") == 9 &&
		      sql_value(path, "SELECT ppid FROM parents") == 3,
	      "one record per (pid, start): the latest seen, the first parent other than init");
	err = err ?: store_prune(st, 10, 0, NULL);
	CHECK(err == 0 && sql_value(path, "SELECT count(*) FROM parents") == 0,
	      "retention deletes records not seen since its cut");
	store_close(st);
}

/* A database of schema version 5 gets the parents table; one read-only answers with the pid alone. */
static void test_older(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	struct sum s;
	int err;

	snprintf(path, sizeof(path), "%s/v5.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: write_all(st);
	store_close(st);
	CHECK(err == 0 && sql_run(path, SQL_BACK_TO_V6 "DROP TABLE parents; UPDATE meta SET value = 5 WHERE key = 'schema_version'"),
	      "a schema version 5 database");
	err = store_open(path, STORE_READ_ONLY, &st);
	CHECK(err == 0 && stacks(st, 100, true, TB, TB + 3600, &s) == 1,
	      "read-only, version 5: sh with its children is sh alone (no parents recorded)");
	store_close(st);
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0 && sql_value(path, "SELECT value FROM meta WHERE key = 'schema_version'") == 7 &&
		      sql_value(path, "SELECT count(*) FROM parents") == 0,
	      "read-write: upgraded to version 7 with an empty parents table");
	store_close(st);
}

int main(void)
{
	char dir[] = "/tmp/test_parents.XXXXXX";

	if (!mkdtemp(dir)) {
		printf("FAIL: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	test_family(dir);
	test_bad_records(dir);
	test_older(dir);
	run_quiet("rm -rf %s", dir);
	return CHECK_EXIT();
}
