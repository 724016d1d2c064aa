/* store_fold.c - retention and rollups: folds raw rows into minute rollups and those into hour rollups, drops what is past its window, sweeps what nothing refers to. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"
#include "store/store_impl.h"
#include "store/store_cgroups.h"
#include "store/store_parents.h"
#include "store/store_rollup_rows.h"
#include "store/store_stmts.h"

#define DEFAULT_RAW_SECONDS 3600
#define DEFAULT_MINUTE_SECONDS 86400
#define DEFAULT_FOLD_DELAY 30 /* flamed's at its default flush interval */
#define MAX_WINDOW (366 * 86400)
#define MAX_FOLD_DELAY 86400

/* The sweep of unused stacks reads every raw row and rollup: after deletions by age (only those leave
 * stacks unused: rows past their windows live on in rollups) it runs on the first call and every this
 * many after (hourly at a call a minute). */
#define PRUNE_GC_EVERY 60
/* Rows deleted by one retention batch at most, so that a prune never holds the lock for long. */
#define PRUNE_BATCH 200000
/* Batches in one store_prune() call at most; what is left waits for the next call. */
#define PRUNE_MAX_BATCHES 10
/* When over the size cap, the oldest data goes this many seconds at a time. */
#define PRUNE_SIZE_STEP 3600
/* Raw rows one call folds at most (whole minutes: it may pass this by one minute's rows); a backlog,
 * after an upgrade say, is worked off over several calls. */
#define FOLD_MAX_ROWS 500000
/* Hours one call folds at most. */
#define FOLD_MAX_HOURS 24
/* Distinct (process, stack) pairs one bucket may have; more fail the fold (with -E2BIG). */
#define FOLD_MAX_CELLS (1u << 22)
/* Free pages one call gives back to the file system at most (32 MiB at 4 KiB pages): after an upgrade
 * drops version 2's indexes, the file shrinks over several calls instead of one that takes seconds. */
#define VACUUM_MAX_PAGES 8192
#define STR_(x) #x
#define STR(x) STR_(x)
/* Stack ids the sweep can mark (a bitmap: 8 MiB); beyond, unused stacks stay until fewer ids are in use. */
#define GC_MAX_STACK_ID (64 << 20)

int store_set_rollups(struct store *st, const struct store_rollup_opts *o)
{
	struct store_rollup_opts d = { DEFAULT_RAW_SECONDS, DEFAULT_MINUTE_SECONDS, DEFAULT_FOLD_DELAY };

	if (!st)
		return -EINVAL;
	if (!o)
		o = &d;
	if (o->raw_seconds < 60 || o->raw_seconds > MAX_WINDOW)
		return store_set_err(st, -EINVAL, "raw rows are kept from a minute to 366 days, not %lld s",
				     (long long)o->raw_seconds);
	if (o->minute_seconds < o->raw_seconds + 3600 || o->minute_seconds > MAX_WINDOW)
		return store_set_err(st, -EINVAL, "minute rollups are kept an hour longer than raw rows at least and"
				     " 366 days at most, not %lld s", (long long)o->minute_seconds);
	if (o->fold_delay < 0 || o->fold_delay > MAX_FOLD_DELAY)
		return store_set_err(st, -EINVAL, "the fold delay is 0 to 86400 s, not %lld", (long long)o->fold_delay);
	st->ropts = *o;
	return 0;
}

int store_prepare_fold(struct store *st)
{
	int err = 0;

	/* Bounded batches of the oldest raw rows (through samples_ts). */
	err = err ?: store_prepare(st, &st->raw_delete,
			     "DELETE FROM samples WHERE rowid IN (SELECT rowid FROM samples WHERE ts < ?1 LIMIT ?2)");
	err = err ?: store_prepare(st, &st->raw_oldest, "SELECT min(ts) FROM samples");
	err = err ?: store_prepare(st, &st->raw_newest, "SELECT max(ts) FROM samples");
	err = err ?: store_prepare(st, &st->raw_next, "SELECT min(ts) FROM samples WHERE ts >= ?1");
	err = err ?: store_prepare(st, &st->raw_fold,
			     "SELECT ts, pid, comm_id, stack_id, count, kind, cg FROM samples WHERE ts >= ?1 AND ts < ?2");
	err = err ?: store_prepare(st, &st->rollup_delete, "DELETE FROM rollups WHERE span = ?1 AND bucket < ?2");
	err = err ?: store_prepare(st, &st->rollup_next, "SELECT min(bucket) FROM rollups WHERE span = ?1 AND bucket >= ?2");
	err = err ?: store_prepare(st, &st->rollup_fold,
			     "SELECT bucket, pid, comm_id, last, stacks, kind, cg FROM rollups WHERE span = ?1 AND bucket >= ?2"
			     " AND bucket < ?3");
	err = err ?: store_prepare(st, &st->freelist, "PRAGMA freelist_count");
	err = err ?: store_prepare(st, &st->gc_raw, "SELECT stack_id FROM samples");
	err = err ?: store_prepare(st, &st->gc_rollups, "SELECT stacks FROM rollups");
	err = err ?: store_prepare(st, &st->gc_stack_ids, "SELECT id FROM stacks");
	err = err ?: store_prepare(st, &st->gc_stack_delete, "DELETE FROM stacks WHERE id = ?1");
	err = err ?: store_prepare(st, &st->gc_names,
			     "DELETE FROM names WHERE id NOT IN (SELECT comm_id FROM samples)"
			     " AND id NOT IN (SELECT thread_id FROM samples) AND id NOT IN (SELECT comm_id FROM rollups)");
	err = err ?: store_prepare(st, &st->vacuum, "PRAGMA incremental_vacuum(" STR(VACUUM_MAX_PAGES) ")");
	return err;
}

/* Deletes up to PRUNE_BATCH raw rows older than before; adds how many to *deleted. */
static int raw_batch(struct store *st, int64_t before, uint64_t *deleted, bool *more)
{
	int err;
	uint64_t n;

	sqlite3_bind_int64(st->raw_delete, 1, before);
	sqlite3_bind_int64(st->raw_delete, 2, PRUNE_BATCH);
	err = store_run(st, st->raw_delete, "cannot delete old samples");
	n = err ? 0 : (uint64_t)sqlite3_changes(st->db);
	*deleted += n;
	*more = n == PRUNE_BATCH;
	return err;
}

/* Deletes raw rows older than before, in at most PRUNE_MAX_BATCHES batches (the rest next time). */
static int raw_delete(struct store *st, int64_t before, uint64_t *deleted)
{
	bool more = true;
	int err = 0;

	for (int i = 0; i < PRUNE_MAX_BATCHES && more && !err; i++)
		err = raw_batch(st, before, deleted, &more);
	return err;
}

/* Deletes the rollups of level that start before `before`; adds how many to *deleted. */
static int rollup_delete(struct store *st, int level, int64_t before, uint64_t *deleted)
{
	int err;

	sqlite3_bind_int64(st->rollup_delete, 1, rollup_span[level]);
	sqlite3_bind_int64(st->rollup_delete, 2, before);
	err = store_run(st, st->rollup_delete, "cannot delete old rollups");
	if (!err)
		*deleted += (uint64_t)sqlite3_changes(st->db);
	return err;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Everything before cut goes: raw rows from cut on, rollup buckets starting from cut on are what is
 * kept (a bucket that starts earlier goes whole). Moves the markers; rows behind them are deleted here
 * or by later calls, and no query reads them meanwhile. */
static int cut_before(struct store *st, struct rollup_tiers *t, int64_t cut, struct store_prune_result *r)
{
	int err = 0;

	cut = max64(min64(cut, INT64_MAX / 4), -(INT64_MAX / 4));
	t->raw_from = max64(t->raw_from, cut);
	for (int l = 0; l < ROLLUP_LEVELS; l++) {
		t->kept[l] = max64(t->kept[l], rollup_ceil(cut, rollup_span[l]));
		t->folded[l] = max64(t->folded[l], t->kept[l]);
	}
	err = raw_delete(st, cut, &r->samples_deleted);
	for (int l = 0; !err && l < ROLLUP_LEVELS; l++)
		err = rollup_delete(st, l, t->kept[l], &r->samples_deleted);
	return err;
}

/* Steps stmt (bound) for a nullable integer: *found and *out. */
static int step_opt(struct store *st, sqlite3_stmt *stmt, int64_t *out, bool *found)
{
	return store_step_int(st, stmt, out, found, "cannot read the database");
}

/* Reads [from, to) of raw rows into m as minute buckets; adds the rows to *rows. */
static int read_raw(struct store *st, int64_t from, int64_t to, struct rollup_map *m, uint64_t *rows)
{
	sqlite3_stmt *s = st->raw_fold;
	int rc, err = 0;

	sqlite3_bind_int64(s, 1, from);
	sqlite3_bind_int64(s, 2, to);
	while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(s, 0);

		err = rollup_map_add(m, rollup_floor(ts, 60), (uint32_t)sqlite3_column_int64(s, 1),
				     sqlite3_column_int64(s, 2), (uint32_t)sqlite3_column_int64(s, 5),
				     (uint32_t)sqlite3_column_int64(s, 6), sqlite3_column_int64(s, 3), (uint64_t)sqlite3_column_int64(s, 4), ts);
		(*rows)++;
	}
	if (err) {
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
		return store_set_err(st, err, "cannot fold a minute: %s", err == -E2BIG ? "too many stacks" : "out of memory");
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, s, rc, "cannot read samples to fold");
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return 0;
}

/* Writes the map's cells as rollups of level and empties it. */
static int write_map(struct store *st, int level, struct rollup_map *m, struct store_prune_result *r)
{
	size_t n = rollup_map_compact(m);
	int err;

	rollup_cells_sort(m->cells, n);
	err = store_write_rollups(st, level, m->cells, n, false);
	for (size_t i = 0; i < n; i++)
		r->rollup_rows_written += i == 0 || m->cells[i].bucket != m->cells[i - 1].bucket ||
					  m->cells[i].pid != m->cells[i - 1].pid ||
					  m->cells[i].comm_id != m->cells[i - 1].comm_id;
	rollup_map_free(m);
	return err;
}

/* Folds raw rows of whole minutes from t->folded[0] to target into minute rollups, skipping empty
 * stretches, until FOLD_MAX_ROWS rows are read. */
static int fold_minutes(struct store *st, struct rollup_tiers *t, int64_t target, struct store_prune_result *r)
{
	struct rollup_map m;
	int err = 0;

	rollup_map_init(&m, FOLD_MAX_CELLS);
	while (!err && t->folded[0] < target && r->raw_folded < FOLD_MAX_ROWS) {
		int64_t next = 0;
		bool found = false;

		sqlite3_bind_int64(st->raw_next, 1, t->folded[0]);
		err = step_opt(st, st->raw_next, &next, &found);
		if (err || !found || next >= target) {
			if (!err)
				t->folded[0] = target; /* nothing more to fold before target */
			break;
		}
		next = rollup_floor(next, 60);
		err = read_raw(st, next, next + 60, &m, &r->raw_folded);
		err = err ?: write_map(st, 0, &m, r);
		if (!err)
			t->folded[0] = next + 60;
	}
	rollup_map_free(&m);
	return err;
}

/* Reads the minute rollups of [from, to) into m as hour buckets. */
static int read_minutes(struct store *st, int64_t from, int64_t to, struct rollup_map *m)
{
	sqlite3_stmt *s = st->rollup_fold;
	int rc, err = 0;

	sqlite3_bind_int64(s, 1, rollup_span[0]);
	sqlite3_bind_int64(s, 2, from);
	sqlite3_bind_int64(s, 3, to);
	while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t bucket = rollup_floor(sqlite3_column_int64(s, 0), rollup_span[1]), last = sqlite3_column_int64(s, 3);
		uint32_t pid = (uint32_t)sqlite3_column_int64(s, 1);
		int64_t comm = sqlite3_column_int64(s, 2);

		err = rollup_map_add_blob(m, bucket, pid, comm, (uint32_t)sqlite3_column_int64(s, 5),
					  (uint32_t)sqlite3_column_int64(s, 6), sqlite3_column_blob(s, 4), (size_t)sqlite3_column_bytes(s, 4), last, 1);
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (err)
		return store_set_err(st, err, "cannot fold an hour: %s", err == -EIO ? "a minute rollup is damaged"
							     : err == -E2BIG ? "too many stacks" : "out of memory");
	return rc == SQLITE_DONE ? 0 : store_fail(st, NULL, rc, "cannot read rollups to fold");
}

/* Folds the whole hours the minute rollups hold, from t->folded[1] on, skipping empty ones. */
static int fold_hours(struct store *st, struct rollup_tiers *t, struct store_prune_result *r)
{
	const int64_t hour = rollup_span[1];
	struct rollup_map m;
	int err = 0;

	rollup_map_init(&m, FOLD_MAX_CELLS);
	for (int i = 0; !err && i < FOLD_MAX_HOURS && t->folded[1] + hour <= t->folded[0]; i++) {
		int64_t next = 0, target = rollup_floor(t->folded[0], hour);
		bool found = false;

		sqlite3_bind_int64(st->rollup_next, 1, rollup_span[0]);
		sqlite3_bind_int64(st->rollup_next, 2, t->folded[1]);
		err = step_opt(st, st->rollup_next, &next, &found);
		if (err || !found || next >= target) {
			if (!err)
				t->folded[1] = target;
			break;
		}
		next = rollup_floor(next, hour);
		err = read_minutes(st, next, next + hour, &m);
		err = err ?: write_map(st, 1, &m, r);
		if (!err)
			t->folded[1] = next + hour;
	}
	rollup_map_free(&m);
	return err;
}

/* The second the history has reached: the newest raw row, but never past the clock (a sample dated in
 * the future must not fold the present away). *found false when there are no raw rows. */
static int history_now(struct store *st, int64_t *now, bool *found)
{
	int64_t wall = (int64_t)time(NULL);
	int err = store_step_int(st, st->raw_newest, now, found, "cannot read the newest sample");

	if (!err && *found && *now > wall)
		*now = wall;
	return err;
}

/* Folds what is fold_delay old: minutes from raw rows, hours from minutes. The first fold starts at
 * the oldest raw row. */
static int fold(struct store *st, struct rollup_tiers *t, int64_t now, struct store_prune_result *r)
{
	int64_t oldest = 0;
	bool found = false;
	int err;

	if (t->folded[0] == INT64_MIN) {
		err = store_step_int(st, st->raw_oldest, &oldest, &found, "cannot read the oldest sample");
		if (err || !found)
			return err;
		t->folded[0] = rollup_floor(oldest, rollup_span[0]);
	}
	t->folded[0] = max64(t->folded[0], t->kept[0]);
	if (t->folded[1] == INT64_MIN)
		t->folded[1] = rollup_floor(t->folded[0], rollup_span[1]);
	t->folded[1] = max64(t->folded[1], t->kept[1]);
	err = fold_minutes(st, t, rollup_floor(now - st->ropts.fold_delay, rollup_span[0]), r);
	return err ?: fold_hours(st, t, r);
}

/* Raw rows past raw_seconds and minute rollups past minute_seconds go, but only once folded into the
 * next level: raw rows in whole minutes, minute rollups in whole hours. */
static int prune_windows(struct store *st, struct rollup_tiers *t, int64_t now, struct store_prune_result *r)
{
	int64_t raw_cut, minute_cut;
	int err;

	if (t->folded[0] == INT64_MIN)
		return 0;
	raw_cut = min64(rollup_floor(now - st->ropts.raw_seconds, rollup_span[0]), t->folded[0]);
	t->raw_from = max64(t->raw_from, raw_cut);
	err = raw_delete(st, t->raw_from, &r->rows_expired);
	if (err || t->folded[1] == INT64_MIN)
		return err;
	minute_cut = min64(rollup_floor(now - st->ropts.minute_seconds, rollup_span[1]), t->folded[1]);
	t->kept[0] = max64(t->kept[0], minute_cut);
	return rollup_delete(st, 0, t->kept[0], &r->rows_expired);
}

/* Marks stack id in the bitmap (ids beyond it are ignored: the caller checked the largest). */
static void mark(uint64_t *bits, int64_t max, int64_t id)
{
	if (id >= 0 && id <= max)
		bits[id / 64] |= 1ULL << (id % 64);
}

/* Marks every stack a raw row or a rollup refers to. */
static int mark_live(struct store *st, uint64_t *bits, int64_t max)
{
	int rc, err = 0;

	while ((rc = sqlite3_step(st->gc_raw)) == SQLITE_ROW)
		mark(bits, max, sqlite3_column_int64(st->gc_raw, 0));
	if (rc != SQLITE_DONE)
		return store_fail(st, st->gc_raw, rc, "cannot read samples");
	sqlite3_reset(st->gc_raw);
	while (!err && (rc = sqlite3_step(st->gc_rollups)) == SQLITE_ROW) {
		struct rollup_reader rd;
		struct rollup_pair p;

		rollup_reader_init(&rd, sqlite3_column_blob(st->gc_rollups, 0),
				   (size_t)sqlite3_column_bytes(st->gc_rollups, 0));
		while ((err = rollup_next(&rd, &p)) == 1)
			mark(bits, max, p.stack_id);
	}
	sqlite3_reset(st->gc_rollups);
	if (err)
		return store_set_err(st, -EIO, "a rollup row is damaged");
	return rc == SQLITE_DONE ? 0 : store_fail(st, NULL, rc, "cannot read rollups");
}

/* The ids of stacks not marked, into *dead (*n of them). */
static int unmarked(struct store *st, const uint64_t *bits, int64_t max, int64_t **dead, size_t *n)
{
	size_t cap = 0;
	int rc;

	*n = 0;
	while ((rc = sqlite3_step(st->gc_stack_ids)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st->gc_stack_ids, 0);

		if (id >= 0 && id <= max && (bits[id / 64] >> (id % 64) & 1))
			continue;
		if (*n == cap) {
			int64_t *d = reallocarray(*dead, cap ? cap * 2 : 1024, sizeof(*d));

			if (!d) {
				sqlite3_reset(st->gc_stack_ids);
				return store_set_err(st, -ENOMEM, "out of memory sweeping stacks");
			}
			*dead = d;
			cap = cap ? cap * 2 : 1024;
		}
		(*dead)[(*n)++] = id;
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, st->gc_stack_ids, rc, "cannot read stacks");
	sqlite3_reset(st->gc_stack_ids);
	return 0;
}

/* Deletes the stacks nothing refers to (a bitmap of the ids in use, then one delete per dead id). */
static int sweep_stacks(struct store *st, struct store_prune_result *r)
{
	int64_t max = 0, *dead = NULL;
	uint64_t *bits;
	bool found = false;
	size_t n = 0;
	int err = store_step_int(st, st->stacks_max, &max, &found, "cannot read stacks");

	if (err || !found || max > GC_MAX_STACK_ID)
		return err;
	bits = calloc((size_t)max / 64 + 1, sizeof(*bits));
	if (!bits)
		return store_set_err(st, -ENOMEM, "out of memory sweeping stacks");
	err = mark_live(st, bits, max);
	err = err ?: unmarked(st, bits, max, &dead, &n);
	for (size_t i = 0; !err && i < n; i++) {
		sqlite3_bind_int64(st->gc_stack_delete, 1, dead[i]);
		err = store_run(st, st->gc_stack_delete, "cannot delete unused stacks");
		r->stacks_deleted += !err;
	}
	free(dead);
	free(bits);
	return err;
}

/* Deletes stacks and names nothing refers to; their cached ids go too. */
static int collect_garbage(struct store *st, struct store_prune_result *r)
{
	int err = sweep_stacks(st, r);

	err = err ?: store_run(st, st->gc_names, "cannot delete unused names");
	err = err ?: store_prune_cgroups(st);
	store_forget_ids(st);
	return err;
}

/* Bytes the database uses: its pages less the free ones (which new data reuses). */
static int used_bytes(struct store *st, uint64_t *out)
{
	int64_t pages = 0, page_size = 0, free_pages = 0;
	bool found = false;
	int err = store_step_int(st, st->page_count, &pages, &found, "cannot read statistics");

	err = err ?: store_step_int(st, st->page_size, &page_size, &found, "cannot read statistics");
	err = err ?: store_step_int(st, st->freelist, &free_pages, &found, "cannot read statistics");
	*out = (uint64_t)(pages - (free_pages < pages ? free_pages : pages)) * (uint64_t)page_size;
	return err;
}

/* The oldest second any level holds; *found false when the database holds no samples. */
static int oldest_data(struct store *st, int64_t *oldest, bool *found)
{
	int64_t v = 0;
	bool f = false;
	int err = store_step_int(st, st->raw_oldest, &v, &f, "cannot read the oldest sample");

	*found = f;
	*oldest = f ? v : INT64_MAX;
	for (int l = 0; !err && l < ROLLUP_LEVELS; l++) {
		sqlite3_bind_int64(st->rollup_next, 1, rollup_span[l]);
		sqlite3_bind_int64(st->rollup_next, 2, INT64_MIN);
		err = store_step_int(st, st->rollup_next, &v, &f, "cannot read the oldest rollup");
		if (!err && f) {
			*oldest = min64(*oldest, v);
			*found = true;
		}
	}
	return err;
}

/* Deletes the oldest data, PRUNE_SIZE_STEP seconds at a time, with the stacks only it used, while more
 * than max_bytes are used, and then down to 90% of it: room for some flushes before the next trim. */
static int prune_to_size(struct store *st, struct rollup_tiers *t, uint64_t max_bytes, struct store_prune_result *r)
{
	uint64_t used = 0;
	int err = 0;

	for (int i = 0; i < PRUNE_MAX_BATCHES && !err; i++) {
		int64_t oldest;
		bool found = false;

		err = used_bytes(st, &used);
		if (err || used <= (i ? max_bytes / 10 * 9 : max_bytes))
			break;
		err = oldest_data(st, &oldest, &found);
		if (err || !found)
			break; /* no samples left: the rest is stacks and names, collected below */
		oldest = min64(oldest, INT64_MAX / 4) + PRUNE_SIZE_STEP;
		err = cut_before(st, t, oldest, r);
		if (!err && oldest > r->cut)
			r->cut = oldest;
		err = err ?: collect_garbage(st, r);
	}
	return err;
}

/* Gives freed pages back to the file system (databases created with auto_vacuum; VACUUM_MAX_PAGES at
 * most), then lets the WAL shrink. Failures here lose nothing. */
static void shrink(struct store *st)
{
	while (sqlite3_step(st->vacuum) == SQLITE_ROW)
		;
	sqlite3_reset(st->vacuum);
	sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
}

/* The work of one store_prune, in its transaction. */
static int prune_tx(struct store *st, int64_t before, uint64_t max_bytes, struct store_prune_result *r)
{
	struct rollup_tiers t;
	int64_t now = 0;
	bool found = false;
	int err = store_load_tiers(st, &t);

	err = err ?: cut_before(st, &t, before, r);
	err = err ?: store_prune_parents(st, before);
	err = err ?: history_now(st, &now, &found);
	if (!err && found) {
		err = fold(st, &t, now, r);
		err = err ?: prune_windows(st, &t, now, r);
	}
	if (!err && r->samples_deleted && st->prunes % PRUNE_GC_EVERY == 0)
		err = collect_garbage(st, r);
	st->prunes++;
	if (!err && max_bytes)
		err = prune_to_size(st, &t, max_bytes, r);
	return err ?: store_save_tiers(st, &t);
}

int store_prune(struct store *st, int64_t before, uint64_t max_bytes, struct store_prune_result *out)
{
	struct store_prune_result r = { .cut = before };
	int err;

	if (!st || st->mode != STORE_READ_WRITE || st->in_tx)
		return -EINVAL;
	err = used_bytes(st, &r.bytes_before);
	err = err ?: store_run(st, st->begin, "cannot start pruning");
	if (err)
		return err;
	err = prune_tx(st, before, max_bytes, &r);
	err = err ?: store_run(st, st->commit, "cannot commit pruning");
	if (err) {
		if (!sqlite3_get_autocommit(st->db))
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		store_forget_ids(st);
		return err;
	}
	shrink(st);
	used_bytes(st, &r.bytes_after);
	if (out)
		*out = r;
	return 0;
}
