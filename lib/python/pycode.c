/* pycode.c - reads a code object's name, file, first line and line table out of a Python process. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/pycode.h"
#include "util/utf8.h"

#define STR_KIND(state) (((state) >> 2) & 7) /* PyASCIIObject.state: bytes per code point */
#define STR_COMPACT 0x20      /* data follows the object header */
#define STR_ASCII 0x40        /* and is ASCII (kind 1), right after PyASCIIObject */
#define REPLACEMENT 0xfffdu   /* U+FFFD, for code points that are not Unicode scalar values */

static uint64_t u64_at(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* Reads len bytes at addr + off; an address range that wraps cannot be mapped (-EFAULT). */
static int read_at(py_read_fn read, void *ctx, uint64_t addr, uint64_t off, void *buf, size_t len)
{
	if (addr > UINT64_MAX - off || addr + off > UINT64_MAX - len)
		return -EFAULT;
	return read(ctx, addr + off, buf, len);
}

/* Appends code point cp to out (n bytes used of size) as UTF-8, unless it and the NUL would not fit.
 * Surrogates, values past U+10FFFF and NUL (a C string cannot hold it) become U+FFFD. Returns whether it
 * was appended. */
static bool put_utf8(char *out, size_t size, size_t *n, uint32_t cp)
{
	unsigned char b[4];
	size_t k;

	if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = REPLACEMENT;
	k = utf8_encode(cp, b);
	if (*n + k >= size)
		return false;
	memcpy(out + *n, b, k);
	*n += k;
	return true;
}

/* Converts count code points of kind bytes each (native order) at data to UTF-8 in out, NUL-terminated
 * and cut before the first that does not fit; an ASCII string's bytes past 0x7f are not ASCII: U+FFFD. */
static void to_utf8(const uint8_t *data, size_t count, unsigned kind, bool ascii, char *out, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < count; i++) {
		uint32_t cp;

		if (kind == 1) {
			cp = data[i];
			if (ascii && cp >= 0x80)
				cp = REPLACEMENT;
		} else if (kind == 2) {
			uint16_t v;

			memcpy(&v, data + 2 * i, sizeof(v));
			cp = v;
		} else {
			memcpy(&cp, data + 4 * i, sizeof(cp));
		}
		if (!put_utf8(out, size, &n, cp))
			break;
	}
	out[n] = '\0';
}

/* Whether a str of this state and length is one py_code_read takes: compact, of 1, 2 or 4 bytes per code
 * point (an ASCII one of 1), at most PY_STR_MAX code points. */
static bool str_ok(unsigned state, int64_t length)
{
	unsigned kind = STR_KIND(state);

	if (!(state & STR_COMPACT) || (kind != 1 && kind != 2 && kind != 4) || ((state & STR_ASCII) && kind != 1))
		return false;
	return length >= 0 && length <= PY_STR_MAX;
}

/* Reads the str object at addr into out (size bytes, at most PY_FILE_MAX), as UTF-8: one read for its
 * PyASCIIObject header, then one for as many code points as can fit (each takes a byte at least). */
static int read_str(const struct py_layout *l, py_read_fn read, void *ctx, uint64_t addr, char *out,
		    size_t size)
{
	uint8_t hdr[PY_HEADER_MAX], data[(PY_FILE_MAX - 1) * 4];
	unsigned state, kind;
	uint16_t data_at;
	size_t count;
	int64_t length;
	int rc;

	if (l->str_ascii_size > sizeof(hdr) || l->str_length + 8u > l->str_ascii_size ||
	    l->str_state >= l->str_ascii_size || size > PY_FILE_MAX || size == 0)
		return -EINVAL;
	rc = read_at(read, ctx, addr, 0, hdr, l->str_ascii_size);
	if (rc < 0)
		return rc;
	memcpy(&length, hdr + l->str_length, sizeof(length));
	state = hdr[l->str_state]; /* interned: bits 0-1, kind 2-4, compact 5, ascii 6 */
	if (!str_ok(state, length))
		return -EINVAL;
	kind = STR_KIND(state);
	data_at = (state & STR_ASCII) ? l->str_ascii_size : l->str_compact_size;
	count = (size_t)length < size - 1 ? (size_t)length : size - 1;
	if (count) {
		rc = read_at(read, ctx, addr, data_at, data, count * kind);
		if (rc < 0)
			return rc;
	}
	to_utf8(data, count, kind, state & STR_ASCII, out, size);
	return 0;
}

/* Reads the bytes object at addr into c->lines (cut at PY_LINES_MAX): its header, then its data. */
static int read_lines(const struct py_layout *l, py_read_fn read, void *ctx, uint64_t addr, struct py_code *c)
{
	uint8_t hdr[PY_HEADER_MAX];
	int64_t size;
	size_t n;
	int rc;

	if (l->bytes_data > sizeof(hdr) || l->bytes_size + 8u > l->bytes_data)
		return -EINVAL;
	rc = read_at(read, ctx, addr, 0, hdr, l->bytes_data);
	if (rc < 0)
		return rc;
	memcpy(&size, hdr + l->bytes_size, sizeof(size));
	if (size < 0)
		return -EINVAL;
	n = (uint64_t)size > PY_LINES_MAX ? PY_LINES_MAX : (size_t)size;
	c->lines_cut = (uint64_t)size > PY_LINES_MAX;
	if (n == 0)
		return 0;
	c->lines = malloc(n);
	if (!c->lines)
		return -ENOMEM;
	rc = read_at(read, ctx, addr, l->bytes_data, c->lines, n);
	if (rc < 0) {
		free(c->lines);
		c->lines = NULL;
		return rc;
	}
	c->nlines = n;
	return 0;
}

/* Whether the code object fields l names (pointers and the int) lie in its header read. */
static bool code_layout_ok(const struct py_layout *l)
{
	uint16_t name = l->code_qualname != PY_NO_OFFSET ? l->code_qualname : l->code_name;

	return l->code_size <= PY_HEADER_MAX && l->object_type + 8u <= l->code_size &&
	       name + 8u <= l->code_size && l->code_filename + 8u <= l->code_size &&
	       l->code_linetable + 8u <= l->code_size && l->code_firstlineno + 4u <= l->code_size;
}

/* Reads the header of the code object at addr and takes its identity from it. */
static int read_header(const struct py_layout *l, uint64_t code_type, py_read_fn read, void *ctx, uint64_t addr,
		       struct py_code_id *id)
{
	uint8_t hdr[PY_HEADER_MAX];
	int rc;

	if (!l || !read || !code_layout_ok(l))
		return -EINVAL;
	rc = read_at(read, ctx, addr, 0, hdr, l->code_size);
	if (rc < 0)
		return rc;
	if (code_type && u64_at(hdr, l->object_type) != code_type)
		return -EINVAL;
	id->name = u64_at(hdr, l->code_qualname != PY_NO_OFFSET ? l->code_qualname : l->code_name);
	id->file = u64_at(hdr, l->code_filename);
	id->lines = u64_at(hdr, l->code_linetable);
	memcpy(&id->firstlineno, hdr + l->code_firstlineno, sizeof(id->firstlineno));
	return 0;
}

int py_code_identify(const struct py_layout *l, uint64_t code_type, py_read_fn read, void *ctx, uint64_t addr,
		     struct py_code_id *out)
{
	memset(out, 0, sizeof(*out));
	return read_header(l, code_type, read, ctx, addr, out);
}

int py_code_read(const struct py_layout *l, uint64_t code_type, py_read_fn read, void *ctx, uint64_t addr,
		 struct py_code *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = read_header(l, code_type, read, ctx, addr, &out->id);
	if (rc < 0)
		return rc;
	out->firstlineno = out->id.firstlineno;
	rc = read_str(l, read, ctx, out->id.name, out->name, sizeof(out->name));
	if (rc == 0)
		rc = read_str(l, read, ctx, out->id.file, out->file, sizeof(out->file));
	if (rc == 0)
		rc = read_lines(l, read, ctx, out->id.lines, out);
	if (rc < 0)
		memset(out, 0, sizeof(*out)); /* read_lines frees what it allocated when it fails */
	return rc;
}

void py_code_release(struct py_code *c)
{
	if (!c)
		return;
	free(c->lines);
	c->lines = NULL;
	c->nlines = 0;
}
