/* fuzz_prologue.c - libFuzzer target: a function's first and last bytes, as a binary's code section holds
 * them, decoded into unwind rows (prologue_decode): any bytes, any length, the input's first half its
 * start and second half its end. The rows must start at the function, keep to the bytes read, rise
 * strictly, and give CFA offsets a row can hold.
 *
 * Seeds (corpus/prologue/): a start, then an end of the same length (the start padded with nops at its
 * end, the end with zeros at its start): OpenBLAS's sub-and-store prologue and `add; ret`, endbr64 and
 * pushes, OpenBLAS's sgemm_kernel_HASWELL (moves between its pushes), an rbp frame with `leave`, an
 * `and` on rsp, a leaf, and a function ending in a tail call. */
#include <stdint.h>

#include "fuzz.h"
#include "unwind/prologue.h"

#define LO 0x400000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_row rows[PROLOGUE_MAX_ROWS];
	size_t half = size / 2, n = prologue_decode(data, size, data + half, size - half, LO, rows);

	FUZZ_ASSERT(n <= PROLOGUE_MAX_ROWS);
	for (size_t i = 0; i < n; i++) {
		unsigned cfa = UNWIND_CFA_KIND(rows[i].kinds), rbp = UNWIND_RBP_KIND(rows[i].kinds);

		FUZZ_ASSERT(cfa == UNWIND_CFA_RSP || cfa == UNWIND_CFA_RBP);
		FUZZ_ASSERT(rbp == UNWIND_RBP_SAME || (rbp == UNWIND_RBP_CFA && rows[i].rbp_off <= -2));
		FUZZ_ASSERT(rows[i].cfa_off >= 8);
		FUZZ_ASSERT(i == 0 ? rows[i].pc == LO : rows[i].pc > rows[i - 1].pc);
		FUZZ_ASSERT(rows[i].pc <= LO + (size < PROLOGUE_MAX_BYTES ? size : PROLOGUE_MAX_BYTES));
	}
	return 0;
}
