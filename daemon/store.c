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

#define SCHEMA_VERSION 1
#define STR_(x) #x
#define STR(x) STR_(x)

#define BUSY_TIMEOUT_MS 5000         /* how long a reader or writer waits for a lock */
#define NAME_MAX_BYTES 255           /* longest process or thread name accepted */
#define STACK_MAX_BYTES (64 * 1024)  /* longest folded stack accepted */
#define CACHE_MAX_ENTRIES 65536      /* per cache; the cache is emptied when full */
#define CACHE_MAX_BYTES (16u << 20)  /* key text per cache; the cache is emptied when over */
#define PENDING_MAX_ROWS 65536       /* rows merged in memory before they are written out early */

/* The whole schema, created in one transaction when the database is new. */
static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS names(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
	"CREATE TABLE IF NOT EXISTS stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL,"
	" folded TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS stacks_hash ON stacks(hash);"
	"CREATE TABLE IF NOT EXISTS samples(ts INTEGER NOT NULL, pid INTEGER NOT NULL,"
	" tid INTEGER NOT NULL, comm_id INTEGER NOT NULL, thread_id INTEGER NOT NULL,"
	" stack_id INTEGER NOT NULL, count INTEGER NOT NULL);"
	"CREATE INDEX IF NOT EXISTS samples_pid_ts ON samples(pid, ts);"
	"CREATE INDEX IF NOT EXISTS samples_ts ON samples(ts);"
	"INSERT INTO meta(key, value) VALUES ('schema_version', " STR(SCHEMA_VERSION) ");";

/* Aggregation by (process name, stack): sum per id pair first, then name the survivors. ?1 = from,
 * ?2 = to, ?3 = pid, ?4 = tid. */
#define QUERY_HEAD                                                                 \
	"SELECT n.name, s.folded, a.c FROM (SELECT comm_id, stack_id, sum(count) AS c" \
	" FROM samples WHERE ts >= ?1 AND ts < ?2"
#define QUERY_TAIL                                                                 \
	" GROUP BY comm_id, stack_id) AS a JOIN names AS n ON n.id = a.comm_id"         \
	" JOIN stacks AS s ON s.id = a.stack_id ORDER BY a.c DESC, n.name, s.folded"

enum { Q_ANY = 0, Q_PID = 1, Q_TID = 2, Q_PID_TID = 3, Q_MAX };

static const char *const query_sql[Q_MAX] = {
	[Q_ANY] = QUERY_HEAD QUERY_TAIL,
	[Q_PID] = QUERY_HEAD " AND pid = ?3" QUERY_TAIL,
	[Q_TID] = QUERY_HEAD " AND tid = ?4" QUERY_TAIL,
	[Q_PID_TID] = QUERY_HEAD " AND pid = ?3 AND tid = ?4" QUERY_TAIL,
};

/* One entry of a text -> id cache; key NULL marks a free slot. */
struct cache_slot {
	char *key;
	size_t len;
	uint64_t hash;
	int64_t id;
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

struct store {
	sqlite3 *db;
	enum store_mode mode;
	bool in_tx;
	sqlite3_stmt *name_get, *name_put, *stack_get, *stack_put, *sample_put;
	sqlite3_stmt *begin, *commit, *rollback;
	sqlite3_stmt *query[Q_MAX];
	sqlite3_stmt *count_stacks, *count_samples, *page_count, *page_size;
	struct id_cache names, stacks;
	struct pending pending;
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

/* Finds key's id; false when not cached. */
static bool cache_get(const struct id_cache *c, const char *key, size_t len, uint64_t hash, int64_t *id)
{
	if (!c->cap)
		return false;
	for (size_t i = hash & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
		const struct cache_slot *e = &c->slots[i];

		if (!e->key)
			return false;
		if (e->hash == hash && e->len == len && memcmp(e->key, key, len) == 0) {
			*id = e->id;
			return true;
		}
	}
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
static void cache_put(struct id_cache *c, const char *key, size_t len, uint64_t hash, int64_t id)
{
	struct cache_slot e = { .len = len, .hash = hash, .id = id };

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

/* The id of a name, from the cache, the table, or a new row. */
static int name_id(struct store *st, const char *name, int64_t *id)
{
	size_t len = strlen(name);
	uint64_t hash = fnv1a(name, len);
	int rc;

	if (cache_get(&st->names, name, len, hash, id))
		return 0;
	sqlite3_bind_text(st->name_get, 1, name, (int)len, SQLITE_STATIC);
	rc = sqlite3_step(st->name_get);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st->name_get, 0);
		sqlite3_reset(st->name_get);
	} else if (rc == SQLITE_DONE) {
		int err;

		sqlite3_reset(st->name_get);
		sqlite3_bind_text(st->name_put, 1, name, (int)len, SQLITE_STATIC);
		err = run(st, st->name_put, "cannot write a name");
		if (err)
			return err;
		*id = sqlite3_last_insert_rowid(st->db);
	} else {
		return fail(st, st->name_get, rc, "cannot read names");
	}
	cache_put(&st->names, name, len, hash, *id);
	return 0;
}

/* The id of a folded stack: rows with the same hash are compared by text, so a hash collision gets
 * a row of its own. */
static int stack_id(struct store *st, const char *folded, int64_t *id)
{
	size_t len = strlen(folded);
	uint64_t hash = fnv1a(folded, len);
	bool found = false;
	int rc = SQLITE_DONE, err;

	if (cache_get(&st->stacks, folded, len, hash, id))
		return 0;
	sqlite3_bind_int64(st->stack_get, 1, (sqlite3_int64)hash);
	while (!found && (rc = sqlite3_step(st->stack_get)) == SQLITE_ROW) {
		const unsigned char *text = sqlite3_column_text(st->stack_get, 1);
		size_t n = (size_t)sqlite3_column_bytes(st->stack_get, 1);

		if (text && n == len && memcmp(text, folded, len) == 0) {
			*id = sqlite3_column_int64(st->stack_get, 0);
			found = true;
		}
	}
	if (!found && rc != SQLITE_DONE)
		return fail(st, st->stack_get, rc, "cannot read stacks");
	sqlite3_reset(st->stack_get);
	if (!found) {
		sqlite3_bind_int64(st->stack_put, 1, (sqlite3_int64)hash);
		sqlite3_bind_text(st->stack_put, 2, folded, (int)len, SQLITE_STATIC);
		err = run(st, st->stack_put, "cannot write a stack");
		if (err)
			return err;
		*id = sqlite3_last_insert_rowid(st->db);
	}
	cache_put(&st->stacks, folded, len, hash, *id);
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
	return 0;
}

/* Prepares one statement for the life of the store. */
static int prepare(struct store *st, sqlite3_stmt **stmt, const char *sql)
{
	int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, NULL);

	return rc == SQLITE_OK ? 0 : fail(st, NULL, rc, "cannot prepare a statement");
}

static int prepare_all(struct store *st)
{
	int err = 0;

	err = err ?: prepare(st, &st->name_get, "SELECT id FROM names WHERE name = ?1");
	err = err ?: prepare(st, &st->name_put, "INSERT INTO names(name) VALUES (?1)");
	err = err ?: prepare(st, &st->stack_get, "SELECT id, folded FROM stacks WHERE hash = ?1");
	err = err ?: prepare(st, &st->stack_put, "INSERT INTO stacks(hash, folded) VALUES (?1, ?2)");
	err = err ?: prepare(st, &st->sample_put,
			     "INSERT INTO samples(ts, pid, tid, comm_id, thread_id, stack_id, count)"
			     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
	/* IMMEDIATE takes the write lock at once, so a busy database shows here, not mid-flush. */
	err = err ?: prepare(st, &st->begin, "BEGIN IMMEDIATE");
	err = err ?: prepare(st, &st->commit, "COMMIT");
	err = err ?: prepare(st, &st->rollback, "ROLLBACK");
	for (int q = 0; q < Q_MAX; q++)
		err = err ?: prepare(st, &st->query[q], query_sql[q]);
	err = err ?: prepare(st, &st->count_stacks, "SELECT count(*) FROM stacks");
	err = err ?: prepare(st, &st->count_samples, "SELECT count(*) FROM samples");
	err = err ?: prepare(st, &st->page_count, "PRAGMA page_count");
	err = err ?: prepare(st, &st->page_size, "PRAGMA page_size");
	return err;
}

/* Checks that this is a flamed database of a version we understand. */
static int check_schema(struct store *st)
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
	return 0;
}

/* Read-write setup: WAL, synchronous=NORMAL, the schema when the database is empty. */
static int setup_write(struct store *st)
{
	sqlite3_stmt *stmt = NULL;
	const unsigned char *mode;
	int64_t tables = 0;
	bool wal;
	int rc, err;

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
	err = sql_int(st, "SELECT count(*) FROM sqlite_master", &tables, NULL);
	if (!err && tables == 0)
		err = sql_exec(st, schema_sql, "cannot create the schema");
	if (!err)
		err = check_schema(st);
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
	return st->mode == STORE_READ_WRITE ? setup_write(st) : check_schema(st);
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

void store_close(struct store *st)
{
	if (!st)
		return;
	if (st->in_tx)
		abandon(st);
	sqlite3_finalize(st->name_get);
	sqlite3_finalize(st->name_put);
	sqlite3_finalize(st->stack_get);
	sqlite3_finalize(st->stack_put);
	sqlite3_finalize(st->sample_put);
	sqlite3_finalize(st->begin);
	sqlite3_finalize(st->commit);
	sqlite3_finalize(st->rollback);
	for (int q = 0; q < Q_MAX; q++)
		sqlite3_finalize(st->query[q]);
	sqlite3_finalize(st->count_stacks);
	sqlite3_finalize(st->count_samples);
	sqlite3_finalize(st->page_count);
	sqlite3_finalize(st->page_size);
	sqlite3_close(st->db);
	cache_clear(&st->names);
	cache_clear(&st->stacks);
	pending_free(&st->pending);
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
	err = err ?: stack_id(st, s->folded, &r.stack_id);
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

int store_query_stacks(struct store *st, const struct store_filter *f, store_stack_cb cb, void *ctx)
{
	const struct store_filter all = { .pid = -1, .tid = -1, .from = INT64_MIN, .to = INT64_MAX };
	sqlite3_stmt *stmt;
	int q, rc, ret = 0;

	if (!st || !cb)
		return -EINVAL;
	if (!f)
		f = &all;
	if (f->pid < -1 || f->pid > UINT32_MAX || f->tid < -1 || f->tid > UINT32_MAX)
		return set_err(st, -EINVAL, "invalid filter: pid and tid are -1 (any) or 0 to 4294967295");
	q = (f->pid >= 0 ? Q_PID : 0) | (f->tid >= 0 ? Q_TID : 0);
	stmt = st->query[q];
	sqlite3_bind_int64(stmt, 1, f->from);
	sqlite3_bind_int64(stmt, 2, f->to);
	if (f->pid >= 0)
		sqlite3_bind_int64(stmt, 3, f->pid);
	if (f->tid >= 0)
		sqlite3_bind_int64(stmt, 4, f->tid);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *comm = (const char *)sqlite3_column_text(stmt, 0);
		const char *folded = (const char *)sqlite3_column_text(stmt, 1);
		sqlite3_int64 count = sqlite3_column_int64(stmt, 2);

		if (!comm || !folded) {
			ret = set_err(st, -ENOMEM, "out of memory reading a stack");
			break;
		}
		ret = cb(comm, folded, (uint64_t)count, ctx);
		if (ret)
			break;
	}
	if (!ret && rc != SQLITE_DONE)
		return fail(st, stmt, rc, "cannot query stacks");
	sqlite3_reset(stmt);
	return ret;
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
