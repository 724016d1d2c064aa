/* store_groups.c - where a window's samples ran: per cgroup, the samples and processes it holds,
 * summed over the window's raw rows and rollups. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/store_cgroups.h"
#include "store/store_idmap.h"
#include "store/store_impl.h"
#include "store/store_qrun.h"
#include "store/store_stmts.h"

/* Per piece: (cgroup id, pid, samples), one row per pair. */
static const char raw_cgroups_sql[] = "SELECT cg, pid, sum(" WEIGHED("count") ")" RAW_WHERE("")
				      " AND (?12 = 0 OR " IN_FAMILY ") GROUP BY 1, 2";
static const char rollup_cgroups_sql[] = "SELECT cg, pid, sum(" WEIGHED("total") ")" ROLLUP_WHERE
					 " AND (?12 = 0 OR " IN_FAMILY_ROLLUP ") GROUP BY 1, 2";

int store_prepare_groups(struct store *st)
{
	int err = qrun_prepare(st, &st->raw_cgroups, raw_cgroups_sql);

	if (err || st->version < 3)
		return err;
	return qrun_prepare(st, &st->rollup_cgroups, rollup_cgroups_sql);
}

/* One cgroup being summed. */
struct group {
	int64_t cg;
	uint64_t samples;
	uint32_t processes;
	char *path;
};

struct groups_ctx {
	struct idmap by_cg, pairs; /* cgroup id -> index; (cgroup, pid) seen */
	struct group *g;
	uint32_t n, cap, npairs;
};

static int group_row(struct qrun *q, sqlite3_stmt *s, const struct rollup_piece *p, void *ctx)
{
	struct groups_ctx *c = ctx;
	int64_t cg = sqlite3_column_int64(s, 0);
	uint32_t pid = (uint32_t)sqlite3_column_int64(s, 1), idx, pair, next = c->n;
	bool added, new_pair;
	int err;

	(void)p;
	err = store_idmap_put(&c->by_cg, cg, &next, &idx, &added);
	if (!err && added && c->n == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 16;
		struct group *ng = cap <= STORE_CGROUPS_MAX ? reallocarray(c->g, cap, sizeof(*ng)) : NULL;

		err = ng ? 0 : cap > STORE_CGROUPS_MAX ? -E2BIG : -ENOMEM;
		if (ng) {
			c->g = ng;
			c->cap = cap;
		}
	}
	if (!err && added)
		c->g[c->n++] = (struct group){ .cg = cg };
	next = c->npairs;
	err = err ?: store_idmap_put(&c->pairs, (int64_t)((uint64_t)(uint32_t)cg << 32 | pid), &next, &pair, &new_pair);
	if (err)
		return store_set_err(q->st, err, err == -E2BIG ? "more than %d cgroups in the window" : "out of memory summing cgroups",
				     STORE_CGROUPS_MAX);
	c->npairs = next;
	c->g[idx].samples += (uint64_t)sqlite3_column_int64(s, 2);
	c->g[idx].processes += new_pair;
	return 0;
}

static int cmp_groups(const void *x, const void *y)
{
	const struct group *a = x, *b = y;

	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	return strcmp(a->path, b->path);
}

int store_query_cgroups(struct store *st, const struct store_filter *f, store_cgroup_cb cb, void *ctx)
{
	struct groups_ctx c = { 0 };
	char path[STORE_CGROUP_MAX_BYTES + 1];
	struct qrun q;
	int err;

	if (!st || !cb)
		return -EINVAL;
	err = qrun_begin_listing(st, f, &q);
	if (err)
		return err;
	err = qrun_each_piece(&q, st->raw_cgroups, st->rollup_cgroups, &(struct rollup_plan_opts){ 0 }, group_row, &c);
	for (uint32_t i = 0; !err && i < c.n; i++) {
		err = store_cgroup_path(st, c.g[i].cg, path, sizeof(path));
		if (!err && !(c.g[i].path = strdup(path)))
			err = store_set_err(st, -ENOMEM, "out of memory naming cgroups");
	}
	qrun_end(&q);
	if (!err && c.n)
		qsort(c.g, c.n, sizeof(*c.g), cmp_groups);
	for (uint32_t i = 0; !err && i < c.n; i++)
		err = cb(&(struct store_cgroup_total){ .path = c.g[i].path, .samples = c.g[i].samples,
						       .processes = c.g[i].processes }, ctx);
	for (uint32_t i = 0; i < c.n; i++)
		free(c.g[i].path);
	free(c.g);
	store_idmap_free(&c.by_cg);
	store_idmap_free(&c.pairs);
	return err;
}
