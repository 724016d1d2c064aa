/* fuzz_stackwalk.c - libFuzzer target: stackwalk over any registers, mappings, unwind rows and stack copy (a
 * copy is a traced process's memory; rows and mappings are what the daemon made, but a bug there must not
 * become a read outside the copy). The walk must end within its room, start from the sampled ip, and say
 * how it ended. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "unwind/stackwalk.h"

#define MAX_MAPS 4
#define MAX_ROWS 64
#define ROOM 32
#define MAX_PY 16

struct tables {
	struct unwind_row rows[MAX_ROWS];
	uint32_t n;
};

static int by_pc(const void *a, const void *b)
{
	const struct unwind_row *x = a, *y = b;

	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* One table for every mapping: the last row whose pc is <= pc, among the first nrows. */
static int rows_of(void *ctx, uint32_t table, uint32_t nrows, uint32_t pc, struct unwind_row *row)
{
	const struct tables *t = ctx;
	int found = -1;

	(void)table;
	for (uint32_t i = 0; i < nrows && i < t->n; i++)
		if (t->rows[i].pc <= pc)
			found = (int)i;
	if (found < 0)
		return -1;
	*row = t->rows[found];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct unwind_proc p;
	struct stackwalk_regs r;
	struct stackwalk_copy c;
	struct stackwalk_result res;
	struct tables t = { .n = 0 };
	uint64_t ips[ROOM], pyf[MAX_PY];
	struct stackwalk_py py = { .frames = pyf };
	size_t pos, room;
	uint8_t nmaps, nrows, flags;

	/* regs (24), flags (1: bit 0 no_fp; the rest the room), mappings (count, then start, size, bias,
	 * nrows, table: 26 each), rows (count, then 8 each), Python frames (count, then 8 each; 0 ends an
	 * eval-loop call's; the eval loop is the first half of the first mapping), the copy. */
	if (size < 27)
		return 0;
	memcpy(&r, data, 24);
	flags = data[24];
	nmaps = data[25] % (MAX_MAPS + 1);
	pos = 26;
	memset(&p, 0, sizeof(p));
	for (uint8_t i = 0; i < nmaps && size - pos >= 26; i++) {
		uint32_t len;

		memcpy(&p.m[p.n].start, data + pos, 8);
		memcpy(&len, data + pos + 8, 4);
		memcpy(&p.m[p.n].bias, data + pos + 12, 8);
		memcpy(&p.m[p.n].nrows, data + pos + 20, 2);
		memcpy(&p.m[p.n].table, data + pos + 22, 4);
		p.m[p.n].end = p.m[p.n].start + len;
		if (p.m[p.n].end >= p.m[p.n].start && (!p.n || p.m[p.n].start >= p.m[p.n - 1].end))
			p.n++; /* sorted and apart, as the daemon writes them */
		pos += 26;
	}
	if (pos >= size)
		return 0;
	nrows = data[pos++] % (MAX_ROWS + 1);
	for (uint8_t i = 0; i < nrows && size - pos >= 8; i++) {
		memcpy(&t.rows[t.n++], data + pos, 8);
		pos += 8;
	}
	qsort(t.rows, t.n, sizeof(t.rows[0]), by_pc);
	if (pos < size) {
		uint8_t npy = data[pos++] % (MAX_PY + 1);

		for (uint8_t i = 0; i < npy && size - pos >= 8; i++) {
			memcpy(&pyf[py.n++], data + pos, 8);
			pos += 8;
		}
	}
	if (p.n) {
		py.eval_start[0] = p.m[0].start;
		py.eval_end[0] = p.m[0].start + (p.m[0].end - p.m[0].start) / 2;
	}
	c.at = r.sp;
	c.bytes = data + pos;
	c.len = size - pos;
	room = 1 + (flags >> 1) % ROOM;
	stackwalk(&p, rows_of, &t, &r, &c, py.n ? &py : NULL, flags & 1, ips, room, &res);
	FUZZ_ASSERT(res.n <= room);
	FUZZ_ASSERT(res.py_written <= py.n && res.py_written <= res.n);
	/* Without Python frames the first is the sampled ip (with them, an eval-loop ip's place may hold
	 * its call's frames, or none). */
	FUZZ_ASSERT(py.n || !res.n || ips[0] == r.ip);
	FUZZ_ASSERT(py.n || res.n || (!r.ip && res.end == STACKWALK_END) ||
		    (r.ip >= STACKWALK_USER_TOP && res.end == STACKWALK_FAILED));
	FUZZ_ASSERT(res.end <= STACKWALK_TRUNCATED);
	FUZZ_ASSERT(res.end != STACKWALK_TRUNCATED || res.n == room);
	return 0;
}
