/* pylines.h - the source line of a Python instruction, from its code object's line table. */
#ifndef FLAMED_PYTHON_PYLINES_H
#define FLAMED_PYTHON_PYLINES_H

#include <stddef.h>
#include <stdint.h>

#include "python/pylayout.h"

/* The line of the instruction at code unit instr (2-byte units counted from the code's first
 * instruction; 3.11+ counts its inline caches too) of a code object whose first line is firstlineno
 * and whose line table (co_lnotab for PY_LINES_LNOTAB, else co_linetable) is table[0..len).
 * The table is outside data (read from a traced process): every step is bounded by len.
 * Returns the line (> 0), -ENOENT (the instruction has no line, or lies past what the table covers),
 * or -EINVAL (kind unknown, or the table is malformed before it reaches instr). */
int py_line_of(enum py_linetable_kind kind, const uint8_t *table, size_t len, int firstlineno, unsigned instr);

#endif
