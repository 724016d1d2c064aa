/* jitlist.h - the GDB JIT interface's list of in-memory objects in a process: LLVM's MCJIT (Numba,
 * llvmlite, Julia) and other JITs keep a list of the objects they compiled, each an ELF image in memory,
 * headed by the global __jit_debug_descriptor; gdb reads them to name and unwind JIT frames. This finds
 * the descriptor in the binaries a process maps and walks its list; the symbolizer takes the images'
 * names (symbolize/gdbjit.h), the unwinder their .eh_frame (unwind/jitrows.h). Everything read from the
 * process is outside data: the list is bounded in entries and bytes. */
#ifndef FLAMED_ELF_JITLIST_H
#define FLAMED_ELF_JITLIST_H

#include <stddef.h>
#include <stdint.h>

#include "elf/procmaps.h"

#define JITLIST_SYMBOL "__jit_debug_descriptor"
#define JITLIST_MAX_ENTRIES 65536        /* entries read per list; a longer one (or a cycle) is cut, counted */
#define JITLIST_MAX_OBJECT (16u << 20)   /* bytes of one image; a bigger one is skipped, counted */
#define JITLIST_MAX_BYTES (128u << 20)   /* bytes of images read per list */

/* What walks found (added to, never reset). */
struct jitlist_stats {
	uint64_t lists_read;      /* descriptors whose list was walked */
	uint64_t objects_too_big; /* images past JITLIST_MAX_OBJECT or JITLIST_MAX_BYTES */
	uint64_t lists_cut;       /* lists past JITLIST_MAX_ENTRIES, or cut where an entry's prev is not the
				   * one before it (a loop) */
	uint64_t reads_failed;    /* descriptor, entry or image unreadable (the process gone, a bad pointer) */
	uint64_t descriptors_bad; /* a descriptor of a version other than 1 */
};

/* Reads len bytes of the traced process at addr into buf. Returns 0 or -errno. */
typedef int (*jitlist_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* A jitlist_read_fn reading the process whose pid is ctx ((void *)(uintptr_t)pid) with
 * process_vm_readv: all len bytes, or -EFAULT. */
int jitlist_read_process(void *ctx, uint64_t addr, void *buf, size_t len);

/* Called with each image of a list (len bytes, read from the process; valid during the call). Returns 0
 * to go on, or -errno to stop the walk with that error. */
typedef int (*jitlist_image_fn)(void *ctx, const void *image, size_t len);

/* Reads the descriptor at desc and calls each for every image its list names, in list order (the newest
 * first, for LLVM). *sig gets the descriptor's signature (its first and newest entry): while it is
 * unchanged the list is too. Returns 0, -ENOENT (an empty list), -EINVAL (a descriptor of another
 * version), the descriptor's read error, -ENOMEM, or each's error; counted in *st. */
int jitlist_walk(jitlist_read_fn rd, void *ctx, uint64_t desc, jitlist_image_fn each, void *each_ctx,
		 uint64_t *sig, struct jitlist_stats *st);

/* The descriptor's signature now (see jitlist_walk), or 0 when unreadable. */
uint64_t jitlist_signature(jitlist_read_fn rd, void *ctx, uint64_t desc);

/* ---- where the descriptor is ---- */

/* Remembers, per binary (device and inode), where JITLIST_SYMBOL is. Not thread-safe. */
struct jitlist_finder;

/* Returns 0 or -ENOMEM. */
int jitlist_finder_new(struct jitlist_finder **out);

void jitlist_finder_free(struct jitlist_finder *f);

/* The runtime address of pid's descriptor, from the first of its mappings maps (n of them, sorted) whose
 * binary defines JITLIST_SYMBOL (each binary read once); 0: none. */
uint64_t jitlist_find(struct jitlist_finder *f, uint32_t pid, const struct procmap *maps, size_t n);

#endif
