/* store_open.c - opening and closing the store: the connection (read-write with the schema set up,
 * or read-only, immutable when no writer has it), every statement set prepared, the store's size. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_impl.h"
#include "store/store_schema.h"
#include "store/store_stmts.h"

#define BUSY_TIMEOUT_MS 5000         /* how long a reader or writer waits for a lock */
/* The stacks cache: its keys are whole folded stacks (about 200 bytes each), so at 65536 it held 15 MB
 * at high sample rates. 32768 cover many flushes' distinct stacks at 99 Hz; at 9999 Hz flushes take
 * about a third longer for it (measured: 6.2-6.4 s against 4.3-5.6 s) and the daemon 9.5 MB less. */
#define STACK_CACHE_MAX_ENTRIES 32768

/* The statements every store needs (a version 1 database has no frames to read). */
static int prepare_common(struct store *st)
{
	int err = 0;

	err = err ?: store_prepare(st, &st->name_get, "SELECT id FROM names WHERE name = ?1");
	if (st->version >= 2)
		err = err ?: store_prepare(st, &st->frame_get, st->version >= 4 ?
				     "SELECT f.name, m.path, m.build_id, f.file, f.start_line, f.line FROM frames AS f"
				     " JOIN modules AS m ON m.id = f.module_id WHERE f.id = ?1" :
				     "SELECT f.name, m.path, m.build_id, '', 0, 0 FROM frames AS f"
				     " JOIN modules AS m ON m.id = f.module_id WHERE f.id = ?1");
	err = err ?: store_prepare(st, &st->meta_get, "SELECT key, value FROM meta");
	err = err ?: store_prepare(st, &st->count_stacks, "SELECT count(*) FROM stacks");
	err = err ?: store_prepare(st, &st->count_samples, "SELECT count(*) FROM samples");
	if (st->version >= 3)
		err = err ?: store_prepare(st, &st->count_rollups, "SELECT count(*) FROM rollups");
	err = err ?: store_prepare(st, &st->page_count, "PRAGMA page_count");
	err = err ?: store_prepare(st, &st->page_size, "PRAGMA page_size");
	return err;
}

static int prepare_all(struct store *st)
{
	int err = prepare_common(st);

	err = err ?: store_prepare_parents(st);
	err = err ?: store_prepare_cgroups(st);
	err = err ?: store_prepare_queries(st);
	err = err ?: store_prepare_groups(st);
	if (err || st->mode != STORE_READ_WRITE)
		return err;
	err = store_prepare_writes(st);
	err = err ?: store_prepare_rollup_rows(st);
	return err ?: store_prepare_fold(st);
}

/* SQL flamed_step(ts, from, step): the start of ts's step, from + ((ts - from) / step) * step,
 * computed in 64-bit unsigned arithmetic so that no intermediate overflows (from may be INT64_MIN).
 * Needs ts >= from and step >= 1, as the queries ensure. */
static void step_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	int64_t ts = sqlite3_value_int64(argv[0]), from = sqlite3_value_int64(argv[1]);
	int64_t step = sqlite3_value_int64(argv[2]);
	uint64_t off;

	(void)argc;
	if (step < 1 || ts < from) {
		sqlite3_result_error(ctx, "flamed_step: needs ts >= from and step >= 1", -1);
		return;
	}
	off = (uint64_t)ts - (uint64_t)from;
	sqlite3_result_int64(ctx, (sqlite3_int64)((uint64_t)from + (off - off % (uint64_t)step)));
}

/* Opens the connection to name and checks (read-write: creates) the schema. */
static int connect_db(struct store *st, const char *name, int flags)
{
	int rc = sqlite3_open_v2(name, &st->db, flags, NULL);

	if (rc != SQLITE_OK)
		return st->db ? store_fail(st, NULL, rc, "cannot open the database") : -ENOMEM;
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	rc = sqlite3_create_function_v2(st->db, "flamed_step", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
					NULL, step_fn, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, NULL, rc, "cannot register an SQL function");
	return st->mode == STORE_READ_WRITE ? store_setup_write(st) : store_check_schema(st, &st->version);
}

/* "file:PATH?immutable=1" with PATH percent-encoded; NULL when out of memory. */
static char *immutable_uri(const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	static const char suffix[] = "?immutable=1";
	char *uri = malloc(strlen("file:") + 3 * strlen(path) + sizeof(suffix));
	char *p = uri;

	if (!uri)
		return NULL;
	p += sprintf(p, "file:");
	for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
		if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		    strchr("/._-~", *c)) {
			*p++ = (char)*c;
		} else {
			*p++ = '%';
			*p++ = hex[*c >> 4];
			*p++ = hex[*c & 15];
		}
	}
	memcpy(p, suffix, sizeof(suffix));
	return uri;
}

/* True when path has no write-ahead log next to it: no connection has it open. */
static bool no_wal_file(const char *path)
{
	char wal[4096];
	struct stat sb;

	if ((size_t)snprintf(wal, sizeof(wal), "%s-wal", path) >= sizeof(wal))
		return false;
	return stat(wal, &sb) < 0 && errno == ENOENT;
}

/* Why path cannot be opened for writing, as SQLite's own errno names the last of its attempts
 * (often ENOENT from a read-only retry): the file's or its directory's permission, else err. */
static int write_open_errno(const char *path, int err)
{
	char dir[4096];
	char *slash;

	if (access(path, F_OK) == 0)
		return access(path, R_OK | W_OK) < 0 ? -errno : err;
	if ((size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir))
		return -ENAMETOOLONG;
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	return access(dir, W_OK | X_OK) < 0 ? -errno : err;
}

int store_open(const char *path, enum store_mode mode, struct store **out)
{
	struct store *st;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!path || !path[0] || (mode != STORE_READ_WRITE && mode != STORE_READ_ONLY))
		return -EINVAL;
	if (mode == STORE_READ_ONLY) {
		struct stat sb;

		/* Look before opening, so that a reader never creates a file. */
		if (stat(path, &sb) < 0)
			return -errno;
		if (S_ISDIR(sb.st_mode))
			return -EISDIR;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->mode = mode;
	st->stacks.max = STACK_CACHE_MAX_ENTRIES;
	store_set_rollups(st, NULL);
	snprintf(st->errmsg, sizeof(st->errmsg), "no error");

	if (mode == STORE_READ_WRITE) {
		err = connect_db(st, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
		if (err == -ENOENT || err == -EACCES || err == -EPERM || err == -EROFS)
			err = write_open_errno(path, err);
	} else if (no_wal_file(path)) {
		/* No writer has the database open (its -wal goes with the last connection), so the file
		 * holds everything: read it as immutable. A plain read-only open would create -wal and
		 * -shm files, which fails for a user who cannot write the directory and otherwise leaves
		 * them behind. */
		char *uri = immutable_uri(path);

		err = uri ? connect_db(st, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI) : -ENOMEM;
		free(uri);
	} else {
		err = connect_db(st, path, SQLITE_OPEN_READONLY);
	}
	if (!err)
		err = prepare_all(st);
	if (err) {
		store_close(st);
		return err;
	}
	*out = st;
	return 0;
}

/* Finalizes every statement (NULL ones are skipped by SQLite). */
static void finalize_all(struct store *st)
{
	sqlite3_stmt *const stmts[] = {
		st->name_put, st->stack_get, st->stack_put, st->stack_set_frames, st->sample_put, st->module_get,
		st->module_put, st->frame_id_get, st->frame_put, st->begin, st->commit, st->rollback, st->meta_put,
		st->rollup_tail, st->rollup_put, st->rollup_set, st->raw_delete, st->raw_oldest, st->raw_newest, st->raw_next,
		st->raw_fold, st->rollup_delete, st->rollup_next, st->rollup_fold, st->freelist, st->gc_raw,
		st->gc_rollups, st->gc_stack_ids, st->gc_stack_delete, st->gc_names, st->vacuum, st->meta_get,
		st->name_get, st->name_of, st->stack_of, st->stacks_all, st->stacks_max, st->frame_get,
		st->frames_all, st->frames_max, st->raw_procs, st->rollup_procs, st->threads, st->raw_range, st->rollup_first,
		st->rollup_newest, st->count_stacks, st->count_samples, st->count_rollups, st->page_count,
		st->page_size, st->parent_put, st->parent_children, st->parent_next, st->parent_latest, st->parent_of,
		st->parent_prune, st->family_clear, st->family_put, st->cgroup_get, st->cgroup_put, st->cgroup_of,
		st->cgroups_all, st->cgroup_prune, st->cgsel_clear, st->cgsel_put, st->raw_cgroups, st->rollup_cgroups,
	};

	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++)
		sqlite3_finalize(stmts[i]);
	for (int k = 0; k < QK_MAX; k++)
		for (int v = 0; v < QV_MAX; v++)
			sqlite3_finalize(st->query[k][v]);
}

void store_close(struct store *st)
{
	if (!st)
		return;
	if (st->in_tx)
		store_abandon(st);
	finalize_all(st);
	sqlite3_close(st->db);
	store_cache_clear(&st->names);
	store_cache_clear(&st->stacks);
	store_cache_clear(&st->modules);
	store_cache_clear(&st->frames);
	store_cache_clear(&st->cgroups);
	store_pending_free(&st->pending);
	store_buf_free(&st->key);
	store_buf_free(&st->blob);
	store_buf_free(&st->text);
	store_buf_free(&st->ident);
	free(st);
}

const char *store_errmsg(const struct store *st)
{
	return st ? st->errmsg : "no store (store_open failed)";
}

/* Steps a prepared statement that yields one integer. */
static int stmt_u64(struct store *st, sqlite3_stmt *stmt, uint64_t *out)
{
	int rc = sqlite3_step(stmt);

	if (rc != SQLITE_ROW)
		return store_fail(st, stmt, rc == SQLITE_DONE ? SQLITE_ERROR : rc, "cannot read statistics");
	*out = (uint64_t)sqlite3_column_int64(stmt, 0);
	sqlite3_reset(stmt);
	return 0;
}

int store_get_stats(struct store *st, struct store_stats *out)
{
	uint64_t pages = 0, page_size = 0;
	int err;

	if (!st || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	err = stmt_u64(st, st->count_stacks, &out->stacks);
	err = err ?: stmt_u64(st, st->count_samples, &out->sample_rows);
	if (!err && st->count_rollups)
		err = stmt_u64(st, st->count_rollups, &out->rollup_rows);
	err = err ?: stmt_u64(st, st->page_count, &pages);
	err = err ?: stmt_u64(st, st->page_size, &page_size);
	if (err)
		return err;
	out->db_bytes = pages * page_size;
	return 0;
}
