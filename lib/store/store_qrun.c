/* store_qrun.c - one query's run over the store: its filter checked, its process name, family and
 * cgroups resolved, the rollup markers read, all in one read transaction, and the statements of each
 * piece of its window's plan bound and stepped. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "store/store_cgroups.h"
#include "store/store_parents.h"
#include "store/store_qrun.h"
#include "store/store_rollup_rows.h"

/* What a query's text becomes on an older database, opened read-only: before schema version 7 rows have
 * no cgroup (none is known, and a cgroup filter matches nothing: qrun_begin), before version 5 no kind
 * (all are CPU samples), so those columns read as 0. Longer texts first where one starts another. */
static const struct {
	const char *from, *to;
	int64_t below; /* the schema version that has the column */
} older[] = {
	{ AND_CG_R, "", 7 }, { AND_CG, "", 7 }, { "s.cg", "0", 7 }, { "comm_id, cg", "comm_id, 0", 7 }, { "SELECT cg,", "SELECT 0,", 7 },
	{ "r.kind", "0", 5 }, { "kind", "0", 5 },
};

/* Prepares a query over samples or rollups for this database, adapted to its version. */
int qrun_prepare(struct store *st, sqlite3_stmt **stmt, const char *sql)
{
	char buf[4096];
	size_t n = 0, i;

	if (st->version >= SCHEMA_VERSION)
		return store_prepare(st, stmt, sql);
	for (const char *p = sql; *p;) {
		for (i = 0; i < sizeof(older) / sizeof(older[0]); i++)
			if (st->version < older[i].below && !strncmp(p, older[i].from, strlen(older[i].from)))
				break;
		if (i == sizeof(older) / sizeof(older[0])) {
			if (n + 2 > sizeof(buf))
				return store_set_err(st, -E2BIG, "a query is too long to adapt to an older database");
			buf[n++] = *p++;
			continue;
		}
		if (n + strlen(older[i].to) + 2 > sizeof(buf))
			return store_set_err(st, -E2BIG, "a query is too long to adapt to an older database");
		memcpy(buf + n, older[i].to, strlen(older[i].to));
		n += strlen(older[i].to);
		p += strlen(older[i].from);
	}
	buf[n] = '\0';
	return store_prepare(st, stmt, buf);
}

/* Every sample. */
const struct store_filter qrun_filter_all = { .pid = -1, .tid = -1, .from = INT64_MIN, .to = INT64_MAX };

/* Which variant of the statements the query runs. */
int qvariant(const struct qrun *q)
{
	return q->family ? QV_FAMILY : q->f.pid >= 0 ? QV_PID : QV_ANY;
}

/* Checks a filter's pid and tid; -EINVAL with the reason in errmsg. */
static int check_filter(struct store *st, const struct store_filter *f)
{
	if (f->pid < -1 || f->pid > UINT32_MAX || f->tid < -1 || f->tid > UINT32_MAX)
		return store_set_err(st, -EINVAL, "invalid filter: pid and tid are -1 (any) or 0 to 4294967295");
	if (f->kind != STORE_CPU && f->kind != STORE_OFFCPU && f->kind != STORE_WALL)
		return store_set_err(st, -EINVAL, "invalid filter: kind %d is not CPU, off-CPU or wall", (int)f->kind);
	if (f->kind == STORE_WALL && (f->cpu_period_us < 1 || f->cpu_period_us > 1000000))
		return store_set_err(st, -EINVAL, "invalid filter: a wall-clock query needs the sampling period (1 to 1000000 us)");
	return 0;
}

/* Ends the read transaction the query began (nothing was written: a failed commit loses nothing). */
void qrun_end(struct qrun *q)
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
int qrun_begin(struct store *st, const struct store_filter *f, struct qrun *q)
{
	bool found = true;
	int err;

	*q = (struct qrun){ .st = st, .f = f ? *f : qrun_filter_all, .comm_id = -1 };
	err = check_filter(st, &q->f);
	if (err)
		return err;
	q->cpu_weight = q->f.kind == STORE_WALL ? q->f.cpu_period_us : 1;
	if (sqlite3_get_autocommit(st->db)) {
		int rc = sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL);

		if (rc != SQLITE_OK)
			return store_fail(st, NULL, rc, "cannot start a read");
		q->tx = true;
	}
	err = store_load_tiers(st, &q->tiers);
	if (!err && q->f.children && q->f.pid >= 0) {
		err = store_family_load(st, q->f.pid, q->f.to, NULL);
		q->family = !err;
	}
	if (!err && q->f.comm)
		err = comm_lookup(st, q->f.comm, &q->comm_id, &found);
	if (!err && store_filter_has_groups(&q->f)) {
		size_t n = 0;

		err = st->version >= 7 ? store_cgsel_load(st, &q->f, &n) : 0; /* older: no cgroup known */
		q->groups = true;
		found = found && n > 0;
	}
	q->none = !found;
	if (err)
		qrun_end(q);
	return err;
}

int qrun_begin_listing(struct store *st, const struct store_filter *f, struct qrun *q)
{
	struct store_filter any = f ? *f : qrun_filter_all;

	if (!any.children)
		any.pid = -1; /* ignored, but for a family */
	any.tid = -1;
	return qrun_begin(st, &any, q);
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
	sqlite3_bind_int64(s, 10, q->f.kind == STORE_WALL ? -1 : (int64_t)q->f.kind);
	sqlite3_bind_int64(s, 11, q->cpu_weight);
	sqlite3_bind_int64(s, 12, q->family);
	sqlite3_bind_int64(s, 13, q->groups);
}


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
int qrun_each_piece(struct qrun *q, sqlite3_stmt *raw, sqlite3_stmt *rollup, const struct rollup_plan_opts *o,
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
	for (size_t i = 0; rollup && qvariant(q) != QV_PID && i < n; i++)
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
