/* store_pending.c - the rows of the open transaction, merged in memory by key (second, thread,
 * names, stack) until the commit writes them. No SQL. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "store/store_impl.h"

/* Mixes a row's key fields into a table hash. */
static uint64_t row_hash(const struct pending_row *r)
{
	uint64_t v[6] = { (uint64_t)r->ts, ((uint64_t)r->pid << 32) | r->tid, (uint64_t)r->comm_id,
			  (uint64_t)r->thread_id, (uint64_t)r->stack_id, r->kind | (uint64_t)r->cg << 32 };

	return hash_words(v, 6);
}

static bool row_same(const struct pending_row *a, const struct pending_row *b)
{
	return a->ts == b->ts && a->pid == b->pid && a->tid == b->tid && a->comm_id == b->comm_id &&
	       a->thread_id == b->thread_id && a->stack_id == b->stack_id && a->kind == b->kind &&
	       a->cg == b->cg;
}

void store_pending_free(struct pending *p)
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
int store_pending_add(struct pending *p, const struct pending_row *r)
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
