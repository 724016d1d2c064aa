/* store_query.c - the read path: a window planned over raw rows and rollups (rollup.h), summed in memory, named, sorted and handed to the caller's callback. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "store/store.h"
#include "store/store_answer.h"
#include "store/store_impl.h"
#include "store/store_cgroups.h"
#include "store/store_parents.h"
#include "store/store_qrun.h"
#include "store/store_rollup_rows.h"
#include "store/store_stmts.h"

#define QUERY_MAX_CELLS (1u << 22)    /* distinct (pid, name, stack) a query sums at most (-E2BIG) */

static const char *const query_sql[QK_MAX][QV_MAX] = {
	[QK_RAW] = { "SELECT pid, comm_id, stack_id, " WEIGHED("count") RAW_WHERE(""),
		     "SELECT pid, comm_id, stack_id, " WEIGHED("count") RAW_WHERE(AND_PID),
		     "SELECT pid, comm_id, stack_id, " WEIGHED("count") RAW_WHERE(AND_FAMILY) },
	[QK_ROLLUP] = { "SELECT pid, comm_id, stacks, kind" ROLLUP_WHERE,
			ROLLUP_PID("r.pid, r.comm_id, r.stacks, r.kind"),
			"SELECT pid, comm_id, stacks, kind" ROLLUP_WHERE AND_FAMILY_ROLLUP },
	[QK_RAW_STEPS] = { "SELECT flamed_step(ts, ?7, ?8) AS t, 0, sum(" WEIGHED("count") ")" RAW_WHERE("") " GROUP BY t",
			   "SELECT flamed_step(ts, ?7, ?8) AS t, 0, sum(" WEIGHED("count") ")" RAW_WHERE(AND_PID)
			   " GROUP BY t",
			   "SELECT flamed_step(ts, ?7, ?8) AS t, 0, sum(" WEIGHED("count") ")" RAW_WHERE(AND_FAMILY)
			   " GROUP BY t" },
	/* per thread: its pid too (a host's or a family's threads are of many processes) */
	[QK_RAW_STEPS_TID] = { "SELECT flamed_step(ts, ?7, ?8) AS t, tid, sum(" WEIGHED("count") "), pid" RAW_WHERE("")
			       " GROUP BY t, pid, tid",
			       "SELECT flamed_step(ts, ?7, ?8) AS t, tid, sum(" WEIGHED("count") "), pid" RAW_WHERE(AND_PID)
			       " GROUP BY t, pid, tid",
			       "SELECT flamed_step(ts, ?7, ?8) AS t, tid, sum(" WEIGHED("count") "), pid" RAW_WHERE(AND_FAMILY)
			       " GROUP BY t, pid, tid" },
	[QK_ROLLUP_STEPS] = { "SELECT flamed_step(bucket, ?7, ?8) AS t, 0, sum(" WEIGHED("total") ")" ROLLUP_WHERE
			      " GROUP BY t",
			      ROLLUP_PID("flamed_step(r.bucket, ?7, ?8) AS t, 0, sum(r.total * CASE r.kind WHEN 0 THEN ?11"
					 " ELSE 1 END)") " GROUP BY t",
			      "SELECT flamed_step(bucket, ?7, ?8) AS t, 0, sum(" WEIGHED("total") ")" ROLLUP_WHERE
			      AND_FAMILY_ROLLUP " GROUP BY t" },
};

/* Per pid of a raw piece: samples, first and last second, and the process name of its newest row
 * (ties within one second: the row written last), by a seek of samples(ts). */
static const char raw_procs_sql[] =
	"SELECT a.pid, a.c, a.first, a.last, (SELECT comm_id FROM samples AS s WHERE s.pid = a.pid"
	" AND s.ts = a.last AND (?5 IS NULL OR s.comm_id = ?5) ORDER BY s.rowid DESC LIMIT 1),"
	" (SELECT s.cg FROM samples AS s WHERE s.pid = a.pid AND s.ts = a.last AND (?5 IS NULL OR s.comm_id = ?5)"
	" ORDER BY s.rowid DESC LIMIT 1)"
	" FROM (SELECT pid, sum(" WEIGHED("count") ") AS c, min(ts) AS first, max(ts) AS last FROM samples"
	" WHERE ts >= ?1 AND ts < ?2 AND (?5 IS NULL OR comm_id = ?5)" AND_KIND AND_CG " AND (?12 = 0 OR " IN_FAMILY ")"
	" GROUP BY pid) AS a";

/* Per pid of a rollup piece: samples, first bucket, newest sample and the name it had (SQLite takes a
 * bare column from the row of max()). */
static const char rollup_procs_sql[] =
	"SELECT pid, sum(" WEIGHED("total") "), min(bucket), max(last), comm_id, cg FROM rollups"
	" WHERE span = ?6 AND bucket >= ?1 AND bucket < ?2 AND (?5 IS NULL OR comm_id = ?5)" AND_KIND AND_CG
	" AND (?12 = 0 OR " IN_FAMILY_ROLLUP ") GROUP BY pid";

/* Per tid of pid ?3 (raw rows only), named by the thread name of its newest row in the window. */
static const char threads_sql[] =
	"SELECT a.tid, n.name, a.c FROM (SELECT tid, sum(" WEIGHED("count") ") AS c, max(ts) AS last FROM samples"
	" WHERE pid = ?3 AND ts >= ?1 AND ts < ?2 AND (?5 IS NULL OR comm_id = ?5)" AND_KIND AND_CG " GROUP BY tid) AS a"
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
				err = err ?: qrun_prepare(st, &st->query[k][v], query_sql[k][v]);
	err = err ?: qrun_prepare(st, &st->raw_procs, raw_procs_sql);
	err = err ?: qrun_prepare(st, &st->threads, threads_sql);
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
	err = err ?: qrun_prepare(st, &st->rollup_procs, rollup_procs_sql);
	err = err ?: store_prepare(st, &st->rollup_first, "SELECT min(bucket) FROM rollups WHERE span = ?1 AND bucket >= ?2");
	err = err ?: store_prepare(st, &st->rollup_newest,
			     "SELECT max(last) FROM rollups WHERE span = ?1 AND bucket ="
			     " (SELECT max(bucket) FROM rollups WHERE span = ?1)");
	return err;
}


/* Adds one row of a raw piece (pid, comm_id, stack_id, count) or a rollup piece (pid, comm_id,
 * stacks) to the map ctx; per pid only when asked (else pid 0). */
struct sum_ctx {
	struct rollup_map map;
	bool by_pid;
	int64_t side;   /* kept in the cells' bucket: 0, or 1 for a diff's base */
	int64_t merged; /* f.merge: the process name every row is summed under (its first row's); -1 */
};

static int sum_row(struct qrun *q, sqlite3_stmt *s, const struct rollup_piece *p, void *ctx)
{
	struct sum_ctx *c = ctx;
	uint32_t pid = c->by_pid ? (uint32_t)sqlite3_column_int64(s, 0) : 0;
	int64_t comm = sqlite3_column_int64(s, 1);
	int err;

	if (q->family && q->f.merge) { /* one process: the asked one, under one of the family's names */
		pid = c->by_pid ? (uint32_t)q->f.pid : 0;
		if (c->merged < 0)
			c->merged = comm;
		comm = c->merged;
	}
	if (p->level == ROLLUP_RAW)
		err = rollup_map_add(&c->map, c->side, pid, comm, 0, 0, sqlite3_column_int64(s, 2),
				     (uint64_t)sqlite3_column_int64(s, 3), 0);
	else
		err = rollup_map_add_blob(&c->map, c->side, pid, comm, 0, 0, sqlite3_column_blob(s, 2),
					  (size_t)sqlite3_column_bytes(s, 2), 0,
					  sqlite3_column_int64(s, 3) == STORE_CPU ? (uint64_t)q->cpu_weight : 1);
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
	int v = qvariant(q);

	return qrun_each_piece(q, q->st->query[QK_RAW][v], q->st->query[QK_ROLLUP][v],
			  &(struct rollup_plan_opts){ .raw_only = q->f.tid >= 0 }, sum_row, c);
}

/* Sums the stacks of f's window, named and sorted: *a and *rows (*n). The read transaction is over. */
static int sum_stacks(struct store *st, const struct store_filter *f, bool by_pid, struct answer *a,
		      struct qrow **rows, size_t *n)
{
	struct sum_ctx c = { .by_pid = by_pid, .merged = -1 };
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
		err = store_answer_build(a, c.map.cells, n, store_rows_cmp, rows);
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
	struct sum_ctx c = { .side = 1, .merged = -1 };
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
		err = store_answer_build(a, c.map.cells, n, store_diff_rows_cmp, rows);
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
	a.demangle = now->demangle;
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
		d.folded = store_answer_text(&a, &a.stacks[rows[i].stack]);
		err = d.folded ? cb(&d, ctx) : store_set_err(st, -ENOMEM, "out of memory writing a stack");
		i = j;
	}
	free(rows);
	store_answer_free(&a);
	return err;
}

int store_query_stacks(struct store *st, const struct store_filter *f, store_stack_cb cb, void *ctx)
{
	struct answer a = { .st = st, .demangle = f ? f->demangle : DEMANGLE_SHORT };
	struct qrow *rows = NULL;
	size_t n = 0;
	int err;

	if (!st || !cb)
		return -EINVAL;
	err = sum_stacks(st, f, false, &a, &rows, &n);
	for (size_t i = 0; !err && i < n; i++) {
		const char *text = store_answer_text(&a, &a.stacks[rows[i].stack]);

		err = text ? cb(a.comms[rows[i].comm], text, rows[i].count, ctx)
			   : store_set_err(st, -ENOMEM, "out of memory writing a stack");
	}
	free(rows);
	store_answer_free(&a);
	return err;
}

int store_query_stacks_frames(struct store *st, const struct store_filter *f, store_frames_cb cb, void *ctx)
{
	struct answer a = { .st = st, .want_frames = true, .demangle = f ? f->demangle : DEMANGLE_SHORT };
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
		const char *text = store_answer_text(&a, s);

		for (uint32_t j = 0; j < s->nfr; j++) {
			const struct qframe *fr = &a.frames[a.seq[s->fr_off + j]];

			frames[j] = (struct store_frame){ .name = fr->text, .module = fr->text + fr->module_off,
							  .build_id = fr->text + fr->build_id_off, .system_name = fr->system,
							  .file = fr->text + fr->file_off, .start_line = fr->start_line,
							  .line = fr->line };
		}
		err = text ? cb(rows[i].pid, a.comms[rows[i].comm], text, s->nfr ? frames : NULL, s->nfr,
				rows[i].count, ctx)
			   : store_set_err(st, -ENOMEM, "out of memory writing a stack");
	}
	free(frames);
	free(rows);
	store_answer_free(&a);
	return err;
}

/* One process being summed over the pieces of a window. */
struct proc_acc {
	uint32_t pid, ppid, parent;
	uint64_t count;
	int64_t first, last, name_ts, comm_id, cg;
};

struct procs_ctx {
	struct idmap idx;
	struct proc_acc *p;
	uint32_t n, cap;
};

/* Adds a row of a raw piece (pid, count, first, last, comm_id and cg of the newest) or of a rollup piece
 * (pid, count, first bucket, newest sample, its comm_id and cg). */
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
	err = store_idmap_put(&c->idx, sqlite3_column_int64(s, 0), &next, &idx, &added);
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
		a->cg = sqlite3_column_int64(s, 5);
	}
	return 0;
}

/* Ancestors followed up from a process to find one among those answered. */
#define ANCESTORS_MAX 64

/* Finds a's recorded parent and its nearest ancestor among the processes of c. */
static int proc_parents(struct store *st, const struct procs_ctx *c, struct proc_acc *a)
{
	uint32_t cur, idx;
	int err = store_parent_of(st, a->pid, a->last, &a->ppid);

	cur = a->ppid;
	for (int depth = 0; !err && cur > 1 && cur != a->pid && depth < ANCESTORS_MAX; depth++) {
		if (store_idmap_get(&c->idx, cur, &idx)) {
			a->parent = cur;
			break;
		}
		err = store_parent_of(st, cur, a->last, &cur); /* the one that ran before a's newest sample */
	}
	return err;
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
	int64_t *ids = NULL;
	struct qrun q;
	int err;

	if (!st || !cb)
		return -EINVAL;
	err = qrun_begin_listing(st, f, &q);
	if (err)
		return err;
	err = qrun_each_piece(&q, st->raw_procs, st->rollup_procs, &(struct rollup_plan_opts){ 0 }, proc_row, &c);
	for (uint32_t i = 0; !err && i < c.n; i++)
		err = proc_parents(st, &c, &c.p[i]);
	if (!err && !(ids = calloc(c.n ? c.n : 1, sizeof(*ids))))
		err = store_set_err(st, -ENOMEM, "out of memory naming processes");
	for (uint32_t i = 0; !err && i < c.n; i++)
		ids[i] = c.p[i].comm_id;
	a.ncomms = c.n;
	err = err ?: store_answer_comms(&a, ids);
	qrun_end(&q);
	for (uint32_t i = 0; !err && i < c.n; i++)
		c.p[i].comm_id = i; /* each process's name, by index into a.comms */
	if (!err && c.n)
		qsort(c.p, c.n, sizeof(*c.p), cmp_procs);
	for (uint32_t i = 0; !err && i < c.n; i++) {
		char cgroup[STORE_CGROUP_MAX_BYTES + 1];
		struct store_process p = { .pid = c.p[i].pid, .comm = a.comms[c.p[i].comm_id], .samples = c.p[i].count,
					   .first_seen = c.p[i].first, .last_seen = c.p[i].last, .ppid = c.p[i].ppid,
					   .parent = c.p[i].parent, .cgroup = cgroup };

		err = store_cgroup_path(st, c.p[i].cg, cgroup, sizeof(cgroup));
		err = err ?: cb(&p, ctx);
	}
	free(ids);
	free(c.p);
	store_idmap_free(&c.idx);
	store_answer_free(&a);
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
	err = qrun_each_piece(&q, st->threads, NULL, &(struct rollup_plan_opts){ .raw_only = true }, thread_row, &v);
	qrun_end(&q);
	return err;
}

/* Adds a row (step, tid, count) to the map ctx. */
/* A row of steps: (t, tid or 0, sum[, pid]) into a cell keyed (t, tid, pid in comm_id's place). */
static int step_row(struct qrun *q, sqlite3_stmt *s, const struct rollup_piece *p, void *ctx)
{
	int64_t pid = sqlite3_column_count(s) > 3 ? sqlite3_column_int64(s, 3) : 0;
	int err = rollup_map_add(ctx, sqlite3_column_int64(s, 0), (uint32_t)sqlite3_column_int64(s, 1), pid, 0, 0, 0,
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
	v = qvariant(&q);
	err = qrun_each_piece(&q, st->query[per_thread ? QK_RAW_STEPS_TID : QK_RAW_STEPS][v], st->query[QK_ROLLUP_STEPS][v],
			 &(struct rollup_plan_opts){ .step = step, .raw_only = per_thread || q.f.tid >= 0 }, step_row, &m);
	qrun_end(&q);
	if (!err) {
		n = rollup_map_compact(&m);
		rollup_cells_sort(m.cells, n);
	}
	for (size_t i = 0; !err && i < n; i++) {
		struct store_point p = { .ts = m.cells[i].bucket, .tid = m.cells[i].pid, .pid = (uint32_t)m.cells[i].comm_id,
					 .count = m.cells[i].count };

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
