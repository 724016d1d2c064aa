/* pylines.c - the source line of a Python instruction, from co_lnotab (3.8, 3.9) or co_linetable (3.10+). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>

#include "python/pylines.h"

#define LINETABLE_NO_LINE (-128) /* 3.10: an entry's line delta for instructions without a line */
#define LOC_NO_LOCATION 15       /* 3.11+: the code of an entry for instructions without a location */
#define VARINT_MAX_SHIFT 30      /* six 6-bit chunks: 36 bits, past CPython's 32-bit values */

/* Adds delta to the line being accumulated. A table is outside data: a line leaving int's range makes it
 * malformed (deltas are at most 2^36 here, so the 64-bit sum itself cannot overflow). */
static int add_line(int64_t *line, int64_t delta)
{
	*line += delta;
	return *line < INT_MIN || *line > INT_MAX ? -EINVAL : 0;
}

/* What a line found means: CPython gives 0 (3.11+ module code's RESUME) or less where there is no line. */
static int line_result(int64_t line)
{
	return line > 0 ? (int)line : -ENOENT;
}

/* 3.8, 3.9: (byte offset increment, signed line increment) pairs; a pair's line applies from its offset
 * on. The table has no end: instructions past its last pair keep its line. */
static int lnotab_line(const uint8_t *t, size_t len, int firstlineno, unsigned instr)
{
	uint64_t target = (uint64_t)instr * 2, addr = 0;
	int64_t line = firstlineno;
	size_t i;

	for (i = 0; i + 2 <= len; i += 2) {
		addr += t[i];
		if (addr > target)
			return line_result(line);
		if (add_line(&line, (int8_t)t[i + 1]) < 0)
			return -EINVAL;
	}
	return i < len ? -EINVAL : line_result(line); /* a half pair at the end */
}

/* 3.10: (byte length, signed line delta) entries, each covering the bytes after the previous one; a delta
 * of -128 marks no line (and leaves the line as it was), entries of length 0 only move the line. */
static int linetable_line(const uint8_t *t, size_t len, int firstlineno, unsigned instr)
{
	uint64_t target = (uint64_t)instr * 2, end = 0;
	int64_t line = firstlineno;
	size_t i;

	for (i = 0; i + 2 <= len; i += 2) {
		int delta = (int8_t)t[i + 1];

		if (delta != LINETABLE_NO_LINE && add_line(&line, delta) < 0)
			return -EINVAL;
		end += t[i];
		if (target < end)
			return delta == LINETABLE_NO_LINE ? -ENOENT : line_result(line);
	}
	return i < len ? -EINVAL : -ENOENT;
}

/* A 3.11+ location table being read: the bytes and where the next one is. */
struct loc_cursor {
	const uint8_t *t;
	size_t len, pos;
};

/* The next byte of an entry (not its first): there must be one, with bit 7 clear (bit 7 starts an entry). */
static int loc_byte(struct loc_cursor *c, uint8_t *b)
{
	if (c->pos >= c->len || (c->t[c->pos] & 0x80))
		return -EINVAL;
	*b = c->t[c->pos++];
	return 0;
}

/* An unsigned varint: 6-bit chunks, least significant first, bit 6 set on every chunk but the last. */
static int loc_varint(struct loc_cursor *c, uint64_t *v)
{
	unsigned shift = 0;
	uint8_t b;

	*v = 0;
	do {
		if (shift > VARINT_MAX_SHIFT || loc_byte(c, &b) < 0)
			return -EINVAL;
		*v |= (uint64_t)(b & 0x3f) << shift;
		shift += 6;
	} while (b & 0x40);
	return 0;
}

/* A signed varint: the magnitude shifted left by one, the sign in bit 0. */
static int loc_svarint(struct loc_cursor *c, int64_t *v)
{
	uint64_t u;

	if (loc_varint(c, &u) < 0)
		return -EINVAL;
	*v = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return 0;
}

/* Reads the rest of an entry of code (its first byte read): its start line delta in *delta. Columns and
 * end lines are skipped, but must be well formed. */
static int loc_entry(struct loc_cursor *c, unsigned code, int64_t *delta)
{
	uint64_t skip;
	uint8_t b;

	*delta = 0;
	if (code <= 9) /* short form: one byte of columns, same line */
		return loc_byte(c, &b);
	if (code <= 12) { /* one-line form: line + (code - 10), start and end column bytes */
		*delta = code - 10;
		return loc_byte(c, &b) < 0 ? -EINVAL : loc_byte(c, &b);
	}
	if (code == LOC_NO_LOCATION)
		return 0;
	if (loc_svarint(c, delta) < 0) /* no-columns (13) and long (14) forms: the line delta */
		return -EINVAL;
	if (code == 14) /* long form: end line delta, start and end columns (each stored + 1; 0: unknown) */
		for (int i = 0; i < 3; i++)
			if (loc_varint(c, &skip) < 0)
				return -EINVAL;
	return 0;
}

/* 3.11+: entries, each a first byte (bit 7 set, a code in bits 3-6, its length in code units - 1 in bits
 * 0-2) and the bytes its code says; lines are deltas from the previous entry's. */
static int locations_line(const uint8_t *t, size_t len, int firstlineno, unsigned instr)
{
	struct loc_cursor c = { .t = t, .len = len, .pos = 0 };
	int64_t line = firstlineno, delta;
	uint64_t end = 0;

	while (c.pos < c.len) {
		uint8_t first = t[c.pos++];
		unsigned code = (first >> 3) & 0xf;

		if (!(first & 0x80) || loc_entry(&c, code, &delta) < 0 || add_line(&line, delta) < 0)
			return -EINVAL;
		end += (first & 7) + 1;
		if (instr < end)
			return code == LOC_NO_LOCATION ? -ENOENT : line_result(line);
	}
	return -ENOENT;
}

int py_line_of(enum py_linetable_kind kind, const uint8_t *table, size_t len, int firstlineno, unsigned instr)
{
	if (!table && len)
		return -EINVAL;
	switch (kind) {
	case PY_LINES_LNOTAB:
		return lnotab_line(table, len, firstlineno, instr);
	case PY_LINES_LINETABLE:
		return linetable_line(table, len, firstlineno, instr);
	case PY_LINES_LOCATIONS:
		return locations_line(table, len, firstlineno, instr);
	}
	return -EINVAL;
}
