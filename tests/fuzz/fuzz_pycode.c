/* fuzz_pycode.c - libFuzzer target: py_code_read on a made-up address space holding a code object. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "python/pycode.h"
#include "python/pylines.h"

/* The input: a first byte (bits 0-2: the layout, 3.8 + n % 6; bit 6: the third read fails with -ESRCH;
 * bit 7: code objects must have type FUZZ_TYPE), then the memory at FUZZ_BASE, a code object at its start. */
#define FUZZ_BASE 0x1000ull
#define FUZZ_TYPE 0x2000ull
#define FAILING_READ 3
#define MAX_READS 7 /* the header, two per str, two for the bytes object */

struct space {
	const uint8_t *mem;
	size_t size;
	unsigned reads;
	bool fail;
};

static int space_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct space *s = ctx;

	FUZZ_ASSERT(len > 0 && len <= PY_LINES_MAX);
	if (++s->reads == FAILING_READ && s->fail)
		return -ESRCH;
	if (addr < FUZZ_BASE || addr - FUZZ_BASE > s->size || len > s->size - (addr - FUZZ_BASE))
		return -EFAULT;
	memcpy(buf, s->mem + (addr - FUZZ_BASE), len);
	return 0;
}

/* The bytes after the first of a UTF-8 sequence, from that first byte; 9: not a first byte. */
static unsigned utf8_more(unsigned char b)
{
	return b < 0x80 ? 0 : (b & 0xe0) == 0xc0 ? 1 : (b & 0xf0) == 0xe0 ? 2 : (b & 0xf8) == 0xf0 ? 3 : 9;
}

/* Whether s (size bytes) holds a NUL and, before it, well-formed UTF-8 of Unicode scalar values. */
static bool utf8_ok(const char *s, size_t size)
{
	const unsigned char *p = (const unsigned char *)s, *end = memchr(s, '\0', size);

	if (!end)
		return false;
	while (p < end) {
		unsigned n = utf8_more(*p);
		uint32_t cp = n == 0 ? *p : *p & (0x3f >> n);

		if (n == 9 || (size_t)(end - p) <= n)
			return false;
		for (unsigned i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000)) /* overlong */
			return false;
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct py_layout *l;
	struct space s = { .mem = data + 1 };
	struct py_code c;
	uint64_t type;
	int rc;

	if (size < 1)
		return 0;
	l = py_layout_find(3, 8 + (data[0] & 7) % 5); /* the layouts compiled in, 3.8 to 3.12 */
	FUZZ_ASSERT(l);
	type = (data[0] & 0x80) ? FUZZ_TYPE : 0;
	s.fail = data[0] & 0x40;
	s.size = size - 1;
	rc = py_code_read(l, type, space_read, &s, FUZZ_BASE, &c);
	FUZZ_ASSERT(rc == 0 || rc == -EFAULT || rc == -EINVAL || rc == -ENOMEM || (rc == -ESRCH && s.fail));
	FUZZ_ASSERT(s.reads <= MAX_READS && (!s.fail || s.reads < FAILING_READ || rc == -ESRCH));
	if (rc == 0) {
		FUZZ_ASSERT(utf8_ok(c.name, sizeof(c.name)) && utf8_ok(c.file, sizeof(c.file)));
		FUZZ_ASSERT(c.nlines <= PY_LINES_MAX && (c.nlines == 0) == (c.lines == NULL));
		FUZZ_ASSERT(!c.lines_cut || c.nlines == PY_LINES_MAX);
		for (unsigned instr = 0; instr < 4; instr++) {
			int line = py_line_of(l->lines, c.lines, c.nlines, c.firstlineno, instr * 7);

			FUZZ_ASSERT(line > 0 || line == -ENOENT || line == -EINVAL);
		}
	} else {
		FUZZ_ASSERT(c.lines == NULL && c.nlines == 0);
	}
	py_code_release(&c);
	py_code_release(&c);
	return 0;
}
