/* test_rollup.c - rollup.h's map: adding a whole blob gives the same cells as adding its pairs one by
 * one, on maps small and large, and stops as documented on a damaged blob or a full map. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store/rollup.h"

/* A deterministic stream of stack ids with repeats, as a busy process's rollups have. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Encodes n pairs with ascending ids drawn from [1, span] into a new blob (*len bytes). */
static unsigned char *make_blob(uint64_t *seed, size_t n, int64_t span, size_t *len, struct rollup_pair *pairs)
{
	unsigned char *blob = malloc(rollup_encode_bound(n));
	int64_t id = 0;

	for (size_t i = 0; i < n; i++) {
		id += 1 + (int64_t)(next_rand(seed) % (uint64_t)(span / (int64_t)n + 1));
		pairs[i] = (struct rollup_pair){ .stack_id = id, .count = 1 + next_rand(seed) % 50 };
	}
	if (blob && rollup_encode(pairs, n, blob, len)) {
		free(blob);
		return NULL;
	}
	return blob;
}

static int cmp_cells(const void *x, const void *y)
{
	const struct rollup_cell *a = x, *b = y;

	if (a->bucket != b->bucket)
		return a->bucket < b->bucket ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->comm_id != b->comm_id)
		return a->comm_id < b->comm_id ? -1 : 1;
	return a->stack_id < b->stack_id ? -1 : a->stack_id > b->stack_id;
}

/* The used cells of m, sorted; m can then only be freed. */
static size_t sorted_cells(struct rollup_map *m)
{
	size_t n = rollup_map_compact(m);

	qsort(m->cells, n, sizeof(*m->cells), cmp_cells);
	return n;
}

static bool same_cells(struct rollup_map *a, struct rollup_map *b)
{
	size_t na = sorted_cells(a), nb = sorted_cells(b);

	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++) {
		const struct rollup_cell *x = &a->cells[i], *y = &b->cells[i];

		if (cmp_cells(x, y) || x->count != y->count || x->last != y->last)
			return false;
	}
	return true;
}

/* Many blobs of many processes into one map, both ways: the same cells, counts and last seconds. */
static void test_blob_matches_pairs(void)
{
	struct rollup_map by_blob, by_pair;
	struct rollup_pair *pairs = calloc(400, sizeof(*pairs));
	uint64_t seed = 0x1234567;
	size_t blobs = 0;
	int err = 0;

	rollup_map_init(&by_blob, 0);
	rollup_map_init(&by_pair, 0);
	for (int row = 0; pairs && !err && row < 3000; row++) {
		size_t n = 1 + next_rand(&seed) % 400, len;
		uint32_t pid = 1 + (uint32_t)(next_rand(&seed) % 300);
		int64_t comm = 1 + (int64_t)(pid % 7), ts = 1000 + row;
		unsigned char *blob = make_blob(&seed, n, 60000, &len, pairs);

		if (!blob) {
			err = -ENOMEM;
			break;
		}
		err = rollup_map_add_blob(&by_blob, row % 3, pid, comm, 0, 0, blob, len, ts, 1);
		for (size_t i = 0; !err && i < n; i++)
			err = rollup_map_add(&by_pair, row % 3, pid, comm, 0, 0, pairs[i].stack_id, pairs[i].count, ts);
		free(blob);
		blobs++;
	}
	CHECK(!err, "rollup_map_add_blob: %zu blobs added (%d)", blobs, err);
	CHECK(by_blob.n > 100000, "rollup_map_add_blob: the map grew large (%zu cells) while blobs were added", by_blob.n);
	CHECK(by_blob.n == by_pair.n, "rollup_map_add_blob: as many cells as pair by pair (%zu, %zu)", by_blob.n,
	      by_pair.n);
	CHECK(same_cells(&by_blob, &by_pair), "rollup_map_add_blob: every cell's count and last second as pair by pair");
	rollup_map_free(&by_blob);
	rollup_map_free(&by_pair);
	free(pairs);
}

/* Adds a blob of 40 pairs (seed: which), cut short by cut bytes, to a new map *m of at most max cells. */
static int add_40(uint64_t seed, size_t cut, size_t max, struct rollup_pair pairs[40], struct rollup_map *m)
{
	size_t len;
	unsigned char *blob = make_blob(&seed, 40, 4000, &len, pairs);
	int err;

	rollup_map_init(m, max);
	err = blob ? rollup_map_add_blob(m, 0, 1, 1, 0, 0, blob, len - cut, 5, 1) : -ENOMEM;
	free(blob);
	return err;
}

/* A blob cut inside its last pair: -EIO, with every pair before it added. */
static void test_blob_damaged(void)
{
	struct rollup_pair pairs[40];
	struct rollup_map m;
	uint64_t total = 0, want = 0;
	int err = add_40(99, 1, 0, pairs, &m);

	for (size_t i = 0; i < m.cap; i++)
		total += m.cells[i].used ? m.cells[i].count : 0;
	for (size_t i = 0; i + 1 < 40; i++)
		want += pairs[i].count;
	CHECK(err == -EIO, "rollup_map_add_blob: a cut blob is -EIO (%d)", err);
	CHECK(m.n == 39 && total == want, "rollup_map_add_blob: the 39 whole pairs before the cut are added (%zu cells,"
	      " %llu of %llu samples)", m.n, (unsigned long long)total, (unsigned long long)want);
	rollup_map_free(&m);
	rollup_map_init(&m, 0);
	err = rollup_map_add_blob(&m, 0, 1, 1, 0, 0, NULL, 0, 5, 1);
	CHECK(err == 0 && m.n == 0, "rollup_map_add_blob: an empty blob adds nothing (%d, %zu cells)", err, m.n);
	rollup_map_free(&m);
}

/* A map that may hold 25 cells: -E2BIG at the 26th distinct stack, 25 cells kept. */
static void test_blob_full(void)
{
	struct rollup_pair pairs[40];
	struct rollup_map m;
	int err = add_40(7, 0, 25, pairs, &m);

	CHECK(err == -E2BIG && m.n == 25, "rollup_map_add_blob: past the map's bound: -E2BIG with 25 cells (%d, %zu)", err,
	      m.n);
	rollup_map_free(&m);
}

int main(void)
{
	test_blob_matches_pairs();
	test_blob_damaged();
	test_blob_full();
	return CHECK_EXIT();
}
