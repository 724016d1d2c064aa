/* store_impl.h - the store's own state (struct store) and its ground floor, for the store's files
 * only: store_sql.c (SQLite helpers), store_ids.c (id caches), store_pending.c (rows of the open
 * transaction). Above them: store_schema.c, store_rollup_rows.c, store_write.c, store_fold.c,
 * store_query.c, and store_open.c, which prepares every statement set (store_stmts.h). */
#ifndef FLAMED_STORE_IMPL_H
#define FLAMED_STORE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/rollup.h"
#include "store/store.h"

#define SCHEMA_VERSION 7
#define STACK_MAX_BYTES (64 * 1024)          /* longest folded stack accepted */
#define FRAMES_MAX (STACK_MAX_BYTES / 2 + 1) /* most frames a stack can have ("a;a;...") */
/* Encoded bytes of (stack, count) pairs in one rollup row at most: a row then stays within its b-tree
 * page (SQLite keeps at most about 1000 bytes of a WITHOUT ROWID row there, at 4 KiB pages, and moves
 * the rest to overflow pages that hold one row's bytes each, mostly empty). */
#define ROLLUP_PART_BYTES 900

/* One entry of a text -> id cache; key NULL marks a free slot. */
struct cache_slot {
	char *key;
	size_t len;
	uint64_t hash;
	int64_t id;
	bool tag; /* the stacks cache: the row has frame_ids */
};

/* Open-addressing table of text -> row id, at most half full, bounded in entries and bytes. */
struct id_cache {
	struct cache_slot *slots;
	size_t cap;   /* a power of two, or 0 before the first entry */
	size_t n;
	size_t bytes; /* key text held */
	size_t max;   /* entries held at most (0: CACHE_MAX_ENTRIES) */
};

/* One row waiting for the commit; count 0 marks a free slot. */
struct pending_row {
	int64_t ts;
	int64_t comm_id, thread_id, stack_id;
	uint32_t pid, tid;
	uint64_t count;
	uint32_t kind; /* enum store_kind */
	uint32_t cg;   /* cgroups.id, 0: not known */
};

/* Rows of the open transaction, duplicates merged. */
struct pending {
	struct pending_row *rows;
	size_t cap; /* a power of two, or 0 */
	size_t n;
};

/* A growable byte buffer. */
struct buf {
	unsigned char *p;
	size_t cap;
};

/* Queries with a whole-host, a one-pid and a family variant (the processes in temp.family: a process
 * and its descendants, each over the seconds its pid was its own). */
enum { QV_ANY, QV_PID, QV_FAMILY, QV_MAX };
/* Per piece of a plan: raw rows and rollup rows of stacks; timeline points of raw rows (total, per
 * thread) and of rollups. */
enum { QK_RAW, QK_ROLLUP, QK_RAW_STEPS, QK_RAW_STEPS_TID, QK_ROLLUP_STEPS, QK_MAX };

struct store {
	sqlite3 *db;
	enum store_mode mode;
	int64_t version; /* schema version; < 3 only for an older database opened read-only */
	bool in_tx;
	struct store_rollup_opts ropts;
	struct rollup_tiers tiers; /* as read at store_begin, for the rows that come late */
	/* writes */
	sqlite3_stmt *name_put, *stack_get, *stack_put, *stack_set_frames, *sample_put;
	sqlite3_stmt *module_get, *module_put, *frame_id_get, *frame_put;
	sqlite3_stmt *begin, *commit, *rollback, *meta_put;
	sqlite3_stmt *rollup_tail, *rollup_put, *rollup_set;
	/* retention and folding */
	sqlite3_stmt *raw_delete, *raw_oldest, *raw_newest, *raw_next, *raw_fold, *rollup_delete, *rollup_next, *rollup_fold;
	sqlite3_stmt *freelist, *gc_raw, *gc_rollups, *gc_stack_ids, *gc_stack_delete, *gc_names, *vacuum;
	/* reads */
	sqlite3_stmt *meta_get, *name_get, *name_of, *stack_of, *stacks_all, *stacks_max, *frame_get, *frames_all;
	sqlite3_stmt *frames_max;
	sqlite3_stmt *query[QK_MAX][QV_MAX];
	sqlite3_stmt *raw_procs, *rollup_procs, *threads, *raw_range, *rollup_first, *rollup_newest;
	sqlite3_stmt *count_stacks, *count_samples, *count_rollups, *page_count, *page_size;
	/* parents (store_parents.c) */
	sqlite3_stmt *parent_put, *parent_children, *parent_next, *parent_latest, *parent_of, *parent_prune;
	sqlite3_stmt *family_clear, *family_put;
	/* cgroups (store_cgroups.c) */
	sqlite3_stmt *cgroup_get, *cgroup_put, *cgroup_of, *cgroups_all, *cgroup_prune, *cgsel_clear, *cgsel_put;
	sqlite3_stmt *raw_cgroups, *rollup_cgroups; /* store_groups.c */
	unsigned prunes; /* store_prune calls: unused stacks are swept every PRUNE_GC_EVERY */
	struct id_cache names, stacks, modules, frames, cgroups;
	struct pending pending;
	struct buf key, blob, text; /* scratch: a cache key, a stack's frame_ids or a rollup blob, a text */
	struct buf ident;           /* scratch: a stack's identity (its text, and its frames' sources) */
	struct store_namer namer; /* names frames stored unnamed, when read (store_answer.c) */
	char errmsg[512];
};

/* Records a message of our own and returns err. */
__attribute__((format(printf, 3, 4))) int store_set_err(struct store *st, int err, const char *fmt, ...);

/* Records SQLite's error for what was being done, resets stmt (may be NULL) and, when SQLite rolled
 * the open transaction back by itself, abandons it. Returns the error as -errno. */
int store_fail(struct store *st, sqlite3_stmt *stmt, int rc, const char *what);

/* Steps a statement that returns no row, then resets it and drops its bindings. */
int store_run(struct store *st, sqlite3_stmt *stmt, const char *what);

/* Steps a statement that yields one integer (NULL: *found false, *out untouched); resets it. */
int store_step_int(struct store *st, sqlite3_stmt *stmt, int64_t *out, bool *found, const char *what);

/* Ends the open transaction without keeping anything: rolls back if SQLite has not already, and
 * forgets every cached id (it may name a row that no longer exists) and every pending row. */
void store_abandon(struct store *st);

/* Prepares one statement for the life of the store. */
int store_prepare(struct store *st, sqlite3_stmt **stmt, const char *sql);

/* Runs one constant SQL text that returns one integer (or none: *found false; found NULL: an error). */
int store_sql_int(struct store *st, const char *sql, int64_t *out, bool *found);

/* Runs constant SQL text (one or more statements, no result rows wanted). */
int store_sql_exec(struct store *st, const char *sql, const char *what);

/* Makes room for n bytes in b. */
int store_buf_reserve(struct buf *b, size_t n);

/* Frees b's bytes and empties it. */
void store_buf_free(struct buf *b);

/* store_ids.c: the id caches. */

/* Frees every key and the table; c keeps its limit. */
void store_cache_clear(struct id_cache *c);

/* The entry of key, or NULL when not cached. */
struct cache_slot *store_cache_find(const struct id_cache *c, const char *key, size_t len, uint64_t hash);

/* Finds key's id; false when not cached. */
bool store_cache_get(const struct id_cache *c, const char *key, size_t len, uint64_t hash, int64_t *id);

/* Remembers key -> id, emptying the cache first when it is full. Best effort: a failed allocation
 * only means a later lookup goes to the database. */
void store_cache_put(struct id_cache *c, const char *key, size_t len, uint64_t hash, int64_t id, bool tag);

/* Forgets every cached id of names, stacks and cgroups (rows may have gone). */
void store_forget_ids(struct store *st);

/* store_pending.c: the rows of the open transaction. */

/* Frees the rows and empties p. */
void store_pending_free(struct pending *p);

/* Adds r's count to its row, or adds the row. -EOVERFLOW when the sum would not fit SQLite's
 * integers; -ENOMEM. */
int store_pending_add(struct pending *p, const struct pending_row *r);

/* Pages one prefetch hints at most (64 MiB at 4 KiB pages): a larger table is scanned unhinted. */
#define STORE_PREFETCH_MAX_PAGES 16384

/* Finds the leaf pages of the b-tree rooted at page root of the database file path (up to max, into
 * pages, *n of them), hinting each level to the kernel (POSIX_FADV_WILLNEED) before it is read. With
 * lo and hi (an index b-tree, or a WITHOUT ROWID table, whose first two columns are integers): only the
 * pages that can hold a key whose first two columns are within [lo, hi]. 0, -E2BIG past max, -EIO when
 * the file is not a b-tree this can follow there, or -errno. */
int store_prefetch_pages(const char *path, uint32_t root, const int64_t lo[2], const int64_t hi[2], size_t max,
			 uint32_t *pages, size_t *n);

/* Hints the pages of table (or index) to the kernel ahead of a scan: all of them, or those of the keys
 * whose first two columns are within [lo, hi]. Returns the leaf pages hinted or -errno; callers need not
 * care, a hint only makes the scan's reads come sooner. */
int store_prefetch_range(struct store *st, const char *table, const int64_t lo[2], const int64_t hi[2]);
int store_prefetch_table(struct store *st, const char *table);

#endif
