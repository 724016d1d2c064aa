/* inlines.h - the inlined-call chain at an address, from the DWARF of one ELF file (read with libdw). */
#ifndef FLAMED_SYMBOLIZE_INLINES_H
#define FLAMED_SYMBOLIZE_INLINES_H

#include <stddef.h>
#include <stdint.h>

#define INLINES_MAX_DWARF (256u << 20)  /* bytes of .debug_* sections (uncompressed) one handle may load */
#define INLINES_MAX_RANGES (1u << 21)   /* address ranges (units' and functions') kept per handle; more are ignored */
#define INLINES_MAX_DEPTH 128           /* nested scopes (functions, blocks, inlined calls) walked per lookup */
#define INLINES_MAX_VISITS (1u << 18)   /* DIEs looked at per lookup, inside one function */
#define INLINES_MAX_INDEX_VISITS (1u << 22) /* DIEs looked at to list one compile unit's functions */
#define INLINES_UNKNOWN "[unknown]"     /* the name of an inlined call whose DWARF names nothing readable */

struct inlines;

/* Opens the DWARF of the ELF file at path: a binary built with -g, or a separate debug file. A dwz
 * common file (.gnu_debugaltlink) is looked for next to path, under the .build-id directory path lies
 * in, then at its recorded name and in /usr/lib/debug/.build-id, and used only when its build-id
 * matches; without it the names it holds read as INLINES_UNKNOWN. Split DWARF (.dwo) is not read.
 * The DWARF sections are read (and inflated) into memory, not mapped: a file truncated later cannot
 * fault the reader.
 * Returns 0, -ENOENT (no .debug_info), -EFBIG (more than INLINES_MAX_DWARF bytes of DWARF),
 * -EINVAL (not ELF, or corrupt), -ENOMEM, or another -errno from open; *out is set only on success. */
int inlines_open(const char *path, struct inlines **out);

/* inlines_open on the file open on fd, taking ownership of fd (closed by inlines_free, or here on
 * failure). path, which may be NULL, is only used to find a dwz common file. */
int inlines_open_fd(int fd, const char *path, struct inlines **out);

/* The names of the inlined calls whose code contains ELF virtual address vaddr, outermost first:
 * names[0] was inlined into the real (out-of-line) function holding vaddr, which is not listed, and
 * the code at vaddr belongs to the last one. When there are more than max, the innermost max are
 * given. Names are DW_AT_name (through DW_AT_abstract_origin / DW_AT_specification), else the
 * linkage name, else INLINES_UNKNOWN; they stay valid until inlines_free.
 * The compile unit covering vaddr is found by its address ranges; the first lookup in a unit lists
 * the address ranges of its functions (those at its top level or in namespaces) and keeps them.
 * Returns how many names were written (0: none, or no function in the DWARF covers vaddr), -EINVAL
 * (corrupt DWARF, or names is NULL while max > 0), -ENOMEM, or -E2BIG (more than INLINES_MAX_DEPTH
 * nested scopes, INLINES_MAX_VISITS DIEs in the function, or INLINES_MAX_INDEX_VISITS in the unit).
 * One thread at a time per handle. */
int inlines_at(struct inlines *in, uint64_t vaddr, const char **names, int max);

/* Memory the handle holds, in bytes (0 for NULL): the loaded DWARF sections, the address tables and
 * an estimate of libdw's per-unit state. It grows as lookups reach new compile units. */
size_t inlines_bytes(const struct inlines *in);

/* Address ranges in the handle's tables: the units', and the functions' of the units looked in so far. */
size_t inlines_ranges(const struct inlines *in);

/* Closes the file and frees everything; NULL is safe. */
void inlines_free(struct inlines *in);

#endif
