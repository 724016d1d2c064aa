/* cfi.h - compact x86-64 unwind rows (include/unwind.h) from a binary's call frame information (libdw). */
#ifndef FLAMED_UNWIND_CFI_H
#define FLAMED_UNWIND_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "unwind.h"

#define CFI_MAX_SECTION (64u << 20) /* bytes of one .eh_frame or .debug_frame (uncompressed) read */
#define CFI_MAX_DWARF (256u << 20)  /* bytes of .debug_* sections libdw may load to read a .debug_frame */
#define CFI_MAX_WORK (1ull << 28)   /* bytes of FDE instructions libdw may interpret in one build, at least */
#define CFI_WORK_PER_BYTE 512ull    /* and as many per byte of the CFI sections walked, */
#define CFI_MAX_WORK_CAP (1ull << 33) /* up to this (each row costs its FDE's bytes: an upper bound of
				       * libdw's work; OpenBLAS's 225 MB of it take 0.3 s) */
#define CFI_MAX_EXEC 16             /* executable PT_LOAD segments looked at; more are ignored */
#define CFI_MAX_CIES (1u << 20)     /* CIEs per section */
#define CFI_MAX_REG 256             /* DWARF register numbers in instructions (x86-64 uses < 130) */
#define CFI_MAX_NEST 64             /* DW_CFA_remember_state nesting */

/* Where rows came from: bits of cfi_stats.source. */
#define CFI_SRC_EH_FRAME 1    /* the binary's .eh_frame */
#define CFI_SRC_DEBUG_FRAME 2 /* a .debug_frame: the binary's own, else the separate debug file's */

/* What one build found. */
struct cfi_stats {
	size_t fdes;         /* FDEs whose ranges were turned into rows */
	size_t fdes_dropped; /* FDEs skipped: empty, at address 0, outside executable segments, or
			      * overlapping one kept */
	size_t rows;         /* rows returned */
	size_t rows_other;   /* rows with UNWIND_CFA_OTHER or UNWIND_RBP_OTHER */
	int source;          /* CFI_SRC_* bits of the sections that gave at least one FDE */
};

/* Builds the rows of the binary open on fd (not taken over: read with pread through libelf, ELF_C_READ,
 * so a file changed under us cannot fault the reader). Rows come from its .eh_frame; addresses no
 * .eh_frame FDE covers are filled from a .debug_frame: the binary's own, else that of the separate debug
 * file open on debug_fd (-1: none; same addresses as the binary). The rules come from libdw
 * (dwarf_cfi_addrframe); only FDE boundaries are decoded here.
 *
 * Rows are sorted by strictly increasing pc and adjacent rows with equal rules are merged; a
 * UNWIND_CFA_NONE row marks the end of each FDE range unless another FDE starts there, and the last row
 * is UNWIND_CFA_NONE. Rules mapped: CFA = rsp+N / rbp+N (N in int16) with the return address at CFA-8
 * -> UNWIND_CFA_RSP / RBP; the .plt expression of gcc and ld -> UNWIND_CFA_PLT; the return address
 * undefined -> UNWIND_CFA_END; anything else, signal frames, and pcs where libdw fails ->
 * UNWIND_CFA_OTHER. rbp: unchanged -> UNWIND_RBP_SAME; saved at CFA+8*k (k in int8) -> UNWIND_RBP_CFA;
 * else UNWIND_RBP_OTHER. The rbp fields only mean something in RSP and RBP rows: other rows carry
 * UNWIND_RBP_SAME and rbp_off 0 (PLT rows: rbp_off is the rip & 15 threshold).
 *
 * FDEs are kept only when they are non-empty, lie inside an executable PT_LOAD segment of the binary
 * and do not start at 0. Overlaps are dropped deterministically: .eh_frame wins over .debug_frame;
 * within a section the FDE starting first wins, at equal starts the one first in the section.
 * stats may be NULL.
 *
 * Before libdw runs anything, every entry of a section it could be led to is checked (libdw 0.188
 * trusts them): each CIE's augmentation must be "" or 'z' with L, P, R, S; FDE pointers absolute or
 * pc-relative; no instruction operand past its entry; registers below CFI_MAX_REG; remember_state
 * nested at most CFI_MAX_NEST deep; each .eh_frame_hdr table entry naming an FDE (the table in ld's
 * datarel sdata4 layout); one section only whose name holds "debug_frame". A section failing any of
 * this is corrupt.
 *
 * Returns 0 with *rows (malloc'd, free() it) and *n set, or -errno: -ENOTSUP (not an x86-64 ELF64
 * executable or shared object), -ENOENT (no CFI), -EINVAL (corrupt or not ELF, either file; a CFI
 * section failing the checks above), -E2BIG (more than max_rows rows, clamped to UNWIND_MAX_ROWS; more
 * than 2 * max_rows FDEs; a kept FDE above 4 GiB; more instruction bytes to interpret than the work bound
 * (CFI_WORK_PER_BYTE per byte of the sections, within CFI_MAX_WORK and CFI_MAX_WORK_CAP); more than CFI_MAX_CIES CIEs), -ENOMEM, or another -errno from fstat. A section over
 * CFI_MAX_SECTION, or debug sections over CFI_MAX_DWARF, are not used. *rows and *n are set only on
 * success. */
int cfi_build(int fd, int debug_fd, size_t max_rows, struct unwind_row **rows, size_t *n,
	      struct cfi_stats *stats);

/* Whether rows a and b say the same (their kinds and offsets; not their pcs). */
bool cfi_same_rule(const struct unwind_row *a, const struct unwind_row *b);

/* The row covering ELF address pc: the last row whose pc is <= pc (binary search, as the BPF side
 * does), or NULL when n is 0 or pc is below the first row. */
const struct unwind_row *cfi_lookup(const struct unwind_row *rows, size_t n, uint64_t pc);

/* One FDE's address range: [lo, hi), ELF virtual addresses. */
struct cfi_range {
	uint64_t lo, hi;
};

/* Lists the FDE ranges of the .eh_frame of the binary open on fd (not taken over; read with pread as
 * cfi_build reads it). Every entry is walked (the .eh_frame_hdr table is not used) and checked as
 * cfi_build checks it; FDEs are kept and overlaps dropped by its rules (non-empty, not at 0, inside an
 * executable PT_LOAD segment; of overlapping ones the first to start, at equal starts the first in the
 * section). No instruction is interpreted. Returns 0 with *out (malloc'd, free() it) sorted by
 * increasing lo, not overlapping, and *n set; or -errno: -ENOTSUP (not an x86-64 ELF64 executable or
 * shared object), -ENOENT (no .eh_frame, one over CFI_MAX_SECTION, or no FDE kept), -EINVAL (corrupt,
 * or not ELF), -E2BIG (more than max FDEs, a kept FDE above 4 GiB, more than CFI_MAX_CIES CIEs),
 * -ENOMEM, or another -errno from fstat. *out and *n are set only on success. */
int cfi_fde_ranges(int fd, size_t max, struct cfi_range **out, size_t *n);

#endif
