/* gdbjit.h - names of JIT code registered with the GDB JIT interface: LLVM's MCJIT (Numba, llvmlite,
 * Julia) and other JITs keep a list of the objects they compiled, each an ELF image in memory, headed by
 * the global __jit_debug_descriptor; gdb reads them to name and unwind JIT frames, and so does this.
 * Everything read from the process is outside data: the list is bounded in entries and bytes, and each
 * image is parsed as any ELF file is (lib/elf/elf_file.h). */
#ifndef FLAMED_SYMBOLIZE_GDBJIT_H
#define FLAMED_SYMBOLIZE_GDBJIT_H

#include <stddef.h>
#include <stdint.h>

#include "elf/jitlist.h"
#include "elf/procmaps.h"

#define GDBJIT_SYMBOL JITLIST_SYMBOL
#define GDBJIT_MAX_ENTRIES JITLIST_MAX_ENTRIES /* the list's bounds: elf/jitlist.h */
#define GDBJIT_MAX_OBJECT JITLIST_MAX_OBJECT
#define GDBJIT_MAX_BYTES JITLIST_MAX_BYTES
#define GDBJIT_MAX_SYMBOLS 1000000      /* symbols kept per process */
#define GDBJIT_MAX_NAME 1024            /* bytes of a name kept */

struct gdbjit_stats {
	uint64_t lists_read;      /* descriptors whose list was read (first time, or changed since) */
	uint64_t objects;         /* in-memory ELF images parsed */
	uint64_t symbols;         /* function symbols taken from them */
	uint64_t objects_bad;     /* images not ELF, malformed, or without a symbol table */
	uint64_t objects_too_big; /* images past GDBJIT_MAX_OBJECT or GDBJIT_MAX_BYTES */
	uint64_t lists_cut;       /* lists past GDBJIT_MAX_ENTRIES, or cut where an entry's prev is not the
				   * one before it (a loop) */
	uint64_t reads_failed;    /* descriptor, entry or image unreadable (the process gone, a bad pointer) */
	uint64_t descriptors_bad; /* a descriptor of a version other than 1 */
	uint64_t symbols_dropped; /* past GDBJIT_MAX_SYMBOLS */
	uint64_t processes;       /* processes with a table held (the cache's) */
};

/* Reads len bytes of the traced process at addr into buf. Returns 0 or -errno. */
typedef jitlist_read_fn gdbjit_read_fn;

/* ---- one process's list ---- */

struct gdbjit_table;

/* Reads the descriptor at desc and every entry of its list through rd, and the function symbols of each
 * entry's image (at their load addresses: an ET_REL image's symbols are placed by their sections'
 * sh_addr, as the JIT sets them). *sig gets the descriptor's signature (its first and newest entry):
 * while it is unchanged the list is too. Returns 0 with *out set (perhaps with no symbol), -ENOENT (an
 * empty list), -EINVAL (a descriptor of another version), -ENOMEM, or the read's error; counted in *st. */
int gdbjit_table_read(gdbjit_read_fn rd, void *ctx, uint64_t desc, struct gdbjit_table **out, uint64_t *sig,
		      struct gdbjit_stats *st);

/* The descriptor's signature now (see gdbjit_table_read), or 0 when unreadable. */
uint64_t gdbjit_signature(gdbjit_read_fn rd, void *ctx, uint64_t desc);

/* The name (NUL-terminated, as the image has it: mangled) of the function holding addr, or NULL. */
const char *gdbjit_table_find(const struct gdbjit_table *t, uint64_t addr);

size_t gdbjit_table_count(const struct gdbjit_table *t);

/* NULL is safe. */
void gdbjit_table_free(struct gdbjit_table *t);

/* ---- per process ---- */

/* Not thread-safe. */
struct gdbjit_cache;

/* Creates a cache of at most max_processes tables (0: 1024). Returns 0 or -ENOMEM. */
int gdbjit_cache_new(unsigned max_processes, struct gdbjit_cache **out);

void gdbjit_cache_free(struct gdbjit_cache *c);

/* Starts a flush: each process's descriptor is looked at again at its next lookup (its list re-read when
 * it changed), and processes not looked up for 6 flushes are dropped. */
void gdbjit_cache_begin_flush(struct gdbjit_cache *c);

/* Keeps pid's entry, if any, from being dropped as idle at the next flushes' start (its samples wait
 * elsewhere to be named). */
void gdbjit_cache_keep(struct gdbjit_cache *c, uint32_t pid);

/* The name of pid's JIT function holding addr, or NULL. maps (n of them) are pid's executable mappings:
 * the first lookup of pid looks for GDBJIT_SYMBOL in the binaries they map (each binary once, by device
 * and inode), and a later one again while none defines it and n changed; then the list is read through
 * /proc/PID/mem (process_vm_readv). When the process is gone,
 * what was read stays. Valid until the next call on c. */
const char *gdbjit_cache_find(struct gdbjit_cache *c, uint32_t pid, const struct procmap *maps, size_t n,
			      uint64_t addr);

void gdbjit_cache_get_stats(const struct gdbjit_cache *c, struct gdbjit_stats *out);

#endif
