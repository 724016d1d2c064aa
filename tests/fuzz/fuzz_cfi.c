/* fuzz_cfi.c - libFuzzer target: unwind rows from an ELF file's .eh_frame / .debug_frame (unwind/cfi.c),
 * and the rows prologue.c adds for the functions its symbols name that no CFI covers.
 *
 * The input is the binary; it is also passed as its own separate debug file, so a file without CFI of
 * its own but with a .debug_frame takes that path too. Rows that come back must keep cfi.h's promises.
 *
 * Seeds (corpus/cfi/), built with -Os -Wl,--build-id=none -Wl,-z,noseparate-code from a three-function C
 * program (a recursion, a variable-length array) and an assembly file (frames.S below in words):
 *   exe-eh, lib-eh.so      cc -s, cc -s -shared -fPIC: .eh_frame, .eh_frame_hdr, the .plt rule
 *   exe-debug-frame(-z)    cc -fno-asynchronous-unwind-tables -g, then .eh_frame(_hdr) and every debug
 *                          section but .debug_frame removed (objcopy -R); -z: compressed (zlib)
 *   exe-no-cfi             cc -fno-asynchronous-unwind-tables -fno-unwind-tables, .eh_frame(_hdr) removed
 *   asm-rules(-nohdr)      cc -nostdlib -static of hand-written CFI: _start with rip undefined, a
 *                          function with rbp frame and remember/restore_state, one with the CFA in rdi,
 *                          rip in rdx and expressions, a signal frame, rbp kept in r9 (the asm
 *                          fixture of tests/unit/test_cfi.c); -nohdr: -Wl,--no-eh-frame-hdr
 *   asm-no-cfi-kernels     cc -Os of tests/workloads/asmkern.c and .S, debug sections stripped: two
 *                          assembly functions with no CFI and prologues prologue.c decodes
 *   regress-*              inputs this target found: an operand past the last FDE (libdw read a byte
 *                          past the section), a huge register number (libdw allocated 2 GiB) */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/types.h>

#include "fuzz.h"
#include "elf/elf_file.h"
#include "unwind/cfi.h"
#include "unwind/prologue.h"

#define MAX_ROWS (1u << 16)
#define SMALL_ROWS 4

/* The invariants of a table cfi_build returned. */
static void check_rows(const struct unwind_row *rows, size_t n, const struct cfi_stats *st)
{
	size_t i, other = 0;

	FUZZ_ASSERT(n >= 2 && n <= MAX_ROWS && st->rows == n && st->fdes > 0);
	FUZZ_ASSERT(st->source > 0 && st->source <= (CFI_SRC_EH_FRAME | CFI_SRC_DEBUG_FRAME));
	FUZZ_ASSERT(UNWIND_CFA_KIND(rows[n - 1].kinds) == UNWIND_CFA_NONE);
	for (i = 0; i < n; i++) {
		FUZZ_ASSERT(UNWIND_CFA_KIND(rows[i].kinds) <= UNWIND_CFA_OTHER);
		FUZZ_ASSERT(UNWIND_RBP_KIND(rows[i].kinds) <= UNWIND_RBP_OTHER);
		other += UNWIND_CFA_KIND(rows[i].kinds) == UNWIND_CFA_OTHER ||
			 UNWIND_RBP_KIND(rows[i].kinds) == UNWIND_RBP_OTHER;
		FUZZ_ASSERT(cfi_lookup(rows, n, rows[i].pc) == &rows[i]);
		if (i == 0)
			continue;
		FUZZ_ASSERT(rows[i].pc > rows[i - 1].pc);
		FUZZ_ASSERT(!cfi_same_rule(&rows[i], &rows[i - 1]));
		FUZZ_ASSERT(cfi_lookup(rows, n, rows[i].pc - 1) == &rows[i - 1]);
	}
	FUZZ_ASSERT(other == st->rows_other);
	FUZZ_ASSERT(rows[0].pc == 0 || cfi_lookup(rows, n, rows[0].pc - 1) == NULL);
	FUZZ_ASSERT(cfi_lookup(rows, n, UINT64_MAX) == &rows[n - 1]);
}

/* Rows after prologue_fill_ex (flags: PROLOGUE_*): still strictly increasing, no equal neighbours, a
 * NONE row last; a failure left them as they were. */
static void check_filled(const struct elf_file *ef, struct unwind_row **rows, size_t *n, unsigned flags)
{
	size_t before = *n;
	int rc = prologue_fill_ex(ef, rows, n, MAX_ROWS, flags);

	FUZZ_ASSERT(rc >= 0 || rc == -E2BIG || rc == -ENOMEM || rc == -EINVAL);
	FUZZ_ASSERT(rc > 0 || *n == before);
	FUZZ_ASSERT(*n <= MAX_ROWS && UNWIND_CFA_KIND((*rows)[*n - 1].kinds) == UNWIND_CFA_NONE);
	for (size_t i = 1; i < *n; i++) {
		FUZZ_ASSERT((*rows)[i].pc > (*rows)[i - 1].pc);
		FUZZ_ASSERT(!cfi_same_rule(&(*rows)[i], &(*rows)[i - 1]));
	}
}

/* A documented result of cfi_build. */
static int known(int rc)
{
	return rc == 0 || rc == -EINVAL || rc == -ENOENT || rc == -ENOTSUP || rc == -E2BIG || rc == -ENOMEM;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_row *rows = NULL, *again = NULL;
	struct cfi_stats st, st2;
	size_t n = 0, n2 = 0;
	int fd = fuzz_memfd(data, size), rc, rc2;

	rc = cfi_build(fd, fd, MAX_ROWS, &rows, &n, &st);
	FUZZ_ASSERT(known(rc));
	if (rc == 0) {
		check_rows(rows, n, &st);
		rc2 = cfi_build(fd, fd, MAX_ROWS, &again, &n2, &st2); /* deterministic */
		FUZZ_ASSERT(rc2 == 0 && n2 == n && memcmp(rows, again, n * sizeof(*rows)) == 0);
		free(again);
		if (n > SMALL_ROWS) {
			rc2 = cfi_build(fd, -1, SMALL_ROWS, &again, &n2, NULL);
			FUZZ_ASSERT(rc2 != 0 && known(rc2));
		}
		struct elf_file *ef;
		int efd = dup(fd);
		if (efd >= 0 && elf_file_from_fd(efd, &ef) == 0) {
			check_filled(ef, &rows, &n, 0);
			check_filled(ef, &rows, &n, PROLOGUE_EPILOGUE_INSIDE); /* JIT objects' way */
			elf_file_free(ef);
		}
		free(rows);
	}
	close(fd);
	return 0;
}
