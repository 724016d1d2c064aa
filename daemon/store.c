/* store.c - the SQLite store: each distinct folded stack once, samples referencing it, one transaction per flush. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store.h"

#define SCHEMA_VERSION 2
#define STR_(x) #x
#define STR(x) STR_(x)

#define BUSY_TIMEOUT_MS 5000         /* how long a reader or writer waits for a lock */
#define NAME_MAX_BYTES 255           /* longest process or thread name accepted */
#define STACK_MAX_BYTES (64 * 1024)  /* longest folded stack accepted */
#define FRAMES_MAX (STACK_MAX_BYTES / 2 + 1) /* most frames a stack can have ("a;a;...") */
#define MODULE_MAX_BYTES 4096        /* longest module path accepted */
#define BUILD_ID_MAX_CHARS 128       /* longest build-id accepted, in hex digits */
#define VARINT_MAX_BYTES 10          /* a 64-bit value as LEB128 */
#define CACHE_MAX_ENTRIES 65536      /* per cache; the cache is emptied when full */
#define CACHE_MAX_BYTES (16u << 20)  /* key text per cache; the cache is emptied when over */
#define PENDING_MAX_ROWS 65536       /* rows merged in memory before they are written out early */
#define FRAME_MAP_MAX_ENTRIES 16384  /* frames a query keeps resolved; emptied between stacks when over */
#define FRAME_MAP_MAX_BYTES (4u << 20)

/* Tables added by schema version 2: the binaries and the frames of stacks stored with frames. A
 * stack's frames are stacks.frame_ids: frames.id of each frame, root first, as unsigned LEB128
 * varints (NULL when the stack was stored without frames). */
#define SCHEMA_FRAMES_SQL                                                                          \
	"CREATE TABLE IF NOT EXISTS modules(id INTEGER PRIMARY KEY, path TEXT NOT NULL,"            \
	" build_id TEXT NOT NULL, UNIQUE(path, build_id));"                                         \
	"CREATE TABLE IF NOT EXISTS frames(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"             \
	" module_id INTEGER NOT NULL, UNIQUE(name, module_id));"

/* The indexes of samples. Both cover every column a query reads, so no query reads the table:
 * samples_ts_cover serves whole-host queries over a window (and min/max of ts), samples_pid_cover
 * per-pid queries and the lookups of a pid's or thread's newest name. The price: each sample is
 * stored three times (table and two indexes), about 1.5x the bytes of schema 1's samples(pid, ts)
 * and samples(ts), and inserts take about 20% longer (measured on 200k rows). samples_ts_cover
 * leaves out thread_id, which only per-pid queries read. A WITHOUT ROWID table clustered on
 * (ts, ...) would save one copy but needs a unique key, and rows of one key may repeat (a flush
 * writes out early, flushes may share a second). */
#define SCHEMA_INDEXES_SQL                                                                         \
	"CREATE INDEX IF NOT EXISTS samples_ts_cover ON samples(ts, pid, tid, comm_id, stack_id, count);" \
	"CREATE INDEX IF NOT EXISTS samples_pid_cover ON samples(pid, ts, tid, comm_id, thread_id,"  \
	" stack_id, count);"

/* The whole schema, created in one transaction when the database is new. */
static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS names(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
	"CREATE TABLE IF NOT EXISTS stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL,"
	" folded TEXT NOT NULL, frame_ids BLOB);"
	"CREATE INDEX IF NOT EXISTS stacks_hash ON stacks(hash);"
	SCHEMA_FRAMES_SQL
	"CREATE TABLE IF NOT EXISTS samples(ts INTEGER NOT NULL, pid INTEGER NOT NULL,"
	" tid INTEGER NOT NULL, comm_id INTEGER NOT NULL, thread_id INTEGER NOT NULL,"
	" stack_id INTEGER NOT NULL, count INTEGER NOT NULL);"
	SCHEMA_INDEXES_SQL
	"INSERT INTO meta(key, value) VALUES ('schema_version', " STR(SCHEMA_VERSION) ");";

/* Version 1 -> 2, run inside the transaction that opens the database: a column for frames, their
 * tables, covering indexes in place of samples(pid, ts) and samples(ts). Keeps every row. */
static const char migrate_v2_sql[] =
	"ALTER TABLE stacks ADD COLUMN frame_ids BLOB;"
	SCHEMA_FRAMES_SQL
	SCHEMA_INDEXES_SQL
	"DROP INDEX IF EXISTS samples_pid_ts;"
	"DROP INDEX IF EXISTS samples_ts;"
	"UPDATE meta SET value = 2 WHERE key = 'schema_version';";

/* Parameters of every query: ?1 from, ?2 to, ?3 pid, ?4 tid (NULL: any), ?5 process name (NULL:
 * any), ?6 step. A query over one pid names pid first so that SQLite seeks samples_pid_cover; the
 * tid and name tests read columns of either index and need no variant. */
#define WHERE_ANY " WHERE ts >= ?1 AND ts < ?2"
#define WHERE_PID " WHERE pid = ?3 AND ts >= ?1 AND ts < ?2"
#define AND_TID " AND (?4 IS NULL OR tid = ?4)"
#define AND_COMM " AND (?5 IS NULL OR comm_id = (SELECT id FROM names WHERE name = ?5))"

/* By (process name, stack): sum per id pair first, then name the survivors. */
#define STACKS_SQL(where)                                                                          \
	"SELECT n.name, s.folded, a.c FROM (SELECT comm_id, stack_id, sum(count) AS c FROM samples"  \
	where AND_TID AND_COMM " GROUP BY comm_id, stack_id) AS a JOIN names AS n ON n.id = a.comm_id" \
	" JOIN stacks AS s ON s.id = a.stack_id ORDER BY a.c DESC, n.name, s.folded"

/* By (pid, process name, stack), with the stack's frame ids (ids: "s.frame_ids", or "NULL" for a
 * version 1 database read as it is). */
#define FRAMES_SQL(where, ids)                                                                     \
	"SELECT a.pid, n.name, s.folded, " ids ", a.c FROM (SELECT pid, comm_id, stack_id,"           \
	" sum(count) AS c FROM samples" where AND_TID AND_COMM " GROUP BY pid, comm_id, stack_id)"    \
	" AS a JOIN names AS n ON n.id = a.comm_id JOIN stacks AS s ON s.id = a.stack_id"             \
	" ORDER BY a.c DESC, a.pid, n.name, s.folded"

/* Step starts: flamed_step(ts, from, step) is from + ((ts - from) / step) * step without overflow. */
#define TIMELINE_SQL(where)                                                                        \
	"SELECT flamed_step(ts, ?1, ?6) AS t, 0, sum(count) FROM samples" where AND_TID AND_COMM     \
	" GROUP BY t ORDER BY t"
#define TIMELINE_TID_SQL(where)                                                                    \
	"SELECT flamed_step(ts, ?1, ?6) AS t, tid, sum(count) FROM samples" where AND_TID AND_COMM   \
	" GROUP BY t, tid ORDER BY t, tid"

/* Per pid, named by the process name of its newest sample in the window (ties within one second:
 * the row written last), found by a seek of samples_pid_cover. */
static const char processes_sql[] =
	"SELECT a.pid, n.name, a.c, a.first, a.last FROM (SELECT pid, sum(count) AS c,"
	" min(ts) AS first, max(ts) AS last FROM samples" WHERE_ANY AND_COMM " GROUP BY pid) AS a"
	" JOIN names AS n ON n.id = (SELECT comm_id FROM samples AS s WHERE s.pid = a.pid"
	" AND s.ts = a.last" AND_COMM " ORDER BY s.rowid DESC LIMIT 1)"
	" ORDER BY a.c DESC, a.pid";

/* Per tid of pid ?3, named by the thread name of its newest sample in the window. */
static const char threads_sql[] =
	"SELECT a.tid, n.name, a.c FROM (SELECT tid, sum(count) AS c, max(ts) AS last FROM samples"
	WHERE_PID AND_COMM " GROUP BY tid) AS a"
	" JOIN names AS n ON n.id = (SELECT thread_id FROM samples AS s WHERE s.pid = ?3"
	" AND s.ts = a.last AND s.tid = a.tid" AND_COMM " ORDER BY s.rowid DESC LIMIT 1)"
	" ORDER BY a.c DESC, a.tid";

/* Queries with a whole-host and a one-pid variant. */
enum { QV_ANY, QV_PID, QV_MAX };
enum { QK_STACKS, QK_FRAMES, QK_TIMELINE, QK_TIMELINE_TID, QK_MAX };

static const char *const query_sql[QK_MAX][QV_MAX] = {
	[QK_STACKS] = { STACKS_SQL(WHERE_ANY), STACKS_SQL(WHERE_PID) },
	[QK_FRAMES] = { FRAMES_SQL(WHERE_ANY, "s.frame_ids"), FRAMES_SQL(WHERE_PID, "s.frame_ids") },
	[QK_TIMELINE] = { TIMELINE_SQL(WHERE_ANY), TIMELINE_SQL(WHERE_PID) },
	[QK_TIMELINE_TID] = { TIMELINE_TID_SQL(WHERE_ANY), TIMELINE_TID_SQL(WHERE_PID) },
};

/* QK_FRAMES on a version 1 database (read-only, not migrated): no stack has frames. */
static const char *const frames_v1_sql[QV_MAX] = { FRAMES_SQL(WHERE_ANY, "NULL"), FRAMES_SQL(WHERE_PID, "NULL") };

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
};

/* One row waiting for the commit; count 0 marks a free slot. */
struct pending_row {
	int64_t ts;
	int64_t comm_id, thread_id, stack_id;
	uint32_t pid, tid;
	uint64_t count;
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

struct store {
	sqlite3 *db;
	enum store_mode mode;
	int64_t version; /* schema version; 1 only for a version 1 database opened read-only */
	bool in_tx;
	sqlite3_stmt *name_get, *name_put, *stack_get, *stack_put, *stack_set_frames, *sample_put;
	sqlite3_stmt *module_get, *module_put, *frame_id_get, *frame_put;
	sqlite3_stmt *begin, *commit, *rollback;
	sqlite3_stmt *query[QK_MAX][QV_MAX];
	sqlite3_stmt *processes, *threads, *frame_get, *time_range;
	sqlite3_stmt *count_stacks, *count_samples, *page_count, *page_size;
	sqlite3_stmt *prune_before, *oldest, *freelist, *gc_stacks, *gc_names, *vacuum;
	unsigned prunes; /* store_prune calls: unused stacks are swept every PRUNE_GC_EVERY */
	struct id_cache names, stacks, modules, frames;
	struct pending pending;
	struct buf key, blob; /* scratch of store_add: a cache key, a stack's frame_ids */
	char errmsg[512];
};

/* 64-bit FNV-1a of len bytes. */
static uint64_t fnv1a(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

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

/* Records a message of our own and returns err. */
__attribute__((format(printf, 3, 4)))
static int set_err(struct store *st, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->errmsg, sizeof(st->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

static void cache_clear(struct id_cache *c);
static void pending_free(struct pending *p);

/* Ends the open transaction without keeping anything: rolls back if SQLite has not already, and
 * forgets every cached id (it may name a row that no longer exists) and every pending row. */
static void abandon(struct store *st)
{
	if (!sqlite3_get_autocommit(st->db)) {
		sqlite3_step(st->rollback);
		sqlite3_reset(st->rollback);
	}
	cache_clear(&st->names);
	cache_clear(&st->stacks);
	cache_clear(&st->modules);
	cache_clear(&st->frames);
	pending_free(&st->pending);
	st->in_tx = false;
}

/* Records SQLite's error for what was being done, resets stmt (may be NULL) and, when SQLite rolled
 * the open transaction back by itself, abandons it. Returns the error as -errno. */
static int fail(struct store *st, sqlite3_stmt *stmt, int rc, const char *what)
{
	int err = errno_of(st->db, rc);

	snprintf(st->errmsg, sizeof(st->errmsg), "%s: %s", what,
		 st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
	if (stmt)
		sqlite3_reset(stmt);
	if (st->in_tx && sqlite3_get_autocommit(st->db))
		abandon(st);
	return err;
}

/* Steps a statement that returns no row, then resets it. */
static int run(struct store *st, sqlite3_stmt *stmt, const char *what)
{
	int rc = sqlite3_step(stmt);

	if (rc != SQLITE_DONE)
		return fail(st, stmt, rc, what);
	sqlite3_reset(stmt);
	return 0;
}

/* Runs one constant SQL text that returns one integer (or none: *found false). */
static int sql_int(struct store *st, const char *sql, int64_t *out, bool *found)
{
	sqlite3_stmt *stmt = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL);
	int err = 0;

	if (rc != SQLITE_OK)
		return fail(st, NULL, rc, "cannot read the database");
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(stmt, 0);
		if (found)
			*found = true;
	} else if (rc == SQLITE_DONE) {
		if (found)
			*found = false;
		else
			err = set_err(st, -EIO, "cannot read the database: no result");
	} else {
		err = fail(st, stmt, rc, "cannot read the database");
	}
	sqlite3_finalize(stmt);
	return err;
}

/* Runs constant SQL text (one or more statements, no result rows wanted). */
static int sql_exec(struct store *st, const char *sql, const char *what)
{
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : fail(st, NULL, rc, what);
}

/* Frees every key and the table. */
static void cache_clear(struct id_cache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->slots[i].key);
	free(c->slots);
	memset(c, 0, sizeof(*c));
}

/* The entry of key, or NULL when not cached. */
static struct cache_slot *cache_find(const struct id_cache *c, const char *key, size_t len, uint64_t hash)
{
	if (!c->cap)
		return NULL;
	for (size_t i = hash & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
		struct cache_slot *e = &c->slots[i];

		if (!e->key)
			return NULL;
		if (e->hash == hash && e->len == len && memcmp(e->key, key, len) == 0)
			return e;
	}
}

/* Finds key's id; false when not cached. */
static bool cache_get(const struct id_cache *c, const char *key, size_t len, uint64_t hash, int64_t *id)
{
	const struct cache_slot *e = cache_find(c, key, len, hash);

	if (e)
		*id = e->id;
	return e != NULL;
}

/* Places an entry into a table with a free slot. */
static void cache_place(struct cache_slot *slots, size_t cap, const struct cache_slot *e)
{
	size_t i = e->hash & (cap - 1);

	while (slots[i].key)
		i = (i + 1) & (cap - 1);
	slots[i] = *e;
}

/* Doubles the table (first size 1024). */
static int cache_grow(struct id_cache *c)
{
	size_t cap = c->cap ? c->cap * 2 : 1024;
	struct cache_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++)
		if (c->slots[i].key)
			cache_place(slots, cap, &c->slots[i]);
	free(c->slots);
	c->slots = slots;
	c->cap = cap;
	return 0;
}

/* Remembers key -> id, emptying the cache first when it is full. Best effort: a failed allocation
 * only means a later lookup goes to the database. */
static void cache_put(struct id_cache *c, const char *key, size_t len, uint64_t hash, int64_t id, bool tag)
{
	struct cache_slot e = { .len = len, .hash = hash, .id = id, .tag = tag };

	if (c->n >= CACHE_MAX_ENTRIES || c->bytes + len > CACHE_MAX_BYTES)
		cache_clear(c);
	if ((c->n + 1) * 2 > c->cap && cache_grow(c) < 0)
		return;
	e.key = malloc(len + 1);
	if (!e.key)
		return;
	memcpy(e.key, key, len);
	e.key[len] = '\0';
	cache_place(c->slots, c->cap, &e);
	c->n++;
	c->bytes += len;
}

/* Mixes a row's key fields into a table hash. */
static uint64_t row_hash(const struct pending_row *r)
{
	uint64_t v[5] = { (uint64_t)r->ts, ((uint64_t)r->pid << 32) | r->tid, (uint64_t)r->comm_id,
			  (uint64_t)r->thread_id, (uint64_t)r->stack_id };
	uint64_t h = 0x9e3779b97f4a7c15ULL;

	for (size_t i = 0; i < 5; i++) {
		h ^= v[i];
		h *= 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 31;
	}
	return h;
}

static bool row_same(const struct pending_row *a, const struct pending_row *b)
{
	return a->ts == b->ts && a->pid == b->pid && a->tid == b->tid && a->comm_id == b->comm_id &&
	       a->thread_id == b->thread_id && a->stack_id == b->stack_id;
}

static void pending_free(struct pending *p)
{
	free(p->rows);
	memset(p, 0, sizeof(*p));
}

/* Doubles the row table (first size 1024). */
static int pending_grow(struct pending *p)
{
	size_t cap = p->cap ? p->cap * 2 : 1024;
	struct pending_row *rows = calloc(cap, sizeof(*rows));

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < p->cap; i++) {
		size_t j;

		if (!p->rows[i].count)
			continue;
		for (j = row_hash(&p->rows[i]) & (cap - 1); rows[j].count; j = (j + 1) & (cap - 1))
			;
		rows[j] = p->rows[i];
	}
	free(p->rows);
	p->rows = rows;
	p->cap = cap;
	return 0;
}

/* Adds r's count to its row, or adds the row. -EOVERFLOW when the sum would not fit SQLite's
 * integers; -ENOMEM. */
static int pending_add(struct pending *p, const struct pending_row *r)
{
	size_t i;
	int err;

	if ((p->n + 1) * 2 > p->cap && (err = pending_grow(p)) < 0)
		return err;
	for (i = row_hash(r) & (p->cap - 1); p->rows[i].count; i = (i + 1) & (p->cap - 1)) {
		if (!row_same(&p->rows[i], r))
			continue;
		if (p->rows[i].count > (uint64_t)INT64_MAX - r->count)
			return -EOVERFLOW;
		p->rows[i].count += r->count;
		return 0;
	}
	p->rows[i] = *r;
	p->n++;
	return 0;
}

/* Inserts every pending row and empties the table (inside the open transaction). */
static int pending_flush(struct store *st)
{
	struct pending *p = &st->pending;
	sqlite3_stmt *s = st->sample_put;

	for (size_t i = 0; i < p->cap; i++) {
		const struct pending_row *r = &p->rows[i];
		int err;

		if (!r->count)
			continue;
		sqlite3_bind_int64(s, 1, r->ts);
		sqlite3_bind_int64(s, 2, r->pid);
		sqlite3_bind_int64(s, 3, r->tid);
		sqlite3_bind_int64(s, 4, r->comm_id);
		sqlite3_bind_int64(s, 5, r->thread_id);
		sqlite3_bind_int64(s, 6, r->stack_id);
		sqlite3_bind_int64(s, 7, (sqlite3_int64)r->count);
		err = run(st, s, "cannot write samples");
		if (err)
			return err;
	}
	if (p->cap)
		memset(p->rows, 0, p->cap * sizeof(*p->rows));
	p->n = 0;
	return 0;
}

/* Makes room for n bytes. */
static int buf_reserve(struct buf *b, size_t n)
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

static void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* Steps get (bound): the id it finds, else runs put (bound) and gives the new row's id. */
static int get_or_put(struct store *st, sqlite3_stmt *get, sqlite3_stmt *put, const char *what, int64_t *id)
{
	int rc = sqlite3_step(get);
	int err;

	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(get, 0);
		sqlite3_reset(get);
		return 0;
	}
	if (rc != SQLITE_DONE)
		return fail(st, get, rc, what);
	sqlite3_reset(get);
	err = run(st, put, what);
	if (err)
		return err;
	*id = sqlite3_last_insert_rowid(st->db);
	return 0;
}

/* The id of a name, from the cache, the table, or a new row. */
static int name_id(struct store *st, const char *name, int64_t *id)
{
	size_t len = strlen(name);
	uint64_t hash = fnv1a(name, len);
	int err;

	if (cache_get(&st->names, name, len, hash, id))
		return 0;
	sqlite3_bind_text(st->name_get, 1, name, (int)len, SQLITE_STATIC);
	sqlite3_bind_text(st->name_put, 1, name, (int)len, SQLITE_STATIC);
	err = get_or_put(st, st->name_get, st->name_put, "cannot write a name", id);
	if (!err)
		cache_put(&st->names, name, len, hash, *id, false);
	return err;
}

/* The id of a module (path, build_id); its cache key is path NUL build_id. */
static int module_id(struct store *st, const char *path, const char *build_id, int64_t *id)
{
	size_t plen = strlen(path), blen = strlen(build_id), len = plen + 1 + blen;
	const char *key;
	uint64_t hash;
	int err;

	if (buf_reserve(&st->key, len) < 0)
		return set_err(st, -ENOMEM, "out of memory for a module");
	key = (const char *)st->key.p;
	memcpy(st->key.p, path, plen + 1);
	memcpy(st->key.p + plen + 1, build_id, blen);
	hash = fnv1a(key, len);
	if (cache_get(&st->modules, key, len, hash, id))
		return 0;
	sqlite3_bind_text(st->module_get, 1, path, (int)plen, SQLITE_STATIC);
	sqlite3_bind_text(st->module_get, 2, build_id, (int)blen, SQLITE_STATIC);
	sqlite3_bind_text(st->module_put, 1, path, (int)plen, SQLITE_STATIC);
	sqlite3_bind_text(st->module_put, 2, build_id, (int)blen, SQLITE_STATIC);
	err = get_or_put(st, st->module_get, st->module_put, "cannot write a module", id);
	if (!err)
		cache_put(&st->modules, key, len, hash, *id, false);
	return err;
}

/* The id of a frame (name, module); its cache key is the module id's bytes, then the name. */
static int frame_id(struct store *st, const char *name, int64_t module, int64_t *id)
{
	size_t nlen = strlen(name), len = sizeof(module) + nlen;
	const char *key;
	uint64_t hash;
	int err;

	if (buf_reserve(&st->key, len) < 0)
		return set_err(st, -ENOMEM, "out of memory for a frame");
	key = (const char *)st->key.p;
	memcpy(st->key.p, &module, sizeof(module));
	memcpy(st->key.p + sizeof(module), name, nlen);
	hash = fnv1a(key, len);
	if (cache_get(&st->frames, key, len, hash, id))
		return 0;
	sqlite3_bind_text(st->frame_id_get, 1, name, (int)nlen, SQLITE_STATIC);
	sqlite3_bind_int64(st->frame_id_get, 2, module);
	sqlite3_bind_text(st->frame_put, 1, name, (int)nlen, SQLITE_STATIC);
	sqlite3_bind_int64(st->frame_put, 2, module);
	err = get_or_put(st, st->frame_id_get, st->frame_put, "cannot write a frame", id);
	if (!err)
		cache_put(&st->frames, key, len, hash, *id, false);
	return err;
}

/* Writes v as an unsigned LEB128 varint (at most VARINT_MAX_BYTES); returns the bytes written. */
static size_t put_varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		unsigned char b = v & 0x7f;

		v >>= 7;
		p[n++] = b | (v ? 0x80 : 0);
	} while (v);
	return n;
}

/* Encodes s's frames as frame_ids into st->blob (ids found or added); *len its bytes. */
static int encode_frames(struct store *st, const struct store_sample *s, size_t *len)
{
	size_t n = 0;

	if (buf_reserve(&st->blob, (size_t)s->nframes * VARINT_MAX_BYTES) < 0)
		return set_err(st, -ENOMEM, "out of memory for a stack's frames");
	for (unsigned i = 0; i < s->nframes; i++) {
		const struct store_frame *f = &s->frames[i];
		int64_t module = 0, frame = 0;
		int err;

		err = module_id(st, f->module ? f->module : "", f->build_id ? f->build_id : "", &module);
		err = err ?: frame_id(st, f->name, module, &frame);
		if (err)
			return err;
		n += put_varint(st->blob.p + n, (uint64_t)frame);
	}
	*len = n;
	return 0;
}

/* Looks a stack up by text (rows with the same hash are compared by text, so a hash collision gets
 * a row of its own): *found, and then its *id and whether it *has_frames. */
static int stack_find(struct store *st, const char *folded, size_t len, uint64_t hash, int64_t *id,
		      bool *has_frames, bool *found)
{
	const struct cache_slot *e = cache_find(&st->stacks, folded, len, hash);
	int rc = SQLITE_DONE;
	bool hit = false;

	if (e) {
		*id = e->id;
		*has_frames = e->tag;
		*found = true;
		return 0;
	}
	sqlite3_bind_int64(st->stack_get, 1, (sqlite3_int64)hash);
	while (!hit && (rc = sqlite3_step(st->stack_get)) == SQLITE_ROW) {
		const unsigned char *text = sqlite3_column_text(st->stack_get, 1);
		size_t n = (size_t)sqlite3_column_bytes(st->stack_get, 1);

		if (text && n == len && memcmp(text, folded, len) == 0) {
			*id = sqlite3_column_int64(st->stack_get, 0);
			*has_frames = sqlite3_column_int(st->stack_get, 2) != 0;
			hit = true;
		}
	}
	if (!hit && rc != SQLITE_DONE)
		return fail(st, st->stack_get, rc, "cannot read stacks");
	sqlite3_reset(st->stack_get);
	if (hit)
		cache_put(&st->stacks, folded, len, hash, *id, *has_frames);
	*found = hit;
	return 0;
}

/* Adds a stack row, with st->blob's blob_len bytes as frame_ids when frames, else NULL. */
static int stack_insert(struct store *st, const char *folded, size_t len, uint64_t hash, bool frames,
			size_t blob_len, int64_t *id)
{
	int err;

	sqlite3_bind_int64(st->stack_put, 1, (sqlite3_int64)hash);
	sqlite3_bind_text(st->stack_put, 2, folded, (int)len, SQLITE_STATIC);
	if (frames)
		sqlite3_bind_blob(st->stack_put, 3, st->blob.p, (int)blob_len, SQLITE_STATIC);
	else
		sqlite3_bind_null(st->stack_put, 3);
	err = run(st, st->stack_put, "cannot write a stack");
	if (!err)
		*id = sqlite3_last_insert_rowid(st->db);
	return err;
}

/* Fills in the frame_ids of a stack stored without them. */
static int stack_add_frames(struct store *st, int64_t id, size_t blob_len)
{
	sqlite3_bind_int64(st->stack_set_frames, 1, id);
	sqlite3_bind_blob(st->stack_set_frames, 2, st->blob.p, (int)blob_len, SQLITE_STATIC);
	return run(st, st->stack_set_frames, "cannot write a stack's frames");
}

/* The id of s's stack, from the cache, the table, or a new row. The frames of the first sample of a
 * stack stored with frames are kept; later ones are not compared. */
static int stack_id(struct store *st, const struct store_sample *s, int64_t *id)
{
	size_t len = strlen(s->folded), blob_len = 0;
	uint64_t hash = fnv1a(s->folded, len);
	bool found = false, has_frames = false;
	struct cache_slot *e;
	int err;

	err = stack_find(st, s->folded, len, hash, id, &has_frames, &found);
	if (err || (found && (has_frames || !s->frames)))
		return err;
	if (s->frames) {
		err = encode_frames(st, s, &blob_len);
		if (err)
			return err;
	}
	if (!found) {
		err = stack_insert(st, s->folded, len, hash, s->frames != NULL, blob_len, id);
		if (!err)
			cache_put(&st->stacks, s->folded, len, hash, *id, s->frames != NULL);
		return err;
	}
	err = stack_add_frames(st, *id, blob_len);
	e = err ? NULL : cache_find(&st->stacks, s->folded, len, hash);
	if (e)
		e->tag = true;
	return err;
}

/* Checks frame i's module path and build-id (NULL: ""); -EINVAL with the reason in errmsg. */
static int validate_module(struct store *st, const struct store_frame *f, unsigned i)
{
	const char *b = f->build_id ? f->build_id : "";
	size_t n;

	if (f->module && strnlen(f->module, MODULE_MAX_BYTES + 1) > MODULE_MAX_BYTES)
		return set_err(st, -EINVAL, "invalid sample: frame %u's module path is longer than %d bytes", i,
			       MODULE_MAX_BYTES);
	n = strnlen(b, BUILD_ID_MAX_CHARS + 1);
	if (n > BUILD_ID_MAX_CHARS)
		return set_err(st, -EINVAL, "invalid sample: frame %u's build-id is longer than %d hex digits", i,
			       BUILD_ID_MAX_CHARS);
	if (strspn(b, "0123456789abcdef") != n)
		return set_err(st, -EINVAL, "invalid sample: frame %u's build-id is not lowercase hex", i);
	return 0;
}

/* Checks s's frames against its folded stack (one per frame, same text, in order) and their
 * modules and build-ids; -EINVAL with the reason in errmsg. No frames (NULL) is valid. */
static int validate_frames(struct store *st, const struct store_sample *s)
{
	const char *p = s->folded;

	if (!s->frames)
		return 0;
	for (unsigned i = 0; i < s->nframes; i++) {
		const struct store_frame *f = &s->frames[i];
		size_t len = strcspn(p, ";");
		int err;

		if (!*p)
			return set_err(st, -EINVAL, "invalid sample: %u frames given, the stack has %u", s->nframes, i);
		if (!f->name || strnlen(f->name, len + 1) != len || memcmp(f->name, p, len) != 0)
			return set_err(st, -EINVAL, "invalid sample: frame %u's name is not the stack's frame %u", i, i);
		err = validate_module(st, f, i);
		if (err)
			return err;
		p += len;
		if (*p == ';')
			p++;
	}
	if (*p)
		return set_err(st, -EINVAL, "invalid sample: %u frames given, the stack has more", s->nframes);
	return 0;
}

/* Checks a sample before anything is written; -EINVAL with the reason in errmsg. */
static int validate(struct store *st, const struct store_sample *s)
{
	size_t len;

	if (!s->folded || !s->folded[0])
		return set_err(st, -EINVAL, "invalid sample: the stack is empty");
	len = strnlen(s->folded, STACK_MAX_BYTES + 1);
	if (len > STACK_MAX_BYTES)
		return set_err(st, -EINVAL, "invalid sample: the stack is longer than %d bytes", STACK_MAX_BYTES);
	if (strpbrk(s->folded, "\n\r"))
		return set_err(st, -EINVAL, "invalid sample: the stack contains a line break");
	if (s->folded[0] == ';' || s->folded[len - 1] == ';' || strstr(s->folded, ";;"))
		return set_err(st, -EINVAL, "invalid sample: the stack has an empty frame: '%s'", s->folded);
	if (s->count == 0)
		return set_err(st, -EINVAL, "invalid sample: the count is 0");
	if (s->count > (uint64_t)INT64_MAX)
		return set_err(st, -EINVAL, "invalid sample: the count is too large");
	if (!s->comm || !s->thread)
		return set_err(st, -EINVAL, "invalid sample: the %s name is missing", s->comm ? "thread" : "process");
	if (strnlen(s->comm, NAME_MAX_BYTES + 1) > NAME_MAX_BYTES || strnlen(s->thread, NAME_MAX_BYTES + 1) > NAME_MAX_BYTES)
		return set_err(st, -EINVAL, "invalid sample: a name is longer than %d bytes", NAME_MAX_BYTES);
	return validate_frames(st, s);
}

/* Prepares one statement for the life of the store. */
static int prepare(struct store *st, sqlite3_stmt **stmt, const char *sql)
{
	int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, NULL);

	return rc == SQLITE_OK ? 0 : fail(st, NULL, rc, "cannot prepare a statement");
}

/* The statements that write, prepared in READ_WRITE mode only. */
static int prepare_writes(struct store *st)
{
	int err = 0;

	err = err ?: prepare(st, &st->name_put, "INSERT INTO names(name) VALUES (?1)");
	err = err ?: prepare(st, &st->stack_get, "SELECT id, folded, frame_ids IS NOT NULL FROM stacks WHERE hash = ?1");
	err = err ?: prepare(st, &st->stack_put, "INSERT INTO stacks(hash, folded, frame_ids) VALUES (?1, ?2, ?3)");
	err = err ?: prepare(st, &st->stack_set_frames, "UPDATE stacks SET frame_ids = ?2 WHERE id = ?1");
	err = err ?: prepare(st, &st->module_get, "SELECT id FROM modules WHERE path = ?1 AND build_id = ?2");
	err = err ?: prepare(st, &st->module_put, "INSERT INTO modules(path, build_id) VALUES (?1, ?2)");
	err = err ?: prepare(st, &st->frame_id_get, "SELECT id FROM frames WHERE name = ?1 AND module_id = ?2");
	err = err ?: prepare(st, &st->frame_put, "INSERT INTO frames(name, module_id) VALUES (?1, ?2)");
	err = err ?: prepare(st, &st->sample_put,
			     "INSERT INTO samples(ts, pid, tid, comm_id, thread_id, stack_id, count)"
			     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
	/* IMMEDIATE takes the write lock at once, so a busy database shows here, not mid-flush. */
	err = err ?: prepare(st, &st->begin, "BEGIN IMMEDIATE");
	err = err ?: prepare(st, &st->commit, "COMMIT");
	err = err ?: prepare(st, &st->rollback, "ROLLBACK");
	/* Retention: bounded batches of the oldest samples (through the ts index), then what no sample
	 * refers to any more. */
	err = err ?: prepare(st, &st->prune_before,
			     "DELETE FROM samples WHERE rowid IN (SELECT rowid FROM samples WHERE ts < ?1 LIMIT ?2)");
	err = err ?: prepare(st, &st->oldest, "SELECT min(ts) FROM samples");
	err = err ?: prepare(st, &st->freelist, "PRAGMA freelist_count");
	err = err ?: prepare(st, &st->gc_stacks, "DELETE FROM stacks WHERE id NOT IN (SELECT stack_id FROM samples)");
	err = err ?: prepare(st, &st->gc_names,
			     "DELETE FROM names WHERE id NOT IN (SELECT comm_id FROM samples)"
			     " AND id NOT IN (SELECT thread_id FROM samples)");
	err = err ?: prepare(st, &st->vacuum, "PRAGMA incremental_vacuum");
	return err;
}

/* The statements that read; a version 1 database (read-only) has no frames to read. */
static int prepare_reads(struct store *st)
{
	int err = 0;

	err = err ?: prepare(st, &st->name_get, "SELECT id FROM names WHERE name = ?1");
	for (int k = 0; k < QK_MAX; k++)
		for (int v = 0; v < QV_MAX; v++)
			err = err ?: prepare(st, &st->query[k][v],
					     k == QK_FRAMES && st->version < 2 ? frames_v1_sql[v] : query_sql[k][v]);
	err = err ?: prepare(st, &st->processes, processes_sql);
	err = err ?: prepare(st, &st->threads, threads_sql);
	if (st->version >= 2)
		err = err ?: prepare(st, &st->frame_get,
				     "SELECT f.name, m.path, m.build_id FROM frames AS f"
				     " JOIN modules AS m ON m.id = f.module_id WHERE f.id = ?1");
	err = err ?: prepare(st, &st->time_range,
			     "SELECT (SELECT min(ts) FROM samples), (SELECT max(ts) FROM samples)");
	err = err ?: prepare(st, &st->count_stacks, "SELECT count(*) FROM stacks");
	err = err ?: prepare(st, &st->count_samples, "SELECT count(*) FROM samples");
	err = err ?: prepare(st, &st->page_count, "PRAGMA page_count");
	err = err ?: prepare(st, &st->page_size, "PRAGMA page_size");
	return err;
}

static int prepare_all(struct store *st)
{
	int err = prepare_reads(st);

	return err || st->mode != STORE_READ_WRITE ? err : prepare_writes(st);
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

/* Checks that this is a flamed database of a version we understand; *version its version. */
static int check_schema(struct store *st, int64_t *version)
{
	int64_t v = 0;
	bool found = false;
	int err;

	err = sql_int(st, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'", &v, NULL);
	if (err)
		return err;
	if (v == 0)
		return set_err(st, -EINVAL, "not a flamed database (no meta table): pass the path of flamed's database");
	err = sql_int(st, "SELECT value FROM meta WHERE key = 'schema_version'", &v, &found);
	if (err)
		return err;
	if (!found || v < 1)
		return set_err(st, -EINVAL, "not a flamed database (no schema version): pass the path of flamed's database");
	if (v > SCHEMA_VERSION)
		return set_err(st, -ENOTSUP, "the database was written by a newer flamed (schema version %lld, this one knows %d): upgrade flamed and flamectl",
			       (long long)v, SCHEMA_VERSION);
	*version = v;
	return 0;
}

/* Inside the open transaction: creates the schema of an empty database, checks it, and brings a
 * version 1 database to the current version. */
static int setup_schema(struct store *st)
{
	int64_t tables = 0;
	int err;

	err = sql_int(st, "SELECT count(*) FROM sqlite_master", &tables, NULL);
	if (!err && tables == 0)
		err = sql_exec(st, schema_sql, "cannot create the schema");
	err = err ?: check_schema(st, &st->version);
	if (!err && st->version == 1) {
		err = sql_exec(st, migrate_v2_sql, "cannot upgrade the database to schema version 2");
		if (!err)
			st->version = 2;
	}
	return err;
}

/* Read-write setup: WAL, synchronous=NORMAL, the schema when the database is empty or older. */
static int setup_write(struct store *st)
{
	sqlite3_stmt *stmt = NULL;
	const unsigned char *mode;
	bool wal;
	int rc, err;

	/* A new database gives the pages retention frees back to the file system; this must come before
	 * WAL mode writes the header, and does nothing to a database that has tables already. */
	err = sql_exec(st, "PRAGMA auto_vacuum=INCREMENTAL", "cannot set auto_vacuum");
	if (err)
		return err;
	rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode=WAL", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return fail(st, NULL, rc, "cannot switch to WAL mode");
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW) {
		err = fail(st, stmt, rc, "cannot switch to WAL mode");
		sqlite3_finalize(stmt);
		return err;
	}
	mode = sqlite3_column_text(stmt, 0);
	wal = mode && strcmp((const char *)mode, "wal") == 0;
	sqlite3_finalize(stmt);
	if (!wal)
		return set_err(st, -ENOLCK, "cannot use WAL mode on this file system: put the database on a local file system");

	err = sql_exec(st, "PRAGMA synchronous=NORMAL", "cannot set synchronous=NORMAL");
	if (err)
		return err;
	err = sql_exec(st, "BEGIN IMMEDIATE", "cannot lock the database");
	if (err)
		return err;
	err = setup_schema(st);
	if (!err)
		err = sql_exec(st, "COMMIT", "cannot create the schema");
	if (err && !sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}

/* Opens the connection to name and checks (read-write: creates) the schema. */
static int connect_db(struct store *st, const char *name, int flags)
{
	int rc = sqlite3_open_v2(name, &st->db, flags, NULL);

	if (rc != SQLITE_OK)
		return st->db ? fail(st, NULL, rc, "cannot open the database") : -ENOMEM;
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	rc = sqlite3_create_function_v2(st->db, "flamed_step", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
					NULL, step_fn, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return fail(st, NULL, rc, "cannot register an SQL function");
	return st->mode == STORE_READ_WRITE ? setup_write(st) : check_schema(st, &st->version);
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
		st->name_get, st->name_put, st->stack_get, st->stack_put, st->stack_set_frames,
		st->sample_put, st->module_get, st->module_put, st->frame_id_get, st->frame_put,
		st->begin, st->commit, st->rollback, st->processes, st->threads, st->frame_get,
		st->time_range, st->count_stacks, st->count_samples, st->page_count, st->page_size,
		st->prune_before, st->oldest, st->freelist, st->gc_stacks, st->gc_names, st->vacuum,
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
		abandon(st);
	finalize_all(st);
	sqlite3_close(st->db);
	cache_clear(&st->names);
	cache_clear(&st->stacks);
	cache_clear(&st->modules);
	cache_clear(&st->frames);
	pending_free(&st->pending);
	buf_free(&st->key);
	buf_free(&st->blob);
	free(st);
}

const char *store_errmsg(const struct store *st)
{
	return st ? st->errmsg : "no store (store_open failed)";
}

int store_begin(struct store *st)
{
	int err;

	if (!st)
		return -EINVAL;
	if (st->mode == STORE_READ_ONLY)
		return set_err(st, -EROFS, "the store was opened read-only");
	if (st->in_tx)
		return set_err(st, -EINVAL, "a transaction is already open: commit or roll it back first");
	err = run(st, st->begin, "cannot start a transaction");
	if (err)
		return err;
	st->in_tx = true;
	return 0;
}

int store_add(struct store *st, const struct store_sample *s)
{
	struct pending_row r;
	int err;

	if (!st)
		return -EINVAL;
	if (!s)
		return set_err(st, -EINVAL, "invalid sample: NULL");
	if (!st->in_tx)
		return set_err(st, -EINVAL, "no open transaction (store_begin not called, or an error rolled it back)");
	err = validate(st, s);
	if (err)
		return err;

	/* From here on a failure rolls the whole flush back (all of it or nothing), except a count that
	 * cannot be merged, which rejects only this sample. */
	r = (struct pending_row){ .ts = s->ts, .pid = s->pid, .tid = s->tid, .count = s->count };
	err = name_id(st, s->comm, &r.comm_id);
	err = err ?: name_id(st, s->thread, &r.thread_id);
	err = err ?: stack_id(st, s, &r.stack_id);
	if (!err) {
		err = pending_add(&st->pending, &r);
		if (err == -EOVERFLOW)
			return set_err(st, err, "invalid sample: its count merged with an earlier one's exceeds 2^63-1");
		if (err)
			set_err(st, err, "out of memory for pending samples");
	}
	/* Bound the memory of one flush: write the merged rows out early. Queries sum rows, so a later
	 * duplicate getting a row of its own changes nothing they show. */
	if (!err && st->pending.n >= PENDING_MAX_ROWS)
		err = pending_flush(st);
	if (err && st->in_tx)
		abandon(st);
	return err;
}

int store_commit(struct store *st)
{
	int err;

	if (!st)
		return -EINVAL;
	if (!st->in_tx)
		return set_err(st, -EINVAL, "no open transaction (store_begin not called, or an error rolled it back)");
	err = pending_flush(st);
	if (!err)
		err = run(st, st->commit, "cannot commit");
	if (err) {
		if (st->in_tx)
			abandon(st);
		return err;
	}
	pending_free(&st->pending);
	st->in_tx = false;
	return 0;
}

void store_rollback(struct store *st)
{
	if (st && st->in_tx)
		abandon(st);
}

/* Every sample. */
static const struct store_filter filter_all = { .pid = -1, .tid = -1, .from = INT64_MIN, .to = INT64_MAX };

/* Checks a filter's pid and tid; -EINVAL with the reason in errmsg. */
static int check_filter(struct store *st, const struct store_filter *f)
{
	if (f->pid < -1 || f->pid > UINT32_MAX || f->tid < -1 || f->tid > UINT32_MAX)
		return set_err(st, -EINVAL, "invalid filter: pid and tid are -1 (any) or 0 to 4294967295");
	return 0;
}

/* Binds the filter parameters: ?1 from, ?2 to, ?3 pid (only when pid >= 0: the one-pid variant),
 * ?4 tid (-1: NULL, any), ?5 process name (NULL: any). The name must outlive the query. */
static void bind_filter(sqlite3_stmt *stmt, const struct store_filter *f, int64_t pid, int64_t tid)
{
	sqlite3_bind_int64(stmt, 1, f->from);
	sqlite3_bind_int64(stmt, 2, f->to);
	if (pid >= 0)
		sqlite3_bind_int64(stmt, 3, pid);
	if (tid >= 0)
		sqlite3_bind_int64(stmt, 4, tid);
	else
		sqlite3_bind_null(stmt, 4);
	if (f->comm)
		sqlite3_bind_text(stmt, 5, f->comm, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(stmt, 5);
}

/* A frame's name, module and build-id, read once per query: text holds the three, each NUL-ended. */
struct frame_text {
	int64_t id; /* 0: a free slot (row ids start at 1) */
	char *text;
	size_t module_off, build_id_off;
};

/* Open-addressing table of frame id -> text, at most half full. */
struct frame_map {
	struct frame_text *slots;
	size_t cap; /* a power of two, or 0 */
	size_t n;
	size_t bytes;
};

/* The state of one store_query_stacks_frames: resolved frames, and the array handed to the callback. */
struct frames_query {
	struct frame_map map;
	struct store_frame *frames;
	size_t cap;
};

/* What a query's row function hands each row to. */
struct visit {
	union {
		store_stack_cb stack;
		store_frames_cb frames;
		store_process_cb process;
		store_thread_cb thread;
		store_point_cb point;
	} cb;
	void *ctx;
	struct frames_query *fq; /* store_query_stacks_frames only */
};

typedef int (*row_fn)(struct store *st, sqlite3_stmt *stmt, struct visit *v);

/* Steps a bound query, handing each row to row; stops at its first non-zero return, which it
 * returns. Resets the statement and drops its bindings. */
static int each_row(struct store *st, sqlite3_stmt *stmt, row_fn row, struct visit *v, const char *what)
{
	int rc, ret = 0;

	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		ret = row(st, stmt, v);
		if (ret)
			break;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = fail(st, stmt, rc, what);
	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
	return ret;
}

static void fmap_clear(struct frame_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].text);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* The slot of id: its entry, or the free slot where it goes. The map has a free slot. */
static struct frame_text *fmap_slot(const struct frame_map *m, int64_t id)
{
	size_t i = ((uint64_t)id * 0x9e3779b97f4a7c15ULL) >> 20;

	for (i &= m->cap - 1; m->slots[i].id && m->slots[i].id != id; i = (i + 1) & (m->cap - 1))
		;
	return &m->slots[i];
}

/* Doubles the map (first size 256); entries keep their text, so pointers to it stay valid. */
static int fmap_grow(struct frame_map *m)
{
	struct frame_map bigger = { .cap = m->cap ? m->cap * 2 : 256, .n = m->n, .bytes = m->bytes };

	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].id)
			*fmap_slot(&bigger, m->slots[i].id) = m->slots[i];
	free(m->slots);
	*m = bigger;
	return 0;
}

/* Reads frame id's name, module path and build-id into e. */
static int fetch_frame(struct store *st, int64_t id, struct frame_text *e)
{
	const unsigned char *col[3];
	size_t len[3], off = 0;
	int rc;

	sqlite3_bind_int64(st->frame_get, 1, id);
	rc = sqlite3_step(st->frame_get);
	if (rc == SQLITE_DONE) {
		sqlite3_reset(st->frame_get);
		return set_err(st, -EIO, "a stack names frame %lld, which is not stored: the database is damaged",
			       (long long)id);
	}
	if (rc != SQLITE_ROW)
		return fail(st, st->frame_get, rc, "cannot read frames");
	for (int i = 0; i < 3; i++) {
		col[i] = sqlite3_column_text(st->frame_get, i);
		len[i] = (size_t)sqlite3_column_bytes(st->frame_get, i);
	}
	e->text = col[0] && col[1] && col[2] ? malloc(len[0] + len[1] + len[2] + 3) : NULL;
	for (int i = 0; e->text && i < 3; i++) {
		memcpy(e->text + off, col[i], len[i] + 1);
		off += len[i] + 1;
	}
	sqlite3_reset(st->frame_get);
	if (!e->text)
		return set_err(st, -ENOMEM, "out of memory reading frames");
	e->id = id;
	e->module_off = len[0] + 1;
	e->build_id_off = len[0] + len[1] + 2;
	return 0;
}

/* Fills out with frame id's strings, from the map or the database. */
static int resolve_frame(struct store *st, struct frame_map *m, int64_t id, struct store_frame *out)
{
	struct frame_text *e;
	int err;

	if ((m->n + 1) * 2 > m->cap && fmap_grow(m) < 0)
		return set_err(st, -ENOMEM, "out of memory reading frames");
	e = fmap_slot(m, id);
	if (!e->id) {
		err = fetch_frame(st, id, e);
		if (err)
			return err;
		m->n++;
		m->bytes += e->build_id_off + strlen(e->text + e->build_id_off) + 1;
	}
	out->name = e->text;
	out->module = e->text + e->module_off;
	out->build_id = e->text + e->build_id_off;
	return 0;
}

/* Reads one unsigned LEB128 varint at *pos; -EIO when it is cut short or too long. */
static int get_varint(const unsigned char *p, size_t len, size_t *pos, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; *pos < len && shift < 64; shift += 7) {
		unsigned char b = p[(*pos)++];

		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EIO;
}

/* Decodes a stack's frame_ids into fq->frames (*n of them), each resolved to its strings. */
static int decode_frames(struct store *st, struct frames_query *fq, const unsigned char *blob, size_t len,
			 unsigned *n)
{
	size_t count = 0, pos = 0;

	for (size_t i = 0; i < len; i++)
		count += !(blob[i] & 0x80);
	if (count > FRAMES_MAX)
		return set_err(st, -EIO, "a stack has more than %d frames: the database is damaged", FRAMES_MAX);
	if (count > fq->cap) {
		struct store_frame *frames = reallocarray(fq->frames, count, sizeof(*frames));

		if (!frames)
			return set_err(st, -ENOMEM, "out of memory reading frames");
		fq->frames = frames;
		fq->cap = count;
	}
	for (size_t i = 0; i < count; i++) {
		uint64_t id = 0;
		int err;

		if (get_varint(blob, len, &pos, &id) < 0 || id == 0 || id > INT64_MAX)
			return set_err(st, -EIO, "a stack's frame ids are damaged");
		err = resolve_frame(st, &fq->map, (int64_t)id, &fq->frames[i]);
		if (err)
			return err;
	}
	*n = (unsigned)count;
	return 0;
}

static int stacks_row(struct store *st, sqlite3_stmt *stmt, struct visit *v)
{
	const char *comm = (const char *)sqlite3_column_text(stmt, 0);
	const char *folded = (const char *)sqlite3_column_text(stmt, 1);

	if (!comm || !folded)
		return set_err(st, -ENOMEM, "out of memory reading a stack");
	return v->cb.stack(comm, folded, (uint64_t)sqlite3_column_int64(stmt, 2), v->ctx);
}

/* The statement of query kind for filter f (NULL: every sample), its filter checked and bound. */
static int filtered_query(struct store *st, const struct store_filter *f, int kind, sqlite3_stmt **out)
{
	int err;

	if (!f)
		f = &filter_all;
	err = check_filter(st, f);
	if (err)
		return err;
	*out = st->query[kind][f->pid >= 0 ? QV_PID : QV_ANY];
	bind_filter(*out, f, f->pid, f->tid);
	return 0;
}

int store_query_stacks(struct store *st, const struct store_filter *f, store_stack_cb cb, void *ctx)
{
	struct visit v = { .cb.stack = cb, .ctx = ctx };
	sqlite3_stmt *stmt;
	int err;

	if (!st || !cb)
		return -EINVAL;
	err = filtered_query(st, f, QK_STACKS, &stmt);
	return err ? err : each_row(st, stmt, stacks_row, &v, "cannot query stacks");
}

static int frames_row(struct store *st, sqlite3_stmt *stmt, struct visit *v)
{
	struct frames_query *fq = v->fq;
	const char *comm = (const char *)sqlite3_column_text(stmt, 1);
	const char *folded = (const char *)sqlite3_column_text(stmt, 2);
	const unsigned char *blob = sqlite3_column_blob(stmt, 3);
	size_t len = (size_t)sqlite3_column_bytes(stmt, 3);
	unsigned n = 0;
	int err;

	if (!comm || !folded)
		return set_err(st, -ENOMEM, "out of memory reading a stack");
	/* Bounded: emptied between stacks, never while the callback holds pointers into it. */
	if (fq->map.n > FRAME_MAP_MAX_ENTRIES || fq->map.bytes > FRAME_MAP_MAX_BYTES)
		fmap_clear(&fq->map);
	if (blob) {
		err = decode_frames(st, fq, blob, len, &n);
		if (err)
			return err;
	}
	return v->cb.frames((uint32_t)sqlite3_column_int64(stmt, 0), comm, folded, n ? fq->frames : NULL, n,
			    (uint64_t)sqlite3_column_int64(stmt, 4), v->ctx);
}

int store_query_stacks_frames(struct store *st, const struct store_filter *f, store_frames_cb cb, void *ctx)
{
	struct frames_query fq = { 0 };
	struct visit v = { .cb.frames = cb, .ctx = ctx, .fq = &fq };
	sqlite3_stmt *stmt;
	int err;

	if (!st || !cb)
		return -EINVAL;
	err = filtered_query(st, f, QK_FRAMES, &stmt);
	if (err)
		return err;
	err = each_row(st, stmt, frames_row, &v, "cannot query stacks");
	fmap_clear(&fq.map);
	free(fq.frames);
	return err;
}

static int process_row(struct store *st, sqlite3_stmt *stmt, struct visit *v)
{
	struct store_process p = {
		.pid = (uint32_t)sqlite3_column_int64(stmt, 0),
		.comm = (const char *)sqlite3_column_text(stmt, 1),
		.samples = (uint64_t)sqlite3_column_int64(stmt, 2),
		.first_seen = sqlite3_column_int64(stmt, 3),
		.last_seen = sqlite3_column_int64(stmt, 4),
	};

	if (!p.comm)
		return set_err(st, -ENOMEM, "out of memory reading a process");
	return v->cb.process(&p, v->ctx);
}

int store_query_processes(struct store *st, const struct store_filter *f, store_process_cb cb, void *ctx)
{
	struct visit v = { .cb.process = cb, .ctx = ctx };

	if (!st || !cb)
		return -EINVAL;
	if (!f)
		f = &filter_all;
	bind_filter(st->processes, f, -1, -1);
	return each_row(st, st->processes, process_row, &v, "cannot query processes");
}

static int thread_row(struct store *st, sqlite3_stmt *stmt, struct visit *v)
{
	struct store_thread t = {
		.tid = (uint32_t)sqlite3_column_int64(stmt, 0),
		.name = (const char *)sqlite3_column_text(stmt, 1),
		.samples = (uint64_t)sqlite3_column_int64(stmt, 2),
	};

	if (!t.name)
		return set_err(st, -ENOMEM, "out of memory reading a thread");
	return v->cb.thread(&t, v->ctx);
}

int store_query_threads(struct store *st, const struct store_filter *f, store_thread_cb cb, void *ctx)
{
	struct visit v = { .cb.thread = cb, .ctx = ctx };

	if (!st || !cb)
		return -EINVAL;
	if (!f || f->pid < 0 || f->pid > UINT32_MAX)
		return set_err(st, -EINVAL, "invalid filter: threads need a pid from 0 to 4294967295");
	bind_filter(st->threads, f, f->pid, -1);
	return each_row(st, st->threads, thread_row, &v, "cannot query threads");
}

static int point_row(struct store *st, sqlite3_stmt *stmt, struct visit *v)
{
	struct store_point p = {
		.ts = sqlite3_column_int64(stmt, 0),
		.tid = (uint32_t)sqlite3_column_int64(stmt, 1),
		.count = (uint64_t)sqlite3_column_int64(stmt, 2),
	};

	(void)st;
	return v->cb.point(&p, v->ctx);
}

int store_query_timeline(struct store *st, const struct store_filter *f, int64_t step, int per_thread,
			 store_point_cb cb, void *ctx)
{
	struct visit v = { .cb.point = cb, .ctx = ctx };
	sqlite3_stmt *stmt;
	int err;

	if (!st || !cb)
		return -EINVAL;
	if (step < 1)
		return set_err(st, -EINVAL, "invalid timeline: the step must be at least 1 second");
	err = filtered_query(st, f, per_thread ? QK_TIMELINE_TID : QK_TIMELINE, &stmt);
	if (err)
		return err;
	sqlite3_bind_int64(stmt, 6, step);
	return each_row(st, stmt, point_row, &v, "cannot query the timeline");
}

int store_time_range(struct store *st, int64_t *oldest, int64_t *newest)
{
	sqlite3_stmt *stmt;
	int rc, err = 0;

	if (!st || !oldest || !newest)
		return -EINVAL;
	stmt = st->time_range;
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
		return fail(st, stmt, rc == SQLITE_DONE ? SQLITE_ERROR : rc, "cannot read the time range");
	if (sqlite3_column_type(stmt, 0) == SQLITE_NULL) {
		err = set_err(st, -ENOENT, "no samples stored");
	} else {
		*oldest = sqlite3_column_int64(stmt, 0);
		*newest = sqlite3_column_int64(stmt, 1);
	}
	sqlite3_reset(stmt);
	return err;
}

/* Steps a prepared statement that yields one integer. */
static int stmt_u64(struct store *st, sqlite3_stmt *stmt, uint64_t *out)
{
	int rc = sqlite3_step(stmt);

	if (rc != SQLITE_ROW)
		return fail(st, stmt, rc == SQLITE_DONE ? SQLITE_ERROR : rc, "cannot read statistics");
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
	err = err ?: stmt_u64(st, st->page_count, &pages);
	err = err ?: stmt_u64(st, st->page_size, &page_size);
	if (err)
		return err;
	out->db_bytes = pages * page_size;
	return 0;
}

/* The sweep of unused stacks reads the whole samples table (seconds on a day of a busy host): age
 * retention runs it on its first call and every this many after (hourly at a call a minute). */
#define PRUNE_GC_EVERY 60

/* Rows deleted by one retention batch at most, so that a prune never holds the lock for long. */
#define PRUNE_BATCH 200000
/* Batches in one store_prune() call at most; what is left waits for the next call. */
#define PRUNE_MAX_BATCHES 10
/* When over the size cap, the oldest data goes this many seconds at a time. */
#define PRUNE_SIZE_STEP 3600

/* Deletes up to PRUNE_BATCH samples older than before; adds how many to *deleted. */
static int prune_batch(struct store *st, int64_t before, uint64_t *deleted)
{
	int err;

	sqlite3_bind_int64(st->prune_before, 1, before);
	sqlite3_bind_int64(st->prune_before, 2, PRUNE_BATCH);
	err = run(st, st->prune_before, "cannot delete old samples");
	if (!err)
		*deleted += (uint64_t)sqlite3_changes(st->db);
	return err;
}

/* Bytes the database uses: its pages less the free ones (which new data reuses). */
static int used_bytes(struct store *st, uint64_t *out)
{
	uint64_t pages = 0, page_size = 0, free_pages = 0;
	int err = stmt_u64(st, st->page_count, &pages);

	err = err ?: stmt_u64(st, st->page_size, &page_size);
	err = err ?: stmt_u64(st, st->freelist, &free_pages);
	*out = (pages - (free_pages < pages ? free_pages : pages)) * page_size;
	return err;
}

static int collect_garbage(struct store *st, struct store_prune_result *r);

/* Deletes the oldest samples, PRUNE_SIZE_STEP seconds at a time, with the stacks only they used,
 * while more than max_bytes are used, and then down to 90% of it: room for some flushes before the
 * next trim. */
static int prune_to_size(struct store *st, uint64_t max_bytes, struct store_prune_result *r)
{
	uint64_t used = 0;
	int err = 0;

	for (int i = 0; i < PRUNE_MAX_BATCHES && !err; i++) {
		uint64_t oldest;
		int rc;

		err = used_bytes(st, &used);
		if (err || used <= (i ? max_bytes / 10 * 9 : max_bytes))
			break;
		rc = sqlite3_step(st->oldest);
		if (rc != SQLITE_ROW || sqlite3_column_type(st->oldest, 0) == SQLITE_NULL) {
			sqlite3_reset(st->oldest);
			break; /* no samples left: the rest is stacks and names, collected below */
		}
		oldest = (uint64_t)sqlite3_column_int64(st->oldest, 0);
		sqlite3_reset(st->oldest);
		err = prune_batch(st, (int64_t)oldest + PRUNE_SIZE_STEP, &r->samples_deleted);
		if (!err && (int64_t)oldest + PRUNE_SIZE_STEP > r->cut)
			r->cut = (int64_t)oldest + PRUNE_SIZE_STEP;
		err = err ?: collect_garbage(st, r);
	}
	return err;
}

/* Deletes stacks and names no sample refers to; their cached ids go too. */
static int collect_garbage(struct store *st, struct store_prune_result *r)
{
	int err = run(st, st->gc_stacks, "cannot delete unused stacks");

	if (!err)
		r->stacks_deleted += (uint64_t)sqlite3_changes(st->db);
	err = err ?: run(st, st->gc_names, "cannot delete unused names");
	cache_clear(&st->stacks);
	cache_clear(&st->names);
	return err;
}

int store_prune(struct store *st, int64_t before, uint64_t max_bytes, struct store_prune_result *out)
{
	struct store_prune_result r = { .cut = before };
	uint64_t deleted_before;
	int err;

	if (!st || st->mode != STORE_READ_WRITE || st->in_tx)
		return -EINVAL;
	err = used_bytes(st, &r.bytes_before);
	err = err ?: run(st, st->begin, "cannot start pruning");
	if (err)
		return err;
	for (int i = 0; i < PRUNE_MAX_BATCHES && !err; i++) {
		deleted_before = r.samples_deleted;
		err = prune_batch(st, before, &r.samples_deleted);
		if (r.samples_deleted - deleted_before < PRUNE_BATCH)
			break;
	}
	if (!err && r.samples_deleted && st->prunes % PRUNE_GC_EVERY == 0)
		err = collect_garbage(st, &r);
	st->prunes++;
	if (!err && max_bytes)
		err = prune_to_size(st, max_bytes, &r);
	err = err ?: run(st, st->commit, "cannot commit pruning");
	if (err) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		cache_clear(&st->stacks);
		cache_clear(&st->names);
		return err;
	}
	/* Give freed pages back to the file system (databases created with auto_vacuum), then let the
	 * WAL shrink. Failures here lose nothing. */
	while (sqlite3_step(st->vacuum) == SQLITE_ROW)
		;
	sqlite3_reset(st->vacuum);
	sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	used_bytes(st, &r.bytes_after);
	if (out)
		*out = r;
	return 0;
}
