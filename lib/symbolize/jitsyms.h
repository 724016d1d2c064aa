/* jitsyms.h - a table of JIT code's symbols: address ranges with names, as the GDB JIT interface's
 * objects (gdbjit.c) and jitdump files (jitdump.c) give them. Where ranges overlap (code freed and its
 * memory reused), the one added last wins, or with times, the one there at the time asked for. Bounded
 * in symbols and name bytes. */
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

/* jitsyms_add of code made at stamp (its JIT's clock; 0: unknown, taken as made before any time). */
int jitsyms_add_at(struct jitsyms *t, uint64_t start, uint64_t size, uint64_t stamp, const char *name, size_t len);

/* The name (NUL-terminated) of the newest symbol holding addr, or NULL. Valid until the next call on t. */
const char *jitsyms_find(struct jitsyms *t, uint64_t addr);

/* The name of the symbol holding addr that was there at time before (the stamps' clock; 0: now): the
 * newest of those made by then, else (all made later: code older than its record, or another clock)
 * the earliest. Of the symbols that overlap at addr, the 16 starting nearest below it are looked at. */
const char *jitsyms_find_before(struct jitsyms *t, uint64_t addr, uint64_t before);

/* The newest time (stamp) at which code was added over other code of another name: before it, every
 * address names as now; 0: never; UINT64_MAX: such code had no stamp. Of the symbols a new one meets,
 * the 16 starting nearest below its end are looked at. */
uint64_t jitsyms_replaced_at(struct jitsyms *t);

size_t jitsyms_count(const struct jitsyms *t);

/* NULL is safe. */
void jitsyms_free(struct jitsyms *t);

#endif
