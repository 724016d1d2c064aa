/* store_cgroups.c - where samples ran: the statements of the cgroups table (each path once, its id in raw
 * rows and in the rollups' key; store_write.c writes them), the cgroups a query's unit, container, pod or path filter picks gathered into
 * temp.cgsel, a cgroup's path by id, and the paths retention lets go. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_cgroups.h"
#include "store/store_stmts.h"
#include "util/cgname.h"

int store_prepare_cgroups(struct store *st)
{
	int err;

	/* Every store, read-only ones too: a query's cgroups live in the connection's own temp database. */
	err = store_sql_exec(st, "CREATE TEMP TABLE IF NOT EXISTS cgsel(id INTEGER PRIMARY KEY)",
			     "cannot create the cgroup selection table");
	err = err ?: store_prepare(st, &st->cgsel_clear, "DELETE FROM temp.cgsel");
	err = err ?: store_prepare(st, &st->cgsel_put, "INSERT OR IGNORE INTO temp.cgsel(id) VALUES(?1)");
	if (err || st->version < 7)
		return err;
	err = store_prepare(st, &st->cgroups_all, "SELECT id, path FROM cgroups");
	err = err ?: store_prepare(st, &st->cgroup_of, "SELECT path FROM cgroups WHERE id = ?1");
	if (err || st->mode != STORE_READ_WRITE)
		return err;
	err = store_prepare(st, &st->cgroup_get, "SELECT id FROM cgroups WHERE path = ?1");
	err = err ?: store_prepare(st, &st->cgroup_put, "INSERT INTO cgroups(path) VALUES (?1)");
	return err ?: store_prepare(st, &st->cgroup_prune,
				    "DELETE FROM cgroups WHERE id NOT IN (SELECT cg FROM samples)"
				    " AND id NOT IN (SELECT cg FROM rollups)");
}

bool store_filter_has_groups(const struct store_filter *f)
{
	return f && (f->unit || f->container || f->pod || f->cgroup);
}

/* What one filter field names: a container or pod uid prefix names exactly one, whichever cgroups hold
 * it (a pod's containers, a container's sub-cgroups). */
struct pick {
	const char *want;
	char first[65]; /* the first id the prefix took */
	bool many;      /* it took two different ids */
};

/* Whether id (may be "") starts with p->want; notes which ids it took. */
static bool pick_id(struct pick *p, const char *id)
{
	size_t n = strlen(p->want);

	if (!id[0] || strncmp(id, p->want, n))
		return false;
	if (!p->first[0])
		snprintf(p->first, sizeof(p->first), "%s", id);
	else if (strcmp(p->first, id))
		p->many = true;
	return true;
}

/* Whether the cgroup at path is one f takes. */
static bool takes(const struct store_filter *f, const char *path, struct pick *ctr, struct pick *pod)
{
	struct cgname n;
	bool ok = true;

	if (f->cgroup && !cgname_has_prefix(path, f->cgroup))
		return false;
	if (f->unit && !cgname_has_component(path, f->unit))
		return false;
	if (!f->container && !f->pod)
		return true;
	if (cgname_parse(path, &n) < 0)
		return false;
	if (f->container)
		ok = pick_id(ctr, n.container);
	if (ok && f->pod)
		ok = pick_id(pod, n.pod);
	return ok;
}

/* A filter field's value: not empty, at most a path's length, no control character. */
static int check_field(struct store *st, const char *what, const char *v, bool one_component)
{
	size_t n = strnlen(v, CGNAME_PATH_MAX);

	if (n == 0 || n >= CGNAME_PATH_MAX)
		return store_set_err(st, -EINVAL, "invalid filter: the %s is 1 to %d bytes", what, CGNAME_PATH_MAX - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f || (one_component && v[i] == '/'))
			return store_set_err(st, -EINVAL, "invalid filter: the %s has a %s", what,
					     v[i] == '/' ? "'/' (it is one name, e.g. nginx.service)" : "control character");
	return 0;
}

/* Checks the filter's cgroup fields. */
static int check_groups(struct store *st, const struct store_filter *f)
{
	int err = 0;

	if (f->unit)
		err = check_field(st, "unit", f->unit, true);
	if (!err && f->container)
		err = check_field(st, "container id", f->container, true);
	if (!err && f->pod)
		err = check_field(st, "pod uid", f->pod, true);
	if (!err && f->cgroup)
		err = check_field(st, "cgroup path", f->cgroup, false);
	if (!err && f->cgroup && f->cgroup[0] != '/')
		err = store_set_err(st, -EINVAL, "invalid filter: a cgroup path starts with '/' (e.g. /system.slice)");
	return err;
}

int store_cgsel_load(struct store *st, const struct store_filter *f, size_t *count)
{
	struct pick ctr = { .want = f->container }, pod = { .want = f->pod };
	size_t n = 0, seen = 0;
	int rc, err;

	*count = 0;
	err = check_groups(st, f);
	err = err ?: store_run(st, st->cgsel_clear, "cannot clear the cgroup selection");
	if (err)
		return err;
	while ((rc = sqlite3_step(st->cgroups_all)) == SQLITE_ROW) {
		const char *path = (const char *)sqlite3_column_text(st->cgroups_all, 1);

		if (++seen > STORE_CGROUPS_MAX) {
			sqlite3_reset(st->cgroups_all);
			return store_set_err(st, -E2BIG, "more than %d cgroups stored: narrow the filter by pid",
					     STORE_CGROUPS_MAX);
		}
		if (!path || !takes(f, path, &ctr, &pod))
			continue;
		sqlite3_bind_int64(st->cgsel_put, 1, sqlite3_column_int64(st->cgroups_all, 0));
		err = store_run(st, st->cgsel_put, "cannot select cgroups");
		if (err) {
			sqlite3_reset(st->cgroups_all);
			return err;
		}
		n++;
	}
	sqlite3_reset(st->cgroups_all);
	if (rc != SQLITE_DONE)
		return store_fail(st, NULL, rc, "cannot read cgroups");
	if (ctr.many || pod.many)
		return store_set_err(st, -EINVAL, "the %s '%s' is the start of more than one (%s, ...): give more of it",
				     ctr.many ? "container id" : "pod uid", ctr.many ? ctr.want : pod.want,
				     ctr.many ? ctr.first : pod.first);
	*count = n;
	return 0;
}

int store_cgroup_path(struct store *st, int64_t id, char *buf, size_t cap)
{
	const unsigned char *path;
	int rc;

	buf[0] = '\0';
	if (id <= 0 || !st->cgroup_of)
		return 0;
	sqlite3_bind_int64(st->cgroup_of, 1, id);
	rc = sqlite3_step(st->cgroup_of);
	if (rc == SQLITE_ROW && (path = sqlite3_column_text(st->cgroup_of, 0)))
		snprintf(buf, cap, "%s", (const char *)path);
	sqlite3_reset(st->cgroup_of);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_fail(st, NULL, rc, "cannot read cgroups");
}

int store_prune_cgroups(struct store *st)
{
	int err;

	if (!st->cgroup_prune)
		return 0;
	err = store_run(st, st->cgroup_prune, "cannot delete unused cgroups");
	store_cache_clear(&st->cgroups); /* an id it holds may be gone */
	return err;
}
