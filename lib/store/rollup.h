/* rollup.h - the store's rollups without SQLite: varints, the blob of (stack, count) pairs a rollup row holds, the map that folds and queries sum into, and the plan that splits a window between raw rows and rollup levels. */
#ifndef FLAMED_ROLLUP_H
#define FLAMED_ROLLUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROLLUP_VARINT_MAX 10 /* bytes of a 64-bit value as LEB128 */

/* Writes v as an unsigned LEB128 varint (at most ROLLUP_VARINT_MAX bytes); returns the bytes written. */
size_t rollup_put_varint(unsigned char *p, uint64_t v);

/* Reads one unsigned LEB128 varint of p[0..len) at *pos and moves *pos past it; -EIO when it is cut
 * short or longer than 64 bits. */
int rollup_get_varint(const unsigned char *p, size_t len, size_t *pos, uint64_t *v);

/* One stack's count in a rollup row. */
struct rollup_pair {
	int64_t stack_id; /* >= 1 */
	uint64_t count;   /* 1..INT64_MAX */
};

/* The bytes rollup_encode needs at most for n pairs. */
size_t rollup_encode_bound(size_t n);

/* Encodes n pairs, stack ids strictly ascending, as varints: each id's gap to the previous one (the
 * first: its id), then its count. out holds rollup_encode_bound(n) bytes; *len gets the bytes used.
 * -EINVAL (nothing useful written) when ids are not ascending from 1 or a count is 0 or > INT64_MAX. */
int rollup_encode(const struct rollup_pair *p, size_t n, unsigned char *out, size_t *len);

/* Reads the pairs of one blob in order. */
struct rollup_reader {
	const unsigned char *p;
	size_t len, pos;
	int64_t stack; /* the previous pair's id */
};

/* Starts reading blob[0..len). */
void rollup_reader_init(struct rollup_reader *r, const void *blob, size_t len);

/* The next pair: 1 and *out, 0 at the end, -EIO when the blob is damaged (ids not ascending, a
 * count of 0 or over INT64_MAX, a cut varint). */
int rollup_next(struct rollup_reader *r, struct rollup_pair *out);

/* One cell of a rollup_map: counts summed per (bucket, pid, comm_id, kind, cg, stack_id). */
struct rollup_cell {
	int64_t bucket, comm_id, stack_id;
	uint64_t count; /* saturates at INT64_MAX, the largest count the store holds */
	int64_t last;   /* the largest ts added to this cell */
	uint32_t pid;
	uint32_t kind;  /* enum store_kind of the rows summed (a query summing kinds together: 0) */
	uint32_t cg;    /* the cgroup the rows ran in (the store's cgroups id; 0: not known; a query: 0) */
	bool used;
};

/* An open-addressing hash map of cells, at most half full, with at most max cells. */
struct rollup_map {
	struct rollup_cell *cells;
	size_t cap; /* a power of two, or 0 */
	size_t n, max;
};

/* An empty map that refuses to grow past max cells (0: 1 << 22). Needs no rollup_map_free until the
 * first add. */
void rollup_map_init(struct rollup_map *m, size_t max);

/* Frees the cells; the map is empty again (same max). NULL is safe. */
void rollup_map_free(struct rollup_map *m);

/* Adds count to the cell of (bucket, pid, comm_id, kind, cg, stack_id), created at 0, and ts to its
 * last. -ENOMEM, or -E2BIG when that would make more than max cells. */
int rollup_map_add(struct rollup_map *m, int64_t bucket, uint32_t pid, int64_t comm_id, uint32_t kind,
		   uint32_t cg, int64_t stack_id, uint64_t count, int64_t ts);

/* Adds every (stack, count) pair of a rollup blob (rollup_encode) as rollup_map_add does, with the same
 * bucket, pid, comm_id, kind, cg and ts, each count times weight (>= 1; saturating); faster than one call
 * per pair on a large map. 0, -EIO when the blob is damaged, or rollup_map_add's error; the pairs
 * before the failing one stay added. */
int rollup_map_add_blob(struct rollup_map *m, int64_t bucket, uint32_t pid, int64_t comm_id, uint32_t kind,
			uint32_t cg, const void *blob, size_t len, int64_t ts, uint64_t weight);

/* Moves the used cells to the front of m->cells and returns how many there are. The map can then
 * only be read through that array and freed. */
size_t rollup_map_compact(struct rollup_map *m);

/* Sorts cells by (bucket, pid, comm_id, kind, cg, stack_id). */
void rollup_cells_sort(struct rollup_cell *c, size_t n);

/* Rollup levels, finest first: buckets of a minute and of an hour (unix seconds, aligned to the span). */
#define ROLLUP_LEVELS 2
extern const int64_t rollup_span[ROLLUP_LEVELS];

/* What the database holds at each resolution: raw rows from raw_from on; level l's buckets complete
 * where kept[l] <= bucket and bucket + span <= folded[l]. INT64_MIN: from the start of time (raw_from)
 * or nothing yet (folded). */
struct rollup_tiers {
	int64_t raw_from;
	int64_t kept[ROLLUP_LEVELS];
	int64_t folded[ROLLUP_LEVELS];
};

#define ROLLUP_RAW (-1)      /* rollup_piece.level of raw rows */
#define ROLLUP_PIECES_MAX 32 /* pieces a plan has at most */

/* One source of a query: raw rows with from <= ts < to, or the buckets of one level whose start is in
 * [from, to). */
struct rollup_piece {
	int level; /* ROLLUP_RAW, or an index into rollup_span */
	int64_t from, to;
};

/* How a window is answered. */
struct rollup_plan_opts {
	int64_t step;  /* 0: a profile; else timeline steps of this many seconds, starting at the window's from */
	bool raw_only; /* thread resolution needed: raw rows only, from raw_from on */
};

/* Splits [from, to) into pieces in time order, each second in at most one: whole buckets of the
 * coarsest level that has them complete inside the window (for a timeline: only a level whose span
 * divides the step and the window's from), raw rows for what is left where they exist, and where they do
 * not, the buckets of the finest level kept there whose start lies in what is left (rounding: such a
 * bucket counts in full or not at all). Returns how many pieces (at most ROLLUP_PIECES_MAX). */
size_t rollup_plan(const struct rollup_tiers *t, int64_t from, int64_t to, const struct rollup_plan_opts *o,
		   struct rollup_piece out[ROLLUP_PIECES_MAX]);

/* floor(x / span) * span, for |x| well inside int64_t (|x| <= INT64_MAX / 4) and span >= 1. */
int64_t rollup_floor(int64_t x, int64_t span);

/* The smallest multiple of span >= x, under the same bounds. */
int64_t rollup_ceil(int64_t x, int64_t span);

#endif
