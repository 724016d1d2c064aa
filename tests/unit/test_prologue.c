/* test_prologue.c - unwind rows for functions no CFI covers, from their prologues (prologue.c): the
 * prologues of OpenBLAS's kernels and of push-style ones decoded, ones that cannot be described refused,
 * truncated and random bytes read safely; and a real program over two assembly kernels without CFI
 * (tests/workloads/asmkern.S, built here) given rows for its kernels while its C functions keep theirs. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "testutil.h"
#include "elf/elf_file.h"
#include "unwind/cfi.h"
#include "unwind/prologue.h"

#define LO 0x1000

/* Whether row r says CFA = (rbp ? rbp : rsp) + cfa from pc, the caller's rbp at CFA + 8 * rbp_at
 * (rbp_at 0: unchanged). */
static bool is_row(const struct unwind_row *r, uint32_t pc, bool rbp, int cfa, int rbp_at)
{
	return r->pc == pc && UNWIND_CFA_KIND(r->kinds) == (rbp ? UNWIND_CFA_RBP : UNWIND_CFA_RSP) &&
	       r->cfa_off == cfa && UNWIND_RBP_KIND(r->kinds) == (rbp_at ? UNWIND_RBP_CFA : UNWIND_RBP_SAME) &&
	       r->rbp_off == rbp_at;
}

static void test_decode(void)
{
	struct unwind_row r[PROLOGUE_MAX_ROWS];
	/* OpenBLAS's dgemm_kernel_PRESCOTT: sub $0x80, %rsp; mov %rbx, (%rsp); mov %rbp, 8(%rsp);
	 * mov %r12, 0x10(%rsp); then its work (mov 0x88(%rsp), %r10). */
	static const uint8_t openblas[] = { 0x48, 0x81, 0xec, 0x80, 0x00, 0x00, 0x00, 0x48, 0x89, 0x1c, 0x24, 0x48,
					    0x89, 0x6c, 0x24, 0x08, 0x4c, 0x89, 0x64, 0x24, 0x10, 0x4c, 0x8b, 0x94,
					    0x24, 0x88, 0x00, 0x00, 0x00 };
	/* endbr64; push %r15; push %r14; push %rbx; sub $0x18, %rsp; vmovups ... */
	static const uint8_t pushes[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x41, 0x56, 0x53,
					  0x48, 0x83, 0xec, 0x18, 0xc5, 0xf8, 0x10, 0x07 };
	/* push %rbp; mov %rsp, %rbp; and $-32, %rsp; sub $0x40, %rsp */
	static const uint8_t framed[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xe4, 0xe0, 0x48, 0x83, 0xec, 0x40 };
	/* and $-32, %rsp with the CFA still on rsp */
	static const uint8_t aligned[] = { 0x53, 0x48, 0x83, 0xe4, 0xe0, 0xc3 };
	/* sub $0x10000, %rsp: more than a row's int16 */
	static const uint8_t huge[] = { 0x48, 0x81, 0xec, 0x00, 0x00, 0x01, 0x00, 0xc3 };
	/* mov %rsp, %rbp over an rbp nobody saved */
	static const uint8_t unsaved[] = { 0x48, 0x89, 0xe5, 0xc3 };
	/* a leaf that does not touch its stack: vxorps ...; ret */
	static const uint8_t leaf[] = { 0xc5, 0xf8, 0x57, 0xc0, 0xc3 };
	/* push %rbx; then sub $imm32 cut short by the function's end */
	static const uint8_t cut[] = { 0x53, 0x48, 0x81, 0xec, 0x00 };
	/* epilogues: add $0x80, %rsp; ret / add $0x18, %rsp; pop %rbx; pop %r14; pop %r15; ret (nop padding) /
	 * leave; ret / pop %rbx; ret / ret / jmp (a tail call) / vzeroupper; ret */
	static const uint8_t add80[] = { 0x48, 0x81, 0xc4, 0x80, 0x00, 0x00, 0x00, 0xc3 };
	static const uint8_t pops3[] = { 0x48, 0x83, 0xc4, 0x18, 0x5b, 0x41, 0x5e, 0x41, 0x5f, 0xc3, 0x90, 0x90 };
	static const uint8_t leave[] = { 0xc9, 0xc3 }, pop1[] = { 0x5b, 0xc3 }, ret[] = { 0xc3 };
	static const uint8_t jmp[] = { 0x5b, 0xe9, 0x00, 0x10, 0x00, 0x00 }, vzret[] = { 0xc5, 0xf8, 0x77, 0xc3 };
	/* OpenBLAS's sgemm_kernel_HASWELL: push %r15; mov %rdx, %r11; mov %rcx, %rdx; push %r14; push %r13;
	 * push %r12; push %rbp; push %rbx; sub $0x38, %rsp; its end: add $0x38; pop x6; vzeroupper; ret */
	static const uint8_t movs[] = { 0x41, 0x57, 0x49, 0x89, 0xd3, 0x48, 0x89, 0xca, 0x41, 0x56, 0x41, 0x55, 0x41,
					0x54, 0x55, 0x53, 0x48, 0x83, 0xec, 0x38, 0xc5, 0xfc, 0x28, 0x07 };
	static const uint8_t movs_end[] = { 0x48, 0x83, 0xc4, 0x38, 0x5b, 0x5d, 0x41, 0x5c, 0x41, 0x5d, 0x41, 0x5e,
					    0x41, 0x5f, 0xc5, 0xf8, 0x77, 0xc3 };
	/* the same start with an instruction not known here (mov %rdx, 8(%rdi)) among the pushes */
	static const uint8_t stops[] = { 0x41, 0x57, 0x48, 0x89, 0x57, 0x08, 0x41, 0x56, 0x41, 0x55, 0x41, 0x54, 0x55,
					 0x53, 0x48, 0x83, 0xec, 0x38 };
	size_t n;

#define DECODE(c, t) prologue_decode(c, sizeof(c), t, sizeof(t), LO, r)
	n = DECODE(openblas, add80);
	CHECK(n == 3 && is_row(&r[0], LO, false, 8, 0) && is_row(&r[1], LO + 7, false, 0x88, 0) &&
	      is_row(&r[2], LO + 16, false, 0x88, -16),
	      "OpenBLAS's prologue: rsp + 8, rsp + 0x88 after the sub, rbp at CFA - 0x80 after its store (%zu rows)", n);
	n = DECODE(pushes, pops3);
	CHECK(n == 5 && is_row(&r[0], LO, false, 8, 0) && is_row(&r[1], LO + 6, false, 16, 0) &&
	      is_row(&r[2], LO + 8, false, 24, 0) && is_row(&r[3], LO + 9, false, 32, 0) &&
	      is_row(&r[4], LO + 13, false, 56, 0),
	      "endbr64 and pushes then sub: 8, 16, 24, 32, 56 (%zu rows)", n);
	n = DECODE(movs, movs_end);
	CHECK(n == 8 && is_row(&r[n - 1], LO + 20, false, 0x38 + 56, -6),
	      "moves between registers among the pushes passed over: rsp + 0x70 after the sub (%zu rows)", n);
	CHECK(DECODE(stops, movs_end) == 0, "a prologue cut short by an unknown instruction: its epilogue frees more, refused");
	CHECK(DECODE(openblas, pops3) == 0 && DECODE(pushes, add80) == 0, "an epilogue freeing another frame: refused");
	CHECK(DECODE(pushes, jmp) == 0, "a function ending in a jump: refused");
	n = DECODE(framed, leave);
	CHECK(n == 3 && is_row(&r[0], LO, false, 8, 0) && is_row(&r[1], LO + 1, false, 16, -2) &&
	      is_row(&r[2], LO + 4, true, 16, -2),
	      "push %%rbp; mov %%rsp, %%rbp: the CFA on rbp from there, whatever the stack does after (%zu rows)", n);
	CHECK(DECODE(framed, pop1) == 0, "an rbp frame whose last pop is not rbp's: refused");
	CHECK(DECODE(aligned, pop1) == 0, "and $-32, %%rsp with the CFA on rsp: refused");
	CHECK(DECODE(huge, ret) == 0, "a frame over 32 KiB: refused");
	CHECK(DECODE(unsaved, ret) == 1, "mov %%rsp, %%rbp over an unsaved rbp: decoding stops");
	n = DECODE(leaf, vzret);
	CHECK(n == 1 && is_row(&r[0], LO, false, 8, 0), "a leaf that keeps its stack: rsp + 8 throughout");
	n = DECODE(cut, pop1);
	CHECK(n == 2 && is_row(&r[1], LO + 1, false, 16, 0), "an instruction cut by the function's end is not read");

	/* Random bytes: never more rows than the bound, pcs increasing, offsets that fit. */
	uint8_t buf[PROLOGUE_MAX_BYTES + 16];
	bool ok = true;
	srand(7);
	for (int round = 0; round < 200000 && ok; round++) {
		size_t len = (size_t)rand() % sizeof(buf);

		for (size_t i = 0; i < len; i++) /* mostly the bytes the decoder knows */
			buf[i] = (uint8_t)(rand() % 3 ? "\x48\x4c\x41\x55\x53\x50\x57\x81\x83\x89\x8b\xec\xe5\xe4\x24\x44\x84\x6c\xf3\x0f\x1e\xfa"[rand() % 22] : rand());
		n = prologue_decode(buf, len, buf, len, LO, r);
		ok = n <= PROLOGUE_MAX_ROWS;
		for (size_t i = 1; ok && i < n; i++)
			ok = r[i].pc > r[i - 1].pc && r[i].pc <= LO + PROLOGUE_MAX_BYTES && r[i].cfa_off >= 8;
	}
	CHECK(ok, "200000 random starts: at most %d rows, pcs increasing within the bytes read", PROLOGUE_MAX_ROWS);
}

/* The row covering address a of rows. */
static const struct unwind_row *at(const struct unwind_row *rows, size_t n, uint64_t a)
{
	return cfi_lookup(rows, n, a);
}

static void test_program(const char *dir)
{
	char bin[256], cmd[512];
	struct unwind_row *rows = NULL;
	struct elf_file *ef = NULL;
	GElf_Sym sub, push, run;
	size_t n = 0, before;
	int fd, added;

	snprintf(bin, sizeof(bin), "%s/asmkern", dir);
	snprintf(cmd, sizeof(cmd), "cc -O2 -fomit-frame-pointer tests/workloads/asmkern.c tests/workloads/asmkern.S -o %s", bin);
	if (run_quiet("%s 2>/dev/null", cmd) != 0) {
		CHECK(0, "build tests/workloads/asmkern (run from the project's root)");
		return;
	}
	fd = open(bin, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || cfi_build(fd, -1, UNWIND_MAX_ROWS, &rows, &n, NULL) != 0 || elf_file_open(bin, &ef) != 0) {
		CHECK(0, "asmkern: its rows built and the binary opened");
		goto out;
	}
	if (elf_file_symbol(ef, false, "asm_sub_kernel", &sub) || elf_file_symbol(ef, false, "asm_push_kernel", &push) ||
	    elf_file_symbol(ef, false, "run", &run)) {
		CHECK(0, "asmkern: its symbols");
		goto out;
	}
	CHECK(UNWIND_CFA_KIND(at(rows, n, sub.st_value + 20)->kinds) == UNWIND_CFA_NONE,
	      "before: no CFI covers the assembly kernel");
	before = n;
	const struct unwind_row run_row = *at(rows, n, run.st_value + 4);
	CHECK(prologue_fill(ef, &rows, &n, before) == -E2BIG && n == before,
	      "no room for the kernels' rows: -E2BIG, the rows as they were");
	added = prologue_fill(ef, &rows, &n, UNWIND_MAX_ROWS);
	CHECK(added >= 2, "both kernels given rows (%d functions)", added);
	CHECK(is_row(at(rows, n, sub.st_value + 20), at(rows, n, sub.st_value + 20)->pc, false, 0x50, -9),
	      "asm_sub_kernel's body: CFA rsp + 0x50, rbp at CFA - 0x48");
	CHECK(is_row(at(rows, n, sub.st_value), at(rows, n, sub.st_value)->pc, false, 8, 0),
	      "asm_sub_kernel's entry: rsp + 8");
	CHECK(is_row(at(rows, n, push.st_value + 12), at(rows, n, push.st_value + 12)->pc, false, 0x40, -2),
	      "asm_push_kernel's body: CFA rsp + 0x40, rbp at CFA - 16");
	const struct unwind_row *after = at(rows, n, push.st_value + push.st_size);
	CHECK(after->pc >= push.st_value + push.st_size, "the rows end with asm_push_kernel");
	const struct unwind_row *rr = at(rows, n, run.st_value + 4);
	CHECK(rr->kinds == run_row.kinds && rr->cfa_off == run_row.cfa_off && rr->rbp_off == run_row.rbp_off,
	      "run keeps its own row from .eh_frame");
	bool sorted = true;
	for (size_t i = 1; i < n; i++)
		sorted &= rows[i].pc > rows[i - 1].pc;
	CHECK(sorted && n > before && UNWIND_CFA_KIND(rows[n - 1].kinds) == UNWIND_CFA_NONE,
	      "rows still strictly increasing, a NONE row last (%zu -> %zu rows)", before, n);
	size_t again = n;
	CHECK(prologue_fill(ef, &rows, &n, UNWIND_MAX_ROWS) == 0 && n == again, "filled once: nothing left to fill");
out:
	elf_file_free(ef);
	if (fd >= 0)
		close(fd);
	free(rows);
}

/* A function whose `ret` is not at its end (a loop laid out after it, as LLVM does in JIT code): its
 * prologue is only trusted with PROLOGUE_EPILOGUE_INSIDE, which finds the epilogue at the `ret`. */
static void test_inner_epilogue(const char *dir)
{
	char src[256], lib[256];
	struct unwind_row *rows = NULL;
	struct elf_file *ef = NULL;
	size_t n = 0;
	GElf_Sym f;
	FILE *out;

	snprintf(src, sizeof(src), "%s/inner.S", dir);
	snprintf(lib, sizeof(lib), "%s/inner.so", dir);
	if (!(out = fopen(src, "w")))
		return;
	fputs("\t.text\n\t.globl inner_ret\n\t.type inner_ret, @function\ninner_ret:\n"
	      "\tendbr64\n\tpush %rbx\n\tsub $16, %rsp\n\tmov %rdi, %rbx\n"
	      "1:\ttest %rbx, %rbx\n\tje 2f\n\tadd $16, %rsp\n\tpop %rbx\n\tret\n"
	      "2:\tdec %rbx\n\tjmp 1b\n\t.size inner_ret, .-inner_ret\n"
	      "\t.section .note.GNU-stack,\"\",@progbits\n", out);
	fclose(out);
	if (run_quiet("cc -shared -nostdlib -o %s %s 2>/dev/null", lib, src) != 0 || elf_file_open(lib, &ef) != 0 ||
	    elf_file_symbol(ef, false, "inner_ret", &f)) {
		CHECK(0, "inner.so built and opened");
		elf_file_free(ef);
		return;
	}
	CHECK(prologue_fill(ef, &rows, &n, UNWIND_MAX_ROWS) == 0 && n == 0,
	      "a function ending in a jmp: no rows from its prologue by default");
	CHECK(prologue_fill_ex(ef, &rows, &n, UNWIND_MAX_ROWS, PROLOGUE_EPILOGUE_INSIDE) == 1,
	      "with PROLOGUE_EPILOGUE_INSIDE: its epilogue found at its ret, the function given rows");
	CHECK(n && is_row(at(rows, n, f.st_value), at(rows, n, f.st_value)->pc, false, 8, 0),
	      "its entry: rsp + 8");
	CHECK(n && is_row(at(rows, n, f.st_value + f.st_size - 3), at(rows, n, f.st_value + f.st_size - 3)->pc, false,
			  32, 0), "its loop after the ret: rsp + 32, the frame its push and sub made");
	elf_file_free(ef);
	free(rows);
}

int main(void)
{
	char dir[] = "/tmp/test_prologue.XXXXXX";

	test_decode();
	if (!mkdtemp(dir)) {
		CHECK(0, "test setup: %s", strerror(errno));
		return CHECK_EXIT();
	}
	test_program(dir);
	test_inner_epilogue(dir);
	run_quiet("rm -rf '%s'", dir);
	return CHECK_EXIT();
}
