/* unwind.h - unwind tables shared by bpf/profile.bpf.c and the daemon (fixed-size types only).
 *
 * The daemon compacts each binary's call frame information (.eh_frame, or .debug_frame) into rows the
 * BPF program binary-searches while it walks a user stack (x86-64 rules). A row holds from its pc up
 * to the next row's pc; pcs are ELF virtual addresses of the binary. */
#ifndef FLAMED_UNWIND_H
#define FLAMED_UNWIND_H

/* How the canonical frame address (CFA, the caller's stack pointer) is found: low 4 bits of kinds. */
enum unwind_cfa {
	UNWIND_CFA_NONE = 0,  /* no CFI covers this pc: unwind with frame pointers here */
	UNWIND_CFA_RSP = 1,   /* CFA = rsp + cfa_off */
	UNWIND_CFA_RBP = 2,   /* CFA = rbp + cfa_off */
	UNWIND_CFA_PLT = 3,   /* PLT stub: CFA = rsp + cfa_off + ((rip & 15) >= rbp_off ? 8 : 0) */
	UNWIND_CFA_END = 4,   /* the return address is undefined: the outermost frame (_start, thread start) */
	UNWIND_CFA_OTHER = 5, /* a rule the BPF side cannot follow (a DWARF expression, a signal frame) */
};

/* Where the caller's rbp is: high 4 bits of kinds. */
enum unwind_rbp {
	UNWIND_RBP_SAME = 0,   /* unchanged (not saved by this frame) */
	UNWIND_RBP_CFA = 1,    /* saved at CFA + rbp_off * 8 */
	UNWIND_RBP_OTHER = 2,  /* a rule the BPF side cannot follow: the caller's rbp is unknown */
};

struct unwind_row {
	__u32 pc;     /* first ELF virtual address the row covers */
	__s16 cfa_off;
	__u8 kinds;   /* enum unwind_cfa | enum unwind_rbp << 4 */
	__s8 rbp_off; /* UNWIND_RBP_CFA: offset / 8 from the CFA; UNWIND_CFA_PLT: the rip & 15 threshold */
};

#define UNWIND_CFA_KIND(k) ((k) & 0xf)
#define UNWIND_RBP_KIND(k) ((k) >> 4)
#define UNWIND_KINDS(cfa, rbp) ((__u8)((cfa) | (rbp) << 4))

/* Mappings kept per process; a process with more keeps the first ones (the rest unwind with frame
 * pointers). A power of two. */
#define UNWIND_MAX_MAPPINGS 256
/* Binary-search steps over a process's mappings: log2(UNWIND_MAX_MAPPINGS) + 1. */
#define UNWIND_MAPPING_STEPS 9
_Static_assert(1u << (UNWIND_MAPPING_STEPS - 1) == UNWIND_MAX_MAPPINGS, "UNWIND_MAPPING_STEPS follows UNWIND_MAX_MAPPINGS");
/* Binary-search steps: enough for 2^24 rows in a table. */
#define UNWIND_ROW_STEPS 24
#define UNWIND_MAX_ROWS (1u << UNWIND_ROW_STEPS)
#define UNWIND_NO_TABLE 0xffffffffu

/* unwind_mapping.table: the slot of unwind_tables in the low 16 bits, and in the high ones a generation
 * the daemon changes each time it loads another binary into the slot (1 to UNWIND_MAX_GEN), so that
 * what the BPF side cached of a slot's old rows is never taken for the new ones. */
#define UNWIND_SLOT(table) ((table) & 0xffffu)
#define UNWIND_TABLE(slot, gen) ((__u32)(slot) | (__u32)(gen) << 16)
#define UNWIND_MAX_GEN 0x7fffu
#define UNWIND_MAX_SLOTS 0x10000u

/* One executable mapping: addresses in [start, end) are ELF address addr - bias of the binary whose
 * rows are inner map UNWIND_SLOT(table) of unwind_tables (UNWIND_NROWS(nrows) rows), or have none
 * (UNWIND_NO_TABLE). nrows also has UNWIND_JIT_ROWS where the mapping is anonymous memory whose rows its
 * JIT gave (a GDB JIT object's .eh_frame, a jitdump file's unwinding information), not a binary's. */
#define UNWIND_JIT_ROWS 0x80000000u
#define UNWIND_NROWS(nrows) ((nrows) & ~UNWIND_JIT_ROWS)
struct unwind_mapping {
	__u64 start, end;
	__u64 bias;
	__u32 table;
	__u32 nrows;
};

/* unwind_proc.flags: some of its binaries' tables are still to be built (the unwinder builds them one at
 * a time, smallest first); until then its CPU samples are deferred (bpf/defer.h), not walked partly. */
#define UNWIND_PROC_PENDING 1u

/* A process's mappings, sorted by start, in the unwind_procs map under its pid. */
struct unwind_proc {
	__u64 token;    /* the process_event.token of the image these mappings were read for */
	__u32 n;
	__u32 flags;    /* UNWIND_PROC_* */
	struct unwind_mapping m[UNWIND_MAX_MAPPINGS];
};

#endif
