/* store_sql.c - the store's ground floor: SQLite result codes as -errno with a message, one
 * statement stepped or prepared, constant SQL run, scratch buffers; every other store file builds on it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store/store_impl.h"

/* Maps an SQLite result code to a negative errno. */
static int errno_of(sqlite3 *db, int rc)
{
	int sys = db ? sqlite3_system_errno(db) : 0;

	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EIO;
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
		return sys > 0 ? -sys : -EIO;
	case SQLITE_TOOBIG:
		return -E2BIG;
	case SQLITE_INTERRUPT:
		return -EINTR;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_RANGE:
		return -EINVAL;
	case SQLITE_NOLFS:
		return -EFBIG;
	case SQLITE_PROTOCOL:
		return -ENOLCK;
	default:
		return -EIO;
	}
}

int store_set_err(struct store *st, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->errmsg, sizeof(st->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

/* Ends the open transaction without keeping anything: rolls back if SQLite has not already, and
 * forgets every cached id (it may name a row that no longer exists) and every pending row. */
void store_abandon(struct store *st)
{
	if (!sqlite3_get_autocommit(st->db)) {
		sqlite3_step(st->rollback);
		sqlite3_reset(st->rollback);
	}
	store_cache_clear(&st->names);
	store_cache_clear(&st->stacks);
	store_cache_clear(&st->modules);
	store_cache_clear(&st->frames);
	store_cache_clear(&st->cgroups);
	store_pending_free(&st->pending);
	st->in_tx = false;
}

int store_fail(struct store *st, sqlite3_stmt *stmt, int rc, const char *what)
{
	int err = errno_of(st->db, rc);

	snprintf(st->errmsg, sizeof(st->errmsg), "%s: %s", what,
		 st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
	if (stmt) {
		sqlite3_reset(stmt);
		sqlite3_clear_bindings(stmt);
	}
	if (st->in_tx && sqlite3_get_autocommit(st->db))
		store_abandon(st);
	return err ? err : -EIO;
}

int store_run(struct store *st, sqlite3_stmt *stmt, const char *what)
{
	int rc = sqlite3_step(stmt);

	if (rc != SQLITE_DONE)
		return store_fail(st, stmt, rc, what);
	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
	return 0;
}

int store_step_int(struct store *st, sqlite3_stmt *stmt, int64_t *out, bool *found, const char *what)
{
	int rc = sqlite3_step(stmt);

	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_fail(st, stmt, rc, what);
	*found = rc == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL;
	if (*found)
		*out = sqlite3_column_int64(stmt, 0);
	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
	return 0;
}

/* Runs one constant SQL text that returns one integer (or none: *found false). */
int store_sql_int(struct store *st, const char *sql, int64_t *out, bool *found)
{
	sqlite3_stmt *stmt = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL);
	int err = 0;

	if (rc != SQLITE_OK)
		return store_fail(st, NULL, rc, "cannot read the database");
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(stmt, 0);
		if (found)
			*found = true;
	} else if (rc == SQLITE_DONE) {
		if (found)
			*found = false;
		else
			err = store_set_err(st, -EIO, "cannot read the database: no result");
	} else {
		err = store_fail(st, stmt, rc, "cannot read the database");
	}
	sqlite3_finalize(stmt);
	return err;
}

/* Runs constant SQL text (one or more statements, no result rows wanted). */
int store_sql_exec(struct store *st, const char *sql, const char *what)
{
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : store_fail(st, NULL, rc, what);
}

/* Prepares one statement for the life of the store. */
int store_prepare(struct store *st, sqlite3_stmt **stmt, const char *sql)
{
	int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, NULL);

	return rc == SQLITE_OK ? 0 : store_fail(st, NULL, rc, "cannot prepare a statement");
}

int store_buf_reserve(struct buf *b, size_t n)
{
	unsigned char *p;

	if (n <= b->cap)
		return 0;
	p = realloc(b->p, n);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = n;
	return 0;
}

void store_buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}
