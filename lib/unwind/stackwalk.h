/* stackwalk.h - walks a user stack in the daemon, from the registers and the copy of the stack's top a
 * sample kept, with the unwind tables and rules bpf/profile.bpf.c walks with (include/unwind.h): for the
 * samples taken before their process's tables were ready, finished once they are. Reads nothing but the
 * copy: what the walk needs from outside it ends the walk, counted as such. */
#ifndef FLAMED_UNWIND_STACKWALK_H
#define FLAMED_UNWIND_STACKWALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "unwind.h"

/* The first address no user code is at (x86-64, 4-level page tables), as the BPF walk takes it. */
#define STACKWALK_USER_TOP 0x800000000000ULL

struct stackwalk_regs {
	uint64_t ip, sp, bp;
};

/* The copy of the stack: bytes[i] was at address at + i (at is the sampled sp). */
struct stackwalk_copy {
	uint64_t at;
	const uint8_t *bytes;
	size_t len;
};

/* The row of table (as unwind_mapping.table names it, nrows rows) covering ELF address pc, into *row.
 * Returns 0, or -1 when there is none (no such table any more, or pc below its first row). */
typedef int (*stackwalk_row_fn)(void *ctx, uint32_t table, uint32_t nrows, uint32_t pc, struct unwind_row *row);

enum stackwalk_end {
	STACKWALK_END,       /* the outermost frame was reached (or a frame pointer chain ended) */
	STACKWALK_FAILED,    /* a rule the walk cannot follow, or one that led nowhere */
	STACKWALK_SHORT,     /* the walk needed stack beyond the copy */
	STACKWALK_TRUNCATED, /* max frames written */
};

struct stackwalk_result {
	size_t n;                /* frames written */
	enum stackwalk_end end;
	bool used_table, used_fp;
	bool unknown;            /* a frame in no mapping of the process */
	size_t py_written;       /* Python frames written */
	bool py_appended;        /* the walk stopped early: the Python frames left were written after it */
	size_t py_moved;         /* eval-loop calls whose frames were found to be their caller's */
};

/* A Python process's frames, read when the sample was taken (bpf/defer.h): innermost first, PY_FRAME
 * values, the frames of each eval-loop call closed by STACKWALK_PY_END, and before it (3.12+) the address
 * of the entry frame that ended them. The walk writes each call's frames in place of its eval-loop frame
 * (pc in [eval_start[i], eval_end[i])), as the BPF walk does: frames whose entry frame lies above that
 * call's native frame are its caller's (it was sampled starting or ending) and go to the next eval-loop
 * frame; -X perf trampolines (anonymous code called by an eval-loop call) are stepped over by their
 * layout (CFA = sp + tramp_cfa, rbp at CFA - 16 when tramp_rbp_saved; tramp_cfa 0: none). When the walk
 * stops early (failed, or its frame pointers led nowhere) the frames left are written after it. */
#define STACKWALK_PY_END 0ULL
struct stackwalk_py {
	const uint64_t *frames;
	size_t n;
	uint64_t eval_start[2], eval_end[2];
	uint8_t tramp_cfa;
	bool tramp_rbp_saved;
};

/* Walks from r over the mappings p (sorted by start, as unwind_procs holds them) with rows from row(ctx,
 * ...) and frame pointers where a mapping has no table (never, with no_fp), writing at most max return
 * addresses into ips (the first is r->ip, as the BPF walk writes them), with py's Python frames (NULL:
 * none). Reads the stack only from c. */
void stackwalk(const struct unwind_proc *p, stackwalk_row_fn row, void *ctx, const struct stackwalk_regs *r,
	       const struct stackwalk_copy *c, const struct stackwalk_py *py, bool no_fp, uint64_t *ips, size_t max,
	       struct stackwalk_result *out);

#endif
