/* store_parents.c - who started whom: the parents table written with a flush, a process's family
 * (itself and its descendants, each over the seconds its pid was its own) gathered into temp.family
 * for a query, a process's recorded parent, and the records retention lets go. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "store/store_impl.h"
#include "store/store_parents.h"
#include "store/store_stmts.h"

/* Processes of one family at most: a query of a larger one fails with -E2BIG. */
#define FAMILY_MAX 65536
/* A process's first samples may be dated up to a second before its start as recorded (the two come
 * from different clocks, each rounded down to a second). */
#define START_SLACK 1

int store_prepare_parents(struct store *st)
{
	int err;

	/* Every store, read-only ones too: the family of a query lives in the connection's own temp
	 * database. */
	err = store_sql_exec(st, "CREATE TEMP TABLE IF NOT EXISTS family(pid INTEGER NOT NULL, since INTEGER NOT NULL,"
			     " until INTEGER NOT NULL, PRIMARY KEY(pid, since)) WITHOUT ROWID",
			     "cannot create the family table");
	err = err ?: store_prepare(st, &st->family_clear, "DELETE FROM temp.family");
	err = err ?: store_prepare(st, &st->family_put, "INSERT OR IGNORE INTO temp.family(pid, since, until) VALUES(?1, ?2, ?3)");
	if (err || st->version < 6)
		return err;
	err = store_prepare(st, &st->parent_children,
			    "SELECT pid, start FROM parents WHERE ppid = ?1 AND start >= ?2 AND start < ?3 ORDER BY start");
	err = err ?: store_prepare(st, &st->parent_next, "SELECT min(start) FROM parents WHERE pid = ?1 AND start > ?2");
	err = err ?: store_prepare(st, &st->parent_latest, "SELECT max(start) FROM parents WHERE pid = ?1 AND start < ?2");
	err = err ?: store_prepare(st, &st->parent_of,
				   "SELECT ppid FROM parents WHERE pid = ?1 AND start <= ?2 ORDER BY start DESC LIMIT 1");
	if (err || st->mode != STORE_READ_WRITE)
		return err;
	err = store_prepare(st, &st->parent_put,
			    "INSERT INTO parents(pid, start, ppid, seen) VALUES(?1, ?2, ?3, ?4) ON CONFLICT(pid, start)"
			    " DO UPDATE SET seen = max(seen, excluded.seen),"
			    " ppid = CASE WHEN ppid <= 1 THEN excluded.ppid ELSE ppid END");
	return err ?: store_prepare(st, &st->parent_prune, "DELETE FROM parents WHERE seen < ?1");
}

int store_add_parent(struct store *st, const struct store_parent *p)
{
	int err;

	if (!st)
		return -EINVAL;
	if (!p || p->pid <= 1 || p->ppid == p->pid || p->start < 0 || p->seen < p->start)
		return store_set_err(st, -EINVAL, "invalid parent record: pid above 1, a ppid of another process, "
				     "0 <= start <= seen");
	if (!st->in_tx || !st->parent_put)
		return store_set_err(st, -EINVAL, "no open transaction (store_begin not called, or an error rolled it back)");
	sqlite3_bind_int64(st->parent_put, 1, p->pid);
	sqlite3_bind_int64(st->parent_put, 2, p->start);
	sqlite3_bind_int64(st->parent_put, 3, p->ppid);
	sqlite3_bind_int64(st->parent_put, 4, p->seen);
	err = store_run(st, st->parent_put, "cannot record a process's parent");
	if (err && st->in_tx)
		store_abandon(st);
	return err;
}

/* One process of a family: its pid and the seconds it had it. */
struct member {
	int64_t pid, since, until;
};

/* The start of the next process that had pid after start (INT64_MAX: none recorded). */
static int next_start(struct store *st, int64_t pid, int64_t start, int64_t *until)
{
	bool found = false;

	*until = INT64_MAX; /* kept when none is found */
	sqlite3_bind_int64(st->parent_next, 1, pid);
	sqlite3_bind_int64(st->parent_next, 2, start);
	return store_step_int(st, st->parent_next, until, &found, "cannot read parents");
}

/* Puts m in temp.family; *added false when it was there already. */
static int family_put(struct store *st, const struct member *m, bool *added)
{
	int err;

	sqlite3_bind_int64(st->family_put, 1, m->pid);
	sqlite3_bind_int64(st->family_put, 2, m->since);
	sqlite3_bind_int64(st->family_put, 3, m->until);
	err = store_run(st, st->family_put, "cannot gather a process's family");
	*added = !err && sqlite3_changes(st->db) > 0;
	return err;
}

/* Adds the children of fam[i] that started before to (and before its pid passed to another). */
static int add_children(struct store *st, struct member *fam, size_t *n, size_t i, int64_t to)
{
	struct member p = fam[i];
	int64_t end = p.until < to ? p.until : to;
	sqlite3_stmt *s = st->parent_children;
	int rc, err = 0;

	if (p.pid < 0)
		return 0;
	if (end == INT64_MAX || p.since == INT64_MIN) /* the root without a record of its own */
		end = to;
	/* The children first, then their ends: one statement is stepped at a time. */
	size_t first = *n;

	sqlite3_bind_int64(s, 1, p.pid);
	sqlite3_bind_int64(s, 2, p.since == INT64_MIN ? INT64_MIN : p.since + START_SLACK);
	sqlite3_bind_int64(s, 3, end);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && !err) {
		struct member c = { .pid = sqlite3_column_int64(s, 0), .since = sqlite3_column_int64(s, 1) - START_SLACK };

		if (*n == FAMILY_MAX)
			err = store_set_err(st, -E2BIG, "the process has more than %d descendants: ask for it without its "
					    "children", FAMILY_MAX);
		else
			fam[(*n)++] = c;
	}
	if (!err && rc != SQLITE_DONE && rc != SQLITE_ROW)
		err = store_fail(st, s, rc, "cannot read parents");
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	for (size_t j = first; !err && j < *n; j++) {
		bool added = false;

		err = next_start(st, fam[j].pid, fam[j].since + START_SLACK, &fam[j].until) ?:
		      family_put(st, &fam[j], &added);
		if (!err && !added)
			fam[j].pid = -1; /* in the family already (records that loop): not followed again */
	}
	return err;
}

int store_family_load(struct store *st, int64_t pid, int64_t to, size_t *count)
{
	struct member root = { .pid = pid, .since = INT64_MIN, .until = INT64_MAX };
	struct member *fam;
	bool found = false;
	size_t n = 0;
	int64_t start = 0;
	int err;

	err = store_run(st, st->family_clear, "cannot gather a process's family");
	if (err)
		return err;
	if (st->parent_latest) {
		/* The process that had pid last before the window's end, when one was recorded. */
		sqlite3_bind_int64(st->parent_latest, 1, pid);
		sqlite3_bind_int64(st->parent_latest, 2, to);
		err = store_step_int(st, st->parent_latest, &start, &found, "cannot read parents");
		if (!err && found) {
			root.since = start - START_SLACK;
			err = next_start(st, pid, start, &root.until);
		}
	}
	if (err)
		return err;
	fam = malloc(FAMILY_MAX * sizeof(*fam));
	if (!fam)
		return store_set_err(st, -ENOMEM, "out of memory gathering a process's family");
	fam[0] = root;
	n = 1;
	err = family_put(st, &root, &(bool){ false });
	for (size_t i = 0; !err && st->parent_children && i < n; i++)
		err = add_children(st, fam, &n, i, to);
	free(fam);
	if (!err && count)
		*count = n;
	return err;
}

int store_parent_of(struct store *st, uint32_t pid, int64_t at, uint32_t *ppid)
{
	int64_t v = 0;
	bool found = false;
	int err;

	*ppid = 0;
	if (!st->parent_of)
		return 0;
	sqlite3_bind_int64(st->parent_of, 1, pid);
	sqlite3_bind_int64(st->parent_of, 2, at > INT64_MAX - START_SLACK ? at : at + START_SLACK);
	err = store_step_int(st, st->parent_of, &v, &found, "cannot read parents");
	if (!err && found && v > 0 && v <= UINT32_MAX)
		*ppid = (uint32_t)v;
	return err;
}

int store_prune_parents(struct store *st, int64_t before)
{
	if (!st->parent_prune)
		return 0;
	sqlite3_bind_int64(st->parent_prune, 1, before);
	return store_run(st, st->parent_prune, "cannot delete old parent records");
}
