/* rollup.c - the store's rollups without SQLite: varints, (stack, count) blobs, the summing map, the plan of a window. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "store/rollup.h"

#define MAP_DEFAULT_MAX (1u << 22)
#define BOUND (INT64_MAX / 4) /* times beyond +-this are clamped before any rounding to a span */

const int64_t rollup_span[ROLLUP_LEVELS] = { 60, 3600 };

size_t rollup_put_varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		unsigned char b = v & 0x7f;

		v >>= 7;
		p[n++] = b | (v ? 0x80 : 0);
	} while (v);
	return n;
}

int rollup_get_varint(const unsigned char *p, size_t len, size_t *pos, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; *pos < len && shift < 64; shift += 7) {
		unsigned char b = p[(*pos)++];

		if (shift == 63 && b > 1)
			return -EIO;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EIO;
}

size_t rollup_encode_bound(size_t n)
{
	return n * 2 * ROLLUP_VARINT_MAX;
}

int rollup_encode(const struct rollup_pair *p, size_t n, unsigned char *out, size_t *len)
{
	int64_t prev = 0;
	size_t pos = 0;

	for (size_t i = 0; i < n; i++) {
		if (p[i].stack_id <= prev || p[i].count == 0 || p[i].count > (uint64_t)INT64_MAX)
			return -EINVAL;
		pos += rollup_put_varint(out + pos, (uint64_t)(p[i].stack_id - prev));
		pos += rollup_put_varint(out + pos, p[i].count);
		prev = p[i].stack_id;
	}
	*len = pos;
	return 0;
}

void rollup_reader_init(struct rollup_reader *r, const void *blob, size_t len)
{
	*r = (struct rollup_reader){ .p = blob, .len = blob ? len : 0 };
}

int rollup_next(struct rollup_reader *r, struct rollup_pair *out)
{
	uint64_t gap, count;

	if (r->pos >= r->len)
		return 0;
	if (rollup_get_varint(r->p, r->len, &r->pos, &gap) < 0 || rollup_get_varint(r->p, r->len, &r->pos, &count) < 0 ||
	    gap == 0 || gap > (uint64_t)(INT64_MAX - r->stack) || count == 0 || count > (uint64_t)INT64_MAX)
		return -EIO;
	r->stack += (int64_t)gap;
	*out = (struct rollup_pair){ .stack_id = r->stack, .count = count };
	return 1;
}

void rollup_map_init(struct rollup_map *m, size_t max)
{
	*m = (struct rollup_map){ .max = max ? max : MAP_DEFAULT_MAX };
}

void rollup_map_free(struct rollup_map *m)
{
	if (!m)
		return;
	free(m->cells);
	m->cells = NULL;
	m->cap = m->n = 0;
}

/* Mixes a cell's key into a table hash. */
static uint64_t cell_hash(int64_t bucket, uint32_t pid, int64_t comm_id, uint32_t kind, uint32_t cg,
			  int64_t stack_id)
{
	uint64_t v[5] = { (uint64_t)bucket, pid | (uint64_t)kind << 32, (uint64_t)comm_id, (uint64_t)stack_id, cg };

	return hash_words(v, 5);
}

/* The slot of a key: its cell, or the free one where it goes. The table has a free slot. */
static struct rollup_cell *cell_slot(const struct rollup_map *m, int64_t bucket, uint32_t pid, int64_t comm_id,
				     uint32_t kind, uint32_t cg, int64_t stack_id)
{
	size_t i = cell_hash(bucket, pid, comm_id, kind, cg, stack_id) & (m->cap - 1);

	for (;; i = (i + 1) & (m->cap - 1)) {
		struct rollup_cell *c = &m->cells[i];

		if (!c->used || (c->stack_id == stack_id && c->comm_id == comm_id && c->pid == pid && c->kind == kind &&
				 c->cg == cg && c->bucket == bucket))
			return c;
	}
}

/* Doubles the table (first size 1024). */
static int map_grow(struct rollup_map *m)
{
	struct rollup_map bigger = { .cap = m->cap ? m->cap * 2 : 1024, .n = m->n, .max = m->max };

	bigger.cells = calloc(bigger.cap, sizeof(*bigger.cells));
	if (!bigger.cells)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		const struct rollup_cell *c = &m->cells[i];

		if (c->used)
			*cell_slot(&bigger, c->bucket, c->pid, c->comm_id, c->kind, c->cg, c->stack_id) = *c;
	}
	free(m->cells);
	*m = bigger;
	return 0;
}

/* Adds count and ts to a cell. */
static void cell_add(struct rollup_cell *c, uint64_t count, int64_t ts)
{
	c->count = count > (uint64_t)INT64_MAX - c->count ? (uint64_t)INT64_MAX : c->count + count;
	if (ts > c->last)
		c->last = ts;
}

int rollup_map_add(struct rollup_map *m, int64_t bucket, uint32_t pid, int64_t comm_id, uint32_t kind,
		   uint32_t cg, int64_t stack_id, uint64_t count, int64_t ts)
{
	struct rollup_cell *c = m->cap ? cell_slot(m, bucket, pid, comm_id, kind, cg, stack_id) : NULL;
	int err;

	if (!c || !c->used) {
		if (m->n >= m->max)
			return -E2BIG;
		if ((m->n + 1) * 2 > m->cap) {
			err = map_grow(m);
			if (err)
				return err;
		}
		c = cell_slot(m, bucket, pid, comm_id, kind, cg, stack_id);
		*c = (struct rollup_cell){ .bucket = bucket, .pid = pid, .comm_id = comm_id, .kind = kind, .cg = cg,
					   .stack_id = stack_id, .last = ts, .used = true };
		m->n++;
	}
	cell_add(c, count, ts);
	return 0;
}

/* Pairs decoded before their cells are looked up: their cache misses then overlap. */
#define ADD_AHEAD 16

int rollup_map_add_blob(struct rollup_map *m, int64_t bucket, uint32_t pid, int64_t comm_id, uint32_t kind,
			uint32_t cg, const void *blob, size_t len, int64_t ts, uint64_t weight)
{
	struct rollup_reader r;
	struct rollup_pair ahead[ADD_AHEAD];
	const uint64_t most = UINT64_MAX / weight; /* the largest count weighed without saturating */
	int rc;

	rollup_reader_init(&r, blob, len);
	do {
		size_t n = 0;

		while (n < ADD_AHEAD && (rc = rollup_next(&r, &ahead[n])) == 1)
			n++;
		for (size_t i = 0; m->cap && i < n; i++) {
			const char *c = (const char *)&m->cells[cell_hash(bucket, pid, comm_id, kind, cg, ahead[i].stack_id) &
								(m->cap - 1)];

			__builtin_prefetch(c);
			__builtin_prefetch(c + sizeof(struct rollup_cell) - 1); /* a cell may straddle two lines */
		}
		for (size_t i = 0; i < n; i++) {
			uint64_t count = ahead[i].count > most ? UINT64_MAX : ahead[i].count * weight;
			int err = rollup_map_add(m, bucket, pid, comm_id, kind, cg, ahead[i].stack_id, count, ts);

			if (err)
				return err;
		}
	} while (rc == 1);
	return rc;
}

size_t rollup_map_compact(struct rollup_map *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->cap; i++)
		if (m->cells[i].used)
			m->cells[n++] = m->cells[i];
	return n;
}

static int cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

static int cell_cmp(const void *pa, const void *pb)
{
	const struct rollup_cell *a = pa, *b = pb;

	return cmp_i64(a->bucket, b->bucket) ?: cmp_i64(a->pid, b->pid) ?: cmp_i64(a->comm_id, b->comm_id)
		?: cmp_i64(a->kind, b->kind) ?: cmp_i64(a->cg, b->cg) ?: cmp_i64(a->stack_id, b->stack_id);
}

void rollup_cells_sort(struct rollup_cell *c, size_t n)
{
	if (n)
		qsort(c, n, sizeof(*c), cell_cmp);
}

static int64_t clamp(int64_t x)
{
	return x < -BOUND ? -BOUND : x > BOUND ? BOUND : x;
}

int64_t rollup_floor(int64_t x, int64_t span)
{
	int64_t q = x / span;

	if (x % span < 0)
		q--;
	return q * span;
}

int64_t rollup_ceil(int64_t x, int64_t span)
{
	return rollup_floor(x + span - 1, span);
}

/* A plan under construction. */
struct plan {
	const struct rollup_tiers *t;
	const struct rollup_plan_opts *o;
	int64_t origin; /* the window's from: where timeline steps start */
	struct rollup_piece *out;
	size_t n;
};

/* Appends a piece, merged into the previous one when it continues it. */
static void emit(struct plan *p, int level, int64_t from, int64_t to)
{
	struct rollup_piece *last = p->n ? &p->out[p->n - 1] : NULL;

	if (level != ROLLUP_RAW) { /* no bucket starts beyond these: keeps bucket arithmetic in range */
		from = clamp(from);
		to = clamp(to);
	}
	if (from >= to)
		return;
	if (last && last->level == level && last->to == from) {
		last->to = to;
		return;
	}
	if (p->n < ROLLUP_PIECES_MAX)
		p->out[p->n++] = (struct rollup_piece){ .level = level, .from = from, .to = to };
}

/* Whether whole buckets of level answer a timeline exactly: each lies inside one step. */
static bool level_fits_steps(const struct plan *p, int level)
{
	int64_t span = rollup_span[level];

	if (!p->o->step)
		return true;
	return p->o->step % span == 0 && ((p->origin % span) + span) % span == 0;
}

/* [from, to): no exact source; each level takes the buckets starting where it is the finest kept one.
 * A coarser level only takes time before the finer one's kept start, so no bucket is counted twice. */
static void plan_rounding(struct plan *p, int64_t from, int64_t to)
{
	int64_t start[ROLLUP_LEVELS];

	for (int l = 0; l < ROLLUP_LEVELS; l++) {
		int64_t s = p->t->kept[l] > from ? p->t->kept[l] : from;

		start[l] = s < to ? s : to;
	}
	for (int l = ROLLUP_LEVELS - 1; l >= 0; l--) {
		int64_t end = l ? start[l - 1] : to;

		if (end > p->t->folded[l])
			end = p->t->folded[l];
		emit(p, l, start[l], end);
	}
}

/* Answers [from, to) with level and the finer ones, left to right. */
static void plan_level(struct plan *p, int64_t from, int64_t to, int level)
{
	int64_t lo, hi, span;

	if (from >= to)
		return;
	if (level < 0) {
		int64_t r = p->t->raw_from > from ? p->t->raw_from : from;

		if (r > to)
			r = to;
		plan_rounding(p, from, r);
		emit(p, ROLLUP_RAW, r, to);
		return;
	}
	span = rollup_span[level];
	lo = rollup_ceil(clamp(from > p->t->kept[level] ? from : p->t->kept[level]), span);
	hi = rollup_floor(clamp(to < p->t->folded[level] ? to : p->t->folded[level]), span);
	if (lo >= hi || !level_fits_steps(p, level)) {
		plan_level(p, from, to, level - 1);
		return;
	}
	plan_level(p, from, lo, level - 1);
	emit(p, level, lo, hi);
	plan_level(p, hi, to, level - 1);
}

size_t rollup_plan(const struct rollup_tiers *t, int64_t from, int64_t to, const struct rollup_plan_opts *o,
		   struct rollup_piece out[ROLLUP_PIECES_MAX])
{
	struct plan p = { .t = t, .o = o, .origin = from, .out = out };

	if (o->raw_only)
		emit(&p, ROLLUP_RAW, t->raw_from > from ? t->raw_from : from, to);
	else
		plan_level(&p, from, to, ROLLUP_LEVELS - 1);
	return p.n;
}
