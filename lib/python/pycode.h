/* pycode.h - reads a code object (name, file, first line, line table) out of a Python process. */
#ifndef FLAMED_PYTHON_PYCODE_H
#define FLAMED_PYTHON_PYCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/pylayout.h"

#define PY_NAME_MAX 256     /* bytes kept of a qualified name, UTF-8, NUL included */
#define PY_FILE_MAX 1024    /* bytes kept of a file name */
#define PY_LINES_MAX 65536  /* bytes kept of a line table; a longer one is cut (later lines unknown) */
#define PY_STR_MAX 65536    /* code points of a string read; a longer one is refused (-EINVAL) */

/* Reads len bytes of the process at addr into buf. Returns 0 or -errno (-EFAULT: not readable, -ESRCH:
 * the process is gone). */
typedef int (*py_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* What tells one code object from another that later takes its address: the objects its header points
 * at (a code object's strings and line table outlive no code object that holds them) and its first line. */
struct py_code_id {
	uint64_t name, file, lines; /* addresses of the name (qualname, 3.11+), file and line table */
	int firstlineno;
};

/* What naming one code object needs. */
struct py_code {
	struct py_code_id id;
	char name[PY_NAME_MAX]; /* co_qualname (3.11+), else co_name; UTF-8, truncated at a character */
	char file[PY_FILE_MAX]; /* co_filename, UTF-8 likewise */
	int firstlineno;
	uint8_t *lines;         /* the line table (malloc'd; NULL when empty), nlines bytes */
	size_t nlines;
	bool lines_cut;         /* the table was longer than PY_LINES_MAX */
};

/* Reads the code object at addr with layout l through read. Everything read is outside data: a string
 * must be a compact str of a known kind and at most PY_STR_MAX code points, the line table a bytes
 * object; code points that are not valid Unicode scalar values become U+FFFD. When code_type is not
 * 0, the object's type must be it (the address of PyCode_Type in the process).
 * Returns 0 with *out filled (free out->lines with py_code_release), -EFAULT or -ESRCH (from read),
 * -EINVAL (not a code object of this layout: wrong type, a bad string or bytes object), or -ENOMEM. */
int py_code_read(const struct py_layout *l, uint64_t code_type, py_read_fn read, void *ctx, uint64_t addr,
		 struct py_code *out);

/* Reads only the header of the code object at addr (one read; its type checked as py_code_read does):
 * its identity, to tell whether the object read earlier at addr is still there. Returns 0, -EFAULT or
 * -ESRCH (from read), or -EINVAL. */
int py_code_identify(const struct py_layout *l, uint64_t code_type, py_read_fn read, void *ctx, uint64_t addr,
		     struct py_code_id *out);

/* Frees what py_code_read allocated in c (c itself is the caller's); NULL is safe. */
void py_code_release(struct py_code *c);

#endif
