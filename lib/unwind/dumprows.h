/* dumprows.h - unwind rows for JIT code from its jitdump file's unwinding-information records (perf's
 * JIT_CODE_UNWINDING_INFO: CPython's -X perf_jit trampolines, V8's --perf-prof-unwinding-info). Each
 * gives the .eh_frame of the code the next CODE_LOAD record loads, laid out as if it followed that code:
 * where its .eh_frame_hdr's first entry says, else at the code's end rounded up to 16 bytes (perf's
 * layout). cfi.c makes the rows (jitrows_add), as it does a binary's; code loaded again where older code
 * was replaces its rows. The file is read on from where the last read stopped (elf/jitdumpfile.h); what
 * it holds is outside data: bounded, checked, counted. */
#ifndef FLAMED_UNWIND_DUMPROWS_H
#define FLAMED_UNWIND_DUMPROWS_H

#include <stdint.h>

#include "elf/jitdumpfile.h"
#include "unwind/jitrows.h"

#define DUMPROWS_MAX_UNWIND (64u << 10) /* bytes of one record's unwinding information; more: counted bad */

struct dumprows_stats {
	uint64_t records; /* unwinding-information records read (V8 writes one with no .eh_frame for code
			   * without: counted here, nothing more) */
	uint64_t bad;     /* records malformed or past the bound, or not followed by a code load */
	struct jitdump_file_stats file;
};

struct dumprows;

int dumprows_new(struct dumprows **out);

/* NULL is safe. */
void dumprows_free(struct dumprows *d);

/* Reads fd, the process's jitdump file, on from where the last read stopped. Returns 1 when rows were
 * added, 0 when none were, -EINVAL (not a jitdump file: nothing more is read), -ENOMEM or -errno; the
 * objects counted in *rst, the records in *st. */
int dumprows_read(struct dumprows *d, int fd, struct jitrows_stats *rst, struct dumprows_stats *st);

/* The rows read so far (NULL: none yet). */
const struct jitrows *dumprows_rows(const struct dumprows *d);

/* The bytes of the file read so far: a file grown past them has more to read. */
uint64_t dumprows_offset(const struct dumprows *d);

#endif
