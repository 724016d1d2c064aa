/* test_store.c - the SQLite store (writes, frames, queries, migration, validation, bad files) and the folded renderer.
 * Usage: test_store                   run the checks
 *        test_store --make-fixture DB  write the known small database tests/integration/test_flamectl.sh reads */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check.h"
#include "testutil.h"
#include "testsql.h"
#include "render/folded.h"
#include "util/hash.h"
#include "store/store.h"
#include "store/store_impl.h"

/* The fixture's fixed time: 2023-11-14T22:13:20Z. */
/* A frame of a native binary: name, module, build-id (no Python source). */
#define FR(name_, module_, build_id_) { .name = (name_), .module = (module_), .build_id = (build_id_) }
#define T0 INT64_C(1700000000)

/* A sample without frames. */
#define SAMPLE(ts_, pid_, tid_, comm_, thread_, folded_, count_)                                  \
	{ .ts = (ts_), .pid = (pid_), .tid = (tid_), .comm = (comm_), .thread = (thread_),      \
	  .folded = (folded_), .count = (count_) }

/* The fixture: pid 100 ("server", once "sh" before it exec'd) in three threads, pid 200 whose name
 * holds ';' and a space and runs pid 100's hottest stack, pid 300 a minute ago (for --since). */
static int make_fixture(const char *path)
{
	const int64_t recent = (int64_t)time(NULL) - 60;
	const struct store_sample samples[] = {
		SAMPLE(T0 + 0, 100, 100, "server", "server", "main;handle;parse", 5),
		SAMPLE(T0 + 0, 100, 101, "server", "worker", "main;handle;parse", 3),
		SAMPLE(T0 + 10, 100, 101, "server", "worker", "main;idle", 2),
		SAMPLE(T0 + 20, 100, 100, "server", "server", "main;handle;write", 1),
		SAMPLE(T0 + 20, 100, 100, "server", "server", "main;handle;write", 3), /* merges: 4 */
		SAMPLE(T0 + 30, 100, 100, "sh", "sh", "main;handle;parse", 1),
		SAMPLE(T0 + 60, 100, 102, "server", "gc", "main;gc", 1),
		SAMPLE(T0 + 0, 200, 200, "a;b c", "a;b c", "main;handle;parse", 7),
		SAMPLE(recent, 300, 300, "recent", "recent", "main;recent", 9),
	};
	struct store *st = NULL;
	int err;

	err = store_open(path, STORE_READ_WRITE, &st);
	if (err)
		return err;
	err = store_begin(st);
	for (size_t i = 0; !err && i < sizeof(samples) / sizeof(samples[0]); i++)
		err = store_add(st, &samples[i]);
	if (!err)
		err = store_commit(st);
	if (err)
		fprintf(stderr, "test_store: %s\n", store_errmsg(st));
	store_close(st);
	return err;
}

/* Collects query results as lines ("comm|folded|count\n" for stacks). */
struct collect {
	char buf[8192];
	size_t len;
	int calls;
	int stop_after; /* > 0: return 7 after this many calls */
	int64_t base;   /* subtracted from the times printed */
};

/* Appends a formatted line; returns what a callback returns (7 after stop_after calls, else 0). */
__attribute__((format(printf, 2, 3)))
static int collect_printf(struct collect *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(c->buf + c->len, sizeof(c->buf) - c->len, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(c->buf) - c->len)
		c->len += (size_t)n;
	c->calls++;
	return c->stop_after && c->calls >= c->stop_after ? 7 : 0;
}

static int collect_cb(const char *comm, const char *folded, uint64_t count, void *ctx)
{
	return collect_printf(ctx, "%s|%s|%" PRIu64 "\n", comm, folded, count);
}

/* "pid|comm|folded|count|name@module@build_id,..." ("(none)": no frames). */
static int frames_cb(uint32_t pid, const char *comm, const char *folded, const struct store_frame *frames,
		     unsigned nframes, uint64_t count, void *ctx)
{
	char list[2048] = "(none)";
	size_t len = 0;

	for (unsigned i = 0; frames && i < nframes && len < sizeof(list); i++) {
		int n = snprintf(list + len, sizeof(list) - len, "%s%s@%s@%s", i ? "," : "", frames[i].name,
				 frames[i].module, frames[i].build_id);

		len += n > 0 ? (size_t)n : 0;
	}
	if (frames && !nframes)
		snprintf(list, sizeof(list), "(frames, but 0 of them)");
	return collect_printf(ctx, "%u|%s|%s|%" PRIu64 "|%s\n", pid, comm, folded, count, list);
}

/* "pid|comm|samples|first|last", times less base. */
static int process_cb(const struct store_process *p, void *ctx)
{
	const struct collect *c = ctx;

	return collect_printf(ctx, "%u|%s|%" PRIu64 "|%" PRId64 "|%" PRId64 "\n", p->pid, p->comm, p->samples,
			      p->first_seen - c->base, p->last_seen - c->base);
}

static int thread_cb(const struct store_thread *t, void *ctx)
{
	return collect_printf(ctx, "%u|%s|%" PRIu64 "\n", t->tid, t->name, t->samples);
}

/* "ts|tid|count", ts less base; "ts|tid@pid|count" when the point names its pid (per thread). */
static int point_cb(const struct store_point *p, void *ctx)
{
	const struct collect *c = ctx;
	char pid[16] = "";

	if (p->pid)
		snprintf(pid, sizeof(pid), "@%u", p->pid);
	return collect_printf(ctx, "%" PRId64 "|%u%s|%" PRIu64 "\n", p->ts - c->base, p->tid, pid, p->count);
}

/* Runs a query and returns its lines (in a static-free caller buffer). */
static int query(struct store *st, int64_t pid, int64_t tid, int64_t from, int64_t to, struct collect *c)
{
	struct store_filter f = { .pid = pid, .tid = tid, .from = from, .to = to };

	memset(c, 0, sizeof(*c));
	return store_query_stacks(st, &f, collect_cb, c);
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static void test_fixture_queries(const char *dir)
{
	char path[512], side[600];
	struct store *st = NULL;
	struct store_stats stats;
	struct collect c;
	char mode[16] = "";
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;
	int err;

	snprintf(path, sizeof(path), "%s/fixture.db", dir);
	CHECK(make_fixture(path) == 0, "write a flush of samples");

	err = store_open(path, STORE_READ_ONLY, &st);
	CHECK(err == 0 && st, "reopen read-only");
	if (err)
		return;
	snprintf(side, sizeof(side), "%s-wal", path);
	CHECK(!exists(side), "a read-only open with no writer creates no -wal file");
	snprintf(side, sizeof(side), "%s-shm", path);
	CHECK(!exists(side), "a read-only open with no writer creates no -shm file");

	err = query(st, 100, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && strcmp(c.buf,
				 "server|main;handle;parse|8\n"
				 "server|main;handle;write|4\n"
				 "server|main;idle|2\n"
				 "server|main;gc|1\n"
				 "sh|main;handle;parse|1\n") == 0,
	      "query by pid: aggregated by (process name, stack), most first, ties by name");
	err = query(st, 100, 101, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && strcmp(c.buf, "server|main;handle;parse|3\nserver|main;idle|2\n") == 0, "query by pid and tid");
	err = query(st, -1, 101, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && strcmp(c.buf, "server|main;handle;parse|3\nserver|main;idle|2\n") == 0, "query by tid alone");
	err = query(st, 200, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && strcmp(c.buf, "a;b c|main;handle;parse|7\n") == 0, "same stack, other pid: its own count");
	err = query(st, -1, -1, T0, T0 + 1, &c);
	CHECK(err == 0 && strcmp(c.buf, "server|main;handle;parse|8\na;b c|main;handle;parse|7\n") == 0,
	      "query any pid in one second");

	err = query(st, 100, -1, T0 + 10, T0 + 60, &c);
	CHECK(err == 0 && strcmp(c.buf, "server|main;handle;write|4\nserver|main;idle|2\nsh|main;handle;parse|1\n") == 0,
	      "window [from, to): from inclusive, to exclusive");
	err = query(st, 100, -1, T0 + 60, T0 + 61, &c);
	CHECK(err == 0 && strcmp(c.buf, "server|main;gc|1\n") == 0, "window boundary: a sample at from is in");
	err = query(st, 100, -1, T0 + 11, T0 + 20, &c);
	CHECK(err == 0 && c.calls == 0, "window boundary: nothing strictly inside (10, 20)");
	err = query(st, 100, -1, T0 + 20, T0 + 20, &c);
	CHECK(err == 0 && c.calls == 0, "empty window from == to");
	err = query(st, 999, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && c.calls == 0, "pid without samples: no rows, no error");

	memset(&c, 0, sizeof(c));
	c.stop_after = 2;
	err = store_query_stacks(st, NULL, collect_cb, &c);
	CHECK(err == 7 && c.calls == 2, "a callback's non-zero return stops the query and is returned (%d)", err);
	err = query(st, 300, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && strcmp(c.buf, "recent|main;recent|9\n") == 0, "the store is usable after a stopped query");
	err = query(st, -2, -1, 0, 1, &c);
	CHECK(err == -EINVAL, "pid below -1 is rejected");
	err = query(st, (int64_t)UINT32_MAX + 1, -1, 0, 1, &c);
	CHECK(err == -EINVAL, "pid above 32 bits is rejected");

	err = store_get_stats(st, &stats);
	CHECK(err == 0 && stats.stacks == 5, "each distinct stack stored once (%" PRIu64 " stacks)", stats.stacks);
	CHECK(err == 0 && stats.sample_rows == 8, "duplicates merged before insertion (%" PRIu64 " rows)", stats.sample_rows);
	CHECK(err == 0 && stats.db_bytes > 0, "database size reported (%" PRIu64 " bytes)", stats.db_bytes);
	CHECK(store_begin(st) == -EROFS, "read-only store refuses to write");
	store_close(st);

	CHECK(sql_value(path, "SELECT count(*) FROM stacks WHERE folded = 'main;handle;parse'") == 1,
	      "stack shared by two pids has one row");
	CHECK(sql_value(path, "SELECT count(*) FROM samples WHERE pid = 100 AND ts = 1700000020") == 1 &&
		      sql_value(path, "SELECT count FROM samples WHERE pid = 100 AND ts = 1700000020") == 4,
	      "duplicate (ts, pid, tid, comm, thread, stack) merged into one row, counts summed");
	CHECK(sql_value(path, "SELECT count(*) FROM names") == 6, "names stored once each");
	CHECK(sql_value(path, "SELECT value FROM meta WHERE key = 'schema_version'") == 7, "meta holds schema_version 7");

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, NULL) == SQLITE_OK &&
	    sqlite3_step(stmt) == SQLITE_ROW)
		snprintf(mode, sizeof(mode), "%s", (const char *)sqlite3_column_text(stmt, 0));
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	CHECK(strcmp(mode, "wal") == 0, "journal_mode is wal (%s)", mode);

	/* Reopening read-write keeps the data and appends. */
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0, "reopen read-write an existing database");
	if (!err) {
		const struct store_sample s = SAMPLE(T0 + 5, 100, 100, "server", "server", "main;handle;parse", 2);

		err = store_begin(st);
		err = err ?: store_add(st, &s);
		err = err ?: store_commit(st);
		CHECK(err == 0, "append a second flush");
		err = query(st, 100, 100, T0, T0 + 10, &c);
		CHECK(err == 0 && strcmp(c.buf, "server|main;handle;parse|7\n") == 0,
		      "rows of two flushes are summed by the query");
		store_close(st);
	}
}

static void test_invalid(const char *dir)
{
	char path[512], name256[257], *big;
	struct store *st = NULL;
	struct store_stats stats = { 1, 1, 0, 1 };
	const struct store_sample good = SAMPLE(T0, 1, 1, "p", "t", "a;b", 1);
	struct {
		const char *why;
		struct store_sample s;
	} bad[] = {
		{ "NULL stack", SAMPLE(T0, 1, 1, "p", "t", NULL, 1) },
		{ "empty stack", SAMPLE(T0, 1, 1, "p", "t", "", 1) },
		{ "newline in stack", SAMPLE(T0, 1, 1, "p", "t", "a;b\nc", 1) },
		{ "carriage return in stack", SAMPLE(T0, 1, 1, "p", "t", "a\r;b", 1) },
		{ "empty frame inside", SAMPLE(T0, 1, 1, "p", "t", "a;;b", 1) },
		{ "leading ';'", SAMPLE(T0, 1, 1, "p", "t", ";a;b", 1) },
		{ "trailing ';'", SAMPLE(T0, 1, 1, "p", "t", "a;b;", 1) },
		{ "only ';'", SAMPLE(T0, 1, 1, "p", "t", ";", 1) },
		{ "count 0", SAMPLE(T0, 1, 1, "p", "t", "a;b", 0) },
		{ "count above INT64_MAX", SAMPLE(T0, 1, 1, "p", "t", "a;b", (uint64_t)INT64_MAX + 1) },
		{ "NULL process name", SAMPLE(T0, 1, 1, NULL, "t", "a;b", 1) },
		{ "NULL thread name", SAMPLE(T0, 1, 1, "p", NULL, "a;b", 1) },
		{ "process name of 256 bytes", SAMPLE(T0, 1, 1, name256, "t", "a;b", 1) },
		{ "thread name of 256 bytes", SAMPLE(T0, 1, 1, "p", name256, "a;b", 1) },
		{ "stack of 64 KiB + 1", SAMPLE(T0, 1, 1, "p", "t", NULL, 1) }, /* folded set below */
	};
	const size_t nbad = sizeof(bad) / sizeof(bad[0]);
	int err;

	big = malloc(64 * 1024 + 2);
	if (!big) {
		SKIP("invalid samples", "out of memory");
		return;
	}
	memset(big, 'x', 64 * 1024 + 1);
	big[64 * 1024 + 1] = '\0';
	bad[nbad - 1].s.folded = big;
	memset(name256, 'n', 256);
	name256[256] = '\0';

	snprintf(path, sizeof(path), "%s/invalid.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0, "create a new database");
	if (err) {
		free(big);
		return;
	}
	CHECK(store_add(st, &good) == -EINVAL, "add without store_begin is refused");
	CHECK(store_commit(st) == -EINVAL, "commit without store_begin is refused");
	CHECK(store_begin(st) == 0, "begin");
	CHECK(store_begin(st) == -EINVAL, "a second begin is refused");
	for (size_t i = 0; i < nbad; i++) {
		err = store_add(st, &bad[i].s);
		CHECK(err == -EINVAL && strstr(store_errmsg(st), "invalid sample"), "rejected: %s (%s)", bad[i].why,
		      store_errmsg(st));
	}
	CHECK(store_add(st, NULL) == -EINVAL, "rejected: NULL sample");
	CHECK(store_commit(st) == 0, "commit after rejections");
	err = store_get_stats(st, &stats);
	CHECK(err == 0 && stats.sample_rows == 0 && stats.stacks == 0, "nothing of the rejected samples stored");
	CHECK(sql_value(path, "SELECT count(*) FROM names") == 0, "no name of the rejected samples stored");

	/* A merge whose sum would not fit SQLite's integers rejects that sample only. */
	{
		const struct store_sample max = SAMPLE(T0, 2, 2, "p", "t", "a;b", (uint64_t)INT64_MAX);
		const struct store_sample one = SAMPLE(T0, 2, 2, "p", "t", "a;b", 1);
		struct collect c;

		err = store_begin(st);
		err = err ?: store_add(st, &max);
		CHECK(err == 0, "a count of 2^63-1 is accepted");
		CHECK(store_add(st, &one) == -EOVERFLOW, "merging past 2^63-1 is -EOVERFLOW");
		err = store_commit(st);
		CHECK(err == 0, "the flush still commits");
		err = err ?: query(st, 2, -1, INT64_MIN, INT64_MAX, &c);
		CHECK(err == 0 && strcmp(c.buf, "p|a;b|9223372036854775807\n") == 0, "the earlier count is kept");
	}

	/* The limits themselves are accepted: 255-byte names, a 64 KiB stack. */
	name256[255] = '\0';
	big[64 * 1024] = '\0';
	{
		const struct store_sample edge = SAMPLE(T0, 1, 1, name256, name256, big, 1);

		err = store_begin(st);
		err = err ?: store_add(st, &edge);
		err = err ?: store_commit(st);
		CHECK(err == 0, "255-byte names and a 64 KiB stack are accepted");
	}
	store_close(st);
	free(big);
}

static void test_rollback(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	struct store_stats stats = { 1, 1, 0, 1 };
	struct collect c;
	const struct store_sample r1 = SAMPLE(T0, 7, 7, "rolled", "rolled", "r;s", 1);
	const struct store_sample t2 = SAMPLE(T0, 7, 7, "kept", "kept", "t;u", 2);
	const struct store_sample r3 = SAMPLE(T0, 7, 7, "rolled", "rolled", "r;s", 3);
	int err;

	snprintf(path, sizeof(path), "%s/rollback.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0, "create a database for rollback");
	if (err)
		return;
	err = store_begin(st);
	err = err ?: store_add(st, &r1);
	CHECK(err == 0, "add before rollback");
	store_rollback(st);
	err = store_get_stats(st, &stats);
	CHECK(err == 0 && stats.sample_rows == 0 && stats.stacks == 0, "rollback leaves nothing");
	CHECK(sql_value(path, "SELECT count(*) FROM names") == 0, "rollback leaves no name");
	store_rollback(st); /* no transaction: a no-op */

	/* The rolled-back stack and name ids get reused by new rows; a cache that kept them would file
	 * r;s under t;u and "rolled" under "kept". */
	err = store_begin(st);
	err = err ?: store_add(st, &t2);
	err = err ?: store_add(st, &r3);
	err = err ?: store_commit(st);
	CHECK(err == 0, "a flush after the rollback");
	err = query(st, 7, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && strcmp(c.buf, "rolled|r;s|3\nkept|t;u|2\n") == 0, "no id from a rolled-back transaction is reused");

	/* Closing with a transaction open rolls it back. */
	err = store_begin(st);
	err = err ?: store_add(st, &t2);
	CHECK(err == 0, "add, then close without commit");
	store_close(st);
	CHECK(sql_value(path, "SELECT sum(count) FROM samples") == 5, "close rolled back the open transaction");
}

/* Mirrors store_write.c's stack hash (64-bit FNV-1a) to plant a colliding row. */
static uint64_t fnv1a(const char *s)
{
	return hash_bytes(HASH_FNV_OFFSET, s, strlen(s));
}

static void test_collision(const char *dir)
{
	char path[512], sql[256];
	struct store *st = NULL;
	struct collect c;
	const struct store_sample s = SAMPLE(T0, 9, 9, "p", "p", "x;y", 4);
	int err;

	snprintf(path, sizeof(path), "%s/collision.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	store_close(st);
	snprintf(sql, sizeof(sql), "INSERT INTO stacks(hash, folded) VALUES (%" PRId64 ", 'decoy;frame')",
		 (int64_t)fnv1a("x;y"));
	CHECK(err == 0 && sql_run(path, sql), "plant a stack with the same hash and other text");
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: store_begin(st);
	err = err ?: store_add(st, &s);
	err = err ?: store_commit(st);
	CHECK(err == 0, "add the stack whose hash collides");
	err = err ?: query(st, 9, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && strcmp(c.buf, "p|x;y|4\n") == 0, "a hash collision gets its own row, not the decoy's");
	store_close(st);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM stacks WHERE hash = %" PRId64, (int64_t)fnv1a("x;y"));
	CHECK(sql_value(path, sql) == 2, "two rows share the hash");
}

/* A stack's id kept by the caller (struct store_sample's stack_id): set by the first sample, then used
 * as it is, the stack not looked up again. */
static void test_stack_memo(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	struct collect c;
	int64_t memo = 0, other = 0;
	struct store_sample a = SAMPLE(T0, 7, 7, "m", "m", "main;work", 2), b = a;
	struct store_sample z = SAMPLE(T0, 8, 8, "m", "m", "main;rest", 1);
	int err;

	snprintf(path, sizeof(path), "%s/memo.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: store_begin(st);
	z.stack_id = &other;
	err = err ?: store_add(st, &z);
	a.stack_id = &memo;
	err = err ?: store_add(st, &a);
	CHECK(err == 0 && memo > 0 && other > 0 && memo != other, "the first samples set their stacks' ids (%" PRId64
	      ", %" PRId64 ")", memo, other);
	b.ts = T0 + 1;
	b.stack_id = &memo;
	err = err ?: store_add(st, &b);
	/* The memo is taken as given: a sample whose memo holds another stack's id is stored as that stack,
	 * its text neither checked (an empty frame here) nor used. */
	b.ts = T0 + 2;
	b.folded = "ignored;;text";
	b.stack_id = &other;
	err = err ?: store_add(st, &b);
	err = err ?: store_commit(st);
	CHECK(err == 0, "stored with the ids kept");
	err = err ?: query(st, 7, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && strstr(c.buf, "m|main;work|4\n") && strstr(c.buf, "m|main;rest|2\n") && !strstr(c.buf, "ignored"),
	      "the second sample under the kept id, the third under the id it was given (%s)", c.buf);
	store_close(st);
}

/* More rows than one flush merges in memory: they are written out early, and totals stay right. */
static void test_big_flush(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	struct store_stats stats = { 0 };
	struct collect c;
	const int n = 70000;
	int err;

	snprintf(path, sizeof(path), "%s/big.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: store_begin(st);
	for (int i = 0; !err && i < n; i++) {
		const struct store_sample s = SAMPLE(T0 + i, 5, 5, "big", "big", "main;loop", 1);

		err = store_add(st, &s);
	}
	if (!err) {
		const struct store_sample again = SAMPLE(T0, 5, 5, "big", "big", "main;loop", 2);

		err = store_add(st, &again);
	}
	err = err ?: store_commit(st);
	CHECK(err == 0, "a flush of %d rows", n);
	err = err ?: query(st, 5, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && strcmp(c.buf, "big|main;loop|70002\n") == 0, "its total is exact");
	err = store_get_stats(st, &stats);
	CHECK(err == 0 && (stats.sample_rows == (uint64_t)n || stats.sample_rows == (uint64_t)n + 1),
	      "about one row per distinct key (%" PRIu64 ")", stats.sample_rows);
	store_close(st);
}

static int cmp_page(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The root page of name and its leaf pages as SQLite's dbstat sees them (sorted), from db. */
static size_t dbstat_leaves(sqlite3 *db, const char *name, uint32_t *root, uint32_t *out, size_t max)
{
	sqlite3_stmt *s = NULL;
	size_t n = 0;

	*root = 0;
	if (sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_schema WHERE name = ?1", -1, &s, NULL) == SQLITE_OK) {
		sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
		if (sqlite3_step(s) == SQLITE_ROW)
			*root = (uint32_t)sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	if (sqlite3_prepare_v2(db, "SELECT pageno FROM dbstat WHERE name = ?1 AND pagetype = 'leaf' ORDER BY pageno",
			       -1, &s, NULL) == SQLITE_OK) {
		sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
		while (n < max && sqlite3_step(s) == SQLITE_ROW)
			out[n++] = (uint32_t)sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	return n;
}

/* A prefetch hints exactly the leaf pages dbstat finds, of a table and of an index; a one-page table
 * has none to hint; past its bound it says so; a damaged b-tree or a file that is no database is -EIO. */
static void test_prefetch(const char *dir)
{
	static uint32_t got[STORE_PREFETCH_MAX_PAGES], want[STORE_PREFETCH_MAX_PAGES];
	const char *names[] = { "samples", "samples_ts" };
	char path[512], damaged[560];
	sqlite3 *db = NULL;
	uint32_t root = 0, samples_root = 0;
	size_t n, nwant;
	int err;

	snprintf(path, sizeof(path), "%s/big.db", dir); /* test_big_flush's: 70000 raw rows */
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		CHECK(false, "prefetch: open %s", path);
		sqlite3_close(db);
		return;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		nwant = dbstat_leaves(db, names[i], &root, want, STORE_PREFETCH_MAX_PAGES);
		if (i == 0)
			samples_root = root;
		err = store_prefetch_pages(path, root, NULL, NULL, STORE_PREFETCH_MAX_PAGES, got, &n);
		qsort(got, n, sizeof(*got), cmp_page);
		CHECK(err == 0 && nwant > 50 && n == nwant && memcmp(got, want, n * sizeof(*got)) == 0,
		      "prefetch: the %zu leaf pages of %s are those dbstat finds (%zu; %d)", n, names[i], nwant, err);
	}
	dbstat_leaves(db, "meta", &root, want, STORE_PREFETCH_MAX_PAGES);
	err = store_prefetch_pages(path, root, NULL, NULL, STORE_PREFETCH_MAX_PAGES, got, &n);
	CHECK(err == 0 && n == 0, "prefetch: a table of one page has nothing to hint (%d, %zu)", err, n);
	err = store_prefetch_pages(path, samples_root, NULL, NULL, 10, got, &n);
	CHECK(err == -E2BIG && n == 0, "prefetch: more leaves than asked for is -E2BIG (%d)", err);
	sqlite3_close(db);

	/* The same file with the table's root page overwritten, then with a child past the end of the file. */
	snprintf(damaged, sizeof(damaged), "%s/damaged.db", dir);
	{
		size_t len = 0;
		unsigned char *all = read_all(path, &len);

		err = !all || write_file(damaged, all, len) ? -EIO : 0;
		free(all);
	}
	if (!err) {
		unsigned char page[4096];
		int fd = open(damaged, O_RDWR);

		memset(page, 0xff, sizeof(page));
		err = fd < 0 || pwrite(fd, page, sizeof(page), (off_t)(samples_root - 1) * 4096) != (ssize_t)sizeof(page);
		err = err ?: store_prefetch_pages(damaged, samples_root, NULL, NULL, STORE_PREFETCH_MAX_PAGES, got, &n);
		CHECK(err == -EIO, "prefetch: a root page of no b-tree type is -EIO (%d)", err);
		memset(page, 0, sizeof(page));
		page[0] = 5;                    /* an interior table page */
		page[4] = 1;                    /* with one cell */
		page[8] = page[9] = 0x7f;       /* whose right-most child is far past the end */
		page[12] = 0x0f;                /* the cell at offset 0x0f00 */
		page[0x0f00] = page[0x0f01] = 0x7f;
		err = fd < 0 || pwrite(fd, page, sizeof(page), (off_t)(samples_root - 1) * 4096) != (ssize_t)sizeof(page);
		err = err ?: store_prefetch_pages(damaged, samples_root, NULL, NULL, STORE_PREFETCH_MAX_PAGES, got, &n);
		CHECK(err == -EIO, "prefetch: a child page past the end of the file is -EIO (%d)", err);
		if (fd >= 0)
			close(fd);
	}
	unlink(damaged);
	err = store_prefetch_pages("/proc/self/status", 2, NULL, NULL, STORE_PREFETCH_MAX_PAGES, got, &n);
	CHECK(err == -EIO && n == 0, "prefetch: a file that is no SQLite database is -EIO (%d)", err);
}

/* A range of an index b-tree (a WITHOUT ROWID table keyed as rollups are): the pages hinted are leaves
 * of it; all of them for a range that holds every key, a few for a tenth of the keys, hardly any past
 * the last key. */
static void test_prefetch_range(const char *dir)
{
	static uint32_t got[STORE_PREFETCH_MAX_PAGES], leaves[STORE_PREFETCH_MAX_PAGES];
	char path[512];
	sqlite3 *db = NULL;
	uint32_t root = 0;
	size_t n, nleaves = 0, bad = 0;
	int err = 0;

	snprintf(path, sizeof(path), "%s/range.db", dir);
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "CREATE TABLE t(span INTEGER, bucket INTEGER, pad BLOB, PRIMARY KEY(span, bucket)) WITHOUT ROWID;"
			 "WITH RECURSIVE k(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM k WHERE x < 19999)"
			 " INSERT INTO t SELECT 60 + 3540 * (x % 2), 1000000 + 60 * (x / 2), randomblob(300) FROM k;",
			 NULL, NULL, NULL) != SQLITE_OK)
		err = -EIO;
	if (!err)
		nleaves = dbstat_leaves(db, "t", &root, leaves, STORE_PREFETCH_MAX_PAGES);
	sqlite3_close(db);
	CHECK(!err && nleaves > 1000, "prefetch range: a keyed table of %zu leaf pages", nleaves);
	err = store_prefetch_pages(path, root, (int64_t[2]){ 0, 0 }, (int64_t[2]){ 4000, 1 << 30 },
				   STORE_PREFETCH_MAX_PAGES, got, &n);
	qsort(got, n, sizeof(*got), cmp_page);
	CHECK(err == 0 && n == nleaves && memcmp(got, leaves, n * sizeof(*got)) == 0,
	      "prefetch range: a range of every key hints every leaf (%zu of %zu; %d)", n, nleaves, err);
	/* span 3600, the first tenth of its buckets: about a twentieth of the rows */
	err = store_prefetch_pages(path, root, (int64_t[2]){ 3600, 1000000 }, (int64_t[2]){ 3600, 1000000 + 60 * 1000 },
				   STORE_PREFETCH_MAX_PAGES, got, &n);
	for (size_t i = 0; i < n; i++)
		bad += !bsearch(&got[i], leaves, nleaves, sizeof(*leaves), cmp_page);
	CHECK(err == 0 && n >= nleaves / 25 && n <= nleaves / 10 && bad == 0,
	      "prefetch range: a twentieth of the keys hints a few of the leaves, all of them leaves (%zu of %zu, %zu"
	      " not leaves; %d)", n, nleaves, bad, err);
	err = store_prefetch_pages(path, root, (int64_t[2]){ 7200, 0 }, (int64_t[2]){ 7200, 1 << 30 },
				   STORE_PREFETCH_MAX_PAGES, got, &n);
	CHECK(err == 0 && n <= 2, "prefetch range: past the last key, at most the last leaf (%zu; %d)", n, err);
	unlink(path);
}

/* A reader sees committed flushes only, and is not blocked by an open write transaction (WAL). */
static void test_concurrent_reader(const char *dir)
{
	char path[512];
	struct store *w = NULL, *r = NULL;
	struct collect c;
	const struct store_sample s1 = SAMPLE(T0, 4, 4, "w", "w", "one", 1);
	const struct store_sample s2 = SAMPLE(T0, 4, 4, "w", "w", "two", 2);
	int err;

	snprintf(path, sizeof(path), "%s/concurrent.db", dir);
	err = store_open(path, STORE_READ_WRITE, &w);
	err = err ?: store_begin(w);
	err = err ?: store_add(w, &s1);
	err = err ?: store_commit(w);
	err = err ?: store_begin(w);
	err = err ?: store_add(w, &s2);
	err = err ?: store_open(path, STORE_READ_ONLY, &r);
	CHECK(err == 0, "open a reader while a write transaction is open");
	err = err ?: query(r, 4, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && strcmp(c.buf, "w|one|1\n") == 0, "the reader sees only committed data");
	err = err ?: store_commit(w);
	err = err ?: query(r, 4, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && strcmp(c.buf, "w|two|2\nw|one|1\n") == 0, "after the commit the reader sees it");
	store_close(r);
	store_close(w);
}

static void test_bad_files(const char *dir)
{
	char path[512], side[600], buf[4096], back[4096];
	struct store *st = (struct store *)&st; /* not NULL: a failed open must set it to NULL */
	int fd, err;

	snprintf(path, sizeof(path), "%s/missing.db", dir);
	err = store_open(path, STORE_READ_ONLY, &st);
	CHECK(err == -ENOENT && st == NULL, "read-only open of a missing file: -ENOENT (%d), out set to NULL", err);
	snprintf(side, sizeof(side), "%s-wal", path);
	CHECK(!exists(path) && !exists(side), "no file created by a read-only open");
	CHECK(store_open(dir, STORE_READ_ONLY, &st) < 0, "a directory is refused");

	snprintf(path, sizeof(path), "%s/garbage.db", dir);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7 + 13);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0 && write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) && close(fd) == 0, "write a garbage file");
	err = store_open(path, STORE_READ_ONLY, &st);
	CHECK(err < 0 && err != -ENOENT && st == NULL, "read-only open of garbage fails cleanly (%s)", strerror(-err));
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err < 0 && st == NULL, "read-write open of garbage fails cleanly (%s)", strerror(-err));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && read(fd, back, sizeof(back)) == (ssize_t)sizeof(back) && memcmp(buf, back, sizeof(buf)) == 0,
	      "the garbage file is left as it was");
	if (fd >= 0)
		close(fd);

	/* A valid database with a corrupted page: open may succeed, a query must fail, not crash. */
	snprintf(path, sizeof(path), "%s/corrupt.db", dir);
	err = make_fixture(path);
	if (!err) {
		struct collect c;

		fd = open(path, O_WRONLY | O_CLOEXEC);
		err = fd >= 0 && pwrite(fd, buf, sizeof(buf), 1024) == (ssize_t)sizeof(buf) && close(fd) == 0 ? 0 : -EIO;
		CHECK(err == 0, "overwrite pages of a database with garbage");
		err = store_open(path, STORE_READ_ONLY, &st);
		if (!err) {
			err = query(st, 100, -1, INT64_MIN, INT64_MAX, &c);
			store_close(st);
		}
		CHECK(err < 0, "a corrupt database gives an error (%s)", strerror(-err));
	}

	snprintf(path, sizeof(path), "%s/other.db", dir);
	CHECK(sql_run(path, "CREATE TABLE other(x); INSERT INTO other VALUES (1);"), "create an SQLite file of another program");
	CHECK(store_open(path, STORE_READ_ONLY, &st) == -EINVAL, "read-only: not a flamed database: -EINVAL");
	CHECK(store_open(path, STORE_READ_WRITE, &st) == -EINVAL, "read-write: not a flamed database: -EINVAL");
	CHECK(sql_value(path, "SELECT count(*) FROM sqlite_master WHERE name = 'samples'") == 0,
	      "no table added to another program's database");

	snprintf(path, sizeof(path), "%s/newer.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	store_close(st);
	CHECK(err == 0 && sql_run(path, "UPDATE meta SET value = 8 WHERE key = 'schema_version'"),
	      "make a schema version 8 database");
	CHECK(store_open(path, STORE_READ_ONLY, &st) == -ENOTSUP, "read-only: a newer schema is refused");
	CHECK(store_open(path, STORE_READ_WRITE, &st) == -ENOTSUP, "read-write: a newer schema is refused");

	snprintf(path, sizeof(path), "%s/empty.db", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	CHECK(store_open(path, STORE_READ_ONLY, &st) == -EINVAL, "read-only: an empty file is not a flamed database");
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0, "read-write: an empty file gets the schema");
	store_close(st);

	store_close(NULL);
	CHECK(store_errmsg(NULL) != NULL, "store_close(NULL) is safe; store_errmsg(NULL) is a string");
	CHECK(store_open(NULL, STORE_READ_ONLY, &st) == -EINVAL && store_open(path, STORE_READ_ONLY, NULL) == -EINVAL,
	      "NULL arguments to store_open are -EINVAL");
}

/* got == want; when not, prints what came (as "# " lines) for the FAIL that follows. */
static bool same(const char *got, const char *want)
{
	if (strcmp(got, want) == 0)
		return true;
	printf("# want:\n%s# got:\n%s", want, got);
	return false;
}

/* Runs one flush of n samples; 0 or the first error. */
static int flush(struct store *st, const struct store_sample *s, size_t n)
{
	int err = store_begin(st);

	for (size_t i = 0; !err && i < n; i++)
		err = store_add(st, &s[i]);
	if (!err)
		return store_commit(st);
	store_rollback(st);
	return err;
}

static int query_frames(struct store *st, int64_t pid, const char *comm, struct collect *c)
{
	struct store_filter f = { .pid = pid, .tid = -1, .from = INT64_MIN, .to = INT64_MAX, .comm = comm };

	memset(c, 0, sizeof(*c));
	return store_query_stacks_frames(st, &f, frames_cb, c);
}

/* A sample with frames. */
#define FSAMPLE(ts_, pid_, comm_, folded_, count_, frames_)                                            \
	{ .ts = (ts_), .pid = (pid_), .tid = (pid_), .comm = (comm_), .thread = (comm_), .folded = (folded_), \
	  .count = (count_), .frames = (frames_), .nframes = sizeof(frames_) / sizeof((frames_)[0]) }

static const struct store_frame srv_frames[] = {
	FR("main", "/usr/bin/server", "0a1b2c"),
	FR("handle", "/usr/lib/libh.so", NULL),
	FR("read_[k]", "[kernel]", ""),
};
static const struct store_frame idle_frames[] = { FR("main", "/usr/bin/server", "0a1b2c"),
						  FR("idle", NULL, NULL) };
static const struct store_frame other_frames[] = { FR("main", "/usr/bin/other", "ff") };

/* "pid|comm|folded|count|name@file:first:line,..." of each stack with Python sources. */
static int sources_cb(uint32_t pid, const char *comm, const char *folded, const struct store_frame *frames,
		      unsigned nframes, uint64_t count, void *ctx)
{
	char list[2048] = "";
	size_t len = 0;

	for (unsigned i = 0; frames && i < nframes && len < sizeof(list); i++) {
		int n = snprintf(list + len, sizeof(list) - len, "%s%s@%s:%d:%d", i ? "," : "", frames[i].name,
				 frames[i].file ? frames[i].file : "(null)", frames[i].start_line, frames[i].line);

		len += n > 0 ? (size_t)n : 0;
	}
	return collect_printf(ctx, "%u|%s|%s|%" PRIu64 "|%s\n", pid, comm, folded, count, list);
}

/* A Python frame of /src/app.py: "NAME (app.py)", its function's first line, the line run. */
#define PY(name_, first_, line_)                                                                         \
	{ .name = name_ " (app.py)", .module = "", .build_id = "", .file = "/src/app.py", .start_line = (first_), \
	  .line = (line_) }

/* Python frames: two stacks of one text whose lines differ are two stacks (pprof gets each line), and
 * one in every answer by text; their sources survive a reopen and are told apart then too. */
static void test_python_sources(const char *dir)
{
	static const struct store_frame at12[] = { FR("main", "/usr/bin/python3", ""), PY("<module>", 1, 30),
						   PY("tooth", 10, 12) };
	static const struct store_frame at13[] = { FR("main", "/usr/bin/python3", ""), PY("<module>", 1, 30),
						   PY("tooth", 10, 13) };
	static const struct store_frame native[] = { FR("main", "/usr/bin/python3", ""),
						     FR("<module> (app.py)", "", ""), FR("tooth (app.py)", "", "") };
	const char *text = "main;<module> (app.py);tooth (app.py)";
	struct store_sample s[] = { FSAMPLE(T0, 7, "app", text, 3, at12), FSAMPLE(T0, 7, "app", text, 2, at13),
				    FSAMPLE(T0 + 1, 7, "app", text, 4, at12) };
	struct store_sample later[] = { FSAMPLE(T0 + 2, 7, "app", text, 5, at13),
					FSAMPLE(T0 + 2, 7, "app", text, 1, native) };
	struct store_filter f = { .pid = -1, .tid = -1, .from = INT64_MIN, .to = INT64_MAX };
	struct store *st = NULL;
	struct collect c;
	char path[512];
	int err;

	snprintf(path, sizeof(path), "%s/sources.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: flush(st, s, 3);
	CHECK(err == 0, "sources: a flush of Python frames with lines");
	CHECK(sql_value(path, "SELECT count(*) FROM stacks") == 2 &&
		      sql_value(path, "SELECT count(*) FROM frames WHERE name = 'tooth (app.py)'") == 2 &&
		      sql_value(path, "SELECT count(*) FROM frames WHERE name = 'tooth (app.py)' AND file = '/src/app.py'"
				" AND start_line = 10 AND line IN (12, 13)") == 2,
	      "sources: one text, two lines: two stacks and two frames with file, first line and line");
	err = err ?: query(st, -1, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && same(c.buf, "app|main;<module> (app.py);tooth (app.py)|9\n"),
	      "sources: an answer by text has one row for the text, its counts summed (%s)", c.buf);
	store_close(st);
	st = NULL;
	err = store_open(path, STORE_READ_WRITE, &st); /* the caches are gone: found by their frames */
	err = err ?: flush(st, later, 2);
	CHECK(err == 0 && sql_value(path, "SELECT count(*) FROM stacks") == 3,
	      "sources: after a reopen, a stack with lines is found again, one without them is new");
	memset(&c, 0, sizeof(c));
	err = err ?: store_query_stacks_frames(st, &f, sources_cb, &c);
	CHECK(err == 0 && strstr(c.buf, "tooth (app.py)@/src/app.py:10:12|") == NULL &&
		      strstr(c.buf, "|7|main@:0:0,<module> (app.py)@/src/app.py:1:30,tooth (app.py)@/src/app.py:10:12\n") &&
		      strstr(c.buf, "|7|main@:0:0,<module> (app.py)@/src/app.py:1:30,tooth (app.py)@/src/app.py:10:13\n") &&
		      strstr(c.buf, "|1|main@:0:0,<module> (app.py)@:0:0,tooth (app.py)@:0:0\n"),
	      "sources: stacks with frames keep each line apart, with file and first line (%s)", c.buf);
	err = err ?: query(st, -1, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && same(c.buf, "app|main;<module> (app.py);tooth (app.py)|15\n"),
	      "sources: and by text, the one without sources joins them (%s)", c.buf);
	store_close(st);
}

/* Frames round-trip: names, modules and build-ids, root first, per (pid, process name, stack). */
static void test_frames_roundtrip(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	struct collect c;
	const struct store_sample samples[] = {
		FSAMPLE(T0, 10, "srv", "main;handle;read_[k]", 3, srv_frames),
		FSAMPLE(T0 + 1, 11, "srv2", "main;handle;read_[k]", 2, srv_frames),
		FSAMPLE(T0, 10, "srv", "main;idle", 1, idle_frames),
		SAMPLE(T0, 12, 12, "plain", "plain", "no;frames", 1),
	};
	const struct store_sample other = FSAMPLE(T0, 13, "other", "main", 1, other_frames);
	int err;

	snprintf(path, sizeof(path), "%s/frames.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: flush(st, samples, sizeof(samples) / sizeof(samples[0]));
	err = err ?: flush(st, &other, 1);
	CHECK(err == 0, "write samples with frames (%s)", err ? store_errmsg(st) : "ok");
	err = err ?: query_frames(st, -1, NULL, &c);
	CHECK(err == 0 && same(c.buf,
			       "10|srv|main;handle;read_[k]|3|main@/usr/bin/server@0a1b2c,handle@/usr/lib/libh.so@,read_[k]@[kernel]@\n"
			       "11|srv2|main;handle;read_[k]|2|main@/usr/bin/server@0a1b2c,handle@/usr/lib/libh.so@,read_[k]@[kernel]@\n"
			       "10|srv|main;idle|1|main@/usr/bin/server@0a1b2c,idle@@\n"
			       "12|plain|no;frames|1|(none)\n"
			       "13|other|main|1|main@/usr/bin/other@ff\n"),
	      "frames round-trip root first with modules and build-ids, per pid, most first");
	err = query_frames(st, 10, NULL, &c);
	CHECK(err == 0 && c.calls == 2 && strncmp(c.buf, "10|srv|main;handle;read_[k]|3|", 30) == 0, "frames query by pid");
	err = query_frames(st, -1, "srv2", &c);
	CHECK(err == 0 && c.calls == 1 && strncmp(c.buf, "11|srv2|", 8) == 0, "frames query by process name");
	memset(&c, 0, sizeof(c));
	c.stop_after = 1;
	err = store_query_stacks_frames(st, NULL, frames_cb, &c);
	CHECK(err == 7 && c.calls == 1, "a frames callback's non-zero return stops the query");
	store_close(st);
	CHECK(sql_value(path, "SELECT count(*) FROM modules") == 5, "modules stored once each, \"\" one of them");
	CHECK(sql_value(path, "SELECT count(*) FROM modules WHERE path = '' AND build_id = ''") == 1,
	      "NULL module and build-id stored as \"\"");
	CHECK(sql_value(path, "SELECT count(*) FROM frames") == 5, "frames stored once per (name, module)");
	CHECK(sql_value(path, "SELECT count(*) FROM stacks WHERE frame_ids IS NULL") == 1,
	      "a stack without frames has NULL frame_ids");
}

/* "folded|count|name<system>,..." of a frames query, system "-" where the name is as stored. */
static int system_cb(uint32_t pid, const char *comm, const char *folded, const struct store_frame *frames,
		     unsigned nframes, uint64_t count, void *ctx)
{
	char list[1024] = "";
	size_t len = 0;

	(void)pid;
	(void)comm;
	for (unsigned i = 0; frames && i < nframes && len < sizeof(list); i++) {
		int n = snprintf(list + len, sizeof(list) - len, "%s%s<%s>", i ? "," : "", frames[i].name,
				 frames[i].system_name ? frames[i].system_name : "-");

		len += n > 0 ? (size_t)n : 0;
	}
	return collect_printf(ctx, "%s|%" PRIu64 "|%s\n", folded, count, list);
}

/* C++ and Rust frames read demangled (short by default, full, none), the stored name kept beside for
 * pprof; two overloads that read alike once demangled are one frame, their stacks one stack. */
static void test_demangled(const char *dir)
{
	static const struct store_frame f_int[] = { FR("main", "/app", ""), FR("_ZN2ns1fEi", "/app", "") };
	static const struct store_frame f_double[] = { FR("main", "/app", ""), FR("_ZN2ns1fEd", "/app", "") };
	static const struct store_frame rs[] = { FR("main", "/rs", ""),
		FR("_ZN7rs_work8pipeline5Stage5churn17h94cee0908c52b0a5E", "/rs", "") };
	const struct store_sample samples[] = {
		FSAMPLE(T0, 10, "app", "main;_ZN2ns1fEi", 3, f_int),
		FSAMPLE(T0, 10, "app", "main;_ZN2ns1fEd", 2, f_double),
		FSAMPLE(T0, 11, "rs", "main;_ZN7rs_work8pipeline5Stage5churn17h94cee0908c52b0a5E", 4, rs),
	};
	struct store_filter f = { .pid = -1, .tid = -1, .from = INT64_MIN, .to = INT64_MAX };
	struct store *st = NULL;
	struct collect c;
	char path[512];
	int err;

	snprintf(path, sizeof(path), "%s/demangle.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: flush(st, samples, sizeof(samples) / sizeof(samples[0]));
	CHECK(err == 0, "demangle: write C++ and Rust frames (%s)", err ? store_errmsg(st) : "ok");
	memset(&c, 0, sizeof(c));
	err = store_query_stacks(st, &f, collect_cb, &c);
	CHECK(err == 0 && same(c.buf, "app|main;ns::f|5\nrs|main;rs_work::pipeline::Stage::churn|4\n"),
	      "demangle short (the default): ns::f's two overloads one stack, Rust without its hash");
	memset(&c, 0, sizeof(c));
	f.demangle = DEMANGLE_FULL;
	err = store_query_stacks(st, &f, collect_cb, &c);
	CHECK(err == 0 && same(c.buf, "rs|main;rs_work::pipeline::Stage::churn::h94cee0908c52b0a5|4\n"
				      "app|main;ns::f(int)|3\napp|main;ns::f(double)|2\n"),
	      "demangle full: the overloads apart, Rust's hash kept");
	memset(&c, 0, sizeof(c));
	f.demangle = DEMANGLE_NONE;
	err = store_query_stacks(st, &f, collect_cb, &c);
	CHECK(err == 0 && same(c.buf, "rs|main;_ZN7rs_work8pipeline5Stage5churn17h94cee0908c52b0a5E|4\n"
				      "app|main;_ZN2ns1fEi|3\napp|main;_ZN2ns1fEd|2\n"),
	      "demangle none: as stored");
	memset(&c, 0, sizeof(c));
	f.demangle = DEMANGLE_SHORT;
	f.pid = 11;
	err = store_query_stacks_frames(st, &f, system_cb, &c);
	CHECK(err == 0 && same(c.buf, "main;rs_work::pipeline::Stage::churn|4|main<->,rs_work::pipeline::Stage::churn"
				      "<_ZN7rs_work8pipeline5Stage5churn17h94cee0908c52b0a5E>\n"),
	      "a frames query gives each demangled frame its stored name (system_name), none to a C one");
	store_close(st);
}

/* The namer of test_late_names: knows app's 0x10 and 0x20 (one function) and counts what it is asked. */
struct late_calls {
	unsigned calls;
	char last_id[64];
};

static int late_name(void *ctx, const char *module, const char *build_id, uint64_t addr, char *buf, size_t cap)
{
	struct late_calls *lc = ctx;

	lc->calls += strcmp(module, "/bin/app") == 0;
	snprintf(lc->last_id, sizeof(lc->last_id), "%s", build_id);
	if (addr != 0x10 && addr != 0x20)
		return -ENOENT;
	snprintf(buf, cap, "%s", "late_fn");
	return 0;
}

/* Frames stored unnamed ("app+0x10") are named by the store's namer when read, in every answer; frames
 * of another module's name, without a build-id, or named already are not asked about. */
static void test_late_names(const char *dir)
{
	static const struct store_frame a[] = { FR("main", "/bin/app", "beef"), FR("app+0x10", "/bin/app", "beef") };
	static const struct store_frame b[] = { FR("main", "/bin/app", "beef"), FR("app+0x20", "/bin/app", "beef") };
	static const struct store_frame c3[] = { FR("main", "/bin/app", "beef"), FR("app+0x30", "/bin/app", "beef") };
	static const struct store_frame d[] = { FR("main", "/bin/app", "beef"), FR("lib.so+0x10", "/bin/app", "beef") };
	static const struct store_frame e[] = { FR("main", "/bin/noid", ""), FR("noid+0x10", "/bin/noid", "") };
	static const struct store_frame g[] = { FR("main", "/bin/app", "beef"), FR("app+0x10zz", "/bin/app", "beef") };
	const struct store_sample samples[] = {
		FSAMPLE(T0, 10, "app", "main;app+0x10", 3, a),
		FSAMPLE(T0, 10, "app", "main;app+0x20", 2, b),
		FSAMPLE(T0, 10, "app", "main;app+0x30", 1, c3),
		FSAMPLE(T0, 10, "app", "main;lib.so+0x10", 1, d),
		FSAMPLE(T0, 11, "noid", "main;noid+0x10", 4, e),
		FSAMPLE(T0, 10, "app", "main;app+0x10zz", 1, g),
	};
	struct store_filter f = { .pid = 10, .tid = -1, .from = INT64_MIN, .to = INT64_MAX };
	struct late_calls lc = { 0 };
	struct store_namer namer = { .name = late_name, .ctx = &lc };
	struct store *st = NULL;
	struct collect c;
	char path[512];
	int err;

	snprintf(path, sizeof(path), "%s/late.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: flush(st, samples, sizeof(samples) / sizeof(samples[0]));
	CHECK(err == 0, "late names: write unnamed frames (%s)", err ? store_errmsg(st) : "ok");
	memset(&c, 0, sizeof(c));
	err = store_query_stacks(st, &f, collect_cb, &c);
	CHECK(err == 0 && strstr(c.buf, "app|main;app+0x10|3\n") && !strstr(c.buf, "late_fn"),
	      "late names: without a namer, frames read as stored");
	store_set_namer(st, &namer);
	memset(&c, 0, sizeof(c));
	err = store_query_stacks(st, &f, collect_cb, &c);
	CHECK(err == 0 && strstr(c.buf, "app|main;late_fn|5\n") && strstr(c.buf, "app|main;app+0x30|1\n") &&
		      strstr(c.buf, "app|main;lib.so+0x10|1\n") && strstr(c.buf, "app|main;app+0x10zz|1\n"),
	      "late names: 0x10 and 0x20 named (one stack of 5), 0x30 unknown to the namer, another module's name "
	      "and a name that is not an address kept:\n%s", c.buf);
	CHECK(lc.calls == 3 && !strcmp(lc.last_id, "beef"),
	      "late names: the namer asked of app's three addresses only, with the build-id (%u calls)", lc.calls);
	f.pid = 11;
	memset(&c, 0, sizeof(c));
	err = store_query_stacks(st, &f, collect_cb, &c);
	CHECK(err == 0 && same(c.buf, "noid|main;noid+0x10|4\n") && lc.calls == 3,
	      "late names: a module without a build-id is not asked of");
	store_set_namer(st, NULL);
	store_close(st);
}

/* A frame list that does not match its stack is rejected, and nothing of it is stored. */
static void test_frames_invalid(const char *dir)
{
	char path[512], longpath[4098], longbid[130];
	struct store *st = NULL;
	struct store_stats before = { 0 }, after = { 1, 1, 0, 1 };
	const struct store_frame four[] = { FR("main", "", ""), FR("handle", "", ""), FR("read_[k]", "", ""),
					    FR("x", "", "") };
	const struct store_frame misnamed[] = { FR("main", "", ""), FR("handel", "", ""), FR("read_[k]", "", "") };
	const struct store_frame prefix[] = { FR("main", "", ""), FR("hand", "", ""), FR("read_[k]", "", "") };
	const struct store_frame noname[] = { FR("main", "", ""), FR(NULL, "", ""), FR("read_[k]", "", "") };
	const struct store_frame upper[] = { FR("main", "/b", "0A1B"), FR("handle", "", ""), FR("read_[k]", "", "") };
	const struct store_frame nonhex[] = { FR("main", "/b", "xyz"), FR("handle", "", ""), FR("read_[k]", "", "") };
	struct store_frame toolong_bid[] = { FR("main", "/b", longbid), FR("handle", "", ""),
					     FR("read_[k]", "", "") };
	struct store_frame toolong_path[] = { FR("main", longpath, ""), FR("handle", "", ""),
					      FR("read_[k]", "", "") };
	struct {
		const char *why;
		struct store_sample s;
	} bad[] = {
		{ "fewer frames than the stack has", FSAMPLE(T0, 1, "p", "main;handle;read_[k]", 1, srv_frames) },
		{ "more frames than the stack has", FSAMPLE(T0, 1, "p", "main;handle;read_[k]", 1, four) },
		{ "a frame name differs", FSAMPLE(T0, 1, "p", "main;handle;read_[k]", 1, misnamed) },
		{ "a frame name is a prefix", FSAMPLE(T0, 1, "p", "main;handle;read_[k]", 1, prefix) },
		{ "a frame name is NULL", FSAMPLE(T0, 1, "p", "main;handle;read_[k]", 1, noname) },
		{ "an uppercase build-id", FSAMPLE(T0, 1, "p", "main;handle;read_[k]", 1, upper) },
		{ "a build-id not hex", FSAMPLE(T0, 1, "p", "main;handle;read_[k]", 1, nonhex) },
		{ "a build-id of 129 digits", FSAMPLE(T0, 1, "p", "main;handle;read_[k]", 1, toolong_bid) },
		{ "a module path of 4097 bytes", FSAMPLE(T0, 1, "p", "main;handle;read_[k]", 1, toolong_path) },
	};
	int err;

	bad[0].s.nframes = 2;
	memset(longpath, 'm', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	memset(longbid, 'a', sizeof(longbid) - 1);
	longbid[sizeof(longbid) - 1] = '\0';

	snprintf(path, sizeof(path), "%s/frames_invalid.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0, "create a database for frame validation");
	if (err)
		return;
	err = store_get_stats(st, &before);
	err = err ?: store_begin(st);
	for (size_t i = 0; !err && i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = store_add(st, &bad[i].s);

		CHECK(rc == -EINVAL && strstr(store_errmsg(st), "invalid sample"), "frames rejected: %s (%s)", bad[i].why,
		      store_errmsg(st));
	}
	err = err ?: store_commit(st);
	err = err ?: store_get_stats(st, &after);
	CHECK(err == 0 && after.stacks == before.stacks && after.sample_rows == before.sample_rows,
	      "nothing of the rejected samples stored");
	CHECK(sql_value(path, "SELECT (SELECT count(*) FROM modules) + (SELECT count(*) FROM frames)"
			      " + (SELECT count(*) FROM names)") == 0,
	      "no module, frame or name of the rejected samples stored");

	/* The limits themselves are accepted. */
	longpath[4096] = '\0';
	longbid[128] = '\0';
	toolong_bid[0].module = longpath;
	err = flush(st, &bad[7].s, 1);
	CHECK(err == 0, "a 4096-byte module path and a 128-digit build-id are accepted (%s)", err ? store_errmsg(st) : "ok");
	{
		struct store_sample s = SAMPLE(T0, 1, 1, "p", "p", "a;b", 1);

		s.nframes = 5; /* ignored without frames */
		CHECK(flush(st, &s, 1) == 0, "nframes without frames is ignored");
	}
	store_close(st);
}

/* A stack stored without frames gets them from a later sample with frames; the first frames stay. */
static void test_frames_later(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	struct collect c;
	const struct store_frame wx[] = { FR("w", "/bin/w", "01"), FR("x", "/bin/w", "01") };
	const struct store_frame wx2[] = { FR("w", "/bin/w2", "02"), FR("x", "/bin/w2", "02") };
	const struct store_frame yz[] = { FR("y", "/bin/y", ""), FR("z", "[kernel]", "") };
	const struct store_sample plain = SAMPLE(T0, 20, 20, "p", "p", "w;x", 1);
	const struct store_sample framed = FSAMPLE(T0 + 1, 20, "p", "w;x", 2, wx);
	const struct store_sample framed2 = FSAMPLE(T0 + 2, 20, "p", "w;x", 4, wx2);
	const struct store_sample same_tx[] = { SAMPLE(T0, 21, 21, "q", "q", "y;z", 1), FSAMPLE(T0, 21, "q", "y;z", 1, yz) };
	int err;

	snprintf(path, sizeof(path), "%s/frames_later.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: flush(st, &plain, 1);
	err = err ?: query_frames(st, 20, NULL, &c);
	CHECK(err == 0 && same(c.buf, "20|p|w;x|1|(none)\n"), "a stack stored without frames: none reported");
	err = err ?: flush(st, &framed, 1);
	err = err ?: query_frames(st, 20, NULL, &c);
	CHECK(err == 0 && same(c.buf, "20|p|w;x|3|w@/bin/w@01,x@/bin/w@01\n"),
	      "the same stack later with frames: its frames filled in");
	err = err ?: flush(st, &plain, 1);
	err = err ?: flush(st, &same_tx[0], 2);
	CHECK(err == 0, "flushes without and with frames");
	store_close(st);

	/* Reopened, so the cache is cold: the stored frames are found and kept. */
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: flush(st, &framed2, 1);
	err = err ?: query_frames(st, -1, NULL, &c);
	CHECK(err == 0 && same(c.buf, "20|p|w;x|8|w@/bin/w@01,x@/bin/w@01\n21|q|y;z|2|y@/bin/y@,z@[kernel]@\n"),
	      "frames kept by later samples without or with other frames; filled in within one flush");
	store_close(st);
	CHECK(sql_value(path, "SELECT count(*) FROM stacks") == 2, "one row per stack throughout");
}

/* Module and frame ids of a rolled-back flush are not reused from the cache. */
static void test_frames_rollback(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	struct collect c;
	const struct store_frame rs[] = { FR("r", "/rolled", "aa"), FR("s", "/rolled", "aa") };
	const struct store_frame kl[] = { FR("k", "/kept", "bb"), FR("l", "/kept", "bb") };
	const struct store_sample rolled = FSAMPLE(T0, 30, "p", "r;s", 1, rs);
	const struct store_sample two[] = { FSAMPLE(T0, 30, "p", "k;l", 2, kl), FSAMPLE(T0, 30, "p", "r;s", 1, rs) };
	int err;

	snprintf(path, sizeof(path), "%s/frames_rollback.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: store_begin(st);
	err = err ?: store_add(st, &rolled);
	store_rollback(st);
	err = err ?: flush(st, two, 2);
	err = err ?: query_frames(st, -1, NULL, &c);
	CHECK(err == 0 && same(c.buf, "30|p|k;l|2|k@/kept@bb,l@/kept@bb\n30|p|r;s|1|r@/rolled@aa,s@/rolled@aa\n"),
	      "after a rollback, modules and frames get fresh ids");
	store_close(st);
}

/* Checks each stack's frames against its text and module; counts stacks and errors. */
struct many {
	int stacks, bad;
};

static int many_cb(uint32_t pid, const char *comm, const char *folded, const struct store_frame *frames,
		   unsigned nframes, uint64_t count, void *ctx)
{
	struct many *m = ctx;
	char module[32], joined[8192];
	size_t len = 0;

	(void)comm;
	(void)count;
	snprintf(module, sizeof(module), "/m/%u", pid);
	for (unsigned i = 0; i < nframes && len < sizeof(joined); i++) {
		int n = snprintf(joined + len, sizeof(joined) - len, "%s%s", i ? ";" : "", frames[i].name);

		len += n > 0 ? (size_t)n : 0;
		m->bad += strcmp(frames[i].module, module) != 0 || strcmp(frames[i].build_id, "beef") != 0;
	}
	m->bad += nframes != 500 || strcmp(joined, folded) != 0;
	m->stacks++;
	return 0;
}

/* 20000 distinct frames: multi-byte frame ids, and a query that empties its frame cache between stacks. */
static void test_frames_many(const char *dir)
{
	enum { STACKS = 40, DEPTH = 500 };
	char path[512], names[DEPTH][24], folded[DEPTH * 24], module[32];
	struct store_frame frames[DEPTH];
	struct store *st = NULL;
	struct many m = { 0 };
	int err;

	snprintf(path, sizeof(path), "%s/frames_many.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: store_begin(st);
	for (int s = 0; !err && s < STACKS; s++) {
		struct store_sample smp = SAMPLE(T0, (uint32_t)s, (uint32_t)s, "many", "many", folded, 1);
		size_t len = 0;

		snprintf(module, sizeof(module), "/m/%d", s);
		for (int i = 0; i < DEPTH; i++) {
			snprintf(names[i], sizeof(names[i]), "f%d_%d", s, i);
			len += (size_t)snprintf(folded + len, sizeof(folded) - len, "%s%s", i ? ";" : "", names[i]);
			frames[i] = (struct store_frame)FR(names[i], module, "beef");
		}
		smp.frames = frames;
		smp.nframes = DEPTH;
		err = store_add(st, &smp);
	}
	err = err ?: store_commit(st);
	CHECK(err == 0, "write %d stacks of %d distinct frames", STACKS, DEPTH);
	err = err ?: store_query_stacks_frames(st, NULL, many_cb, &m);
	CHECK(err == 0 && m.stacks == STACKS && m.bad == 0, "every frame read back right (%d stacks, %d wrong)",
	      m.stacks, m.bad);
	store_close(st);
}

static void test_comm_filter(struct store *st)
{
	struct store_filter f = { .pid = -1, .tid = -1, .from = INT64_MIN, .to = INT64_MAX, .comm = "sh" };
	struct collect c;
	int err;

	memset(&c, 0, sizeof(c));
	err = store_query_stacks(st, &f, collect_cb, &c);
	CHECK(err == 0 && same(c.buf, "sh|main;handle;parse|1\n"), "comm filter: only that process name's samples");
	f.comm = "a;b c";
	memset(&c, 0, sizeof(c));
	err = store_query_stacks(st, &f, collect_cb, &c);
	CHECK(err == 0 && same(c.buf, "a;b c|main;handle;parse|7\n"), "comm filter: a name with ';' and a space");
	f.comm = "server";
	f.pid = 100;
	f.tid = 101;
	memset(&c, 0, sizeof(c));
	err = store_query_stacks(st, &f, collect_cb, &c);
	CHECK(err == 0 && same(c.buf, "server|main;handle;parse|3\nserver|main;idle|2\n"), "comm filter with pid and tid");
	f.comm = "nobody";
	f.pid = f.tid = -1;
	memset(&c, 0, sizeof(c));
	err = store_query_stacks(st, &f, collect_cb, &c);
	CHECK(err == 0 && c.calls == 0, "comm filter: an unknown name matches nothing");
	f.comm = "";
	memset(&c, 0, sizeof(c));
	err = store_query_stacks(st, &f, collect_cb, &c);
	CHECK(err == 0 && c.calls == 0, "comm filter: \"\" is a name, not 'any'");
	f.comm = "sh";
	memset(&c, 0, sizeof(c));
	err = store_query_stacks_frames(st, &f, frames_cb, &c);
	CHECK(err == 0 && same(c.buf, "100|sh|main;handle;parse|1|(none)\n"), "comm filter on the frames query");
}

static void test_processes(struct store *st)
{
	struct store_filter f = { .pid = 200, .tid = 7, .from = T0, .to = T0 + 61 };
	struct collect c = { .base = T0 };
	int err;

	err = store_query_processes(st, &f, process_cb, &c);
	CHECK(err == 0 && same(c.buf, "100|server|16|0|60\n200|a;b c|7|0|0\n"),
	      "processes: one row per pid, summed, first/last seen, named by the newest sample; pid/tid ignored");
	f.to = T0 + 31;
	memset(&c, 0, sizeof(c));
	c.base = T0;
	err = store_query_processes(st, &f, process_cb, &c);
	CHECK(err == 0 && same(c.buf, "100|sh|15|0|30\n200|a;b c|7|0|0\n"),
	      "processes: the name is the newest in the window (sh at +30)");
	f.comm = "server";
	memset(&c, 0, sizeof(c));
	c.base = T0;
	err = store_query_processes(st, &f, process_cb, &c);
	CHECK(err == 0 && same(c.buf, "100|server|14|0|20\n"), "processes: comm filter");
	memset(&c, 0, sizeof(c));
	c.stop_after = 1;
	err = store_query_processes(st, NULL, process_cb, &c);
	CHECK(err == 7 && c.calls == 1, "processes: NULL filter is every sample; the callback's return stops it");
}

static void test_threads(struct store *st)
{
	struct store_filter f = { .pid = 100, .tid = 999, .from = INT64_MIN, .to = INT64_MAX };
	struct collect c;
	int err;

	memset(&c, 0, sizeof(c));
	err = store_query_threads(st, &f, thread_cb, &c);
	CHECK(err == 0 && same(c.buf, "100|sh|10\n101|worker|5\n102|gc|1\n"),
	      "threads: one row per tid, named by the newest sample, most first");
	f.to = T0 + 30;
	memset(&c, 0, sizeof(c));
	err = store_query_threads(st, &f, thread_cb, &c);
	CHECK(err == 0 && same(c.buf, "100|server|9\n101|worker|5\n"), "threads: window respected");
	f.comm = "sh";
	f.to = INT64_MAX;
	memset(&c, 0, sizeof(c));
	err = store_query_threads(st, &f, thread_cb, &c);
	CHECK(err == 0 && same(c.buf, "100|sh|1\n"), "threads: comm filter");
	f.pid = -1;
	CHECK(store_query_threads(st, &f, thread_cb, &c) == -EINVAL, "threads: a pid is required");
	f.pid = (int64_t)UINT32_MAX + 1;
	CHECK(store_query_threads(st, &f, thread_cb, &c) == -EINVAL, "threads: a pid above 32 bits is rejected");
	CHECK(store_query_threads(st, NULL, thread_cb, &c) == -EINVAL, "threads: NULL filter is rejected");
}

/* Processes and threads ordered most samples first, then by id; renamed ones by their newest name. */
static void test_names_order(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	struct collect c;
	const struct store_sample s[] = {
		SAMPLE(T0, 20, 21, "b", "b", "x", 3),      SAMPLE(T0, 10, 12, "a", "a12", "x", 3),
		SAMPLE(T0 + 5, 10, 11, "a2", "new", "x", 1), SAMPLE(T0, 10, 11, "a", "old", "x", 2),
		SAMPLE(T0 + 1, 30, 30, "c", "c", "x", 6),
	};
	struct store_filter f = { .pid = 10, .tid = -1, .from = T0, .to = T0 + 10 };
	int err;

	snprintf(path, sizeof(path), "%s/names.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: flush(st, s, sizeof(s) / sizeof(s[0]));
	memset(&c, 0, sizeof(c));
	c.base = T0;
	err = err ?: store_query_processes(st, &f, process_cb, &c);
	CHECK(err == 0 && same(c.buf, "10|a2|6|0|5\n30|c|6|1|1\n20|b|3|0|0\n"),
	      "processes: ties by pid, renamed by newest");
	memset(&c, 0, sizeof(c));
	err = err ?: store_query_threads(st, &f, thread_cb, &c);
	CHECK(err == 0 && same(c.buf, "11|new|3\n12|a12|3\n"), "threads: ties by tid, renamed by newest");
	store_close(st);
}

static int timeline(struct store *st, int64_t pid, int64_t tid, int64_t from, int64_t to, int64_t step,
		    int per_thread, struct collect *c)
{
	struct store_filter f = { .pid = pid, .tid = tid, .from = from, .to = to };

	memset(c, 0, sizeof(*c));
	c->base = T0;
	return store_query_timeline(st, &f, step, per_thread, point_cb, c);
}

static void test_timeline(struct store *st)
{
	struct collect c;
	int err;

	err = timeline(st, 100, -1, T0, T0 + 61, 1, 0, &c);
	CHECK(err == 0 && same(c.buf, "0|0|8\n10|0|2\n20|0|4\n30|0|1\n60|0|1\n"),
	      "timeline step 1: only seconds with samples");
	err = timeline(st, 100, -1, T0 - 5, T0 + 61, 10, 0, &c);
	CHECK(err == 0 && same(c.buf, "-5|0|8\n5|0|2\n15|0|4\n25|0|1\n55|0|1\n"), "timeline step 10 aligned to from");
	err = timeline(st, 100, -1, T0, T0 + 61, 30, 0, &c);
	CHECK(err == 0 && same(c.buf, "0|0|14\n30|0|1\n60|0|1\n"), "timeline step 30 sums its seconds");
	err = timeline(st, 100, -1, T0, T0 + 61, 30, 1, &c);
	CHECK(err == 0 && same(c.buf, "0|100@100|9\n0|101@100|5\n30|100@100|1\n60|102@100|1\n"),
	      "timeline per thread, time then tid, each with its pid");
	err = timeline(st, -1, -1, T0, T0 + 61, 10, 0, &c);
	CHECK(err == 0 && same(c.buf, "0|0|15\n10|0|2\n20|0|4\n30|0|1\n60|0|1\n"), "timeline of the whole host");
	err = timeline(st, -1, 101, T0, T0 + 61, 10, 1, &c);
	CHECK(err == 0 && same(c.buf, "0|101@100|3\n10|101@100|2\n"), "timeline of one tid");
	err = timeline(st, -1, -1, T0, T0 + 61, 30, 1, &c);
	CHECK(err == 0 && same(c.buf, "0|100@100|9\n0|101@100|5\n0|200@200|7\n30|100@100|1\n60|102@100|1\n"), "timeline of the whole host per thread: each with its pid");
	{
		struct store_filter f = { .pid = 100, .tid = -1, .from = T0, .to = T0 + 61, .comm = "sh" };

		memset(&c, 0, sizeof(c));
		c.base = T0;
		err = store_query_timeline(st, &f, 10, 0, point_cb, &c);
		CHECK(err == 0 && same(c.buf, "30|0|1\n"), "timeline with a comm filter");
	}
	err = timeline(st, 100, -1, T0, T0 + 61, 0, 0, &c);
	CHECK(err == -EINVAL, "timeline step 0 is rejected");
	err = timeline(st, 100, -1, T0, T0 + 61, -10, 0, &c);
	CHECK(err == -EINVAL, "timeline negative step is rejected");
	err = timeline(st, -2, -1, T0, T0 + 61, 1, 0, &c);
	CHECK(err == -EINVAL, "timeline pid below -1 is rejected");

	/* From INT64_MIN: ts - from does not fit 64 signed bits, the steps still come out right. */
	memset(&c, 0, sizeof(c));
	err = store_query_timeline(st, NULL, INT64_MAX, 0, point_cb, &c);
	CHECK(err == 0 && same(c.buf, "-1|0|32\n"), "timeline from INT64_MIN with step INT64_MAX: one step at -1");
	memset(&c, 0, sizeof(c));
	c.base = T0;
	c.stop_after = 1;
	err = store_query_timeline(st, NULL, 1, 0, point_cb, &c);
	CHECK(err == 7 && same(c.buf, "0|0|15\n"), "timeline from INT64_MIN step 1; the callback's return stops it");
}

/* Every query over an empty window calls nothing and succeeds. */
static void test_empty_window(struct store *st)
{
	struct store_filter f = { .pid = 100, .tid = -1, .from = T0 + 20, .to = T0 + 20 };
	struct collect c;
	int err;

	memset(&c, 0, sizeof(c));
	err = store_query_stacks_frames(st, &f, frames_cb, &c);
	err = err ?: store_query_processes(st, &f, process_cb, &c);
	err = err ?: store_query_threads(st, &f, thread_cb, &c);
	err = err ?: store_query_timeline(st, &f, 1, 1, point_cb, &c);
	f.from = T0 + 21; /* from after to */
	err = err ?: store_query_timeline(st, &f, 1, 0, point_cb, &c);
	err = err ?: store_query_processes(st, &f, process_cb, &c);
	CHECK(err == 0 && c.calls == 0, "empty window: no rows, no error (%d rows)", c.calls);
}

static void test_new_queries(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	int64_t oldest = 0, newest = 0;
	int err;

	snprintf(path, sizeof(path), "%s/queries.db", dir);
	err = make_fixture(path);
	err = err ?: store_open(path, STORE_READ_ONLY, &st);
	CHECK(err == 0, "open the fixture for the new queries");
	if (err)
		return;
	test_comm_filter(st);
	test_processes(st);
	test_threads(st);
	test_timeline(st);
	test_empty_window(st);
	err = store_time_range(st, &oldest, &newest);
	CHECK(err == 0 && oldest == T0 && newest > T0 + 60 && newest <= (int64_t)time(NULL),
	      "time range: oldest and newest sample (%" PRId64 ", %" PRId64 ")", oldest, newest);
	CHECK(store_time_range(st, NULL, &newest) == -EINVAL, "time range: NULL output is rejected");
	store_close(st);

	snprintf(path, sizeof(path), "%s/empty_range.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0 && store_time_range(st, &oldest, &newest) == -ENOENT, "time range of an empty database: -ENOENT");
	store_close(st);
}

/* The query plan of one of the store's own statements, on its connection (which knows flamed_step()),
 * its lines joined; "" on error. */
static void stmt_plan(struct store *st, sqlite3_stmt *stmt, char *out, size_t size)
{
	char explain[4096];
	sqlite3_stmt *e = NULL;
	size_t len = 0;
	int n;

	out[0] = '\0';
	n = stmt ? snprintf(explain, sizeof(explain), "EXPLAIN QUERY PLAN %s", sqlite3_sql(stmt)) : -1;
	if (n > 0 && (size_t)n < sizeof(explain) && sqlite3_prepare_v2(st->db, explain, -1, &e, NULL) == SQLITE_OK) {
		while (sqlite3_step(e) == SQLITE_ROW && len < size) {
			n = snprintf(out + len, size - len, "%s; ", (const char *)sqlite3_column_text(e, 3));
			len += n > 0 ? (size_t)n : 0;
		}
	}
	sqlite3_finalize(e);
}

/* Does a plan of one pid's rollups seek (span, bucket, pid), with the buckets (b) walked outside it:
 * no scan of b after the seek? */
static bool seeks_per_bucket(const char *plan)
{
	const char *seek = strstr(plan, "SEARCH r USING PRIMARY KEY (span=? AND bucket=? AND pid=?)");

	return seek && strstr(plan, "; SCAN b; ") && strstr(plan, "; SCAN b; ") < seek && !strstr(seek, "SCAN b");
}

/* The schema's indexes serve the query shapes of the store, as this machine's SQLite plans the store's
 * own statements: raw rows of a window (one plain index, the table read by rowid; a pid filters),
 * rollups by (span, bucket), and of one pid by (span, bucket, pid), bucket after bucket. */
static void test_indexes(const char *path)
{
	char plan[1024];
	struct store *st = NULL;
	int err = store_open(path, STORE_READ_ONLY, &st);

	CHECK(err == 0, "open for the query plans (%s)", err ? strerror(-err) : "ok");
	if (err)
		return;
	stmt_plan(st, st->query[QK_RAW][QV_ANY], plan, sizeof(plan));
	CHECK(strstr(plan, "SEARCH samples USING INDEX samples_ts (ts>? AND ts<?)") != NULL,
	      "a whole-host window of raw rows seeks samples_ts (%s)", plan);
	stmt_plan(st, st->query[QK_RAW][QV_PID], plan, sizeof(plan));
	CHECK(strstr(plan, "SEARCH samples USING INDEX samples_ts (ts>? AND ts<?)") != NULL,
	      "a per-pid window of raw rows seeks samples_ts too (%s)", plan);
	stmt_plan(st, st->raw_range, plan, sizeof(plan));
	CHECK(strstr(plan, "SEARCH samples USING COVERING INDEX samples_ts; ") != NULL &&
		      !strstr(plan, "SCAN samples"),
	      "min(ts) and max(ts) are index seeks (%s)", plan);
	stmt_plan(st, st->query[QK_ROLLUP][QV_ANY], plan, sizeof(plan));
	CHECK(strstr(plan, "SEARCH rollups USING PRIMARY KEY (span=? AND bucket>? AND bucket<?)") != NULL,
	      "a window of rollups seeks their primary key (%s)", plan);
	/* The buckets outside, a seek of (span, bucket, pid) inside: not the rollups of the whole span
	 * outside with the buckets scanned for each row (SEARCH r USING PRIMARY KEY (span=?); SCAN b). */
	stmt_plan(st, st->query[QK_ROLLUP][QV_PID], plan, sizeof(plan));
	CHECK(seeks_per_bucket(plan), "rollups of one pid: a seek per bucket (%s)", plan);
	stmt_plan(st, st->query[QK_ROLLUP_STEPS][QV_PID], plan, sizeof(plan));
	CHECK(seeks_per_bucket(plan), "timeline of one pid's rollups: a seek per bucket (%s)", plan);
	store_close(st);
	CHECK(sql_value(path, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'samples'") == 1,
	      "raw rows have one index, no more");
}

/* The plans on a database created by this version (the migrations' are checked where they run). */
static void test_indexes_new(const char *dir)
{
	char path[512];
	struct store *st = NULL;
	int err;

	snprintf(path, sizeof(path), "%s/indexes.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0, "a new database for the query plans (%s)", err ? strerror(-err) : "ok");
	store_close(st);
	if (!err)
		test_indexes(path);
}

/* The schema of flamed's first release, exactly. */
static const char schema_v1_sql[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"CREATE TABLE names(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
	"CREATE TABLE stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, folded TEXT NOT NULL);"
	"CREATE INDEX stacks_hash ON stacks(hash);"
	"CREATE TABLE samples(ts INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL,"
	" comm_id INTEGER NOT NULL, thread_id INTEGER NOT NULL, stack_id INTEGER NOT NULL, count INTEGER NOT NULL);"
	"CREATE INDEX samples_pid_ts ON samples(pid, ts);"
	"CREATE INDEX samples_ts ON samples(ts);"
	"INSERT INTO meta(key, value) VALUES ('schema_version', 1);"
	"INSERT INTO names(id, name) VALUES (1, 'old'), (2, 'oldthread');";

/* Reads a version 1 database as it is (read-only), then upgrades it in place (read-write). */
static void test_migration(const char *dir)
{
	char path[512], sql[256];
	struct store *st = NULL;
	struct collect c;
	const struct store_frame frames[] = { FR("main", "/bin/old", ""), FR("old", "/bin/old", "") };
	const struct store_sample s = FSAMPLE(T0 + 1, 42, "old", "main;old", 1, frames);
	int err;

	snprintf(path, sizeof(path), "%s/v1.db", dir);
	snprintf(sql, sizeof(sql), "INSERT INTO stacks(id, hash, folded) VALUES (1, %" PRId64 ", 'main;old');"
		 "INSERT INTO samples VALUES (%" PRId64 ", 42, 43, 1, 2, 1, 6);", (int64_t)fnv1a("main;old"), T0);
	CHECK(sql_run(path, schema_v1_sql) && sql_run(path, sql), "create a version 1 database with a sample");

	err = store_open(path, STORE_READ_ONLY, &st);
	CHECK(err == 0, "read-only open of a version 1 database (%s)", err ? strerror(-err) : "ok");
	err = err ?: query(st, -1, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && same(c.buf, "old|main;old|6\n"), "version 1 read as it is: stacks");
	err = err ?: query_frames(st, -1, NULL, &c);
	CHECK(err == 0 && same(c.buf, "42|old|main;old|6|(none)\n"), "version 1 read as it is: stacks without frames");
	memset(&c, 0, sizeof(c));
	err = err ?: store_query_threads(st, &(struct store_filter){ .pid = 42, .from = T0, .to = T0 + 1 }, thread_cb, &c);
	CHECK(err == 0 && same(c.buf, "43|oldthread|6\n"), "version 1 read as it is: threads");
	store_close(st);
	CHECK(sql_value(path, "SELECT value FROM meta WHERE key = 'schema_version'") == 1,
	      "a read-only open leaves version 1");

	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0, "read-write open upgrades a version 1 database (%s)", err ? store_errmsg(st) : "ok");
	if (err)
		return;
	err = query(st, -1, -1, INT64_MIN, INT64_MAX, &c);
	CHECK(err == 0 && same(c.buf, "old|main;old|6\n"), "the upgraded database keeps its samples");
	err = flush(st, &s, 1);
	err = err ?: query_frames(st, -1, NULL, &c);
	CHECK(err == 0 && same(c.buf, "42|old|main;old|7|main@/bin/old@,old@/bin/old@\n"),
	      "an old stack gets frames after the upgrade");
	store_close(st);
	CHECK(sql_value(path, "SELECT value FROM meta WHERE key = 'schema_version'") == 7,
	      "meta holds schema_version 7 after the upgrade");
	CHECK(sql_value(path, "SELECT count(*) FROM stacks") == 1, "no second row for the old stack");
	CHECK(sql_value(path, "SELECT count(*) FROM sqlite_master WHERE name = 'samples_ts'") == 1 &&
		      sql_value(path, "SELECT count(*) FROM sqlite_master WHERE name = 'samples_pid_ts'") == 0 &&
		      sql_value(path, "SELECT count(*) FROM sqlite_master WHERE name = 'rollups'") == 1,
	      "the upgrade keeps version 1's samples(ts), drops samples(pid, ts), adds the rollups table");
	CHECK(sql_value(path, "SELECT count(*) FROM stacks WHERE folded = '' AND frame_ids IS NOT NULL") == 1,
	      "the old stack that got frames keeps no text");
	test_indexes(path);
}

/* Renders one line into a string; returns the render result. */
static int render(const char *comm, const char *folded, uint64_t count, char *out, size_t size)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return -ENOMEM;
	err = render_folded_line(f, comm, folded, count);
	fclose(f);
	snprintf(out, size, "%s", buf ? buf : "");
	free(buf);
	return err;
}

static void test_render(void)
{
	char out[256];
	FILE *full;
	int err;

	err = render("server", "main;handle", 12, out, sizeof(out));
	CHECK(err == 0 && strcmp(out, "server;main;handle 12\n") == 0, "folded line: comm;stack count");
	err = render("a;b c", "main", 3, out, sizeof(out));
	CHECK(err == 0 && strcmp(out, "a:b c;main 3\n") == 0, "';' in a process name becomes ':', spaces stay");
	err = render("x\ny", "f", 1, out, sizeof(out));
	CHECK(err == 0 && strcmp(out, "x?y;f 1\n") == 0, "a line break in a process name cannot split the line");
	err = render("", "f", 1, out, sizeof(out));
	CHECK(err == 0 && strcmp(out, "[unknown];f 1\n") == 0, "an empty process name is [unknown]");
	err = render("p", "", 18446744073709551615ULL, out, sizeof(out));
	CHECK(err == 0 && strcmp(out, "p 18446744073709551615\n") == 0, "no stack: the name alone; full 64-bit counts");

	full = fopen("/dev/full", "we");
	if (!full) {
		SKIP("render to a full device", "no /dev/full");
		return;
	}
	setvbuf(full, NULL, _IONBF, 0);
	CHECK(render_folded_line(full, "p", "a;b", 1) == -EIO, "a write error is -EIO");
	fclose(full);
}

/* Removes the files the tests made in dir, then dir. */
static void cleanup(const char *dir)
{
	static const char *const names[] = { "prune.db", "fixture.db", "invalid.db", "rollback.db", "collision.db",
					     "memo.db", "big.db", "concurrent.db", "missing.db", "garbage.db", "corrupt.db", "other.db",
					     "newer.db", "empty.db", "frames.db", "demangle.db", "frames_invalid.db", "frames_later.db",
					     "frames_rollback.db", "frames_many.db", "names.db", "queries.db",
					     "empty_range.db", "v1.db", "v2.db", "rollup.db",
					     "rollup_crash.db", "rollup_opts.db", "rollup_parts.db", "sources.db", "kinds.db", "period.db",
					     "indexes.db", "late.db" };
	static const char *const suffixes[] = { "", "-wal", "-shm", "-journal" };
	char path[600];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		for (size_t j = 0; j < sizeof(suffixes) / sizeof(suffixes[0]); j++) {
			snprintf(path, sizeof(path), "%s/%s%s", dir, names[i], suffixes[j]);
			unlink(path);
		}
	}
	if (rmdir(dir) < 0)
		printf("FAIL: test files left in %s: %s\n", dir, strerror(errno));
}

/* Writes one flush: for each second of [from, to), stack "main;fNNN" (NNN = second % distinct). */
static int write_seconds(struct store *st, int64_t from, int64_t to, int distinct, const char *pad)
{
	char folded[1100];
	int err = store_begin(st);

	for (int64_t t = from; !err && t < to; t++) {
		snprintf(folded, sizeof(folded), "main;f%05d%s", (int)(t % distinct), pad);
		const struct store_sample s = SAMPLE(t, 7, 7, "ret", "ret", folded, 1);

		err = store_add(st, &s);
	}
	return err ?: store_commit(st);
}

/* Retention: by age, then by size; unused stacks go; ids of deleted stacks are not reused from cache. */
static void test_prune(const char *dir)
{
	char path[512], pad[401];
	struct store *st = NULL, *ro = NULL;
	struct store_prune_result r = { 0 };
	struct store_stats stats;
	struct collect c;
	struct stat sb1, sb2;
	int err;

	snprintf(path, sizeof(path), "%s/prune.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	/* seconds 1000..1099: stacks f000..f049 twice over; then 1100..1199 with f050..f099 */
	err = err ?: write_seconds(st, T0 + 1000, T0 + 1100, 50, "");
	for (int64_t t = T0 + 1100; !err && t < T0 + 1200; t++) {
		char folded[32];
		snprintf(folded, sizeof(folded), "main;g%03d", (int)(t % 100));
		const struct store_sample s = SAMPLE(t, 7, 7, "ret", "ret", folded, 1);
		err = store_begin(st) ?: store_add(st, &s) ?: store_commit(st);
	}
	CHECK(err == 0, "prune: 200 seconds written");
	CHECK(store_begin(st) == 0 && store_prune(st, T0, 0, NULL) == -EINVAL, "prune: refused inside a flush");
	store_rollback(st);

	err = store_prune(st, T0 + 1100, 0, &r);
	CHECK(err == 0 && r.samples_deleted == 100 && r.stacks_deleted == 50 && r.cut == T0 + 1100,
	      "prune: the 100 samples before the cut and their 50 stacks go (%" PRIu64 ", %" PRIu64 ")",
	      r.samples_deleted, r.stacks_deleted);
	err = query(st, 7, -1, INT64_MIN, T0 + 1100, &c);
	CHECK(err == 0 && c.buf[0] == '\0', "prune: nothing is left before the cut");
	err = query(st, 7, -1, T0 + 1100, INT64_MAX, &c);
	CHECK(err == 0 && c.calls == 100, "prune: the 100 newer stacks are all there (%d)", c.calls);
	/* a deleted stack comes back: it must get a fresh id, not a cached one */
	err = write_seconds(st, T0 + 2000, T0 + 2001, 50, "");
	err = err ?: query(st, 7, -1, T0 + 2000, T0 + 2001, &c);
	CHECK(err == 0 && strcmp(c.buf, "ret|main;f00000|1\n") == 0, "prune: a deleted stack stored again reads back (%s)", c.buf);
	CHECK(store_prune(st, T0 + 1100, 0, &r) == 0 && r.samples_deleted == 0, "prune: nothing more to do");

	/* the size cap: 3 hours (about 2 MB each: a 400-byte stack each second), capped at 3 MiB: the
	 * oldest two hours and their stacks go, the newest hour stays */
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	err = write_seconds(st, T0 + 10000, T0 + 10000 + 3 * 3600, 3 * 3600, pad);
	store_get_stats(st, &stats);
	stat(path, &sb1);
	CHECK(err == 0 && stats.db_bytes > 3 << 20, "prune: a database over the cap (%" PRIu64 " bytes)", stats.db_bytes);
	for (int i = 0; i < 5 && !err; i++)
		err = store_prune(st, T0, 3 << 20, &r);
	stat(path, &sb2);
	CHECK(err == 0 && r.bytes_after <= 3 << 20, "prune: down to the 3 MiB cap (%" PRIu64 " bytes used)", r.bytes_after);
	CHECK(sb2.st_size < sb1.st_size, "prune: the file shrinks (%lld -> %lld bytes)", (long long)sb1.st_size,
	      (long long)sb2.st_size);
	err = query(st, 7, -1, T0 + 10000 + 3 * 3600 - 1, INT64_MAX, &c);
	CHECK(err == 0 && c.calls == 1, "prune: the newest second is kept");
	err = query(st, 7, -1, T0 + 10000, T0 + 10000 + 3600, &c);
	CHECK(err == 0 && c.calls == 0, "prune: the oldest hour is gone");
	store_close(st);

	CHECK(store_open(path, STORE_READ_ONLY, &ro) == 0 && store_prune(ro, T0, 0, NULL) == -EINVAL,
	      "prune: refused on a read-only store");
	store_close(ro);
}

/* Rollups. A history of 4.5 hours around an hour boundary RB, a sample every R_EVERY seconds: pids
 * 10 and 20 (which renames itself at RB + 5000), two threads each, five stacks (three with frames),
 * counts 1 to 3. */
#define RB (T0 - T0 % 3600 + 3600)
#define R_FROM (RB - 1800)
#define R_TO (RB + 4 * 3600)
#define R_EVERY 7
#define R_LAST (R_FROM + (R_TO - 1 - R_FROM) / R_EVERY * R_EVERY) /* the newest sample */

static const struct store_frame r_frames[3][3] = {
	{ FR("main", "/bin/r", "0a"), FR("a", "/bin/r", "0a") },
	{ FR("main", "/bin/r", "0a"), FR("a", "/bin/r", "0a"), FR("b", "/lib/b.so", "") },
	{ FR("main", "/bin/r", "0a"), FR("c", "/bin/r", "0a") },
};
static const unsigned r_nframes[3] = { 2, 3, 2 };
static const char *const r_stacks[5] = { "main;a", "main;a;b", "main;c", "start;x;y_[k]", "main;a;b;d" };
static const char *const r_comms[3] = { "ten", "twenty", "twenty2" };

/* The sample of second ts (one of R_FROM + k * R_EVERY). */
static struct store_sample r_sample(int64_t ts)
{
	int64_t k = (ts - R_FROM) / R_EVERY;
	uint32_t pid = k % 2 ? 10 : 20;
	unsigned s = (unsigned)((k * 3) % 5);
	struct store_sample smp = {
		.ts = ts, .pid = pid, .tid = pid + (uint32_t)(k % 3 == 0), .comm = r_comms[pid == 10 ? 0 : ts < RB + 5000 ? 1 : 2],
		.thread = k % 3 == 0 ? "worker" : "main", .folded = r_stacks[s], .count = 1 + (uint64_t)(ts % 3),
	};

	if (s < 3) {
		smp.frames = r_frames[s];
		smp.nframes = r_nframes[s];
	}
	return smp;
}

/* Writes the history, a flush per 600 seconds. */
static int r_write(struct store *st)
{
	int64_t t = R_FROM;
	int err = 0;

	for (int64_t end = R_FROM + 600; !err && t < R_TO; end += 600) {
		err = store_begin(st);
		for (; !err && t < end && t < R_TO; t += R_EVERY) {
			struct store_sample s = r_sample(t);

			err = store_add(st, &s);
		}
		err = err ?: store_commit(st);
	}
	return err;
}

/* Sorts the lines of buf in place. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void sort_lines(char *buf, size_t size)
{
	char *lines[256], copy[8192], *save = NULL;
	size_t n = 0, len = 0;

	snprintf(copy, sizeof(copy), "%s", buf);
	for (char *l = strtok_r(copy, "\n", &save); l && n < 256; l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	qsort(lines, n, sizeof(*lines), cmp_str);
	buf[0] = '\0';
	for (size_t i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s\n", lines[i]);
}

/* The expected "comm|stack|count" lines (sorted) of the samples with from <= ts < to of pid and tid
 * (-1: any), plus extra (a sample added later, or NULL). */
static void r_truth(int64_t from, int64_t to, int64_t pid, int64_t tid, const struct store_sample *extra, char *out,
		    size_t size)
{
	uint64_t n[3][5] = { { 0 } };
	size_t len = 0;

	for (int64_t t = R_FROM; t < R_TO; t += R_EVERY) {
		struct store_sample s = r_sample(t);

		for (int pass = 0; pass < 2; pass++, s = extra ? *extra : s) {
			unsigned c = 0, k = 0;

			if ((pass && (!extra || t != R_FROM)) || s.ts < from || s.ts >= to || (pid >= 0 && s.pid != pid) ||
			    (tid >= 0 && s.tid != tid))
				continue;
			while (strcmp(r_comms[c], s.comm))
				c++;
			while (strcmp(r_stacks[k], s.folded))
				k++;
			n[c][k] += s.count;
		}
	}
	out[0] = '\0';
	for (int c = 0; c < 3; c++)
		for (int k = 0; k < 5; k++)
			if (n[c][k])
				len += (size_t)snprintf(out + len, size - len, "%s|%s|%" PRIu64 "\n", r_comms[c], r_stacks[k],
							n[c][k]);
	sort_lines(out, size);
}

/* A profile as sorted lines. */
static int r_query(struct store *st, int64_t from, int64_t to, int64_t pid, int64_t tid, char *out, size_t size)
{
	struct collect c;
	int err = query(st, pid, tid, from, to, &c);

	snprintf(out, size, "%s", c.buf);
	sort_lines(out, size);
	return err;
}

/* Whether the profile of [from, to) is exactly the samples of [tfrom, tto). */
static bool r_same(struct store *st, int64_t from, int64_t to, int64_t tfrom, int64_t tto, int64_t pid, int64_t tid)
{
	char got[8192], want[8192];

	r_truth(tfrom, tto, pid, tid, NULL, want, sizeof(want));
	return r_query(st, from, to, pid, tid, got, sizeof(got)) == 0 && same(got, want);
}

/* Adds b's "comm|stack|count" lines into a's (both sorted), a keeps the sum. */
static void add_lines(char *a, const char *b, size_t size)
{
	char sum[8192] = "", line[512];
	size_t len = strlen(a);

	snprintf(sum, sizeof(sum), "%s", a);
	for (const char *p = b; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char *bar, *found;
		unsigned long long add, have;

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		p += n + (nl != NULL);
		bar = strrchr(line, '|');
		if (!bar)
			continue;
		add = strtoull(bar + 1, NULL, 10);
		bar[1] = '\0';
		found = strstr(sum, line);
		while (found && found != sum && found[-1] != '\n')
			found = strstr(found + 1, line);
		if (!found) {
			len = strlen(sum);
			snprintf(sum + len, sizeof(sum) - len, "%s%llu\n", line, add);
			continue;
		}
		have = strtoull(found + strlen(line), NULL, 10);
		{
			char rest[8192];
			const char *eol = strchr(found, '\n');

			snprintf(rest, sizeof(rest), "%s", eol ? eol + 1 : "");
			snprintf(found, sizeof(sum) - (size_t)(found - sum), "%s%llu\n%s", line, have + add, rest);
		}
	}
	snprintf(a, size, "%s", sum);
	sort_lines(a, size);
}

/* Whether profile(from, mid) + profile(mid, to) == profile(from, to). */
static bool r_splits(struct store *st, int64_t from, int64_t mid, int64_t to, int64_t pid)
{
	char whole[8192], left[8192], right[8192];
	int err = r_query(st, from, to, pid, -1, whole, sizeof(whole));

	err = err ?: r_query(st, from, mid, pid, -1, left, sizeof(left));
	err = err ?: r_query(st, mid, to, pid, -1, right, sizeof(right));
	add_lines(left, right, sizeof(left));
	return !err && whole[0] && same(left, whole);
}

/* Every query of the whole history, as one text: stacks, per pid, frames, an hour-aligned timeline. */
static int r_snapshot(struct store *st, char *out, size_t size)
{
	struct collect c;
	size_t len = 0;
	int err;

	err = r_query(st, INT64_MIN, INT64_MAX, -1, -1, out, size);
	len = strlen(out);
	err = err ?: r_query(st, INT64_MIN, INT64_MAX, 20, -1, out + len, size - len);
	len = strlen(out);
	err = err ?: query_frames(st, -1, NULL, &c);
	len += (size_t)snprintf(out + len, size - len, "%s", c.buf);
	err = err ?: timeline(st, -1, -1, RB - 3600, R_TO, 3600, 0, &c);
	snprintf(out + len, size - len, "%s", c.buf);
	return err;
}

/* "comm|stack|base|now" lines of a diff, and its totals in the last line. */
static int diff_cb(const struct store_diff_row *r, void *ctx)
{
	struct collect *c = ctx;

	c->base = (int64_t)r->base_total * 1000000 + (int64_t)r->now_total;
	return collect_printf(c, "%s|%s|%" PRIu64 "|%" PRIu64 "\n", r->comm, r->folded, r->base, r->now);
}

/* A diff is the profiles of its two windows side by side (one over hours, one over raw rows). */
static void r_diff_check(struct store *st)
{
	char base[8192], now[8192], want[16384] = "", got[16384];
	struct store_filter fb = { .pid = -1, .tid = -1, .from = RB, .to = RB + 3600 };
	struct store_filter fn = { .pid = -1, .tid = -1, .from = RB + 13800, .to = R_TO };
	uint64_t tb = 0, tn = 0;
	size_t len = 0;
	struct collect c;
	int err;

	r_truth(fb.from, fb.to, -1, -1, NULL, base, sizeof(base));
	r_truth(fn.from, fn.to, -1, -1, NULL, now, sizeof(now));
	for (int ci = 0; ci < 3; ci++) {
		for (int k = 0; k < 5; k++) {
			char key[128];
			const char *pb, *pn;
			unsigned long long b = 0, n = 0;

			snprintf(key, sizeof(key), "%s|%s|", r_comms[ci], r_stacks[k]);
			pb = strstr(base, key);
			pn = strstr(now, key);
			while (pb && pb != base && pb[-1] != '\n')
				pb = strstr(pb + 1, key);
			while (pn && pn != now && pn[-1] != '\n')
				pn = strstr(pn + 1, key);
			b = pb ? strtoull(pb + strlen(key), NULL, 10) : 0;
			n = pn ? strtoull(pn + strlen(key), NULL, 10) : 0;
			tb += b;
			tn += n;
			if (b || n)
				len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%llu|%llu\n", key, b, n);
		}
	}
	sort_lines(want, sizeof(want));
	memset(&c, 0, sizeof(c));
	err = store_query_diff(st, &fb, &fn, diff_cb, &c);
	CHECK(err == 0 && strstr(c.buf, "ten|main;a|") == c.buf && strstr(c.buf, "\nten|main;a;b|") &&
		      strstr(c.buf, "\ntwenty|main;a|") < strstr(c.buf, "\ntwenty2|main;a|"),
	      "rollups: a diff is ordered by process name, then stack");
	snprintf(got, sizeof(got), "%s", c.buf);
	sort_lines(got, sizeof(got));
	CHECK(err == 0 && same(got, want) && c.base == (int64_t)(tb * 1000000 + tn),
	      "rollups: a diff is its two windows' profiles side by side (hours and raw rows), with totals");
	fb.pid = (int64_t)UINT32_MAX + 1;
	CHECK(store_query_diff(st, &fb, &fn, diff_cb, &c) == -EINVAL && store_query_diff(st, NULL, &fn, diff_cb, &c) == -EINVAL,
	      "diff: a bad filter is -EINVAL");
}

static const struct store_rollup_opts r_opts = { .raw_seconds = 600, .minute_seconds = 4200, .fold_delay = 0 };

/* Folding keeps every total; windows over raw rows, minutes and hours add up; edges in rolled-up
 * time round to whole buckets; what needs threads sees raw rows only. */
static void test_rollup_fold(const char *dir)
{
	char path[512], before[16384], after[16384], want[8192], got[8192];
	struct store_prune_result r = { 0 };
	struct store *st = NULL;
	struct collect c;
	int err;

	snprintf(path, sizeof(path), "%s/rollup.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: r_write(st);
	err = err ?: r_snapshot(st, before, sizeof(before));
	CHECK(err == 0 && r_same(st, INT64_MIN, INT64_MAX, R_FROM, R_TO, -1, -1),
	      "rollups: a 4.5-hour history written (%s)", err ? store_errmsg(st) : "ok");
	if (err)
		return;
	err = store_set_rollups(st, &r_opts);
	err = err ?: store_prune(st, R_FROM - 86400, 0, &r);
	CHECK(err == 0 && r.raw_folded > 2000 && r.rollup_rows_written > 200 && r.rows_expired > 0 &&
		      r.samples_deleted == 0,
	      "rollups: one pass folds %" PRIu64 " raw rows into %" PRIu64 " rollup rows and deletes %" PRIu64
	      " rows past the raw window, no sample lost (%s)", r.raw_folded, r.rollup_rows_written, r.rows_expired,
	      err ? store_errmsg(st) : "ok");
	CHECK(sql_value(path, "SELECT value FROM meta WHERE key = 'raw_from'") == RB + 13740 &&
		      sql_value(path, "SELECT value FROM meta WHERE key = 'folded_60'") == RB + 14340 &&
		      sql_value(path, "SELECT value FROM meta WHERE key = 'kept_60'") == RB + 7200 &&
		      sql_value(path, "SELECT value FROM meta WHERE key = 'folded_3600'") == RB + 10800,
	      "rollups: raw rows kept from 10 minutes before the newest, minutes folded to the newest, kept an hour"
	      " beyond their window, hours folded to the last whole one");
	CHECK(sql_value(path, "SELECT min(ts) FROM samples") == RB + 13740, "rollups: older raw rows are gone");
	err = r_snapshot(st, after, sizeof(after));
	CHECK(err == 0 && same(after, before),
	      "rollups: every stack, per pid, with frames, and an hourly timeline: the same before and after folding");
	CHECK(sql_value(path, "SELECT count(*) FROM stacks WHERE folded = '' AND frame_ids IS NOT NULL") == 3 &&
		      sql_value(path, "SELECT count(*) FROM stacks WHERE folded <> ''") == 2,
	      "rollups: stacks stored with frames keep no text; the others keep theirs");

	CHECK(r_same(st, RB, RB + 3600, RB, RB + 3600, -1, -1) && r_same(st, RB + 3600, RB + 7200, RB + 3600, RB + 7200, 10, -1),
	      "rollups: an hour from the hour rollups is exact");
	CHECK(r_same(st, RB + 7200 + 60, RB + 7200 + 600, RB + 7260, RB + 7800, 20, -1),
	      "rollups: whole minutes from the minute rollups are exact");
	CHECK(r_same(st, RB - 3600, R_TO, R_FROM, R_TO, -1, -1) && r_same(st, RB + 3600, R_TO, RB + 3600, R_TO, 20, -1),
	      "rollups: a window over hours, minutes and raw rows is exact");
	CHECK(r_same(st, RB + 13800 + 17, RB + 14000 + 3, RB + 13817, RB + 14003, -1, -1),
	      "rollups: a window of raw rows is exact to the second");
	CHECK(r_splits(st, RB - 3600, RB + 100, R_TO, -1) && r_splits(st, RB - 3600, RB + 7230, R_TO, -1) &&
		      r_splits(st, RB - 3600, RB + 13817, R_TO, -1) && r_splits(st, RB + 100, RB + 7230, RB + 13817, 10) &&
		      r_splits(st, RB + 3600, RB + 10800, R_TO, 20),
	      "rollups: any split of a window (in hours, minutes or raw rows) splits its totals exactly");
	CHECK(r_same(st, RB + 100, RB + 3700, RB + 3600, RB + 7200, -1, -1),
	      "rollups: where only hours are kept, an hour counts whole when its first second is in the window");
	CHECK(r_same(st, RB + 7230, RB + 7290 + 5, RB + 7260, RB + 7320, -1, -1),
	      "rollups: where minutes are kept, a minute counts whole when its first second is in the window");

	CHECK(r_same(st, INT64_MIN, INT64_MAX, RB + 13740, R_TO, -1, 11) && r_same(st, RB, R_TO, RB + 13740, R_TO, 20, 20),
	      "rollups: a tid filter sees only the raw window");
	memset(&c, 0, sizeof(c));
	err = store_query_threads(st, &(struct store_filter){ .pid = 10, .tid = -1, .from = INT64_MIN, .to = INT64_MAX },
				  thread_cb, &c);
	r_truth(RB + 13740, R_TO, 10, 11, NULL, want, sizeof(want));
	CHECK(err == 0 && c.calls == 2 && strstr(c.buf, "11|worker|"), "rollups: threads come from the raw window");
	memset(&c, 0, sizeof(c));
	c.base = RB;
	err = store_query_timeline(st, &(struct store_filter){ .pid = -1, .tid = -1, .from = RB - 3600, .to = R_TO },
				   1200, 0, point_cb, &c);
	CHECK(err == 0 && strstr(c.buf, "-3600|0|") == c.buf && !strstr(c.buf, "\n-2400|") && strstr(c.buf, "\n0|0|") &&
		      !strstr(c.buf, "\n1200|") && strstr(c.buf, "\n7200|0|") && strstr(c.buf, "\n8400|0|"),
	      "rollups: a 20-minute timeline: hours land in their first step where only hours are kept, minutes"
	      " answer the rest");
	memset(&c, 0, sizeof(c));
	c.base = RB;
	err = store_query_processes(st, &(struct store_filter){ .pid = -1, .tid = -1, .from = RB + 3600, .to = R_TO },
				    process_cb, &c);
	r_truth(RB + 3600, R_TO, 20, -1, NULL, want, sizeof(want));
	CHECK(err == 0 && c.calls == 2 && strstr(c.buf, "|twenty2|") && strstr(c.buf, "|3600|14398\n"),
	      "rollups: processes over rolled-up time: named by the newest, first seen at its first bucket (%s)", c.buf);

	r_diff_check(st);

	/* A second pass has nothing to fold. */
	err = store_prune(st, R_FROM - 86400, 0, &r);
	CHECK(err == 0 && r.raw_folded == 0 && r.rollup_rows_written == 0, "rollups: a second pass folds nothing");
	err = r_snapshot(st, after, sizeof(after));
	CHECK(err == 0 && same(after, before), "rollups: and changes no total");

	/* Samples that come after their minute and hour were folded are merged into the rollups. */
	{
		const struct store_sample late[] = {
			SAMPLE(RB + 100, 10, 10, "ten", "main", "main;a", 5),
			SAMPLE(RB + 8000, 10, 10, "ten", "main", "main;a", 5),
		};

		err = flush(st, late, 2);
		r_truth(RB, RB + 3600, -1, -1, &late[0], want, sizeof(want));
		CHECK(err == 0 && r_query(st, RB, RB + 3600, -1, -1, got, sizeof(got)) == 0 && same(got, want),
		      "rollups: a late sample of a folded hour is counted");
		r_truth(RB + 7980, RB + 8040, -1, -1, &late[1], want, sizeof(want));
		CHECK(r_query(st, RB + 7980, RB + 8040, -1, -1, got, sizeof(got)) == 0 && same(got, want),
		      "rollups: a late sample of a folded minute is counted");
		r_truth(RB + 7200, RB + 10800, -1, -1, &late[1], want, sizeof(want));
		CHECK(r_query(st, RB + 7200, RB + 10800, -1, -1, got, sizeof(got)) == 0 && same(got, want),
		      "rollups: and in its hour");
		CHECK(sql_value(path, "SELECT count(*) FROM rollups WHERE span = 3600 AND bucket = 1700002800 AND pid = 10") == 1,
		      "rollups: merged into the existing row, not a new one");
		err = store_prune(st, R_FROM - 86400, 0, &r);
		r_truth(RB, RB + 3600, -1, -1, &late[0], want, sizeof(want));
		CHECK(err == 0 && r_query(st, RB, RB + 3600, -1, -1, got, sizeof(got)) == 0 && same(got, want) &&
			      sql_value(path, "SELECT count(*) FROM samples WHERE ts < 1700010000") == 0,
		      "rollups: the late raw rows pruned, the totals stay");
	}
	store_close(st);
}


/* Sums of one kind over [from, to): "total" over every stack, and the lines of the stacks. */
static uint64_t kind_total(struct store *st, enum store_kind kind, int64_t period, int64_t from, int64_t to,
			   struct collect *c)
{
	struct store_filter f = { .pid = -1, .tid = -1, .from = from, .to = to, .kind = kind, .cpu_period_us = period };
	uint64_t total = 0;
	char *p;

	memset(c, 0, sizeof(*c));
	if (store_query_stacks(st, &f, collect_cb, c) != 0)
		return 0;
	for (p = c->buf; (p = strchr(p, '|')) && (p = strchr(p + 1, '|')); p++)
		total += strtoull(p + 1, NULL, 10);
	return total;
}

/* Samples of two kinds: CPU samples and microseconds off CPU are stored apart, read apart, and summed
 * as time for a wall-clock query, the same from raw rows and from rollups. */
/* The CPU sampling period a daemon records is read back by a later reader, read-only; bounds refused. */
static void test_cpu_period(const char *dir)
{
	char path[512];
	struct store *st = NULL, *ro = NULL;
	int64_t us = 0;
	int err;

	snprintf(path, sizeof(path), "%s/period.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(!err && store_cpu_period(st, &us) == -ENOENT, "period: none recorded in a new database");
	CHECK(!err && store_set_cpu_period(st, 0) == -EINVAL && store_set_cpu_period(st, 1000001) == -EINVAL,
	      "period: 0 and past one second refused");
	CHECK(!err && store_set_cpu_period(st, 52631) == 0 && store_set_cpu_period(st, 10101) == 0, "period: recorded twice");
	store_close(st);
	err = store_open(path, STORE_READ_ONLY, &ro);
	CHECK(!err && store_cpu_period(ro, &us) == 0 && us == 10101, "period: the last one read back read-only (%lld)",
	      (long long)us);
	CHECK(!err && store_set_cpu_period(ro, 10101) == -EROFS, "period: a read-only store cannot record one");
	store_close(ro);
}

static void test_kinds(const char *dir)
{
	char path[512];
	struct store_prune_result r = { 0 };
	struct store *st = NULL;
	struct collect c;
	uint64_t cpu, off, wall, n = 0;
	int err;

	snprintf(path, sizeof(path), "%s/kinds.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: store_begin(st);
	for (int64_t ts = R_FROM; !err && ts < R_TO; ts += 60, n++) {
		struct store_sample on = { .ts = ts, .pid = 7, .tid = 8, .comm = "app", .thread = "app",
					   .folded = "main;work", .count = 2 };
		struct store_sample wait = { .ts = ts, .pid = 7, .tid = 8, .comm = "app", .thread = "app",
					     .folded = "main;wait", .count = 1500, .kind = STORE_OFFCPU };

		err = store_add(st, &on) ?: store_add(st, &wait);
	}
	err = err ?: store_commit(st);
	CHECK(err == 0, "kinds: %" PRIu64 " minutes of CPU samples and off-CPU time written (%s)", n,
	      err ? store_errmsg(st) : "ok");
	CHECK(store_add(st, &(struct store_sample){ .ts = R_FROM, .comm = "a", .thread = "a", .folded = "x", .count = 1,
						      .kind = STORE_WALL }) == -EINVAL,
	      "kinds: a wall-clock row is refused (queries only)");
	/* (The window starts on an hour: a rollup bucket counts only when its first second is in it.) */
	for (int pass = 0; pass < 2; pass++) {
		const char *from = pass ? "rollups" : "raw rows";

		cpu = kind_total(st, STORE_CPU, 0, RB - 3600, R_TO, &c);
		CHECK(cpu == 2 * n && !strstr(c.buf, "wait"), "kinds, %s: CPU: %" PRIu64 " samples, no off-CPU stack", from,
		      cpu);
		off = kind_total(st, STORE_OFFCPU, 0, RB - 3600, R_TO, &c);
		CHECK(off == 1500 * n && !strstr(c.buf, "work"), "kinds, %s: off-CPU: %" PRIu64 " us, no CPU stack", from,
		      off);
		wall = kind_total(st, STORE_WALL, 10000, RB - 3600, R_TO, &c);
		CHECK(wall == (2 * 10000 + 1500) * n && strstr(c.buf, "app|main;work|") && strstr(c.buf, "app|main;wait|"),
		      "kinds, %s: wall at 10 ms a sample: %" PRIu64 " us, both stacks", from, wall);
		CHECK(kind_total(st, STORE_WALL, 0, RB - 3600, R_TO, &c) == 0 && c.calls == 0,
		      "kinds, %s: a wall-clock query without the sampling period is refused", from);
		if (!pass) {
			err = store_set_rollups(st, &r_opts) ?: store_prune(st, R_FROM - 86400, 0, &r);
			CHECK(err == 0 && r.raw_folded > 0 && r.samples_deleted == 0,
			      "kinds: %" PRIu64 " raw rows folded into rollups (%s)", r.raw_folded, err ? store_errmsg(st) : "ok");
			CHECK(sql_value(path, "SELECT count(DISTINCT kind) FROM rollups") == 2,
			      "kinds: rollup rows of both kinds");
		}
	}
	store_close(st);
}

/* A pass that fails half-way (a rollback, as after a crash) leaves nothing half-done; the next one
 * folds everything once. */
static void test_rollup_crash(const char *dir)
{
	char path[512], before[16384], after[16384];
	struct store *st = NULL;
	int64_t rows;
	int err;

	snprintf(path, sizeof(path), "%s/rollup_crash.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: r_write(st);
	err = err ?: r_snapshot(st, before, sizeof(before));
	store_close(st);
	rows = sql_value(path, "SELECT count(*) FROM samples");
	CHECK(err == 0 && sql_run(path, "CREATE TRIGGER crash BEFORE INSERT ON rollups WHEN NEW.span = 3600 AND"
				      " (SELECT count(*) FROM rollups WHERE span = 3600) >= 2"
				      " BEGIN SELECT RAISE(ABORT, 'injected failure'); END;"),
	      "rollups: a trigger fails the third hour rollup row");
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: store_set_rollups(st, &r_opts);
	CHECK(err == 0 && store_prune(st, R_FROM - 86400, 0, NULL) < 0 && strstr(store_errmsg(st), "injected failure"),
	      "rollups: the pass fails while folding hours (%s)", store_errmsg(st));
	CHECK(sql_value(path, "SELECT count(*) FROM rollups") == 0 && sql_value(path, "SELECT count(*) FROM meta") == 1 &&
		      sql_value(path, "SELECT count(*) FROM samples") == rows,
	      "rollups: nothing of the failed pass is left: no rollup, no marker, every raw row");
	err = r_snapshot(st, after, sizeof(after));
	CHECK(err == 0 && same(after, before), "rollups: totals as before the failed pass");
	CHECK(sql_run(path, "DROP TRIGGER crash"), "rollups: the failure removed");
	err = store_prune(st, R_FROM - 86400, 0, NULL);
	err = err ?: r_snapshot(st, after, sizeof(after));
	CHECK(err == 0 && same(after, before), "rollups: the next pass folds it all, once");
	err = store_prune(st, R_FROM - 86400, 0, NULL);
	err = err ?: r_snapshot(st, after, sizeof(after));
	CHECK(err == 0 && same(after, before), "rollups: and the one after changes nothing");

	/* A damaged rollup is an error, not a wrong answer. */
	CHECK(sql_run(path, "UPDATE rollups SET stacks = x'00' WHERE span = 3600 AND bucket = 1700002800 AND pid = 10"),
	      "rollups: damage an hour's rollup");
	CHECK(r_snapshot(st, after, sizeof(after)) == -EIO && strstr(store_errmsg(st), "damaged"),
	      "rollups: a query over it fails with -EIO (%s)", store_errmsg(st));
	store_close(st);
}

/* A process with more stacks in a bucket than one row holds gets several rows; samples that come late
 * merge into the last and spill into new ones; totals stay exact. */
static void test_rollup_parts(const char *dir)
{
	char path[512], folded[32];
	struct store *st = NULL;
	struct store_prune_result r;
	struct collect c;
	int64_t parts;
	int err;

	snprintf(path, sizeof(path), "%s/rollup_parts.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	err = err ?: store_set_rollups(st, &r_opts);
	err = err ?: store_begin(st);
	for (int i = 0; !err && i < 3000; i++) {
		snprintf(folded, sizeof(folded), "main;f%04d", i);
		const struct store_sample s = SAMPLE(RB + i % 60, 5, 5, "many", "many", folded, 1 + (uint64_t)(i % 2));

		err = store_add(st, &s);
	}
	if (!err) { /* the history moves past the minute: it can be folded */
		const struct store_sample later = SAMPLE(RB + 120, 5, 5, "many", "many", "main;later", 1);

		err = store_add(st, &later);
	}
	err = err ?: store_commit(st);
	err = err ?: store_prune(st, RB - 86400, 0, &r);
	parts = sql_value(path, "SELECT count(*) FROM rollups WHERE span = 60 AND bucket = 1700002800");
	CHECK(err == 0 && parts > 3 && sql_value(path, "SELECT max(length(stacks)) FROM rollups") <= 900,
	      "rollups: 3000 stacks of one minute in %" PRId64 " rows of at most 900 bytes", parts);
	memset(&c, 0, sizeof(c));
	err = store_query_stacks(st, &(struct store_filter){ .pid = 5, .tid = -1, .from = RB, .to = RB + 60 }, collect_cb,
				 &c);
	CHECK(err == 0 && c.calls == 3000 && sql_value(path, "SELECT sum(total) FROM rollups WHERE span = 60") == 4500,
	      "rollups: every stack of them read back (%d)", c.calls);
	err = store_begin(st);
	for (int i = 0; !err && i < 3000; i += 2) {
		snprintf(folded, sizeof(folded), "main;g%04d", i);
		const struct store_sample s = SAMPLE(RB + 30, 5, 5, "many", "many", folded, 1);

		err = store_add(st, &s);
	}
	err = err ?: store_commit(st);
	memset(&c, 0, sizeof(c));
	err = err ?: store_query_stacks(st, &(struct store_filter){ .pid = 5, .tid = -1, .from = RB, .to = RB + 60 },
					collect_cb, &c);
	CHECK(err == 0 && c.calls == 4500 && sql_value(path, "SELECT sum(total) FROM rollups WHERE span = 60") == 6000 &&
		      sql_value(path, "SELECT count(*) FROM rollups WHERE span = 60") > parts &&
		      sql_value(path, "SELECT max(length(stacks)) FROM rollups") <= 900,
	      "rollups: 1500 late stacks merged into the last row and new ones (%d)", c.calls);
	store_close(st);
}

/* store_set_rollups checks its bounds and changes nothing when they are not met. */
static void test_rollup_opts(const char *dir)
{
	const struct store_rollup_opts bad[] = {
		{ 59, 86400, 120 }, { 3600, 3600 + 3599, 120 }, { 3600, 367 * 86400, 120 }, { 3600, 86400, -1 },
		{ 3600, 86400, 86401 }, { 367 * 86400, 368 * 86400, 0 },
	};
	char path[512];
	struct store *st = NULL;
	int err;

	snprintf(path, sizeof(path), "%s/rollup_opts.db", dir);
	err = store_open(path, STORE_READ_WRITE, &st);
	for (size_t i = 0; !err && i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(store_set_rollups(st, &bad[i]) == -EINVAL, "rollup options refused: raw %lld s, minutes %lld s,"
		      " delay %lld s", (long long)bad[i].raw_seconds, (long long)bad[i].minute_seconds,
		      (long long)bad[i].fold_delay);
	CHECK(err == 0 && store_set_rollups(st, &(struct store_rollup_opts){ 60, 3660, 0 }) == 0 &&
		      store_set_rollups(st, NULL) == 0 && store_set_rollups(NULL, NULL) == -EINVAL,
	      "rollup options: the smallest accepted, NULL for the defaults");
	store_close(st);
}

/* A database of schema version 2, exactly as the previous flamed wrote it. */
static const char schema_v2_sql[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"CREATE TABLE names(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
	"CREATE TABLE stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, folded TEXT NOT NULL, frame_ids BLOB);"
	"CREATE INDEX stacks_hash ON stacks(hash);"
	"CREATE TABLE modules(id INTEGER PRIMARY KEY, path TEXT NOT NULL, build_id TEXT NOT NULL, UNIQUE(path, build_id));"
	"CREATE TABLE frames(id INTEGER PRIMARY KEY, name TEXT NOT NULL, module_id INTEGER NOT NULL, UNIQUE(name, module_id));"
	"CREATE TABLE samples(ts INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL, comm_id INTEGER NOT NULL,"
	" thread_id INTEGER NOT NULL, stack_id INTEGER NOT NULL, count INTEGER NOT NULL);"
	"CREATE INDEX samples_ts_cover ON samples(ts, pid, tid, comm_id, stack_id, count);"
	"CREATE INDEX samples_pid_cover ON samples(pid, ts, tid, comm_id, thread_id, stack_id, count);"
	"INSERT INTO meta(key, value) VALUES ('schema_version', 2);"
	"INSERT INTO names VALUES (1, 'srv'), (2, 'srvthread');"
	"INSERT INTO modules VALUES (1, '/bin/srv', 'ab');"
	"INSERT INTO frames VALUES (1, 'main', 1), (2, 'work', 1), (3, 'other', 1);";

/* Reads a version 2 database as it is, then upgrades it: the same answers, version 2's covering
 * indexes replaced by plain ones, texts of stacks their frames spell dropped, lookups still finding
 * those stacks. */
static void test_migration_v2(const char *dir)
{
	char path[512], sql[1024], before[8192], after[8192];
	const struct store_frame work[] = { FR("main", "/bin/srv", "ab"), FR("work", "/bin/srv", "ab") };
	const struct store_sample again[] = { FSAMPLE(T0 + 3, 7, "srv", "main;work", 1, work),
					      SAMPLE(T0 + 3, 7, 7, "srv", "srvthread", "main;odd", 1) };
	struct store *st = NULL;
	struct collect c;
	int err;

	snprintf(path, sizeof(path), "%s/v2.db", dir);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO stacks VALUES (1, %" PRId64 ", 'main;work', x'0102'), (2, %" PRId64 ", 'main;odd', x'0103'),"
		 " (3, %" PRId64 ", 'no;frames', NULL);"
		 "INSERT INTO samples VALUES (%" PRId64 ", 7, 7, 1, 2, 1, 3), (%" PRId64 ", 7, 8, 1, 2, 2, 2),"
		 " (%" PRId64 ", 7, 7, 1, 2, 3, 1);",
		 (int64_t)fnv1a("main;work"), (int64_t)fnv1a("main;odd"), (int64_t)fnv1a("no;frames"), T0, T0 + 1, T0 + 2);
	CHECK(sql_run(path, schema_v2_sql) && sql_run(path, sql), "create a version 2 database");
	err = store_open(path, STORE_READ_ONLY, &st);
	err = err ?: query_frames(st, -1, NULL, &c);
	snprintf(before, sizeof(before), "%s", c.buf);
	CHECK(err == 0 && same(before, "7|srv|main;work|3|main@/bin/srv@ab,work@/bin/srv@ab\n"
				       "7|srv|main;odd|2|main@/bin/srv@ab,other@/bin/srv@ab\n7|srv|no;frames|1|(none)\n"),
	      "version 2 read as it is, with frames");
	store_close(st);
	CHECK(sql_value(path, "SELECT value FROM meta WHERE key = 'schema_version'") == 2, "a read-only open leaves version 2");

	err = store_open(path, STORE_READ_WRITE, &st);
	CHECK(err == 0, "read-write open upgrades a version 2 database (%s)", err ? strerror(-err) : "ok");
	if (err)
		return;
	err = query_frames(st, -1, NULL, &c);
	snprintf(after, sizeof(after), "%s", c.buf);
	CHECK(err == 0 && same(after, before), "the upgraded database gives the same answers");
	CHECK(sql_value(path, "SELECT value FROM meta WHERE key = 'schema_version'") == 7 &&
		      sql_value(path, "SELECT count(*) FROM sqlite_master WHERE name IN ('samples_ts', 'rollups')") == 2 &&
		      sql_value(path, "SELECT count(*) FROM sqlite_master WHERE name LIKE '%cover%'") == 0,
	      "version 3 and on: one plain index for raw rows, a rollups table, no covering index");
	CHECK(sql_value(path, "SELECT count(*) FROM pragma_table_info('frames') WHERE name IN ('file', 'start_line',"
			      " 'line')") == 3 && sql_value(path, "SELECT count(*) FROM sqlite_master WHERE name = 'frames_v3'") == 0,
	      "version 4: frames have a file, a first line and a line; the old table is gone");
	CHECK(sql_value(path, "SELECT count(*) FROM stacks WHERE id = 1 AND folded = ''") == 1 &&
		      sql_value(path, "SELECT count(*) FROM stacks WHERE id = 2 AND folded = 'main;odd'") == 1 &&
		      sql_value(path, "SELECT count(*) FROM stacks WHERE id = 3 AND folded = 'no;frames'") == 1,
	      "the text of a stack its frames spell is dropped; one they do not spell, and one without frames, keep it");
	err = flush(st, again, 2);
	CHECK(err == 0 && sql_value(path, "SELECT count(*) FROM stacks") == 3,
	      "the same stacks stored again find their rows, by frames or by text");
	err = store_prune(st, T0 - 86400, 0, NULL);
	err = err ?: query_frames(st, -1, NULL, &c);
	CHECK(err == 0 && same(c.buf, "7|srv|main;work|4|main@/bin/srv@ab,work@/bin/srv@ab\n"
				      "7|srv|main;odd|3|main@/bin/srv@ab,other@/bin/srv@ab\n7|srv|no;frames|1|(none)\n"),
	      "after folding, the same answers");
	store_close(st);
	test_indexes(path);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/test_store.XXXXXX";

	if (argc == 3 && strcmp(argv[1], "--make-fixture") == 0) {
		int err = make_fixture(argv[2]);

		if (err)
			fprintf(stderr, "test_store: cannot write the fixture %s: %s\n", argv[2], strerror(-err));
		return err ? 1 : 0;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: test_store [--make-fixture DB]\n");
		return 2;
	}
	if (!mkdtemp(dir)) {
		printf("FAIL: mkdtemp %s: %s\n", dir, strerror(errno));
		return 1;
	}
	test_fixture_queries(dir);
	test_invalid(dir);
	test_rollback(dir);
	test_collision(dir);
	test_stack_memo(dir);
	test_big_flush(dir);
	test_prefetch(dir);
	test_prefetch_range(dir);
	test_concurrent_reader(dir);
	test_bad_files(dir);
	test_frames_roundtrip(dir);
	test_demangled(dir);
	test_late_names(dir);
	test_python_sources(dir);
	test_frames_invalid(dir);
	test_frames_later(dir);
	test_frames_rollback(dir);
	test_frames_many(dir);
	test_new_queries(dir);
	test_names_order(dir);
	test_indexes_new(dir);
	test_migration(dir);
	test_prune(dir);
	test_rollup_fold(dir);
	test_kinds(dir);
	test_cpu_period(dir);
	test_rollup_crash(dir);
	test_rollup_opts(dir);
	test_rollup_parts(dir);
	test_migration_v2(dir);
	test_render();
	cleanup(dir);
	return CHECK_EXIT();
}
