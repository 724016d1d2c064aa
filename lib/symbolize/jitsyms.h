/* jitsyms.h - a table of JIT code's symbols: address ranges with names, as the GDB JIT interface's
 * objects (gdbjit.c) and jitdump files (jitdump.c) give them. Where ranges overlap (code freed and its
 * memory reused), the one added last wins. Bounded in symbols and name bytes. */
#ifndef FLAMED_SYMBOLIZE_JITSYMS_H
#define FLAMED_SYMBOLIZE_JITSYMS_H

#include <stddef.h>
#include <stdint.h>

#define JITSYMS_MAX_NAME 1024 /* bytes of a name kept; a longer one is cut */

struct jitsyms;

/* An empty table of at most max_symbols symbols and max_name_bytes bytes of names. Returns 0 or -ENOMEM. */
int jitsyms_new(size_t max_symbols, size_t max_name_bytes, struct jitsyms **out);

/* Adds [start, start + size) named by the len bytes at name (a NUL among them ends it; cut to
 * JITSYMS_MAX_NAME - 1). Returns 0, 1 (not added: past a bound, size 0, or a range that wraps) or
 * -ENOMEM. */
int jitsyms_add(struct jitsyms *t, uint64_t start, uint64_t size, const char *name, size_t len);

/* The name (NUL-terminated) of the newest symbol holding addr, or NULL. Valid until the next call on t. */
const char *jitsyms_find(struct jitsyms *t, uint64_t addr);

size_t jitsyms_count(const struct jitsyms *t);

/* NULL is safe. */
void jitsyms_free(struct jitsyms *t);

#endif
