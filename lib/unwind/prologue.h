/* prologue.h - unwind rows for functions no CFI covers (assembly kernels: OpenBLAS's, MKL's), read from
 * their prologues. */
#ifndef FLAMED_UNWIND_PROLOGUE_H
#define FLAMED_UNWIND_PROLOGUE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "unwind.h"

#define PROLOGUE_MAX_BYTES 64         /* bytes of a function's start decoded, and of its end checked */
#define PROLOGUE_MAX_ROWS 24          /* rows one prologue gives: one per instruction that moves the CFA */
#define PROLOGUE_MAX_FUNCS (1u << 16) /* function symbols of one binary looked at; more are ignored */

struct elf_file;

/* Decodes the start of a function at ELF address lo, its first len bytes in code (at most
 * PROLOGUE_MAX_BYTES are read), into rows (pcs from lo up): the CFA rsp + 8 at lo, then after each
 * push, `sub $N, %rsp` and save of rbp to the stack the rule that holds from the next instruction, and,
 * where rbp is saved and `mov %rsp, %rbp` follows, CFA = rbp + N from there on. Moves between registers,
 * vzeroupper and xors of registers are passed over; decoding stops at the first other instruction, and
 * the last row is taken to hold to the function's end (an assembly kernel moves its stack pointer in
 * its prologue and epilogue only). That is checked against the function's last tail_len bytes in tail:
 * they must end in `ret` after pops and an `add $N, %rsp` that free exactly the frame decoded (`leave`
 * or `pop %rbp` on an rbp frame). Returns how many rows (1 to PROLOGUE_MAX_ROWS), or 0 when the function
 * cannot be described so: `and $N, %rsp` with the CFA still on rsp, a frame over 32 KiB, an epilogue
 * that does not match (a prologue cut short by an instruction not known here, a function ending in a
 * tail call). */
size_t prologue_decode(const uint8_t *code, size_t len, const uint8_t *tail, size_t tail_len, uint64_t lo,
		       struct unwind_row *rows);

/* Adds to the sorted rows *rows (*n of them, as cfi_build returns them) rows for the function symbols
 * (STT_FUNC, non-empty, in an executable PT_LOAD segment; .symtab and .dynsym) of the binary ef that lie
 * wholly where no row covers them (no CFI: UNWIND_CFA_NONE, or before the first row), from their
 * prologues (prologue_decode), each followed by a UNWIND_CFA_NONE row at its end unless a row starts
 * there. Returns how many functions were given rows (*rows reallocated, *n updated, still sorted by
 * strictly increasing pc, equal neighbours merged), 0 when none (*rows untouched), or -E2BIG (more than
 * max_rows rows), -ENOMEM, -EINVAL (a corrupt symbol table); *rows is untouched on error. */
int prologue_fill(const struct elf_file *ef, struct unwind_row **rows, size_t *n, size_t max_rows);

/* prologue_fill_ex's flags. */
#define PROLOGUE_EPILOGUE_INSIDE 1u /* a function whose end is not its epilogue (JIT code: LLVM may lay out a
				     * loop after the `ret`) is checked against an epilogue ending at any of
				     * its `ret`s instead */
#define PROLOGUE_MAX_BODY (64u << 10) /* bytes of one function read for that */
#define PROLOGUE_MAX_RETS 64          /* `ret` bytes tried per function */

/* prologue_fill with flags (PROLOGUE_*). */
int prologue_fill_ex(const struct elf_file *ef, struct unwind_row **rows, size_t *n, size_t max_rows,
		     unsigned flags);

#endif
