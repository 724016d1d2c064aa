/* jitrows.h - unwind rows for JIT code registered with the GDB JIT interface (elf/jitlist.h): LLVM's
 * MCJIT (Numba, llvmlite, Julia) lists each object it compiled; the object's image keeps its sections'
 * load addresses in sh_addr, and its .eh_frame, relocated where the JIT loaded it, lies in the process's
 * memory. That .eh_frame is read from the process and compacted into rows by cfi.c as a binary's is, and
 * functions it leaves out (LLVM writes none for a function that cannot throw, as Numba's are) get rows
 * from their prologues (prologue.c), read from the code in the process; so the BPF walk unwinds through
 * JIT code that keeps no frame pointer (a Numba function calling libm).
 * Everything read from the process is outside data: bounded, checked, counted. */
#ifndef FLAMED_UNWIND_JITROWS_H
#define FLAMED_UNWIND_JITROWS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "elf/jitlist.h"
#include "unwind.h"

#define JITROWS_MAX_OBJECTS 4096      /* objects with rows kept per process; more are counted, left out */
#define JITROWS_MAX_EH_FRAME (4u << 20) /* bytes of one object's .eh_frame read from the process */
#define JITROWS_MAX_SECTIONS 4096     /* section headers of one image looked at */
#define JITROWS_MAX_CODE (16u << 20)  /* bytes of one object's code read from the process (prologues) */
#define JITROWS_MAX_FUNCS 65536       /* symbols of one image looked at for functions without CFI */

/* What reads found (added to, never reset). */
struct jitrows_stats {
	uint64_t objects;         /* objects whose .eh_frame or prologues gave rows */
	uint64_t objects_without; /* objects with no code, or none giving rows */
	uint64_t objects_bad;     /* images malformed, their .eh_frame unreadable or corrupt, spread over
				   * more than 4 GiB, or past JITROWS_MAX_OBJECTS */
	uint64_t objects_replaced; /* objects dropped for a newer one at their address (jitrows_add) */
	uint64_t objects_fp;      /* jitrows_add's objects whose rows take the CFA from rbp: left to the
				   * frame pointer walk they keep */
	uint64_t objects_kept;    /* objects of a list read again whose rows were kept, not built again */
	uint64_t rows;            /* rows of the objects read */
	struct jitlist_stats list;
};

/* One process's JIT objects with rows. */
struct jitrows;

/* Walks the list headed by the descriptor at desc (read through rd) and builds the rows of each object;
 * an object whose image is one of prev's (the list as read before; NULL: none) takes its rows over from
 * prev instead of building them again (a JIT that adds one function a time does not rebuild them all).
 * *sig gets the descriptor's signature (jitlist_walk's). Returns 0 with *out set (perhaps with no
 * object), -ENOENT (an empty list), -EINVAL (a descriptor of another version), -ENOMEM, or the read's
 * error; counted in *st. prev is left as it was, for the caller to free. */
int jitrows_read(jitlist_read_fn rd, void *ctx, uint64_t desc, uint64_t *sig, struct jitrows *prev,
		 struct jitrows **out, struct jitrows_stats *st);

/* An empty set, for jitrows_add. Returns 0 or -ENOMEM. */
int jitrows_new(struct jitrows **out);

/* Adds to j the rows of the code at [code, code + size) from its .eh_frame (eh_size bytes at eh, laid
 * out for address eh_addr, as a jitdump file's unwinding information is): an object that replaces those
 * whose code it overlaps, unless its rows take the CFA from rbp (code keeping a frame pointer, walked by
 * it). Returns 0 (counted in *st: with rows, without, kept to frame pointers, bad) or -ENOMEM. */
int jitrows_add(struct jitrows *j, uint64_t code, uint64_t size, uint64_t eh_addr, const void *eh, size_t eh_size,
		struct jitrows_stats *st);

/* The rows of the objects whose code lies in [start, end) (a mapping of anonymous memory), their pcs
 * made start-relative, sorted and strictly increasing (an object overlapping one before it is left
 * out); the last row is UNWIND_CFA_NONE. Returns 0 with *rows (malloc'd) and *n set, -ENOENT (no object
 * there), -E2BIG (the range is 4 GiB or more, or more than max_rows rows) or -ENOMEM. */
int jitrows_range(const struct jitrows *j, uint64_t start, uint64_t end, size_t max_rows, struct unwind_row **rows,
		  size_t *n);

/* How many objects with rows j holds (0 for NULL). */
size_t jitrows_count(const struct jitrows *j);

/* NULL is safe. */
void jitrows_free(struct jitrows *j);

#endif
