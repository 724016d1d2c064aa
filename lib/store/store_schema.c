/* store_schema.c - the database's schema: created when empty, checked, and older versions brought
 * up to the current one step by step; WAL set up for the writer. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store/store_impl.h"
#include "store/store_schema.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* Tables added by schema version 2: the binaries and the frames of stacks stored with frames. A
 * stack's frames are stacks.frame_ids: frames.id of each frame, root first, as unsigned LEB128
 * varints (NULL when the stack was stored without frames). */
#define SCHEMA_FRAMES_SQL                                                                          \
	"CREATE TABLE IF NOT EXISTS modules(id INTEGER PRIMARY KEY, path TEXT NOT NULL,"            \
	" build_id TEXT NOT NULL, UNIQUE(path, build_id));"                                         \
	"CREATE TABLE IF NOT EXISTS frames(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"             \
	" module_id INTEGER NOT NULL, UNIQUE(name, module_id));"

/* Schema version 4: a frame has a source, for Python frames: file (as the code object names it), the
 * function's first line and the line run. A frame is (name, module, file, line). Stacks holding such
 * frames are told apart by them too (stacks.hash is then that of the text and the sources, see
 * stack_ident()); stacks without are as before. */
#define SCHEMA_FRAMES_V4_SQL                                                                       \
	"CREATE TABLE IF NOT EXISTS frames(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"             \
	" module_id INTEGER NOT NULL, file TEXT NOT NULL DEFAULT '', start_line INTEGER NOT NULL"   \
	" DEFAULT 0, line INTEGER NOT NULL DEFAULT 0, UNIQUE(name, module_id, file, line));"

/* Schema version 3. Raw rows keep one plain index, samples(ts): version 2's covering indexes (every
 * column, twice) made a raw row 82 bytes; a query now reads raw rows only for what no rollup answers
 * (the last minutes of a window that reaches the present, its ragged edges, and what needs threads),
 * so rowid lookups from samples(ts) are cheap enough, and a row costs about 40 bytes. Version 1's
 * samples(pid, ts) is gone too: rollups answer a process's profile, a query of one process filters the
 * raw rows of its window, and the index cost half the bytes written (measured: rows of 100 processes
 * land in as many of its pages each flush) and a fifth of the file; what it made faster, threads and
 * tid filters, take about 0.1 s per hour of raw rows without it.
 * Rollups: one row per (span: 60 or 3600, bucket start, pid, process name, part) whose stacks column
 * holds (stack id gap, count) varint pairs, stack ids ascending (rollup.h); total is their sum and last
 * the second of the newest sample. A process with more than ROLLUP_PART_BYTES of pairs in a bucket gets
 * more parts. WITHOUT ROWID: the key is the table, no second copy.
 * Stacks stored with frames keep folded = '': their text is the frames' names joined by ';'. */
#define SCHEMA_V3_SQL                                                                              \
	"DROP INDEX IF EXISTS samples_ts_cover;"                                                    \
	"DROP INDEX IF EXISTS samples_pid_cover;"                                                   \
	"CREATE INDEX IF NOT EXISTS samples_ts ON samples(ts);"                                     \
	"DROP INDEX IF EXISTS samples_pid_ts;"                                                      \
	"CREATE TABLE IF NOT EXISTS rollups(span INTEGER NOT NULL, bucket INTEGER NOT NULL,"        \
	" pid INTEGER NOT NULL, comm_id INTEGER NOT NULL, part INTEGER NOT NULL, last INTEGER NOT NULL," \
	" total INTEGER NOT NULL, stacks BLOB NOT NULL, PRIMARY KEY(span, bucket, pid, comm_id, part))" \
	" WITHOUT ROWID;"

/* Schema version 5: a sample has a kind (enum store_kind: 0 CPU samples, 1 microseconds off CPU), in
 * raw rows and in the rollups' key; rows of version 4 are CPU samples. */
#define SCHEMA_ROLLUPS_V5_SQL                                                                      \
	"CREATE TABLE IF NOT EXISTS rollups(span INTEGER NOT NULL, bucket INTEGER NOT NULL,"        \
	" pid INTEGER NOT NULL, comm_id INTEGER NOT NULL, kind INTEGER NOT NULL, part INTEGER NOT NULL," \
	" last INTEGER NOT NULL, total INTEGER NOT NULL, stacks BLOB NOT NULL,"                     \
	" PRIMARY KEY(span, bucket, pid, comm_id, kind, part)) WITHOUT ROWID;"

/* Schema version 6: who started whom. A process (pid, and the unix second it started: a pid is used
 * again by later processes) and its parent, as flamed learnt them, with the last second it was known
 * to run; a query of a process with its children follows ppid down. */
#define SCHEMA_PARENTS_V6_SQL                                                                      \
	"CREATE TABLE IF NOT EXISTS parents(pid INTEGER NOT NULL, start INTEGER NOT NULL,"           \
	" ppid INTEGER NOT NULL, seen INTEGER NOT NULL, PRIMARY KEY(pid, start)) WITHOUT ROWID;"    \
	"CREATE INDEX IF NOT EXISTS parents_ppid ON parents(ppid, start);"

/* Schema version 7: where a sample ran. A cgroup (v2 path, as /proc/PID/cgroup names it) once, by id;
 * raw rows keep their cgroup's id and the rollups have it in their key (0: not known, rows of older
 * versions). */
#define SCHEMA_CGROUPS_V7_SQL                                                                      \
	"CREATE TABLE IF NOT EXISTS cgroups(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);"
#define SCHEMA_ROLLUPS_V7_SQL                                                                      \
	"CREATE TABLE IF NOT EXISTS rollups(span INTEGER NOT NULL, bucket INTEGER NOT NULL,"        \
	" pid INTEGER NOT NULL, comm_id INTEGER NOT NULL, kind INTEGER NOT NULL, cg INTEGER NOT NULL," \
	" part INTEGER NOT NULL, last INTEGER NOT NULL, total INTEGER NOT NULL, stacks BLOB NOT NULL," \
	" PRIMARY KEY(span, bucket, pid, comm_id, kind, cg, part)) WITHOUT ROWID;"

/* The whole schema, created in one transaction when the database is new. */
static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS names(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
	"CREATE TABLE IF NOT EXISTS stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL,"
	" folded TEXT NOT NULL, frame_ids BLOB);"
	"CREATE INDEX IF NOT EXISTS stacks_hash ON stacks(hash);"
	"CREATE TABLE IF NOT EXISTS modules(id INTEGER PRIMARY KEY, path TEXT NOT NULL,"
	" build_id TEXT NOT NULL, UNIQUE(path, build_id));"
	SCHEMA_FRAMES_V4_SQL
	"CREATE TABLE IF NOT EXISTS samples(ts INTEGER NOT NULL, pid INTEGER NOT NULL,"
	" tid INTEGER NOT NULL, comm_id INTEGER NOT NULL, thread_id INTEGER NOT NULL,"
	" stack_id INTEGER NOT NULL, count INTEGER NOT NULL, kind INTEGER NOT NULL DEFAULT 0,"
	" cg INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX IF NOT EXISTS samples_ts ON samples(ts);"
	SCHEMA_ROLLUPS_V7_SQL
	SCHEMA_PARENTS_V6_SQL
	SCHEMA_CGROUPS_V7_SQL
	"INSERT INTO meta(key, value) VALUES ('schema_version', " STR(SCHEMA_VERSION) ");";

/* Version 1 -> 2, run inside the transaction that opens the database: a column for frames and their
 * tables. (Version 2's covering indexes are not built: version 3 drops them.) */
static const char migrate_v2_sql[] =
	"ALTER TABLE stacks ADD COLUMN frame_ids BLOB;"
	SCHEMA_FRAMES_SQL
	"UPDATE meta SET value = 2 WHERE key = 'schema_version';";

/* Version 2 -> 3: one plain index for raw rows, the rollups table; stacks lose their text in C. */
static const char migrate_v3_sql[] =
	SCHEMA_V3_SQL
	"UPDATE meta SET value = 3 WHERE key = 'schema_version';";

/* Version 3 -> 4: frames get their source columns (a table rebuilt: SQLite cannot change its UNIQUE);
 * every frame keeps its id, so every stack its frames. */
static const char migrate_v4_sql[] =
	"ALTER TABLE frames RENAME TO frames_v3;"
	SCHEMA_FRAMES_V4_SQL
	"INSERT INTO frames(id, name, module_id) SELECT id, name, module_id FROM frames_v3;"
	"DROP TABLE frames_v3;"
	"UPDATE meta SET value = 4 WHERE key = 'schema_version';";

/* Version 4 -> 5: samples get their kind (0, CPU, for every row so far); the rollups are rebuilt with
 * the kind in their key (SQLite cannot change a primary key), every row a CPU one. */
static const char migrate_v5_sql[] =
	"ALTER TABLE samples ADD COLUMN kind INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE rollups RENAME TO rollups_v4;"
	SCHEMA_ROLLUPS_V5_SQL
	"INSERT INTO rollups(span, bucket, pid, comm_id, kind, part, last, total, stacks)"
	" SELECT span, bucket, pid, comm_id, 0, part, last, total, stacks FROM rollups_v4;"
	"DROP TABLE rollups_v4;"
	"UPDATE meta SET value = 5 WHERE key = 'schema_version';";

/* Version 5 -> 6: the parents table (empty: parents are learnt from now on). */
static const char migrate_v6_sql[] =
	SCHEMA_PARENTS_V6_SQL
	"UPDATE meta SET value = 6 WHERE key = 'schema_version';";

/* Version 6 -> 7: the cgroups table; samples get their cgroup (0, not known, for every row so far); the
 * rollups are rebuilt with it in their key. */
static const char migrate_v7_sql[] =
	SCHEMA_CGROUPS_V7_SQL
	"ALTER TABLE samples ADD COLUMN cg INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE rollups RENAME TO rollups_v6;"
	SCHEMA_ROLLUPS_V7_SQL
	"INSERT INTO rollups(span, bucket, pid, comm_id, kind, cg, part, last, total, stacks)"
	" SELECT span, bucket, pid, comm_id, kind, 0, part, last, total, stacks FROM rollups_v6;"
	"DROP TABLE rollups_v6;"
	"UPDATE meta SET value = 7 WHERE key = 'schema_version';";

/* Checks that this is a flamed database of a version we understand; *version its version. */
int store_check_schema(struct store *st, int64_t *version)
{
	int64_t v = 0;
	bool found = false;
	int err;

	err = store_sql_int(st, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'", &v, NULL);
	if (err)
		return err;
	if (v == 0)
		return store_set_err(st, -EINVAL, "not a flamed database (no meta table): pass the path of flamed's database");
	err = store_sql_int(st, "SELECT value FROM meta WHERE key = 'schema_version'", &v, &found);
	if (err)
		return err;
	if (!found || v < 1)
		return store_set_err(st, -EINVAL, "not a flamed database (no schema version): pass the path of flamed's database");
	if (v > SCHEMA_VERSION)
		return store_set_err(st, -ENOTSUP, "the database was written by a newer flamed (schema version %lld, this one knows %d): upgrade flamed and flamectl",
				     (long long)v, SCHEMA_VERSION);
	*version = v;
	return 0;
}

/* The names of frames, by id, read once for the upgrade to version 3. */
struct frame_names {
	char **name; /* [id], NULL where no frame has that id */
	int64_t n;   /* ids 0 .. n-1 */
};

static void frame_names_free(struct frame_names *fn)
{
	for (int64_t i = 0; i < fn->n; i++)
		free(fn->name[i]);
	free(fn->name);
}

/* Reads every frame's name (ids are dense from 1: bounded by the number of rows, at most 2^26). */
static int frame_names_load(struct store *st, struct frame_names *fn)
{
	sqlite3_stmt *stmt = NULL;
	int64_t max = 0;
	int rc, err;

	err = store_sql_int(st, "SELECT coalesce(max(id), 0) FROM frames", &max, NULL);
	if (err)
		return err;
	if (max < 0 || max >= (1 << 26))
		return store_set_err(st, -E2BIG, "frame ids up to %lld: too many to upgrade in memory", (long long)max);
	fn->n = max + 1;
	fn->name = calloc((size_t)fn->n, sizeof(*fn->name));
	if (!fn->name)
		return store_set_err(st, -ENOMEM, "out of memory upgrading the database");
	rc = sqlite3_prepare_v2(st->db, "SELECT id, name FROM frames", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, NULL, rc, "cannot read frames");
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(stmt, 0);
		const char *name = (const char *)sqlite3_column_text(stmt, 1);

		if (id > 0 && id < fn->n && name && !(fn->name[id] = strdup(name))) {
			sqlite3_finalize(stmt);
			return store_set_err(st, -ENOMEM, "out of memory upgrading the database");
		}
	}
	err = rc == SQLITE_DONE ? 0 : store_fail(st, NULL, rc, "cannot read frames");
	sqlite3_finalize(stmt);
	return err;
}

/* Whether frame_ids spells folded exactly, by the names in fn. */
static bool spells(const struct frame_names *fn, const unsigned char *blob, size_t len, const char *folded)
{
	size_t pos = 0;
	const char *p = folded;

	while (pos < len) {
		uint64_t id;
		size_t n;

		if (rollup_get_varint(blob, len, &pos, &id) < 0 || id >= (uint64_t)fn->n || !fn->name[id])
			return false;
		n = strlen(fn->name[id]);
		if (strncmp(p, fn->name[id], n) || (p[n] != ';' && p[n] != '\0') || (p[n] == '\0' && pos < len))
			return false;
		p += n + (p[n] == ';');
	}
	return len && !*p && p[-1] != ';';
}

/* A growable list of row ids. */
struct id_list {
	int64_t *id;
	size_t n, cap;
};

static int id_list_add(struct store *st, struct id_list *l, int64_t id)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		int64_t *p = reallocarray(l->id, cap, sizeof(*p));

		if (!p)
			return store_set_err(st, -ENOMEM, "out of memory upgrading the database");
		l->id = p;
		l->cap = cap;
	}
	l->id[l->n++] = id;
	return 0;
}

/* Version 3 keeps no text for stacks stored with frames: their frames' names spell it. A stack whose
 * frames do not spell its text (none should) keeps its text. */
static int drop_stack_texts(struct store *st)
{
	struct id_list ids = { 0 };
	struct frame_names fn = { 0 };
	sqlite3_stmt *get = NULL, *set = NULL;
	int rc, err = frame_names_load(st, &fn);

	if (err)
		goto out;
	/* The ids first, then the updates: a table is not changed under a statement reading it. */
	rc = sqlite3_prepare_v2(st->db, "SELECT id, folded, frame_ids FROM stacks WHERE frame_ids IS NOT NULL"
				" AND folded <> ''", -1, &get, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(st->db, "UPDATE stacks SET folded = '' WHERE id = ?1", -1, &set, NULL);
	if (rc != SQLITE_OK) {
		err = store_fail(st, NULL, rc, "cannot upgrade the stacks to schema version 3");
		goto out;
	}
	while (!err && (rc = sqlite3_step(get)) == SQLITE_ROW) {
		const char *folded = (const char *)sqlite3_column_text(get, 1);
		const unsigned char *blob = sqlite3_column_blob(get, 2);

		if (folded && spells(&fn, blob, (size_t)sqlite3_column_bytes(get, 2), folded))
			err = id_list_add(st, &ids, sqlite3_column_int64(get, 0));
	}
	if (!err && rc != SQLITE_DONE)
		err = store_fail(st, NULL, rc, "cannot upgrade the stacks to schema version 3");
	for (size_t i = 0; !err && i < ids.n; i++) {
		sqlite3_bind_int64(set, 1, ids.id[i]);
		rc = sqlite3_step(set);
		sqlite3_reset(set);
		if (rc != SQLITE_DONE)
			err = store_fail(st, NULL, rc, "cannot upgrade the stacks to schema version 3");
	}
out:
	sqlite3_finalize(get);
	sqlite3_finalize(set);
	frame_names_free(&fn);
	free(ids.id);
	return err;
}

/* Inside the open transaction: creates the schema of an empty database, checks it, and brings an
 * older database to the current version, step by step. */
static int setup_schema(struct store *st)
{
	int64_t tables = 0;
	int err;

	err = store_sql_int(st, "SELECT count(*) FROM sqlite_master", &tables, NULL);
	if (!err && tables == 0)
		err = store_sql_exec(st, schema_sql, "cannot create the schema");
	err = err ?: store_check_schema(st, &st->version);
	if (!err && st->version == 1) {
		err = store_sql_exec(st, migrate_v2_sql, "cannot upgrade the database to schema version 2");
		if (!err)
			st->version = 2;
	}
	if (!err && st->version == 2) {
		err = store_sql_exec(st, migrate_v3_sql, "cannot upgrade the database to schema version 3");
		err = err ?: drop_stack_texts(st);
		if (!err)
			st->version = 3;
	}
	if (!err && st->version == 3) {
		err = store_sql_exec(st, migrate_v4_sql, "cannot upgrade the database to schema version 4");
		if (!err)
			st->version = 4;
	}
	if (!err && st->version == 4) {
		err = store_sql_exec(st, migrate_v5_sql, "cannot upgrade the database to schema version 5");
		if (!err)
			st->version = 5;
	}
	if (!err && st->version == 5) {
		err = store_sql_exec(st, migrate_v6_sql, "cannot upgrade the database to schema version 6");
		if (!err)
			st->version = 6;
	}
	if (!err && st->version == 6) {
		err = store_sql_exec(st, migrate_v7_sql, "cannot upgrade the database to schema version 7");
		if (!err)
			st->version = 7;
	}
	return err;
}

/* Read-write setup: WAL, synchronous=NORMAL, the schema when the database is empty or older. */
int store_setup_write(struct store *st)
{
	sqlite3_stmt *stmt = NULL;
	const unsigned char *mode;
	bool wal;
	int rc, err;

	/* A new database gives the pages retention frees back to the file system; this must come before
	 * WAL mode writes the header, and does nothing to a database that has tables already. */
	err = store_sql_exec(st, "PRAGMA auto_vacuum=INCREMENTAL", "cannot set auto_vacuum");
	if (err)
		return err;
	rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode=WAL", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, NULL, rc, "cannot switch to WAL mode");
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW) {
		err = store_fail(st, stmt, rc, "cannot switch to WAL mode");
		sqlite3_finalize(stmt);
		return err;
	}
	mode = sqlite3_column_text(stmt, 0);
	wal = mode && strcmp((const char *)mode, "wal") == 0;
	sqlite3_finalize(stmt);
	if (!wal)
		return store_set_err(st, -ENOLCK, "cannot use WAL mode on this file system: put the database on a local file system");

	err = store_sql_exec(st, "PRAGMA synchronous=NORMAL", "cannot set synchronous=NORMAL");
	if (err)
		return err;
	err = store_sql_exec(st, "BEGIN IMMEDIATE", "cannot lock the database");
	if (err)
		return err;
	err = setup_schema(st);
	if (!err)
		err = store_sql_exec(st, "COMMIT", "cannot create the schema");
	if (err && !sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}
