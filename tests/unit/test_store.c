/* test_store.c - the SQLite store (write, merge, query, WAL, validation, rollback, bad files) and the folded renderer.
 * Usage: test_store                   run the checks
 *        test_store --make-fixture DB  write the known small database tests/integration/test_flamectl.sh reads */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check.h"
#include "render/folded.h"
#include "store.h"

/* The fixture's fixed time: 2023-11-14T22:13:20Z. */
#define T0 INT64_C(1700000000)

/* The fixture: pid 100 ("server", once "sh" before it exec'd) in three threads, pid 200 whose name
 * holds ';' and a space and runs pid 100's hottest stack, pid 300 a minute ago (for --since). */
static int make_fixture(const char *path)
{
	const int64_t recent = (int64_t)time(NULL) - 60;
	const struct store_sample samples[] = {
		{ T0 + 0, 100, 100, "server", "server", "main;handle;parse", 5 },
		{ T0 + 0, 100, 101, "server", "worker", "main;handle;parse", 3 },
		{ T0 + 10, 100, 101, "server", "worker", "main;idle", 2 },
		{ T0 + 20, 100, 100, "server", "server", "main;handle;write", 1 },
		{ T0 + 20, 100, 100, "server", "server", "main;handle;write", 3 }, /* merges: 4 */
		{ T0 + 30, 100, 100, "sh", "sh", "main;handle;parse", 1 },
		{ T0 + 60, 100, 102, "server", "gc", "main;gc", 1 },
		{ T0 + 0, 200, 200, "a;b c", "a;b c", "main;handle;parse", 7 },
		{ recent, 300, 300, "recent", "recent", "main;recent", 9 },
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

/* Collects query results as "comm|folded|count\n" lines. */
struct collect {
	char buf[4096];
	size_t len;
	int calls;
	int stop_after; /* > 0: return 7 after this many calls */
};

static int collect_cb(const char *comm, const char *folded, uint64_t count, void *ctx)
{
	struct collect *c = ctx;
	int n = snprintf(c->buf + c->len, sizeof(c->buf) - c->len, "%s|%s|%" PRIu64 "\n", comm, folded, count);

	if (n > 0 && (size_t)n < sizeof(c->buf) - c->len)
		c->len += (size_t)n;
	c->calls++;
	return c->stop_after && c->calls >= c->stop_after ? 7 : 0;
}

/* Runs a query and returns its lines (in a static-free caller buffer). */
static int query(struct store *st, int64_t pid, int64_t tid, int64_t from, int64_t to, struct collect *c)
{
	struct store_filter f = { .pid = pid, .tid = tid, .from = from, .to = to };

	memset(c, 0, sizeof(*c));
	return store_query_stacks(st, &f, collect_cb, c);
}

/* One integer from SQL run on the database directly; -1 on any error. */
static int64_t sql_value(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;
	int64_t v = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW)
		v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return v;
}

/* Runs SQL on the database directly; true on success. */
static bool sql_run(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	bool ok = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) == SQLITE_OK &&
		  sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;

	sqlite3_close(db);
	return ok;
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
	CHECK(sql_value(path, "SELECT value FROM meta WHERE key = 'schema_version'") == 1, "meta holds schema_version 1");

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
		const struct store_sample s = { T0 + 5, 100, 100, "server", "server", "main;handle;parse", 2 };

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
	struct store_stats stats = { 1, 1, 0 };
	const struct store_sample good = { T0, 1, 1, "p", "t", "a;b", 1 };
	struct {
		const char *why;
		struct store_sample s;
	} bad[] = {
		{ "NULL stack", { T0, 1, 1, "p", "t", NULL, 1 } },
		{ "empty stack", { T0, 1, 1, "p", "t", "", 1 } },
		{ "newline in stack", { T0, 1, 1, "p", "t", "a;b\nc", 1 } },
		{ "carriage return in stack", { T0, 1, 1, "p", "t", "a\r;b", 1 } },
		{ "empty frame inside", { T0, 1, 1, "p", "t", "a;;b", 1 } },
		{ "leading ';'", { T0, 1, 1, "p", "t", ";a;b", 1 } },
		{ "trailing ';'", { T0, 1, 1, "p", "t", "a;b;", 1 } },
		{ "only ';'", { T0, 1, 1, "p", "t", ";", 1 } },
		{ "count 0", { T0, 1, 1, "p", "t", "a;b", 0 } },
		{ "count above INT64_MAX", { T0, 1, 1, "p", "t", "a;b", (uint64_t)INT64_MAX + 1 } },
		{ "NULL process name", { T0, 1, 1, NULL, "t", "a;b", 1 } },
		{ "NULL thread name", { T0, 1, 1, "p", NULL, "a;b", 1 } },
		{ "process name of 256 bytes", { T0, 1, 1, name256, "t", "a;b", 1 } },
		{ "thread name of 256 bytes", { T0, 1, 1, "p", name256, "a;b", 1 } },
		{ "stack of 64 KiB + 1", { T0, 1, 1, "p", "t", NULL, 1 } }, /* folded set below */
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
		const struct store_sample max = { T0, 2, 2, "p", "t", "a;b", (uint64_t)INT64_MAX };
		const struct store_sample one = { T0, 2, 2, "p", "t", "a;b", 1 };
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
		const struct store_sample edge = { T0, 1, 1, name256, name256, big, 1 };

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
	struct store_stats stats = { 1, 1, 0 };
	struct collect c;
	const struct store_sample r1 = { T0, 7, 7, "rolled", "rolled", "r;s", 1 };
	const struct store_sample t2 = { T0, 7, 7, "kept", "kept", "t;u", 2 };
	const struct store_sample r3 = { T0, 7, 7, "rolled", "rolled", "r;s", 3 };
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

/* Mirrors store.c's stack hash (64-bit FNV-1a) to plant a colliding row. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void test_collision(const char *dir)
{
	char path[512], sql[256];
	struct store *st = NULL;
	struct collect c;
	const struct store_sample s = { T0, 9, 9, "p", "p", "x;y", 4 };
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
		const struct store_sample s = { T0 + i, 5, 5, "big", "big", "main;loop", 1 };

		err = store_add(st, &s);
	}
	if (!err) {
		const struct store_sample again = { T0, 5, 5, "big", "big", "main;loop", 2 };

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

/* A reader sees committed flushes only, and is not blocked by an open write transaction (WAL). */
static void test_concurrent_reader(const char *dir)
{
	char path[512];
	struct store *w = NULL, *r = NULL;
	struct collect c;
	const struct store_sample s1 = { T0, 4, 4, "w", "w", "one", 1 };
	const struct store_sample s2 = { T0, 4, 4, "w", "w", "two", 2 };
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
	CHECK(err == 0 && sql_run(path, "UPDATE meta SET value = 2 WHERE key = 'schema_version'"), "make a schema version 2 database");
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
	static const char *const names[] = { "fixture.db", "invalid.db", "rollback.db", "collision.db", "big.db",
					     "concurrent.db", "missing.db", "garbage.db", "corrupt.db", "other.db",
					     "newer.db", "empty.db" };
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
	test_big_flush(dir);
	test_concurrent_reader(dir);
	test_bad_files(dir);
	test_render();
	cleanup(dir);
	return CHECK_EXIT();
}
