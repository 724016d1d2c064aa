/* testsql.h - SQL run on a store's database file directly, beside the store: what a test reads or
 * breaks behind its back. */
#ifndef FLAMED_TESTSQL_H
#define FLAMED_TESTSQL_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

/* One integer from SQL run on the database directly; -1 on any error. */
static inline int64_t sql_value(const char *path, const char *sql)
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
static inline bool sql_run(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	bool ok = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) == SQLITE_OK &&
		  sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;

	sqlite3_close(db);
	return ok;
}

/* Turns a database of this version back into schema version 6, as that flamed wrote it: no cgroups
 * table, no cgroup in raw rows or in the rollups' key (a process's rollup rows of two cgroups in one
 * bucket: the first kept). */
#define SQL_BACK_TO_V6                                                                                  \
	"DROP TABLE cgroups; ALTER TABLE samples DROP COLUMN cg; ALTER TABLE rollups RENAME TO rollups_v7;" \
	"CREATE TABLE rollups(span INTEGER NOT NULL, bucket INTEGER NOT NULL, pid INTEGER NOT NULL,"       \
	" comm_id INTEGER NOT NULL, kind INTEGER NOT NULL, part INTEGER NOT NULL, last INTEGER NOT NULL,"  \
	" total INTEGER NOT NULL, stacks BLOB NOT NULL, PRIMARY KEY(span, bucket, pid, comm_id, kind, part))" \
	" WITHOUT ROWID;"                                                                                  \
	"INSERT OR IGNORE INTO rollups SELECT span, bucket, pid, comm_id, kind, part, last, total, stacks FROM rollups_v7;" \
	"DROP TABLE rollups_v7; UPDATE meta SET value = 6 WHERE key = 'schema_version';"

#endif
