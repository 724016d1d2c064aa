/* store.c - the SQLite store: schema and its upgrades, each distinct folded stack once, samples referencing it, one transaction per flush. */
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
#include "hash.h"
#include "store_impl.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#define BUSY_TIMEOUT_MS 5000         /* how long a reader or writer waits for a lock */
#define NAME_MAX_BYTES 255           /* longest process or thread name accepted */
#define MODULE_MAX_BYTES 4096        /* longest module path accepted */
#define BUILD_ID_MAX_CHARS 128       /* longest build-id accepted, in hex digits */
#define CACHE_MAX_ENTRIES 65536      /* per cache; the cache is emptied when full */
/* The stacks cache: its keys are whole folded stacks (about 200 bytes each), so at 65536 it held 15 MB
 * at high sample rates. 32768 cover many flushes' distinct stacks at 99 Hz; at 9999 Hz flushes take
 * about a third longer for it (measured: 6.2-6.4 s against 4.3-5.6 s) and the daemon 9.5 MB less. */
#define STACK_CACHE_MAX_ENTRIES 32768
#define CACHE_MAX_BYTES (16u << 20)  /* key text per cache; the cache is emptied when over */
#define PENDING_MAX_ROWS 65536       /* rows merged in memory before they are written out early */

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
	" stack_id INTEGER NOT NULL, count INTEGER NOT NULL);"
	SCHEMA_V3_SQL
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

/* 64-bit FNV-1a of len bytes. */
static uint64_t fnv1a(const char *s, size_t len)
{
	return hash_bytes(HASH_FNV_OFFSET, s, len);
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

int store_set_err(struct store *st, int err, const char *fmt, ...)
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
		abandon(st);
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

void store_forget_ids(struct store *st)
{
	cache_clear(&st->stacks);
	cache_clear(&st->names);
}

/* Runs one constant SQL text that returns one integer (or none: *found false). */
static int sql_int(struct store *st, const char *sql, int64_t *out, bool *found)
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
static int sql_exec(struct store *st, const char *sql, const char *what)
{
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : store_fail(st, NULL, rc, what);
}

/* Frees every key and the table. */
static void cache_clear(struct id_cache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->slots[i].key);
	free(c->slots);
	*c = (struct id_cache){ .max = c->max };
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

	if (c->n >= (c->max ? c->max : CACHE_MAX_ENTRIES) || c->bytes + len > CACHE_MAX_BYTES)
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

	return hash_words(v, 5);
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

/* Adds the pending rows older than the minute rollups' fold mark to every rollup that already holds
 * their bucket: a fold never reads them again, so this keeps rollups equal to the raw rows. */
static int merge_late_rows(struct store *st)
{
	const struct pending *p = &st->pending;
	struct rollup_map late[ROLLUP_LEVELS];
	int err = 0;

	for (int l = 0; l < ROLLUP_LEVELS; l++)
		rollup_map_init(&late[l], 0);
	for (size_t i = 0; !err && i < p->cap; i++) {
		const struct pending_row *r = &p->rows[i];

		for (int l = 0; !err && r->count && l < ROLLUP_LEVELS; l++) {
			int64_t b = rollup_floor(r->ts, rollup_span[l]);

			if (b >= st->tiers.kept[l] && b < st->tiers.folded[l] - rollup_span[l] + 1)
				err = rollup_map_add(&late[l], b, r->pid, r->comm_id, r->stack_id, r->count, r->ts);
		}
	}
	if (err)
		err = store_set_err(st, err, "out of memory for samples that came after their minute was folded");
	for (int l = 0; !err && l < ROLLUP_LEVELS; l++) {
		size_t n = rollup_map_compact(&late[l]);

		rollup_cells_sort(late[l].cells, n);
		err = store_write_rollups(st, l, late[l].cells, n, true);
	}
	for (int l = 0; l < ROLLUP_LEVELS; l++)
		rollup_map_free(&late[l]);
	return err;
}

/* Whether a pending row is older than what the minute rollups hold already. */
static bool any_late(const struct store *st)
{
	const struct pending *p = &st->pending;

	if (st->tiers.folded[0] == INT64_MIN)
		return false;
	for (size_t i = 0; i < p->cap; i++)
		if (p->rows[i].count && p->rows[i].ts < st->tiers.folded[0])
			return true;
	return false;
}

/* Inserts every pending row (merging late ones into rollups) and empties the table (inside the open
 * transaction). */
static int pending_flush(struct store *st)
{
	struct pending *p = &st->pending;
	sqlite3_stmt *s = st->sample_put;
	int err;

	for (size_t i = 0; i < p->cap; i++) {
		const struct pending_row *r = &p->rows[i];

		if (!r->count)
			continue;
		sqlite3_bind_int64(s, 1, r->ts);
		sqlite3_bind_int64(s, 2, r->pid);
		sqlite3_bind_int64(s, 3, r->tid);
		sqlite3_bind_int64(s, 4, r->comm_id);
		sqlite3_bind_int64(s, 5, r->thread_id);
		sqlite3_bind_int64(s, 6, r->stack_id);
		sqlite3_bind_int64(s, 7, (sqlite3_int64)r->count);
		err = store_run(st, s, "cannot write samples");
		if (err)
			return err;
	}
	if (any_late(st)) {
		err = merge_late_rows(st);
		if (err)
			return err;
	}
	if (p->cap)
		memset(p->rows, 0, p->cap * sizeof(*p->rows));
	p->n = 0;
	return 0;
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
		sqlite3_reset(put);
		return 0;
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, get, rc, what);
	sqlite3_reset(get);
	err = store_run(st, put, what);
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

	if (store_buf_reserve(&st->key, len) < 0)
		return store_set_err(st, -ENOMEM, "out of memory for a module");
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

/* The id of a frame (name, module, file, line); its cache key is the module id's and the line's bytes,
 * then the name, a NUL and the file. A new frame gets its start line too. */
static int frame_id(struct store *st, const struct store_frame *f, int64_t module, int64_t *id)
{
	const char *file = f->file ? f->file : "";
	size_t nlen = strlen(f->name), flen = strlen(file), len = sizeof(module) + sizeof(f->line) + nlen + 1 + flen;
	const char *key;
	uint64_t hash;
	int err;

	if (store_buf_reserve(&st->key, len) < 0)
		return store_set_err(st, -ENOMEM, "out of memory for a frame");
	key = (const char *)st->key.p;
	memcpy(st->key.p, &module, sizeof(module));
	memcpy(st->key.p + sizeof(module), &f->line, sizeof(f->line));
	memcpy(st->key.p + sizeof(module) + sizeof(f->line), f->name, nlen + 1);
	memcpy(st->key.p + sizeof(module) + sizeof(f->line) + nlen + 1, file, flen);
	hash = fnv1a(key, len);
	if (cache_get(&st->frames, key, len, hash, id))
		return 0;
	sqlite3_bind_text(st->frame_id_get, 1, f->name, (int)nlen, SQLITE_STATIC);
	sqlite3_bind_int64(st->frame_id_get, 2, module);
	sqlite3_bind_text(st->frame_id_get, 3, file, (int)flen, SQLITE_STATIC);
	sqlite3_bind_int(st->frame_id_get, 4, f->line);
	sqlite3_bind_text(st->frame_put, 1, f->name, (int)nlen, SQLITE_STATIC);
	sqlite3_bind_int64(st->frame_put, 2, module);
	sqlite3_bind_text(st->frame_put, 3, file, (int)flen, SQLITE_STATIC);
	sqlite3_bind_int(st->frame_put, 4, f->start_line);
	sqlite3_bind_int(st->frame_put, 5, f->line);
	err = get_or_put(st, st->frame_id_get, st->frame_put, "cannot write a frame", id);
	if (!err)
		cache_put(&st->frames, key, len, hash, *id, false);
	return err;
}

/* Encodes s's frames as frame_ids into st->blob (ids found or added); *len its bytes. */
static int encode_frames(struct store *st, const struct store_sample *s, size_t *len)
{
	size_t n = 0;

	if (store_buf_reserve(&st->blob, (size_t)s->nframes * ROLLUP_VARINT_MAX) < 0)
		return store_set_err(st, -ENOMEM, "out of memory for a stack's frames");
	for (unsigned i = 0; i < s->nframes; i++) {
		const struct store_frame *f = &s->frames[i];
		int64_t module = 0, frame = 0;
		int err;

		err = module_id(st, f->module ? f->module : "", f->build_id ? f->build_id : "", &module);
		err = err ?: frame_id(st, f, module, &frame);
		if (err)
			return err;
		n += rollup_put_varint(st->blob.p + n, (uint64_t)frame);
	}
	*len = n;
	return 0;
}

/* Whether frame i (read by st->frame_get) is the sample's: its frame i when it has frames, else the
 * i-th name of its text (then with no source). seg: that name in the text. */
static bool frame_is(struct store *st, const struct store_sample *s, unsigned i, const char *seg, size_t seglen)
{
	sqlite3_stmt *g = st->frame_get;
	const unsigned char *name = sqlite3_column_text(g, 0), *file = sqlite3_column_text(g, 3);
	size_t nlen = (size_t)sqlite3_column_bytes(g, 0);
	int line = sqlite3_column_int(g, 5);

	if (!name || nlen != seglen || memcmp(name, seg, seglen))
		return false;
	if (!s->frames || i >= s->nframes)
		return line == 0 && (!file || !file[0]);
	return line == s->frames[i].line &&
	       !strcmp(file ? (const char *)file : "", s->frames[i].file ? s->frames[i].file : "");
}

/* Whether frame_ids (blob[0..len)) is the sample's stack: the names of its frames spell the text,
 * folded[0..flen), and their sources are the sample's frames' (none when it has no frames). */
static int frames_match(struct store *st, const unsigned char *blob, size_t len, const struct store_sample *s,
			size_t flen, bool *same)
{
	const char *folded = s->folded;
	size_t pos = 0, off = 0;
	unsigned i = 0;

	*same = false;
	while (pos < len) {
		const char *end = off <= flen ? memchr(folded + off, ';', flen - off) : NULL;
		size_t seg = end ? (size_t)(end - folded) - off : flen - off;
		uint64_t id;
		bool hit;
		int rc;

		if (off > flen)
			return 0; /* more frames than the text has */
		if (rollup_get_varint(blob, len, &pos, &id) < 0 || id > INT64_MAX)
			return store_set_err(st, -EIO, "a stack's frame ids are damaged");
		sqlite3_bind_int64(st->frame_get, 1, (int64_t)id);
		rc = sqlite3_step(st->frame_get);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return store_fail(st, st->frame_get, rc, "cannot read frames");
		hit = rc == SQLITE_ROW && frame_is(st, s, i++, folded + off, seg);
		sqlite3_reset(st->frame_get);
		if (!hit)
			return 0;
		off += seg + 1;
	}
	*same = off == flen + 1;
	return 0;
}

/* Builds a stack's identity in st->ident (*len bytes): its text, then, when a frame has a source (a
 * Python frame's file and line), a line break and "INDEX:LINE:FILE" and a unit separator (0x1f) for each
 * such frame. A text holds no line break, so a stack without sources is its text: its hash is its
 * text's, as stored before schema version 4. */
static int stack_ident(struct store *st, const struct store_sample *s, size_t flen, size_t *len)
{
	size_t n = flen, need = flen + 1;
	bool sourced = false;

	for (unsigned i = 0; s->frames && i < s->nframes; i++) {
		if (s->frames[i].line || (s->frames[i].file && s->frames[i].file[0])) {
			need += 32 + (s->frames[i].file ? strlen(s->frames[i].file) : 0);
			sourced = true;
		}
	}
	if (store_buf_reserve(&st->ident, need + 1) < 0)
		return store_set_err(st, -ENOMEM, "out of memory for a stack");
	memcpy(st->ident.p, s->folded, flen);
	if (sourced) {
		st->ident.p[n++] = '\n';
		for (unsigned i = 0; i < s->nframes; i++) {
			const struct store_frame *f = &s->frames[i];

			if (!f->line && !(f->file && f->file[0]))
				continue;
			n += (size_t)snprintf((char *)st->ident.p + n, need + 1 - n, "%u:%d:%s\x1f", i, f->line,
					      f->file ? f->file : "");
		}
	}
	st->ident.p[n] = '\0';
	*len = n;
	return 0;
}

/* Looks a stack up by identity (rows with the same hash are compared by text, or by their frames for
 * a row stored without text, so a hash collision gets a row of its own): *found, and then its *id and
 * whether it *has_frames. ident (ilen bytes) is st->ident; the text is s's first flen bytes. */
static int stack_find(struct store *st, const struct store_sample *s, size_t flen, size_t ilen, uint64_t hash,
		      int64_t *id, bool *has_frames, bool *found)
{
	const char *ident = (const char *)st->ident.p;
	const struct cache_slot *e = cache_find(&st->stacks, ident, ilen, hash);
	int rc = SQLITE_DONE, err = 0;
	bool hit = false;

	if (e) {
		*id = e->id;
		*has_frames = e->tag;
		*found = true;
		return 0;
	}
	sqlite3_bind_int64(st->stack_get, 1, (sqlite3_int64)hash);
	while (!hit && !err && (rc = sqlite3_step(st->stack_get)) == SQLITE_ROW) {
		const unsigned char *text = sqlite3_column_text(st->stack_get, 1);
		size_t n = (size_t)sqlite3_column_bytes(st->stack_get, 1);
		const unsigned char *blob = sqlite3_column_blob(st->stack_get, 2);
		size_t blen = (size_t)sqlite3_column_bytes(st->stack_get, 2);

		if (n) /* stored without frames: its text, which only a stack without sources is */
			hit = text && n == ilen && memcmp(text, ident, ilen) == 0;
		else if (blob)
			err = frames_match(st, blob, blen, s, flen, &hit);
		if (hit) {
			*id = sqlite3_column_int64(st->stack_get, 0);
			*has_frames = blob != NULL;
		}
	}
	if (!err && !hit && rc != SQLITE_DONE)
		return store_fail(st, st->stack_get, rc, "cannot read stacks");
	sqlite3_reset(st->stack_get);
	if (err)
		return err;
	if (hit)
		cache_put(&st->stacks, ident, ilen, hash, *id, *has_frames);
	*found = hit;
	return 0;
}

/* Adds a stack row: with frames, st->blob's blob_len bytes as frame_ids and no text; else the text. */
static int stack_insert(struct store *st, const char *folded, size_t len, uint64_t hash, bool frames,
			size_t blob_len, int64_t *id)
{
	int err;

	sqlite3_bind_int64(st->stack_put, 1, (sqlite3_int64)hash);
	if (frames) {
		sqlite3_bind_text(st->stack_put, 2, "", 0, SQLITE_STATIC);
		sqlite3_bind_blob(st->stack_put, 3, st->blob.p, (int)blob_len, SQLITE_STATIC);
	} else {
		sqlite3_bind_text(st->stack_put, 2, folded, (int)len, SQLITE_STATIC);
		sqlite3_bind_null(st->stack_put, 3);
	}
	err = store_run(st, st->stack_put, "cannot write a stack");
	if (!err)
		*id = sqlite3_last_insert_rowid(st->db);
	return err;
}

/* Fills in the frame_ids of a stack stored without them; its text goes (the frames spell it). */
static int stack_add_frames(struct store *st, int64_t id, size_t blob_len)
{
	sqlite3_bind_int64(st->stack_set_frames, 1, id);
	sqlite3_bind_blob(st->stack_set_frames, 2, st->blob.p, (int)blob_len, SQLITE_STATIC);
	return store_run(st, st->stack_set_frames, "cannot write a stack's frames");
}

/* The id of s's stack, from the cache, the table, or a new row. The frames of the first sample of a
 * stack stored with frames are kept; later ones are not compared. */
static int stack_id(struct store *st, const struct store_sample *s, int64_t *id)
{
	size_t len = strlen(s->folded), ilen = 0, blob_len = 0;
	bool found = false, has_frames = false;
	struct cache_slot *e;
	uint64_t hash;
	int err;

	err = stack_ident(st, s, len, &ilen);
	if (err)
		return err;
	hash = fnv1a((const char *)st->ident.p, ilen);
	err = stack_find(st, s, len, ilen, hash, id, &has_frames, &found);
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
			cache_put(&st->stacks, (const char *)st->ident.p, ilen, hash, *id, s->frames != NULL);
		return err;
	}
	err = stack_add_frames(st, *id, blob_len);
	e = err ? NULL : cache_find(&st->stacks, (const char *)st->ident.p, ilen, hash);
	if (e)
		e->tag = true;
	return err;
}

/* Checks frame i's module path and build-id (NULL: ""), and its source; -EINVAL with the reason in
 * errmsg. */
static int validate_module(struct store *st, const struct store_frame *f, unsigned i)
{
	const char *b = f->build_id ? f->build_id : "";
	size_t n;

	if (f->file && strnlen(f->file, MODULE_MAX_BYTES + 1) > MODULE_MAX_BYTES)
		return store_set_err(st, -EINVAL, "invalid sample: frame %u's file is longer than %d bytes", i,
				     MODULE_MAX_BYTES);
	if (f->line < 0 || f->start_line < 0)
		return store_set_err(st, -EINVAL, "invalid sample: frame %u's line is negative", i);
	if (f->module && strnlen(f->module, MODULE_MAX_BYTES + 1) > MODULE_MAX_BYTES)
		return store_set_err(st, -EINVAL, "invalid sample: frame %u's module path is longer than %d bytes", i,
				     MODULE_MAX_BYTES);
	n = strnlen(b, BUILD_ID_MAX_CHARS + 1);
	if (n > BUILD_ID_MAX_CHARS)
		return store_set_err(st, -EINVAL, "invalid sample: frame %u's build-id is longer than %d hex digits", i,
				     BUILD_ID_MAX_CHARS);
	if (strspn(b, "0123456789abcdef") != n)
		return store_set_err(st, -EINVAL, "invalid sample: frame %u's build-id is not lowercase hex", i);
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
			return store_set_err(st, -EINVAL, "invalid sample: %u frames given, the stack has %u",
					     s->nframes, i);
		if (!f->name || strnlen(f->name, len + 1) != len || memcmp(f->name, p, len) != 0)
			return store_set_err(st, -EINVAL, "invalid sample: frame %u's name is not the stack's frame %u",
					     i, i);
		err = validate_module(st, f, i);
		if (err)
			return err;
		p += len;
		if (*p == ';')
			p++;
	}
	if (*p)
		return store_set_err(st, -EINVAL, "invalid sample: %u frames given, the stack has more", s->nframes);
	return 0;
}

/* Checks a sample before anything is written; -EINVAL with the reason in errmsg. */
static int validate(struct store *st, const struct store_sample *s)
{
	size_t len;

	if (!s->folded || !s->folded[0])
		return store_set_err(st, -EINVAL, "invalid sample: the stack is empty");
	len = strnlen(s->folded, STACK_MAX_BYTES + 1);
	if (len > STACK_MAX_BYTES)
		return store_set_err(st, -EINVAL, "invalid sample: the stack is longer than %d bytes", STACK_MAX_BYTES);
	if (strpbrk(s->folded, "\n\r"))
		return store_set_err(st, -EINVAL, "invalid sample: the stack contains a line break");
	if (s->folded[0] == ';' || s->folded[len - 1] == ';' || strstr(s->folded, ";;"))
		return store_set_err(st, -EINVAL, "invalid sample: the stack has an empty frame: '%s'", s->folded);
	if (s->count == 0)
		return store_set_err(st, -EINVAL, "invalid sample: the count is 0");
	if (s->count > (uint64_t)INT64_MAX)
		return store_set_err(st, -EINVAL, "invalid sample: the count is too large");
	if (!s->comm || !s->thread)
		return store_set_err(st, -EINVAL, "invalid sample: the %s name is missing",
				     s->comm ? "thread" : "process");
	if (strnlen(s->comm, NAME_MAX_BYTES + 1) > NAME_MAX_BYTES ||
	    strnlen(s->thread, NAME_MAX_BYTES + 1) > NAME_MAX_BYTES)
		return store_set_err(st, -EINVAL, "invalid sample: a name is longer than %d bytes", NAME_MAX_BYTES);
	return validate_frames(st, s);
}

/* Prepares one statement for the life of the store. */
static int prepare(struct store *st, sqlite3_stmt **stmt, const char *sql)
{
	int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, NULL);

	return rc == SQLITE_OK ? 0 : store_fail(st, NULL, rc, "cannot prepare a statement");
}

/* The statements of flushes, prepared in READ_WRITE mode only. */
static int prepare_writes(struct store *st)
{
	int err = 0;

	err = err ?: prepare(st, &st->name_put, "INSERT INTO names(name) VALUES (?1)");
	err = err ?: prepare(st, &st->stack_get, "SELECT id, folded, frame_ids FROM stacks WHERE hash = ?1");
	err = err ?: prepare(st, &st->stack_put, "INSERT INTO stacks(hash, folded, frame_ids) VALUES (?1, ?2, ?3)");
	err = err ?: prepare(st, &st->stack_set_frames, "UPDATE stacks SET frame_ids = ?2, folded = '' WHERE id = ?1");
	err = err ?: prepare(st, &st->module_get, "SELECT id FROM modules WHERE path = ?1 AND build_id = ?2");
	err = err ?: prepare(st, &st->module_put, "INSERT INTO modules(path, build_id) VALUES (?1, ?2)");
	err = err ?: prepare(st, &st->frame_id_get,
			     "SELECT id FROM frames WHERE name = ?1 AND module_id = ?2 AND file = ?3 AND line = ?4");
	err = err ?: prepare(st, &st->frame_put,
			     "INSERT INTO frames(name, module_id, file, start_line, line) VALUES (?1, ?2, ?3, ?4, ?5)");
	err = err ?: prepare(st, &st->sample_put,
			     "INSERT INTO samples(ts, pid, tid, comm_id, thread_id, stack_id, count)"
			     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
	/* IMMEDIATE takes the write lock at once, so a busy database shows here, not mid-flush. */
	err = err ?: prepare(st, &st->begin, "BEGIN IMMEDIATE");
	err = err ?: prepare(st, &st->commit, "COMMIT");
	err = err ?: prepare(st, &st->rollback, "ROLLBACK");
	err = err ?: prepare(st, &st->meta_put, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)");
	err = err ?: prepare(st, &st->rollup_tail,
			     "SELECT part, last, total, stacks FROM rollups WHERE span = ?1 AND bucket = ?2 AND pid = ?3"
			     " AND comm_id = ?4 ORDER BY part DESC LIMIT 1");
	err = err ?: prepare(st, &st->rollup_put,
			     "INSERT INTO rollups(span, bucket, pid, comm_id, part, last, total, stacks)"
			     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
	err = err ?: prepare(st, &st->rollup_set,
			     "UPDATE rollups SET last = ?6, total = ?7, stacks = ?8 WHERE span = ?1 AND bucket = ?2"
			     " AND pid = ?3 AND comm_id = ?4 AND part = ?5");
	return err ?: store_prepare_fold(st);
}

/* The statements every store needs (a version 1 database has no frames to read). */
static int prepare_common(struct store *st)
{
	int err = 0;

	err = err ?: prepare(st, &st->name_get, "SELECT id FROM names WHERE name = ?1");
	if (st->version >= 2)
		err = err ?: prepare(st, &st->frame_get, st->version >= 4 ?
				     "SELECT f.name, m.path, m.build_id, f.file, f.start_line, f.line FROM frames AS f"
				     " JOIN modules AS m ON m.id = f.module_id WHERE f.id = ?1" :
				     "SELECT f.name, m.path, m.build_id, '', 0, 0 FROM frames AS f"
				     " JOIN modules AS m ON m.id = f.module_id WHERE f.id = ?1");
	err = err ?: prepare(st, &st->meta_get, "SELECT key, value FROM meta");
	err = err ?: prepare(st, &st->count_stacks, "SELECT count(*) FROM stacks");
	err = err ?: prepare(st, &st->count_samples, "SELECT count(*) FROM samples");
	if (st->version >= 3)
		err = err ?: prepare(st, &st->count_rollups, "SELECT count(*) FROM rollups");
	err = err ?: prepare(st, &st->page_count, "PRAGMA page_count");
	err = err ?: prepare(st, &st->page_size, "PRAGMA page_size");
	return err;
}

static int prepare_all(struct store *st)
{
	int err = prepare_common(st);

	err = err ?: store_prepare_queries(st);
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
		return store_set_err(st, -EINVAL, "not a flamed database (no meta table): pass the path of flamed's database");
	err = sql_int(st, "SELECT value FROM meta WHERE key = 'schema_version'", &v, &found);
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

	err = sql_int(st, "SELECT coalesce(max(id), 0) FROM frames", &max, NULL);
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

	err = sql_int(st, "SELECT count(*) FROM sqlite_master", &tables, NULL);
	if (!err && tables == 0)
		err = sql_exec(st, schema_sql, "cannot create the schema");
	err = err ?: check_schema(st, &st->version);
	if (!err && st->version == 1) {
		err = sql_exec(st, migrate_v2_sql, "cannot upgrade the database to schema version 2");
		if (!err)
			st->version = 2;
	}
	if (!err && st->version == 2) {
		err = sql_exec(st, migrate_v3_sql, "cannot upgrade the database to schema version 3");
		err = err ?: drop_stack_texts(st);
		if (!err)
			st->version = 3;
	}
	if (!err && st->version == 3) {
		err = sql_exec(st, migrate_v4_sql, "cannot upgrade the database to schema version 4");
		if (!err)
			st->version = 4;
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
		return st->db ? store_fail(st, NULL, rc, "cannot open the database") : -ENOMEM;
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	rc = sqlite3_create_function_v2(st->db, "flamed_step", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
					NULL, step_fn, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, NULL, rc, "cannot register an SQL function");
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
		st->page_size,
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
	buf_free(&st->text);
	buf_free(&st->ident);
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
		return store_set_err(st, -EROFS, "the store was opened read-only");
	if (st->in_tx)
		return store_set_err(st, -EINVAL, "a transaction is already open: commit or roll it back first");
	err = store_run(st, st->begin, "cannot start a transaction");
	if (err)
		return err;
	st->in_tx = true;
	/* What the rollups hold, for samples older than that (another writer may have folded). */
	err = store_load_tiers(st, &st->tiers);
	if (err)
		abandon(st);
	return err;
}

int store_add(struct store *st, const struct store_sample *s)
{
	struct pending_row r;
	int err;

	if (!st)
		return -EINVAL;
	if (!s)
		return store_set_err(st, -EINVAL, "invalid sample: NULL");
	if (!st->in_tx)
		return store_set_err(st, -EINVAL, "no open transaction (store_begin not called, or an error rolled it back)");
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
			return store_set_err(st, err, "invalid sample: its count merged with an earlier one's exceeds 2^63-1");
		if (err)
			store_set_err(st, err, "out of memory for pending samples");
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
		return store_set_err(st, -EINVAL, "no open transaction (store_begin not called, or an error rolled it back)");
	err = pending_flush(st);
	if (!err)
		err = store_run(st, st->commit, "cannot commit");
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

/* The meta keys of the rollup markers: raw_from, then kept and folded per level. */
static const char *const marker_keys[1 + 2 * ROLLUP_LEVELS] = {
	"raw_from", "kept_60", "folded_60", "kept_3600", "folded_3600",
};

/* The marker of key i in t. */
static int64_t *marker(struct rollup_tiers *t, int i)
{
	return i == 0 ? &t->raw_from : (i - 1) % 2 == 0 ? &t->kept[(i - 1) / 2] : &t->folded[(i - 1) / 2];
}

int store_load_tiers(struct store *st, struct rollup_tiers *t)
{
	int rc;

	for (int i = 0; i < 1 + 2 * ROLLUP_LEVELS; i++)
		*marker(t, i) = INT64_MIN;
	if (st->version < 3)
		return 0;
	while ((rc = sqlite3_step(st->meta_get)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st->meta_get, 0);

		for (int i = 0; key && i < 1 + 2 * ROLLUP_LEVELS; i++)
			if (!strcmp(key, marker_keys[i]))
				*marker(t, i) = sqlite3_column_int64(st->meta_get, 1);
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, st->meta_get, rc, "cannot read the rollup markers");
	sqlite3_reset(st->meta_get);
	return 0;
}

int store_save_tiers(struct store *st, const struct rollup_tiers *t)
{
	int err = 0;

	for (int i = 0; !err && i < 1 + 2 * ROLLUP_LEVELS; i++) {
		int64_t v = *marker((struct rollup_tiers *)t, i);

		if (v == INT64_MIN)
			continue;
		sqlite3_bind_text(st->meta_put, 1, marker_keys[i], -1, SQLITE_STATIC);
		sqlite3_bind_int64(st->meta_put, 2, v);
		err = store_run(st, st->meta_put, "cannot write the rollup markers");
	}
	return err;
}

/* Decodes a rollup blob into pairs (appended to *out, growing it); -EIO when damaged. */
static int decode_pairs(struct store *st, const void *blob, size_t len, struct rollup_pair **out, size_t *n,
			size_t *cap)
{
	struct rollup_reader r;
	struct rollup_pair p;
	int rc;

	rollup_reader_init(&r, blob, len);
	while ((rc = rollup_next(&r, &p)) == 1) {
		if (*n == *cap) {
			size_t c = *cap ? *cap * 2 : 1024;
			struct rollup_pair *np = reallocarray(*out, c, sizeof(*np));

			if (!np)
				return store_set_err(st, -ENOMEM, "out of memory for rollups");
			*out = np;
			*cap = c;
		}
		(*out)[(*n)++] = p;
	}
	return rc < 0 ? store_set_err(st, -EIO, "a rollup row is damaged") : 0;
}

/* Merges two pair arrays sorted by stack id into out (room for na + nb); returns its length. */
static size_t merge_pairs(const struct rollup_pair *a, size_t na, const struct rollup_pair *b, size_t nb,
			  struct rollup_pair *out)
{
	size_t i = 0, j = 0, n = 0;

	while (i < na || j < nb) {
		if (j == nb || (i < na && a[i].stack_id < b[j].stack_id)) {
			out[n++] = a[i++];
		} else if (i == na || b[j].stack_id < a[i].stack_id) {
			out[n++] = b[j++];
		} else {
			out[n] = a[i++];
			out[n].count = b[j].count > (uint64_t)INT64_MAX - out[n].count ? (uint64_t)INT64_MAX
											 : out[n].count + b[j].count;
			n++, j++;
		}
	}
	return n;
}

/* Writes one rollup row (insert, or update of an existing part). */
static int put_rollup(struct store *st, sqlite3_stmt *stmt, int level, const struct rollup_cell *key, int64_t part,
		      int64_t last, const struct rollup_pair *p, size_t n)
{
	uint64_t total = 0;
	size_t len = 0;
	int err;

	if (store_buf_reserve(&st->blob, rollup_encode_bound(n)) < 0)
		return store_set_err(st, -ENOMEM, "out of memory for rollups");
	for (size_t i = 0; i < n; i++)
		total = p[i].count > (uint64_t)INT64_MAX - total ? (uint64_t)INT64_MAX : total + p[i].count;
	if (rollup_encode(p, n, st->blob.p, &len) < 0)
		return store_set_err(st, -EIO, "cannot encode a rollup row: stack ids out of order");
	sqlite3_bind_int64(stmt, 1, rollup_span[level]);
	sqlite3_bind_int64(stmt, 2, key->bucket);
	sqlite3_bind_int64(stmt, 3, key->pid);
	sqlite3_bind_int64(stmt, 4, key->comm_id);
	sqlite3_bind_int64(stmt, 5, part);
	sqlite3_bind_int64(stmt, 6, last);
	sqlite3_bind_int64(stmt, 7, (int64_t)total);
	sqlite3_bind_blob(stmt, 8, st->blob.p, (int)len, SQLITE_STATIC);
	err = store_run(st, stmt, "cannot write rollups");
	return err;
}

/* The newest part of a rollup row's key: *part -1 when there is none, else its number, last and pairs. */
static int rollup_tail(struct store *st, int level, const struct rollup_cell *key, int64_t *part, int64_t *last,
		       struct rollup_pair **pairs, size_t *n, size_t *cap)
{
	sqlite3_stmt *s = st->rollup_tail;
	int rc, err = 0;

	*part = -1;
	*n = 0;
	sqlite3_bind_int64(s, 1, rollup_span[level]);
	sqlite3_bind_int64(s, 2, key->bucket);
	sqlite3_bind_int64(s, 3, key->pid);
	sqlite3_bind_int64(s, 4, key->comm_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*part = sqlite3_column_int64(s, 0);
		*last = sqlite3_column_int64(s, 1);
		err = decode_pairs(st, sqlite3_column_blob(s, 3), (size_t)sqlite3_column_bytes(s, 3), pairs, n, cap);
	} else if (rc != SQLITE_DONE) {
		return store_fail(st, s, rc, "cannot read rollups");
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return err;
}

/* The bytes of v as a varint. */
static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >>= 7)
		n++;
	return n;
}

/* Writes pairs as rows of at most ROLLUP_PART_BYTES encoded bytes (each part's ids encoded from 0),
 * numbered from part on; the first replaces row `part` when update. */
static int write_parts(struct store *st, int level, const struct rollup_cell *key, int64_t part, bool update,
		       int64_t last, const struct rollup_pair *p, size_t n)
{
	size_t i = 0;
	int err = 0;

	do {
		size_t k = 0, bytes = 0;
		int64_t prev = 0;

		while (i + k < n) {
			size_t b = varint_len((uint64_t)(p[i + k].stack_id - prev)) + varint_len(p[i + k].count);

			if (k && bytes + b > ROLLUP_PART_BYTES)
				break;
			bytes += b;
			prev = p[i + k].stack_id;
			k++;
		}
		err = put_rollup(st, update ? st->rollup_set : st->rollup_put, level, key, part++, last, p + i, k);
		update = false;
		i += k;
	} while (!err && i < n);
	return err;
}

/* Writes one group's pairs; merge: into its newest part (read, merged, written back), which may
 * spill into new parts. */
static int write_group(struct store *st, int level, const struct rollup_cell *key, int64_t last,
		       const struct rollup_pair *p, size_t n, bool merge, struct rollup_pair **tmp, size_t *tn,
		       size_t *tcap)
{
	int64_t part = -1, old_last = INT64_MIN;
	struct rollup_pair *m;
	size_t mn;
	int err;

	if (!merge)
		return write_parts(st, level, key, 0, false, last, p, n);
	err = rollup_tail(st, level, key, &part, &old_last, tmp, tn, tcap);
	if (err || part < 0)
		return err ?: write_parts(st, level, key, 0, false, last, p, n);
	m = reallocarray(NULL, *tn + n, sizeof(*m));
	if (!m)
		return store_set_err(st, -ENOMEM, "out of memory for rollups");
	mn = merge_pairs(*tmp, *tn, p, n, m);
	err = write_parts(st, level, key, part, true, last > old_last ? last : old_last, m, mn);
	free(m);
	return err;
}

int store_write_rollups(struct store *st, int level, const struct rollup_cell *c, size_t n, bool merge)
{
	struct rollup_pair *pairs = NULL, *tmp = NULL;
	size_t cap = 0, tn = 0, tcap = 0;
	int err = 0;

	for (size_t i = 0; !err && i < n;) {
		size_t j = i, k = 0;
		int64_t last = INT64_MIN;

		while (j < n && c[j].bucket == c[i].bucket && c[j].pid == c[i].pid && c[j].comm_id == c[i].comm_id)
			j++;
		if (j - i > cap) {
			struct rollup_pair *np = reallocarray(pairs, j - i, sizeof(*np));

			if (!np) {
				err = store_set_err(st, -ENOMEM, "out of memory for rollups");
				break;
			}
			pairs = np;
			cap = j - i;
		}
		for (size_t x = i; x < j; x++) {
			pairs[k++] = (struct rollup_pair){ .stack_id = c[x].stack_id, .count = c[x].count };
			last = c[x].last > last ? c[x].last : last;
		}
		err = write_group(st, level, &c[i], last, pairs, k, merge, &tmp, &tn, &tcap);
		i = j;
	}
	free(pairs);
	free(tmp);
	return err;
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
