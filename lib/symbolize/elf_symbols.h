/* elf_symbols.h - the function symbols of one ELF file (.symtab or .dynsym), sorted, looked up by address. */
#ifndef FLAMED_SYMBOLIZE_ELF_SYMBOLS_H
#define FLAMED_SYMBOLIZE_ELF_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELF_MAX_SYMBOLS (4u << 20) /* function symbols kept per file; more are counted as dropped */
#define ELF_MAX_NAME 511           /* bytes kept of a symbol name */

struct elf_file;
struct elf_symtab;

/* Reads the STT_FUNC and STT_GNU_IFUNC symbols with a non-zero value and a section from .symtab
 * (dynamic = false) or .dynsym (dynamic = true) of f into an own, address-sorted table. Names are
 * copied without a symbol version ("@@GLIBC_2.17"), truncated to ELF_MAX_NAME bytes. Of several
 * symbols at one address one is kept: the sized one, then the one with the fewest leading underscores
 * ("malloc" over "__libc_malloc"), then global over weak over local, then the smallest name.
 * Returns 0, -ENOENT (no such section, or no function symbol in it), -EINVAL (corrupt section) or
 * -ENOMEM; *out is set only on success. */
int elf_symtab_load(const struct elf_file *f, bool dynamic, struct elf_symtab **out);

/* Frees the table; NULL is safe. */
void elf_symtab_free(struct elf_symtab *t);

/* The name of the function covering ELF virtual address vaddr, or NULL: the symbol with the greatest
 * start <= vaddr, if vaddr < start + size (or, size 0, below the next symbol's start); when that symbol
 * does not cover vaddr, a few preceding ones that enclose it are tried. The string lives as long as t. */
const char *elf_symtab_lookup(const struct elf_symtab *t, uint64_t vaddr);

/* Symbols kept in the table. */
size_t elf_symtab_count(const struct elf_symtab *t);

/* Memory the table holds, in bytes (0 for NULL). */
size_t elf_symtab_bytes(const struct elf_symtab *t);

/* Function symbols left out because the table reached ELF_MAX_SYMBOLS. */
uint64_t elf_symtab_dropped(const struct elf_symtab *t);

#endif
