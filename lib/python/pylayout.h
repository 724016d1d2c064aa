/* pylayout.h - where CPython 3.8 to 3.13 (x86-64) keep what a Python stack walk and its naming read. */
#ifndef FLAMED_PYTHON_PYLAYOUT_H
#define FLAMED_PYTHON_PYLAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "python.h"

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

/* The layout of CPython major.minor, or NULL when it is not one this build knows (3.8 to 3.13). */
const struct py_layout *py_layout_find(unsigned major, unsigned minor);

/* Bytes of _Py_DebugOffsets (3.13) this checks: up to and including its PyObject offsets. */
#define PY_DEBUG_OFFSETS_LEN 368

/* Checks the _Py_DebugOffsets at the start of a 3.13+ _PyRuntime (debug, len bytes, as in the binary)
 * against layout l: the cookie "xdebugpy", the version (major.minor), a build that is not free-threaded,
 * and every offset both know. Returns 0, -ENOENT (no cookie: a build without them, or before 3.13),
 * or -EINVAL (another version, free-threaded, or an offset that differs: the table is wrong for this
 * build, which must then not be walked). */
int py_layout_check_debug_offsets(const struct py_layout *l, const uint8_t *debug, size_t len);

#endif
