/* fuzz_pylines.c - libFuzzer target: py_line_of on any line table, kind, first line and instruction. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "python/pylines.h"

#define HEADER 7 /* the kind (1 byte: 0 is none), firstlineno (4, little-endian), instr (2); then the table */

/* Every answer is a line, -ENOENT or -EINVAL. */
static int line_of(enum py_linetable_kind kind, const uint8_t *table, size_t len, int first, unsigned instr)
{
	int rc = py_line_of(kind, table, len, first, instr);

	FUZZ_ASSERT(rc > 0 || rc == -ENOENT || rc == -EINVAL);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum py_linetable_kind kind;
	const uint8_t *table = data + HEADER; /* ends where the input does: ASan sees any read past it */
	size_t len;
	int32_t first;
	uint16_t instr;
	int rc, next, zero, far;

	if (size < HEADER)
		return 0;
	kind = (enum py_linetable_kind)(data[0] % 4);
	memcpy(&first, data + 1, sizeof(first));
	memcpy(&instr, data + 5, sizeof(instr));
	len = size - HEADER;
	rc = line_of(kind, table, len, first, instr);
	if (kind == 0) {
		FUZZ_ASSERT(rc == -EINVAL);
		return 0;
	}
	/* A table is read up to the instruction only: malformed before instr is malformed before any later
	 * one, and an earlier one stops no later. */
	next = line_of(kind, table, len, first, instr + 1u);
	zero = line_of(kind, table, len, first, 0);
	far = line_of(kind, table, len, first, UINT_MAX);
	if (rc == -EINVAL)
		FUZZ_ASSERT(next == -EINVAL && far == -EINVAL);
	else
		FUZZ_ASSERT(zero != -EINVAL);
	/* Only co_lnotab has no end; the others end, and UINT_MAX lies past them. */
	if (kind != PY_LINES_LNOTAB)
		FUZZ_ASSERT(far == -ENOENT || far == -EINVAL);
	if (len == 0)
		FUZZ_ASSERT(kind == PY_LINES_LNOTAB ? rc == (first > 0 ? first : -ENOENT) : rc == -ENOENT);
	return 0;
}
