/* kallsyms.h - kernel text symbols from /proc/kallsyms, sorted, looked up by address. */
#ifndef FLAMED_SYMBOLIZE_KALLSYMS_H
#define FLAMED_SYMBOLIZE_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#define KALLSYMS_MAX (4u << 20)     /* symbols kept; more are ignored */
#define KALLSYMS_MAX_NAME 511       /* bytes kept of a name */
#define KALLSYMS_MAX_SPAN (16u << 20) /* an address this far past a symbol's start is not in it */

struct kallsyms;

/* Parses one kallsyms line "addr type name [module]" in place (line is modified).
 * Returns 0 with *addr, *type and *name (pointing into line, module dropped) or -EINVAL. */
int kallsyms_parse_line(char *line, uint64_t *addr, char *type, const char **name);

/* Reads the text symbols (types t, T, w, W) with non-zero addresses of a kallsyms-format file; a
 * kernel that hides addresses (kptr_restrict) gives an empty table. Malformed lines are skipped.
 * Returns 0 or -errno (-ENOENT and friends when the file cannot be opened); *out set only on success. */
int kallsyms_load(const char *path, struct kallsyms **out);

/* Frees the table; NULL is safe. */
void kallsyms_free(struct kallsyms *k);

/* The name of the kernel function holding addr (greatest symbol address <= addr, within
 * KALLSYMS_MAX_SPAN, and not the _etext end marker), or NULL. The string lives as long as k. */
const char *kallsyms_lookup(const struct kallsyms *k, uint64_t addr);

/* Symbols in the table (0 when addresses are hidden). */
size_t kallsyms_count(const struct kallsyms *k);

#endif
