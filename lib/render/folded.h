/* folded.h - writes stacks in the folded text FlameGraph and speedscope read: "root;...;leaf COUNT". */
#ifndef FLAMED_RENDER_FOLDED_H
#define FLAMED_RENDER_FOLDED_H

#include <stdint.h>
#include <stdio.h>

/* Writes one line: the process name as the root frame, then the stack, a space and the count.
 * Returns 0 or -EIO. */
int render_folded_line(FILE *out, const char *comm, const char *folded, uint64_t count);

#endif
