/* store_query.c - the read path: a window planned over raw rows and rollups (rollup.h), summed in memory, named, sorted and handed to the caller's callback. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "store.h"
#include "store_impl.h"
#include "store_rollup_rows.h"
#include "store_stmts.h"

#define BULK_IDS 2048                 /* more ids to resolve than this: read the whole table once */
#define QUERY_MAX_CELLS (1u << 22)    /* distinct (pid, name, stack) a query sums at most (-E2BIG) */
#define QUERY_MAX_FRAMES (1u << 24)   /* frame references of the stacks of one answer at most (-E2BIG) */
#define DENSE_MAX_ID (1 << 22)        /* frame ids below this map to answers through an array (16 MiB) */

/* Parameters of the statements run per piece of a plan: ?1 piece from, ?2 piece to, ?3 pid, ?4 tid
 * (NULL: any), ?5 process name id (NULL: any), ?6 rollup span, ?7 the window's from (timeline steps
 * start there), ?8 step, ?9 the first bucket start >= ?1. Raw rows are found by samples(ts), a pid
 * filters them; a one-pid variant of rollups walks the piece's buckets and seeks (span, bucket, pid) in
 * each, instead of reading every process's rows of those buckets. */
#define AND_PID " AND pid = ?3"
#define RAW_WHERE(pid) " FROM samples WHERE ts >= ?1 AND ts < ?2" pid " AND (?4 IS NULL OR tid = ?4)" \
		       " AND (?5 IS NULL OR comm_id = ?5)"
#define ROLLUP_WHERE " FROM rollups WHERE span = ?6 AND bucket >= ?1 AND bucket < ?2 AND (?5 IS NULL OR comm_id = ?5)"
#define ROLLUP_PID(cols) "WITH RECURSIVE b(x) AS (SELECT ?9 WHERE ?9 < ?2 UNION ALL SELECT x + ?6 FROM b"   \
			 " WHERE x + ?6 < ?2) SELECT " cols " FROM b JOIN rollups AS r ON r.span = ?6"       \
			 " AND r.bucket = b.x AND r.pid = ?3 AND (?5 IS NULL OR r.comm_id = ?5)"

static const char *const query_sql[QK_MAX][QV_MAX] = {
	[QK_RAW] = { "SELECT pid, comm_id, stack_id, count" RAW_WHERE(""),
		     "SELECT pid, comm_id, stack_id, count" RAW_WHERE(AND_PID) },
	[QK_ROLLUP] = { "SELECT pid, comm_id, stacks" ROLLUP_WHERE, ROLLUP_PID("r.pid, r.comm_id, r.stacks") },
	[QK_RAW_STEPS] = { "SELECT flamed_step(ts, ?7, ?8) AS t, 0, sum(count)" RAW_WHERE("") " GROUP BY t",
			   "SELECT flamed_step(ts, ?7, ?8) AS t, 0, sum(count)" RAW_WHERE(AND_PID) " GROUP BY t" },
	[QK_RAW_STEPS_TID] = { "SELECT flamed_step(ts, ?7, ?8) AS t, tid, sum(count)" RAW_WHERE("") " GROUP BY t, tid",
			       "SELECT flamed_step(ts, ?7, ?8) AS t, tid, sum(count)" RAW_WHERE(AND_PID)
			       " GROUP BY t, tid" },
	[QK_ROLLUP_STEPS] = { "SELECT flamed_step(bucket, ?7, ?8) AS t, 0, sum(total)" ROLLUP_WHERE " GROUP BY t",
			      ROLLUP_PID("flamed_step(r.bucket, ?7, ?8) AS t, 0, sum(r.total)") " GROUP BY t" },
};

/* Per pid of a raw piece: samples, first and last second, and the process name of its newest row
 * (ties within one second: the row written last), by a seek of samples(ts). */
static const char raw_procs_sql[] =
	"SELECT a.pid, a.c, a.first, a.last, (SELECT comm_id FROM samples AS s WHERE s.pid = a.pid"
	" AND s.ts = a.last AND (?5 IS NULL OR s.comm_id = ?5) ORDER BY s.rowid DESC LIMIT 1)"
	" FROM (SELECT pid, sum(count) AS c, min(ts) AS first, max(ts) AS last FROM samples"
	" WHERE ts >= ?1 AND ts < ?2 AND (?5 IS NULL OR comm_id = ?5) GROUP BY pid) AS a";

/* Per pid of a rollup piece: samples, first bucket, newest sample and the name it had (SQLite takes a
 * bare column from the row of max()). */
static const char rollup_procs_sql[] =
	"SELECT pid, sum(total), min(bucket), max(last), comm_id FROM rollups"
	" WHERE span = ?6 AND bucket >= ?1 AND bucket < ?2 AND (?5 IS NULL OR comm_id = ?5) GROUP BY pid";

/* Per tid of pid ?3 (raw rows only), named by the thread name of its newest row in the window. */
static const char threads_sql[] =
	"SELECT a.tid, n.name, a.c FROM (SELECT tid, sum(count) AS c, max(ts) AS last FROM samples"
	" WHERE pid = ?3 AND ts >= ?1 AND ts < ?2 AND (?5 IS NULL OR comm_id = ?5) GROUP BY tid) AS a"
	" JOIN names AS n ON n.id = (SELECT thread_id FROM samples AS s WHERE s.pid = ?3"
	" AND s.ts = a.last AND s.tid = a.tid AND (?5 IS NULL OR s.comm_id = ?5) ORDER BY s.rowid DESC LIMIT 1)"
	" ORDER BY a.c DESC, a.tid";

int store_prepare_queries(struct store *st)
{
	const char *ids = st->version >= 2 ? "frame_ids" : "NULL";
	char sql[160];
	int err = 0;

	for (int k = 0; k < QK_MAX; k++)
		for (int v = 0; v < QV_MAX; v++)
			if (st->version >= 3 || (k != QK_ROLLUP && k != QK_ROLLUP_STEPS))
				err = err ?: store_prepare(st, &st->query[k][v], query_sql[k][v]);
	err = err ?: store_prepare(st, &st->raw_procs, raw_procs_sql);
	err = err ?: store_prepare(st, &st->threads, threads_sql);
	err = err ?: store_prepare(st, &st->name_of, "SELECT name FROM names WHERE id = ?1");
	snprintf(sql, sizeof(sql), "SELECT folded, %s FROM stacks WHERE id = ?1", ids);
	err = err ?: store_prepare(st, &st->stack_of, sql);
	snprintf(sql, sizeof(sql), "SELECT id, folded, %s FROM stacks", ids);
	err = err ?: store_prepare(st, &st->stacks_all, sql);
	err = err ?: store_prepare(st, &st->stacks_max, "SELECT max(id) FROM stacks");
	err = err ?: store_prepare(st, &st->raw_range, "SELECT (SELECT min(ts) FROM samples), (SELECT max(ts) FROM samples)");
	if (st->version >= 2)
		err = err ?: store_prepare(st, &st->frames_max, "SELECT max(id) FROM frames");
	if (st->version >= 2)
		err = err ?: store_prepare(st, &st->frames_all, st->version >= 4 ?
				     "SELECT f.id, f.name, m.path, m.build_id, f.file, f.start_line, f.line FROM frames AS f"
				     " JOIN modules AS m ON m.id = f.module_id" :
				     "SELECT f.id, f.name, m.path, m.build_id, '', 0, 0 FROM frames AS f"
				     " JOIN modules AS m ON m.id = f.module_id");
	if (st->version < 3)
		return err;
	err = err ?: store_prepare(st, &st->rollup_procs, rollup_procs_sql);
	err = err ?: store_prepare(st, &st->rollup_first, "SELECT min(bucket) FROM rollups WHERE span = ?1 AND bucket >= ?2");
	err = err ?: store_prepare(st, &st->rollup_newest,
			     "SELECT max(last) FROM rollups WHERE span = ?1 AND bucket ="
			     " (SELECT max(bucket) FROM rollups WHERE span = ?1)");
	return err;
}

/* Every sample. */
static const struct store_filter filter_all = { .pid = -1, .tid = -1, .from = INT64_MIN, .to = INT64_MAX };

/* One query's view of the store: the filter checked, the process name resolved, the rollup markers
 * read, all in one read transaction (a fold committing meanwhile cannot make a second count twice). */
struct qrun {
	struct store *st;
	struct store_filter f;
	int64_t comm_id; /* -1: any */
	bool none;       /* the name filter names no stored name: nothing matches */
	bool tx;         /* this query began the read transaction */
	struct rollup_tiers tiers;
};

/* Checks a filter's pid and tid; -EINVAL with the reason in errmsg. */
static int check_filter(struct store *st, const struct store_filter *f)
{
	if (f->pid < -1 || f->pid > UINT32_MAX || f->tid < -1 || f->tid > UINT32_MAX)
		return store_set_err(st, -EINVAL, "invalid filter: pid and tid are -1 (any) or 0 to 4294967295");
	return 0;
}

/* Ends the read transaction the query began (nothing was written: a failed commit loses nothing). */
static void qrun_end(struct qrun *q)
{
	if (q->tx && sqlite3_exec(q->st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		sqlite3_exec(q->st->db, "ROLLBACK", NULL, NULL, NULL);
	q->tx = false;
}

/* The id of the filter's process name: *found false when no such name is stored. */
static int comm_lookup(struct store *st, const char *comm, int64_t *id, bool *found)
{
	sqlite3_bind_text(st->name_get, 1, comm, -1, SQLITE_STATIC);
	return store_step_int(st, st->name_get, id, found, "cannot read names");
}

/* Starts a query over f (NULL: every sample). */
static int qrun_begin(struct store *st, const struct store_filter *f, struct qrun *q)
{
	bool found = true;
	int err;

	*q = (struct qrun){ .st = st, .f = f ? *f : filter_all, .comm_id = -1 };
	err = check_filter(st, &q->f);
	if (err)
		return err;
	if (sqlite3_get_autocommit(st->db)) {
		int rc = sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL);

		if (rc != SQLITE_OK)
			return store_fail(st, NULL, rc, "cannot start a read");
		q->tx = true;
	}
	err = store_load_tiers(st, &q->tiers);
	if (!err && q->f.comm)
		err = comm_lookup(st, q->f.comm, &q->comm_id, &found);
	q->none = !found;
	if (err)
		qrun_end(q);
	return err;
}

/* Binds a statement's parameters for one piece (those it does not have are ignored). */
static void bind_piece(sqlite3_stmt *s, const struct qrun *q, const struct rollup_piece *p, int64_t step)
{
	sqlite3_bind_int64(s, 1, p->from);
	sqlite3_bind_int64(s, 2, p->to);
	if (q->f.pid >= 0)
		sqlite3_bind_int64(s, 3, q->f.pid);
	if (q->f.tid >= 0)
		sqlite3_bind_int64(s, 4, q->f.tid);
	else
		sqlite3_bind_null(s, 4);
	if (q->comm_id >= 0)
		sqlite3_bind_int64(s, 5, q->comm_id);
	else
		sqlite3_bind_null(s, 5);
	if (p->level >= 0) {
		sqlite3_bind_int64(s, 6, rollup_span[p->level]);
		sqlite3_bind_int64(s, 9, rollup_ceil(p->from, rollup_span[p->level]));
	}
	sqlite3_bind_int64(s, 7, q->f.from);
	sqlite3_bind_int64(s, 8, step);
}

typedef int (*piece_row_fn)(struct qrun *q, sqlite3_stmt *s, const struct rollup_piece *p, void *ctx);

/* Steps a bound statement, handing each row to fn; stops at its first non-zero return. Resets it. */
static int each_row(struct qrun *q, sqlite3_stmt *s, const struct rollup_piece *p, piece_row_fn fn, void *ctx)
{
	int rc, ret = 0;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW && !(ret = fn(q, s, p, ctx)))
		;
	if (!ret && rc != SQLITE_DONE)
		return store_fail(q->st, s, rc, "cannot query samples");
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return ret;
}

/* Runs raw (a raw piece) or rollup statements over each piece of the window's plan. */
static int each_piece(struct qrun *q, sqlite3_stmt *raw, sqlite3_stmt *rollup, const struct rollup_plan_opts *o,
		      piece_row_fn fn, void *ctx)
{
	struct rollup_piece pieces[ROLLUP_PIECES_MAX];
	size_t n;
	int err = 0;

	if (q->none)
		return 0;
	n = rollup_plan(&q->tiers, q->f.from, q->f.to, o, pieces);
	/* Whole host: every process's rollup rows of the pieces are read, a range of the rollups b-tree
	 * each; its pages are hinted to the kernel first, so that they come from disk together. */
	for (size_t i = 0; rollup && q->f.pid < 0 && i < n; i++)
		if (pieces[i].level != ROLLUP_RAW)
			store_prefetch_range(q->st, "rollups", (int64_t[2]){ rollup_span[pieces[i].level], pieces[i].from },
					     (int64_t[2]){ rollup_span[pieces[i].level], pieces[i].to - 1 });
	for (size_t i = 0; !err && i < n; i++) {
		sqlite3_stmt *s = pieces[i].level == ROLLUP_RAW ? raw : rollup;

		if (!s)
			continue; /* a database without rollups */
		bind_piece(s, q, &pieces[i], o->step);
		err = each_row(q, s, &pieces[i], fn, ctx);
	}
	return err;
}

/* An open-addressing map of int64 ids to indexes, at most half full. */
struct idmap {
	struct idslot {
		int64_t key;
		uint32_t val;
		bool used;
	} *slots;
	size_t cap, n;
};

static void idmap_free(struct idmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static struct idslot *idmap_slot(const struct idmap *m, int64_t key)
{
	size_t i = ((uint64_t)key * 0x9e3779b97f4a7c15ULL) >> 17;

	for (i &= m->cap - 1; m->slots[i].used && m->slots[i].key != key; i = (i + 1) & (m->cap - 1))
		;
	return &m->slots[i];
}

/* The index of key: *val and true when present. */
static bool idmap_get(const struct idmap *m, int64_t key, uint32_t *val)
{
	const struct idslot *s = m->cap ? idmap_slot(m, key) : NULL;

	if (!s || !s->used)
		return false;
	*val = s->val;
	return true;
}

/* The index of key, given the next free index (*next, then moved on) when new; *added says which. */
static int idmap_put(struct idmap *m, int64_t key, uint32_t *next, uint32_t *val, bool *added)
{
	struct idslot *s;

	if ((m->n + 1) * 2 > m->cap) {
		struct idmap bigger = { .cap = m->cap ? m->cap * 2 : 256, .n = m->n };

		bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
		if (!bigger.slots)
			return -ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->slots[i].used)
				*idmap_slot(&bigger, m->slots[i].key) = m->slots[i];
		free(m->slots);
		*m = bigger;
	}
	s = idmap_slot(m, key);
	*added = !s->used;
	if (!s->used) {
		*s = (struct idslot){ .key = key, .val = (*next)++, .used = true };
		m->n++;
	}
	*val = s->val;
	return 0;
}

/* One frame of an answer: a frame row (id > 0) or a frame name split out of a stack's stored text
 * (id 0, module, build-id and file ""). text is name NUL module NUL build-id NUL file NUL, NULL until
 * read. */
struct qframe {
	int64_t id;
	char *text;
	size_t module_off, build_id_off, file_off; /* the name's length is module_off - 1 */
	int start_line, line;                     /* a Python frame's source; else 0 */
	uint32_t rank; /* order of the names as if each ended with ';' */
};

/* One stack of an answer, as runs of frame indexes in the answer's seq. */
struct qstack {
	int64_t id;
	uint32_t tok_off, ntok; /* its text, frame by frame: what it is named and sorted by */
	uint32_t fr_off, nfr;   /* its frames for pprof (nfr 0: stored without frames) */
	uint32_t rank;          /* order of the texts */
	bool loaded;
};

/* A summed answer being named and sorted. */
struct answer {
	struct store *st;
	bool want_frames;
	struct idmap stack_of, frame_of, name_idx, comm_of;
	struct qstack *stacks;
	uint32_t nstacks;
	struct qframe *frames;
	uint32_t nframes, frames_cap;
	uint32_t *seq;       /* frame indexes of the stacks' runs */
	uint32_t *ranks;     /* the rank of each seq entry's frame, once ranked */
	size_t nseq, seq_cap;
	uint32_t *dense;     /* frame id -> index + 1 (0: none yet), for ids up to ndense; larger use frame_of */
	int64_t ndense;
	char **comms;      /* names of the process name ids, by index */
	uint32_t *comm_rank;
	uint32_t ncomms;
};

static void answer_free(struct answer *a)
{
	idmap_free(&a->stack_of);
	idmap_free(&a->frame_of);
	idmap_free(&a->name_idx);
	idmap_free(&a->comm_of);
	free(a->stacks);
	for (uint32_t i = 0; i < a->nframes; i++)
		free(a->frames[i].text);
	free(a->frames);
	free(a->seq);
	free(a->ranks);
	free(a->dense);
	for (uint32_t i = 0; i < a->ncomms; i++)
		free(a->comms[i]);
	free(a->comms);
	free(a->comm_rank);
}

/* Appends frame index f to seq. */
static int seq_push(struct answer *a, uint32_t f)
{
	if (a->nseq == a->seq_cap) {
		size_t cap = a->seq_cap ? a->seq_cap * 2 : 4096;
		uint32_t *s = cap <= QUERY_MAX_FRAMES ? reallocarray(a->seq, cap, sizeof(*s)) : NULL;

		if (!s)
			return store_set_err(a->st, cap <= QUERY_MAX_FRAMES ? -ENOMEM : -E2BIG,
					     "the stacks of this answer have too many frames: narrow the window");
		a->seq = s;
		a->seq_cap = cap;
	}
	a->seq[a->nseq++] = f;
	return 0;
}

/* A new frame slot (index *idx). */
static int frame_new(struct answer *a, int64_t id, uint32_t *idx)
{
	if (a->nframes == a->frames_cap) {
		uint32_t cap = a->frames_cap ? a->frames_cap * 2 : 1024;
		struct qframe *f = reallocarray(a->frames, cap, sizeof(*f));

		if (!f)
			return store_set_err(a->st, -ENOMEM, "out of memory naming frames");
		a->frames = f;
		a->frames_cap = cap;
	}
	a->frames[a->nframes] = (struct qframe){ .id = id };
	*idx = a->nframes++;
	return 0;
}

/* FNV-1a of a frame name, as the key of the map of names split out of texts. */
static int64_t name_key(const char *s, size_t len)
{
	return (int64_t)hash_bytes(HASH_FNV_OFFSET, s, len);
}

/* The frame index of a name split out of a stored text (names are kept once, by hash and text). */
static int name_frame(struct answer *a, const char *name, size_t len, uint32_t *idx)
{
	int64_t key = name_key(name, len);
	uint32_t next = a->nframes;
	bool added;
	int err;

	/* Probe on: two names with one hash take consecutive keys. */
	for (;; key++) {
		err = idmap_put(&a->name_idx, key, &next, idx, &added);
		if (err)
			return store_set_err(a->st, err, "out of memory naming frames");
		if (added)
			break;
		if (strlen(a->frames[*idx].text) == len && !memcmp(a->frames[*idx].text, name, len))
			return 0;
	}
	err = frame_new(a, 0, idx);
	if (err)
		return err;
	a->frames[*idx].text = malloc(len + 4);
	if (!a->frames[*idx].text)
		return store_set_err(a->st, -ENOMEM, "out of memory naming frames");
	memcpy(a->frames[*idx].text, name, len);
	memset(a->frames[*idx].text + len, 0, 4);
	a->frames[*idx].module_off = len + 1;
	a->frames[*idx].build_id_off = len + 2;
	a->frames[*idx].file_off = len + 3;
	return 0;
}

/* The frame index of frame row id (its text read later). */
static int id_frame(struct answer *a, int64_t id, uint32_t *idx)
{
	uint32_t next = a->nframes;
	bool added;
	int err;

	if (id < a->ndense) {
		if (a->dense[id]) {
			*idx = a->dense[id] - 1;
			return 0;
		}
		err = frame_new(a, id, idx);
		if (!err)
			a->dense[id] = *idx + 1;
		return err;
	}
	err = idmap_put(&a->frame_of, id, &next, idx, &added);
	if (err)
		return store_set_err(a->st, err, "out of memory naming frames");
	return added ? frame_new(a, id, idx) : 0;
}

/* The index of frame row id in the answer, when a stack names it. */
static bool frame_index(const struct answer *a, int64_t id, uint32_t *idx)
{
	if (id < 0 || id >= a->ndense)
		return idmap_get(&a->frame_of, id, idx);
	if (!a->dense[id])
		return false;
	*idx = a->dense[id] - 1;
	return true;
}

/* Frame ids are dense from 1: an array maps them to indexes, when the largest is not too large. */
static int dense_init(struct answer *a)
{
	int64_t max = 0;
	bool found = false;
	int err;

	if (!a->st->frames_max)
		return 0;
	err = store_step_int(a->st, a->st->frames_max, &max, &found, "cannot read frames");
	if (err || !found || max < 0 || max >= DENSE_MAX_ID)
		return err;
	a->dense = calloc((size_t)max + 1, sizeof(*a->dense));
	if (!a->dense)
		return store_set_err(a->st, -ENOMEM, "out of memory naming frames");
	a->ndense = max + 1;
	return 0;
}

/* Splits a stored text at ';' into frames: s's tok run. */
static int split_text(struct answer *a, struct qstack *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int err = 0;

	s->tok_off = (uint32_t)a->nseq;
	while (!err && p <= end) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		size_t n = semi ? (size_t)(semi - p) : (size_t)(end - p);
		uint32_t f;

		err = name_frame(a, p, n, &f);
		err = err ?: seq_push(a, f);
		p += n + 1;
	}
	s->ntok = (uint32_t)(a->nseq - s->tok_off);
	return err;
}

/* Decodes frame_ids into frames: s's fr run. */
static int split_ids(struct answer *a, struct qstack *s, const unsigned char *blob, size_t len)
{
	size_t pos = 0;
	int err = 0;

	s->fr_off = (uint32_t)a->nseq;
	while (!err && pos < len) {
		uint64_t id = 0;
		uint32_t f;

		if (rollup_get_varint(blob, len, &pos, &id) < 0 || id == 0 || id > INT64_MAX ||
		    a->nseq - s->fr_off >= FRAMES_MAX)
			return store_set_err(a->st, -EIO, "stack %lld's frame ids are damaged", (long long)s->id);
		err = id_frame(a, (int64_t)id, &f);
		err = err ?: seq_push(a, f);
	}
	s->nfr = (uint32_t)(a->nseq - s->fr_off);
	return err;
}

/* Takes one stack row: its text (or, stored without, its frames' names) and, for pprof, its frames. */
static int take_stack(struct answer *a, uint32_t idx, const char *text, size_t tlen, const unsigned char *blob,
		      size_t blen)
{
	struct qstack *s = &a->stacks[idx];
	int err = 0;

	if (s->loaded)
		return 0;
	if (!tlen && !blob)
		return store_set_err(a->st, -EIO, "stack %lld has neither text nor frames: the database is damaged",
				     (long long)s->id);
	if (tlen)
		err = split_text(a, s, text, tlen);
	if (!err && blob && (a->want_frames || !tlen))
		err = split_ids(a, s, blob, blen);
	if (!err && !tlen) {
		s->tok_off = s->fr_off;
		s->ntok = s->nfr;
	}
	if (!err && !s->ntok)
		return store_set_err(a->st, -EIO, "stack %lld has no frames: the database is damaged", (long long)s->id);
	s->loaded = !err;
	return err;
}

/* Hands each row of stmt (id, text, frame_ids) or (text, frame_ids) for id to take_stack. */
static int read_stack_row(struct answer *a, sqlite3_stmt *s, int col, uint32_t idx)
{
	return take_stack(a, idx, (const char *)sqlite3_column_text(s, col), (size_t)sqlite3_column_bytes(s, col),
			  sqlite3_column_blob(s, col + 1), (size_t)sqlite3_column_bytes(s, col + 1));
}

/* Reads every stack the answer names: one lookup each, or the whole table when they are many. */
static int load_stacks(struct answer *a)
{
	struct store *st = a->st;
	sqlite3_stmt *s = a->nstacks > BULK_IDS ? st->stacks_all : st->stack_of;
	int rc = SQLITE_DONE, err = 0;

	if (s == st->stacks_all) {
		store_prefetch_table(st, "stacks");
		while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
			uint32_t idx;

			if (idmap_get(&a->stack_of, sqlite3_column_int64(s, 0), &idx))
				err = read_stack_row(a, s, 1, idx);
		}
	} else {
		for (uint32_t i = 0; !err && i < a->nstacks; i++) {
			sqlite3_bind_int64(s, 1, a->stacks[i].id);
			rc = sqlite3_step(s);
			if (rc == SQLITE_ROW)
				err = read_stack_row(a, s, 0, i);
			if (rc == SQLITE_ROW || rc == SQLITE_DONE)
				rc = sqlite3_reset(s) == SQLITE_OK ? SQLITE_DONE : SQLITE_ERROR;
			if (rc != SQLITE_DONE)
				break;
		}
	}
	if (!err && rc != SQLITE_DONE)
		return store_fail(st, s, rc, "cannot read stacks");
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	for (uint32_t i = 0; !err && i < a->nstacks; i++)
		if (!a->stacks[i].loaded)
			err = store_set_err(st, -EIO, "a sample names stack %lld, which is not stored: the database is"
					    " damaged", (long long)a->stacks[i].id);
	return err;
}

/* Takes a frame row's name, module path, build-id and file (columns col..col+3), start line and line
 * (col+4, col+5). */
static int take_frame(struct answer *a, sqlite3_stmt *s, int col, uint32_t idx)
{
	struct qframe *f = &a->frames[idx];
	const unsigned char *c[4];
	size_t len[4], off = 0;

	for (int i = 0; i < 4; i++) {
		c[i] = sqlite3_column_text(s, col + i);
		len[i] = (size_t)sqlite3_column_bytes(s, col + i);
		if (!c[i])
			return store_set_err(a->st, -EIO, "frame %lld is damaged", (long long)f->id);
	}
	f->text = malloc(len[0] + len[1] + len[2] + len[3] + 4);
	if (!f->text)
		return store_set_err(a->st, -ENOMEM, "out of memory naming frames");
	for (int i = 0; i < 4; i++) {
		memcpy(f->text + off, c[i], len[i] + 1);
		off += len[i] + 1;
	}
	f->module_off = len[0] + 1;
	f->build_id_off = len[0] + len[1] + 2;
	f->file_off = len[0] + len[1] + len[2] + 3;
	f->start_line = sqlite3_column_int(s, col + 4);
	f->line = sqlite3_column_int(s, col + 5);
	return 0;
}

/* Reads the frame rows the stacks name: one lookup each, or all when they are many. */
static int load_frames(struct answer *a)
{
	struct store *st = a->st;
	uint32_t want = 0;
	sqlite3_stmt *s;
	int rc = SQLITE_DONE, err = 0;

	for (uint32_t i = 0; i < a->nframes; i++)
		want += !a->frames[i].text;
	if (!want)
		return 0;
	s = want > BULK_IDS ? st->frames_all : st->frame_get;
	if (!s)
		return store_set_err(st, -EIO, "stacks name frames, but this database has none");
	if (s == st->frames_all) {
		store_prefetch_table(st, "frames");
		while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
			uint32_t idx;

			if (frame_index(a, sqlite3_column_int64(s, 0), &idx) && !a->frames[idx].text)
				err = take_frame(a, s, 1, idx);
		}
	} else {
		for (uint32_t i = 0; !err && i < a->nframes; i++) {
			if (a->frames[i].text)
				continue;
			sqlite3_bind_int64(s, 1, a->frames[i].id);
			rc = sqlite3_step(s);
			if (rc == SQLITE_ROW)
				err = take_frame(a, s, 0, i);
			if (rc == SQLITE_ROW || rc == SQLITE_DONE)
				rc = sqlite3_reset(s) == SQLITE_OK ? SQLITE_DONE : SQLITE_ERROR;
			if (rc != SQLITE_DONE)
				break;
		}
	}
	if (!err && rc != SQLITE_DONE)
		return store_fail(st, s, rc, "cannot read frames");
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	for (uint32_t i = 0; !err && i < a->nframes; i++)
		if (!a->frames[i].text)
			err = store_set_err(st, -EIO, "a stack names frame %lld, which is not stored: the database is"
					    " damaged", (long long)a->frames[i].id);
	return err;
}

/* strcmp of a + ta vs b + tb, where ta and tb are the characters that follow each name in a text
 * (';' before another frame, '\0' at the end). */
static int cmp_names(const char *a, int ta, const char *b, int tb)
{
	int ca, cb;

	while (*a && *a == *b)
		a++, b++;
	ca = *a ? (unsigned char)*a : ta;
	cb = *b ? (unsigned char)*b : tb;
	return ca - cb;
}

static int cmp_frame_names(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;

	return cmp_names(a->frames[*(const uint32_t *)x].text, ';', a->frames[*(const uint32_t *)y].text, ';');
}

/* Orders two stacks as their texts would be by strcmp, frame by frame: frames of the same name are
 * passed by rank; at the first that differ, the ranks decide unless one is a stack's last frame. */
static int cmp_stacks(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;
	const struct qstack *sx = &a->stacks[*(const uint32_t *)x], *sy = &a->stacks[*(const uint32_t *)y];
	const uint32_t *rx = a->ranks + sx->tok_off, *ry = a->ranks + sy->tok_off;
	uint32_t n = sx->ntok < sy->ntok ? sx->ntok : sy->ntok, i = 0;
	bool lx, ly;

	while (i < n && rx[i] == ry[i])
		i++;
	if (i == n)
		return (sx->ntok > sy->ntok) - (sx->ntok < sy->ntok);
	lx = i + 1 == sx->ntok;
	ly = i + 1 == sy->ntok;
	if (!lx && !ly)
		return rx[i] < ry[i] ? -1 : 1;
	return cmp_names(a->frames[a->seq[sx->tok_off + i]].text, lx ? '\0' : ';',
			 a->frames[a->seq[sy->tok_off + i]].text, ly ? '\0' : ';');
	return (sx->ntok > sy->ntok) - (sx->ntok < sy->ntok);
}

/* Ranks the frames by name, then the stacks by text. */
static int rank_stacks(struct answer *a)
{
	uint32_t *order;

	if (!a->nstacks)
		return 0;
	order = reallocarray(NULL, a->nframes > a->nstacks ? a->nframes : a->nstacks, sizeof(*order));
	if (!order)
		return store_set_err(a->st, -ENOMEM, "out of memory sorting stacks");
	for (uint32_t i = 0; i < a->nframes; i++)
		order[i] = i;
	qsort_r(order, a->nframes, sizeof(*order), cmp_frame_names, a);
	for (uint32_t i = 0; i < a->nframes; i++)
		a->frames[order[i]].rank = i && !cmp_frame_names(&order[i - 1], &order[i], a)
						   ? a->frames[order[i - 1]].rank : i;
	a->ranks = reallocarray(NULL, a->nseq ? a->nseq : 1, sizeof(*a->ranks));
	if (!a->ranks) {
		free(order);
		return store_set_err(a->st, -ENOMEM, "out of memory sorting stacks");
	}
	for (size_t i = 0; i < a->nseq; i++)
		a->ranks[i] = a->frames[a->seq[i]].rank;
	for (uint32_t i = 0; i < a->nstacks; i++)
		order[i] = i;
	qsort_r(order, a->nstacks, sizeof(*order), cmp_stacks, a);
	for (uint32_t i = 0; i < a->nstacks; i++) /* stacks of one text (their sources differ) share a rank */
		a->stacks[order[i]].rank =
			i && !cmp_stacks(&order[i - 1], &order[i], a) ? a->stacks[order[i - 1]].rank : i;
	free(order);
	return 0;
}

static int cmp_comms(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;

	return strcmp(a->comms[*(const uint32_t *)x], a->comms[*(const uint32_t *)y]);
}

/* Reads the names of the process name ids and ranks them. */
static int load_comms(struct answer *a, const int64_t *ids)
{
	struct store *st = a->st;
	uint32_t *order;
	int err = 0;

	a->comms = calloc(a->ncomms ? a->ncomms : 1, sizeof(*a->comms));
	a->comm_rank = calloc(a->ncomms ? a->ncomms : 1, sizeof(*a->comm_rank));
	order = calloc(a->ncomms ? a->ncomms : 1, sizeof(*order));
	if (!a->comms || !a->comm_rank || !order) {
		free(order);
		return store_set_err(st, -ENOMEM, "out of memory naming processes");
	}
	for (uint32_t i = 0; !err && i < a->ncomms; i++) {
		const unsigned char *name;
		int rc;

		sqlite3_bind_int64(st->name_of, 1, ids[i]);
		rc = sqlite3_step(st->name_of);
		name = rc == SQLITE_ROW ? sqlite3_column_text(st->name_of, 0) : NULL;
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			err = store_fail(st, st->name_of, rc, "cannot read names");
		else if (!name)
			err = store_set_err(st, -EIO, "a sample names process name %lld, which is not stored: the"
					    " database is damaged", (long long)ids[i]);
		else if (!(a->comms[i] = strdup((const char *)name)))
			err = store_set_err(st, -ENOMEM, "out of memory naming processes");
		sqlite3_reset(st->name_of);
		order[i] = i;
	}
	sqlite3_clear_bindings(st->name_of);
	if (!err) {
		qsort_r(order, a->ncomms, sizeof(*order), cmp_comms, a);
		for (uint32_t i = 0; i < a->ncomms; i++)
			a->comm_rank[order[i]] = i;
	}
	free(order);
	return err;
}

/* One row of a sorted answer: indexes into the answer's stacks and names. */
struct qrow {
	uint64_t count;
	uint32_t pid, comm, stack;
	uint32_t side; /* store_query_diff: 1 for the base window, 0 for the new one */
};

/* Most first; then pid (when the answer is per pid: else all 0), process name, stack text. */
static int cmp_rows(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;
	const struct qrow *rx = x, *ry = y;

	if (rx->count != ry->count)
		return rx->count > ry->count ? -1 : 1;
	if (rx->pid != ry->pid)
		return rx->pid < ry->pid ? -1 : 1;
	if (rx->comm != ry->comm)
		return a->comm_rank[rx->comm] < a->comm_rank[ry->comm] ? -1 : 1;
	return (a->stacks[rx->stack].rank > a->stacks[ry->stack].rank) -
	       (a->stacks[rx->stack].rank < a->stacks[ry->stack].rank);
}

/* By process name, then stack text, then side (base last): a diff's order. */
static int cmp_diff_rows(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;
	const struct qrow *rx = x, *ry = y;

	if (rx->comm != ry->comm)
		return a->comm_rank[rx->comm] < a->comm_rank[ry->comm] ? -1 : 1;
	if (rx->stack != ry->stack)
		return a->stacks[rx->stack].rank < a->stacks[ry->stack].rank ? -1 : 1;
	return (rx->side > ry->side) - (rx->side < ry->side);
}

typedef int (*row_cmp)(const void *x, const void *y, void *ctx);

/* By pid, process name, stack text and side: rows of one text next to each other. */
static int cmp_same_text(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;
	const struct qrow *rx = x, *ry = y;
	uint32_t kx = a->stacks[rx->stack].rank, ky = a->stacks[ry->stack].rank;

	if (rx->pid != ry->pid)
		return rx->pid < ry->pid ? -1 : 1;
	if (rx->comm != ry->comm)
		return rx->comm < ry->comm ? -1 : 1;
	if (kx != ky)
		return kx < ky ? -1 : 1;
	return (rx->side > ry->side) - (rx->side < ry->side);
}

/* Sums the rows of stacks that differ only in their frames' sources (Python lines): an answer by text
 * has one row per text. Returns the rows left. */
static size_t merge_same_text(struct answer *a, struct qrow *rows, size_t n)
{
	size_t out = 0;

	qsort_r(rows, n, sizeof(*rows), cmp_same_text, a);
	for (size_t i = 0; i < n; i++) {
		struct qrow *last = out ? &rows[out - 1] : NULL;

		if (last && !cmp_same_text(last, &rows[i], a))
			last->count = rows[i].count > UINT64_MAX - last->count ? UINT64_MAX : last->count + rows[i].count;
		else
			rows[out++] = rows[i];
	}
	return out;
}

/* Indexes the cells' stacks and names (*count of them), reads them, sorts the rows (*rows, one per cell,
 * side from the cell's bucket) by cmp. Unless the answer wants frames, rows of stacks with one text are
 * summed into one first (*count is then the rows left). */
static int answer_build(struct answer *a, const struct rollup_cell *c, size_t *count, row_cmp cmp,
			struct qrow **rows)
{
	int64_t *comm_ids = NULL;
	uint32_t next_comm = 0;
	size_t n = *count;
	int err = 0;

	*rows = calloc(n ? n : 1, sizeof(**rows));
	a->stacks = calloc(n ? n : 1, sizeof(*a->stacks));
	comm_ids = calloc(n ? n : 1, sizeof(*comm_ids));
	if (!*rows || !a->stacks || !comm_ids)
		err = store_set_err(a->st, -ENOMEM, "out of memory for the answer");
	for (size_t i = 0; !err && i < n; i++) {
		uint32_t s, cm;
		bool added;

		err = idmap_put(&a->stack_of, c[i].stack_id, &a->nstacks, &s, &added);
		if (!err && added)
			a->stacks[s] = (struct qstack){ .id = c[i].stack_id };
		err = err ?: idmap_put(&a->comm_of, c[i].comm_id, &next_comm, &cm, &added);
		if (!err && added)
			comm_ids[cm] = c[i].comm_id;
		if (err)
			err = store_set_err(a->st, err, "out of memory for the answer");
		else
			(*rows)[i] = (struct qrow){ .count = c[i].count, .pid = c[i].pid, .comm = cm, .stack = s,
						    .side = (uint32_t)c[i].bucket };
	}
	a->ncomms = next_comm;
	err = err ?: dense_init(a);
	err = err ?: load_stacks(a);
	err = err ?: load_frames(a);
	err = err ?: rank_stacks(a);
	err = err ?: load_comms(a, comm_ids);
	free(comm_ids);
	if (!err && !a->want_frames) /* by text: one row per text, whatever the frames' sources */
		*count = n = merge_same_text(a, *rows, n);
	if (!err)
		qsort_r(*rows, n, sizeof(**rows), cmp, a);
	return err;
}

/* Writes stack s's text (its frames' names joined by ';') into st->text; NULL when out of memory. */
static const char *stack_text(struct answer *a, const struct qstack *s)
{
	size_t len = 0;
	char *p;

	for (uint32_t i = 0; i < s->ntok; i++)
		len += a->frames[a->seq[s->tok_off + i]].module_off;
	if (store_buf_reserve(&a->st->text, len + 1) < 0)
		return NULL;
	p = (char *)a->st->text.p;
	for (uint32_t i = 0; i < s->ntok; i++) {
		const struct qframe *f = &a->frames[a->seq[s->tok_off + i]];

		if (i)
			*p++ = ';';
		memcpy(p, f->text, f->module_off - 1);
		p += f->module_off - 1;
	}
	*p = '\0';
	return (const char *)a->st->text.p;
}

/* Adds one row of a raw piece (pid, comm_id, stack_id, count) or a rollup piece (pid, comm_id,
 * stacks) to the map ctx; per pid only when asked (else pid 0). */
struct sum_ctx {
	struct rollup_map map;
	bool by_pid;
	int64_t side; /* kept in the cells' bucket: 0, or 1 for a diff's base */
};

static int sum_row(struct qrun *q, sqlite3_stmt *s, const struct rollup_piece *p, void *ctx)
{
	struct sum_ctx *c = ctx;
	uint32_t pid = c->by_pid ? (uint32_t)sqlite3_column_int64(s, 0) : 0;
	int64_t comm = sqlite3_column_int64(s, 1);
	int err;

	if (p->level == ROLLUP_RAW)
		err = rollup_map_add(&c->map, c->side, pid, comm, sqlite3_column_int64(s, 2),
				     (uint64_t)sqlite3_column_int64(s, 3), 0);
	else
		err = rollup_map_add_blob(&c->map, c->side, pid, comm, sqlite3_column_blob(s, 2),
					  (size_t)sqlite3_column_bytes(s, 2), 0);
	if (err == -EIO)
		return store_set_err(q->st, err, "a rollup row is damaged");
	if (err == -E2BIG)
		return store_set_err(q->st, err, "more than %u distinct stacks in the window: narrow it or pick a pid",
				     QUERY_MAX_CELLS);
	return err ? store_set_err(q->st, err, "out of memory summing samples") : 0;
}

/* Adds the stacks of q's window to c's map. */
static int sum_window(struct qrun *q, struct sum_ctx *c)
{
	int v = q->f.pid >= 0 ? QV_PID : QV_ANY;

	return each_piece(q, q->st->query[QK_RAW][v], q->st->query[QK_ROLLUP][v],
			  &(struct rollup_plan_opts){ .raw_only = q->f.tid >= 0 }, sum_row, c);
}

/* Sums the stacks of f's window, named and sorted: *a and *rows (*n). The read transaction is over. */
static int sum_stacks(struct store *st, const struct store_filter *f, bool by_pid, struct answer *a,
		      struct qrow **rows, size_t *n)
{
	struct sum_ctx c = { .by_pid = by_pid };
	struct qrun q;
	int err;

	*rows = NULL;
	*n = 0;
	rollup_map_init(&c.map, QUERY_MAX_CELLS);
	err = qrun_begin(st, f, &q);
	if (err)
		return err;
	err = sum_window(&q, &c);
	if (!err) {
		*n = rollup_map_compact(&c.map);
		err = answer_build(a, c.map.cells, n, cmp_rows, rows);
	}
	qrun_end(&q);
	rollup_map_free(&c.map);
	return err;
}

/* Sums both windows of a diff in one read (the same snapshot), named and in a diff's order; the
 * totals of each side in total[side]. */
static int sum_diff(struct store *st, const struct store_filter *base, const struct store_filter *now,
		    struct answer *a, struct qrow **rows, size_t *n, uint64_t total[2])
{
	struct sum_ctx c = { .side = 1 };
	struct qrun qb, qn;
	int err;

	*rows = NULL;
	*n = 0;
	rollup_map_init(&c.map, QUERY_MAX_CELLS);
	err = qrun_begin(st, base, &qb);
	if (err)
		return err;
	err = sum_window(&qb, &c);
	err = err ?: qrun_begin(st, now, &qn); /* inside qb's read: begins none */
	if (!err) {
		c.side = 0;
		err = sum_window(&qn, &c);
		qrun_end(&qn);
	}
	if (!err) {
		*n = rollup_map_compact(&c.map);
		for (size_t i = 0; i < *n; i++) {
			uint64_t *t = &total[c.map.cells[i].bucket ? 1 : 0];

			*t = c.map.cells[i].count > UINT64_MAX - *t ? UINT64_MAX : *t + c.map.cells[i].count;
		}
		err = answer_build(a, c.map.cells, n, cmp_diff_rows, rows);
	}
	qrun_end(&qb);
	rollup_map_free(&c.map);
	return err;
}

int store_query_diff(struct store *st, const struct store_filter *base, const struct store_filter *now,
		     store_diff_cb cb, void *ctx)
{
	struct store_diff_row d = { 0 };
	struct answer a = { .st = st };
	struct qrow *rows = NULL;
	uint64_t total[2] = { 0, 0 };
	size_t n = 0;
	int err;

	if (!st || !base || !now || !cb)
		return -EINVAL;
	err = sum_diff(st, base, now, &a, &rows, &n, total);
	d.base_total = total[1];
	d.now_total = total[0];
	for (size_t i = 0; !err && i < n;) {
		size_t j = i;

		d.base = d.now = 0;
		for (; j < n && rows[j].comm == rows[i].comm &&
		       a.stacks[rows[j].stack].rank == a.stacks[rows[i].stack].rank; j++)
			*(rows[j].side ? &d.base : &d.now) += rows[j].count;
		d.comm = a.comms[rows[i].comm];
		d.folded = stack_text(&a, &a.stacks[rows[i].stack]);
		err = d.folded ? cb(&d, ctx) : store_set_err(st, -ENOMEM, "out of memory writing a stack");
		i = j;
	}
	free(rows);
	answer_free(&a);
	return err;
}

int store_query_stacks(struct store *st, const struct store_filter *f, store_stack_cb cb, void *ctx)
{
	struct answer a = { .st = st };
	struct qrow *rows = NULL;
	size_t n = 0;
	int err;

	if (!st || !cb)
		return -EINVAL;
	err = sum_stacks(st, f, false, &a, &rows, &n);
	for (size_t i = 0; !err && i < n; i++) {
		const char *text = stack_text(&a, &a.stacks[rows[i].stack]);

		err = text ? cb(a.comms[rows[i].comm], text, rows[i].count, ctx)
			   : store_set_err(st, -ENOMEM, "out of memory writing a stack");
	}
	free(rows);
	answer_free(&a);
	return err;
}

int store_query_stacks_frames(struct store *st, const struct store_filter *f, store_frames_cb cb, void *ctx)
{
	struct answer a = { .st = st, .want_frames = true };
	struct store_frame *frames = NULL;
	struct qrow *rows = NULL;
	uint32_t most = 1;
	size_t n = 0;
	int err;

	if (!st || !cb)
		return -EINVAL;
	err = sum_stacks(st, f, true, &a, &rows, &n);
	for (uint32_t i = 0; !err && i < a.nstacks; i++)
		most = a.stacks[i].nfr > most ? a.stacks[i].nfr : most;
	if (!err && !(frames = calloc(most, sizeof(*frames))))
		err = store_set_err(st, -ENOMEM, "out of memory writing frames");
	for (size_t i = 0; !err && i < n; i++) {
		const struct qstack *s = &a.stacks[rows[i].stack];
		const char *text = stack_text(&a, s);

		for (uint32_t j = 0; j < s->nfr; j++) {
			const struct qframe *fr = &a.frames[a.seq[s->fr_off + j]];

			frames[j] = (struct store_frame){ .name = fr->text, .module = fr->text + fr->module_off,
							  .build_id = fr->text + fr->build_id_off,
							  .file = fr->text + fr->file_off, .start_line = fr->start_line,
							  .line = fr->line };
		}
		err = text ? cb(rows[i].pid, a.comms[rows[i].comm], text, s->nfr ? frames : NULL, s->nfr,
				rows[i].count, ctx)
			   : store_set_err(st, -ENOMEM, "out of memory writing a stack");
	}
	free(frames);
	free(rows);
	answer_free(&a);
	return err;
}

/* One process being summed over the pieces of a window. */
struct proc_acc {
	uint32_t pid;
	uint64_t count;
	int64_t first, last, name_ts, comm_id;
};

struct procs_ctx {
	struct idmap idx;
	struct proc_acc *p;
	uint32_t n, cap;
};

/* Adds a row of a raw piece (pid, count, first, last, comm_id of the newest) or of a rollup piece
 * (pid, count, first bucket, newest sample, its comm_id). */
static int proc_row(struct qrun *q, sqlite3_stmt *s, const struct rollup_piece *p, void *ctx)
{
	struct procs_ctx *c = ctx;
	int64_t newest = sqlite3_column_int64(s, 3), last = newest;
	uint32_t idx, next = c->n;
	struct proc_acc *a;
	bool added;
	int err;

	if (p->level != ROLLUP_RAW && last >= q->f.to)
		last = q->f.to - 1; /* a bucket counted whole at the window's end */
	err = idmap_put(&c->idx, sqlite3_column_int64(s, 0), &next, &idx, &added);
	if (!err && added && c->n == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 64;
		struct proc_acc *np = reallocarray(c->p, cap, sizeof(*np));

		err = np ? 0 : -ENOMEM;
		if (np) {
			c->p = np;
			c->cap = cap;
		}
	}
	if (err)
		return store_set_err(q->st, err, "out of memory summing processes");
	if (added)
		c->p[c->n++] = (struct proc_acc){ .pid = (uint32_t)sqlite3_column_int64(s, 0), .first = INT64_MAX,
						  .last = INT64_MIN, .name_ts = INT64_MIN };
	a = &c->p[idx];
	a->count += (uint64_t)sqlite3_column_int64(s, 1);
	a->first = sqlite3_column_int64(s, 2) < a->first ? sqlite3_column_int64(s, 2) : a->first;
	a->last = last > a->last ? last : a->last;
	if (newest >= a->name_ts) {
		a->name_ts = newest;
		a->comm_id = sqlite3_column_int64(s, 4);
	}
	return 0;
}

static int cmp_procs(const void *x, const void *y)
{
	const struct proc_acc *a = x, *b = y;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return (a->pid > b->pid) - (a->pid < b->pid);
}

int store_query_processes(struct store *st, const struct store_filter *f, store_process_cb cb, void *ctx)
{
	struct procs_ctx c = { 0 };
	struct answer a = { .st = st };
	struct store_filter any;
	int64_t *ids = NULL;
	struct qrun q;
	int err;

	if (!st || !cb)
		return -EINVAL;
	any = f ? *f : filter_all;
	any.pid = any.tid = -1; /* ignored */
	err = qrun_begin(st, &any, &q);
	if (err)
		return err;
	err = each_piece(&q, st->raw_procs, st->rollup_procs, &(struct rollup_plan_opts){ 0 }, proc_row, &c);
	if (!err && !(ids = calloc(c.n ? c.n : 1, sizeof(*ids))))
		err = store_set_err(st, -ENOMEM, "out of memory naming processes");
	for (uint32_t i = 0; !err && i < c.n; i++)
		ids[i] = c.p[i].comm_id;
	a.ncomms = c.n;
	err = err ?: load_comms(&a, ids);
	qrun_end(&q);
	for (uint32_t i = 0; !err && i < c.n; i++)
		c.p[i].comm_id = i; /* each process's name, by index into a.comms */
	if (!err && c.n)
		qsort(c.p, c.n, sizeof(*c.p), cmp_procs);
	for (uint32_t i = 0; !err && i < c.n; i++) {
		struct store_process p = { .pid = c.p[i].pid, .comm = a.comms[c.p[i].comm_id], .samples = c.p[i].count,
					   .first_seen = c.p[i].first, .last_seen = c.p[i].last };

		err = cb(&p, ctx);
	}
	free(ids);
	free(c.p);
	idmap_free(&c.idx);
	answer_free(&a);
	return err;
}

/* The caller's thread callback. */
struct threads_ctx {
	store_thread_cb cb;
	void *ctx;
};

/* Hands a row (tid, name, samples) to the caller. */
static int thread_row(struct qrun *q, sqlite3_stmt *s, const struct rollup_piece *p, void *ctx)
{
	struct threads_ctx *v = ctx;
	struct store_thread t = {
		.tid = (uint32_t)sqlite3_column_int64(s, 0),
		.name = (const char *)sqlite3_column_text(s, 1),
		.samples = (uint64_t)sqlite3_column_int64(s, 2),
	};

	(void)p;
	if (!t.name)
		return store_set_err(q->st, -ENOMEM, "out of memory reading a thread");
	return v->cb(&t, v->ctx);
}

int store_query_threads(struct store *st, const struct store_filter *f, store_thread_cb cb, void *ctx)
{
	struct threads_ctx v = { cb, ctx };
	struct store_filter raw;
	struct qrun q;
	int err;

	if (!st || !cb)
		return -EINVAL;
	if (!f || f->pid < 0 || f->pid > UINT32_MAX)
		return store_set_err(st, -EINVAL, "invalid filter: threads need a pid from 0 to 4294967295");
	raw = *f;
	raw.tid = -1;
	err = qrun_begin(st, &raw, &q);
	if (err)
		return err;
	/* Threads need raw rows: the window from raw_from on. The callback runs inside the read. */
	err = each_piece(&q, st->threads, NULL, &(struct rollup_plan_opts){ .raw_only = true }, thread_row, &v);
	qrun_end(&q);
	return err;
}

/* Adds a row (step, tid, count) to the map ctx. */
static int step_row(struct qrun *q, sqlite3_stmt *s, const struct rollup_piece *p, void *ctx)
{
	int err = rollup_map_add(ctx, sqlite3_column_int64(s, 0), (uint32_t)sqlite3_column_int64(s, 1), 0, 0,
				 (uint64_t)sqlite3_column_int64(s, 2), 0);

	(void)p;
	return err ? store_set_err(q->st, err, "too many points in the timeline: take a longer step") : 0;
}

int store_query_timeline(struct store *st, const struct store_filter *f, int64_t step, int per_thread,
			 store_point_cb cb, void *ctx)
{
	struct rollup_map m;
	struct qrun q;
	size_t n = 0;
	int v, err;

	if (!st || !cb)
		return -EINVAL;
	if (step < 1)
		return store_set_err(st, -EINVAL, "invalid timeline: the step must be at least 1 second");
	rollup_map_init(&m, QUERY_MAX_CELLS);
	err = qrun_begin(st, f, &q);
	if (err)
		return err;
	v = q.f.pid >= 0 ? QV_PID : QV_ANY;
	err = each_piece(&q, st->query[per_thread ? QK_RAW_STEPS_TID : QK_RAW_STEPS][v], st->query[QK_ROLLUP_STEPS][v],
			 &(struct rollup_plan_opts){ .step = step, .raw_only = per_thread || q.f.tid >= 0 }, step_row, &m);
	qrun_end(&q);
	if (!err) {
		n = rollup_map_compact(&m);
		rollup_cells_sort(m.cells, n);
	}
	for (size_t i = 0; !err && i < n; i++) {
		struct store_point p = { .ts = m.cells[i].bucket, .tid = m.cells[i].pid, .count = m.cells[i].count };

		err = cb(&p, ctx);
	}
	rollup_map_free(&m);
	return err;
}

/* The oldest and newest second of the rollups of level (kept ones), when there are any. */
static int rollup_range(struct store *st, const struct rollup_tiers *t, int level, int64_t *oldest, int64_t *newest,
			bool *found)
{
	int64_t v = 0;
	bool f = false;
	int err;

	*found = false;
	if (!st->rollup_first)
		return 0;
	sqlite3_bind_int64(st->rollup_first, 1, rollup_span[level]);
	sqlite3_bind_int64(st->rollup_first, 2, t->kept[level]);
	err = store_step_int(st, st->rollup_first, &v, &f, "cannot read the time range");
	if (err || !f)
		return err;
	*oldest = v;
	sqlite3_bind_int64(st->rollup_newest, 1, rollup_span[level]);
	err = store_step_int(st, st->rollup_newest, newest, &f, "cannot read the time range");
	*found = !err && f;
	return err;
}

int store_time_range(struct store *st, int64_t *oldest, int64_t *newest)
{
	struct qrun q;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	int rc, err;

	if (!st || !oldest || !newest)
		return -EINVAL;
	err = qrun_begin(st, NULL, &q);
	if (err)
		return err;
	rc = sqlite3_step(st->raw_range);
	if (rc != SQLITE_ROW)
		err = store_fail(st, st->raw_range, rc == SQLITE_DONE ? SQLITE_ERROR : rc, "cannot read the time range");
	else if (sqlite3_column_type(st->raw_range, 0) != SQLITE_NULL) {
		lo = sqlite3_column_int64(st->raw_range, 0);
		hi = sqlite3_column_int64(st->raw_range, 1);
	}
	sqlite3_reset(st->raw_range);
	for (int l = 0; !err && l < ROLLUP_LEVELS; l++) {
		int64_t o = 0, n = 0;
		bool found = false;

		err = rollup_range(st, &q.tiers, l, &o, &n, &found);
		if (found) {
			lo = o < lo ? o : lo;
			hi = n > hi ? n : hi;
		}
	}
	qrun_end(&q);
	if (err)
		return err;
	if (lo > hi)
		return store_set_err(st, -ENOENT, "no samples stored");
	*oldest = lo;
	*newest = hi;
	return 0;
}
