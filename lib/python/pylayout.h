/* pylayout.h - where CPython 3.8 to 3.15 (x86-64) keep what a Python stack walk and its naming read. */
#ifndef FLAMED_PYTHON_PYLAYOUT_H
#define FLAMED_PYTHON_PYLAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "python.h"

/* Bytes of a code object, str or bytes header the daemon reads at most: every field it reads of one lies
 * in them. */
#define PY_HEADER_MAX 256

/* How a code object maps instructions to lines. */
enum py_linetable_kind {
	PY_LINES_LNOTAB = 1,    /* 3.8, 3.9: co_lnotab, (bytes, lines) increments */
	PY_LINES_LINETABLE = 2, /* 3.10: co_linetable, (bytes, lines) entries, -128 for no line */
	PY_LINES_LOCATIONS = 3, /* 3.11+: co_linetable, the location table of code units */
};

/* One minor version's layout: what the BPF program walks (bpf) and what the daemon reads to name a
 * frame. Byte offsets on x86-64. */
struct py_layout {
	unsigned major, minor;
	struct py_offsets bpf;
	uint16_t tstate_interp;     /* PyThreadState.interp */
	uint16_t object_type;       /* PyObject.ob_type */
	uint16_t code_filename;     /* PyCodeObject.co_filename (str) */
	uint16_t code_name;         /* co_name (str) */
	uint16_t code_qualname;     /* co_qualname (str, 3.11+); PY_NO_OFFSET: none */
	uint16_t code_firstlineno;  /* co_firstlineno (int) */
	uint16_t code_linetable;    /* co_lnotab or co_linetable (bytes) */
	uint16_t code_size;         /* bytes of a code object up to its first instruction, at least */
	enum py_linetable_kind lines;
	uint16_t bytes_size;        /* PyBytesObject: ob_size (Py_ssize_t) */
	uint16_t bytes_data;        /* and ob_sval, the bytes */
	uint16_t str_length;        /* PyASCIIObject.length (code points) */
	uint16_t str_state;         /* PyASCIIObject.state (bit field) */
	uint16_t str_ascii_size;    /* sizeof(PyASCIIObject): a compact ASCII string's data follows it */
	uint16_t str_compact_size;  /* sizeof(PyCompactUnicodeObject): other compact strings' data */
};

/* The layout of CPython major.minor, or NULL when it is not one compiled in: 3.8 to 3.12, the versions
 * that publish none. 3.13 and later are read from the interpreter (py_layout_from_debug_offsets). */
const struct py_layout *py_layout_find(unsigned major, unsigned minor);

/* Bytes of _Py_DebugOffsets read from the start of _PyRuntime: the longest table known (3.15's, 888),
 * and more. */
#define PY_DEBUG_OFFSETS_MAX 1024

/* Why an interpreter that publishes _Py_DebugOffsets is not walked (py_layout_from_debug_offsets'
 * -ENOTSUP). */
enum py_unsupported {
	PY_UNSUPPORTED_NONE = 0,
	PY_UNSUPPORTED_VERSION = 1,       /* a minor version whose table this build does not know */
	PY_UNSUPPORTED_PRERELEASE = 2,    /* an alpha, beta or rc, whose table may differ from the final's */
	PY_UNSUPPORTED_FREE_THREADED = 3, /* a free-threaded build (3.13t+): another object header */
};

/* Reads the layout of a 3.13+ interpreter from the _Py_DebugOffsets at the start of its _PyRuntime
 * (debug, len bytes), which claims version hex (PY_VERSION_HEX, from the binary's Py_Version). Where each
 * offset sits in the table depends on the minor version (known: 3.13, 3.14, 3.15, keyed on the exact
 * version for pre-releases); the offsets themselves are the build's. Every offset is checked against
 * the size of its structure, as the table gives it, and against the bytes the BPF program and the
 * code-object reader read at once. Returns 0 with *out filled; -ENOENT (no cookie "xdebugpy": a build
 * without the table); -ENOTSUP with *why set (a table this build cannot read, or a build it does not
 * walk); -EINVAL (a table that lies: another version than the binary claims, a free_threaded flag that
 * is neither 0 nor 1, too short, or an offset past its structure or the reads). */
int py_layout_from_debug_offsets(const uint8_t *debug, size_t len, uint64_t hex, struct py_layout *out,
				 enum py_unsupported *why);

#endif
