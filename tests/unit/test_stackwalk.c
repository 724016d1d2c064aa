/* test_stackwalk.c - stackwalk on real stacks (root): a thread of this test stops in a chain of calls,
 * keeps its registers and a copy of its stack, and the copy is walked with the tables the unwinder put in
 * real BPF maps for this process; the frames must be glibc's backtrace() of the same point. Then the
 * copy cut short, no tables (with and without frame pointers), and random copies and registers. */
#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>

#include "check.h"
#include "unwind.h"
#include "unwind/stackwalk.h"
#include "unwind/unwinder.h"
#include "stacksnap.h"
#include "unwindmaps.h"

#define RANDOM_ROUNDS 20000

/* Rows from the maps, as the BPF side finds them: the last row whose pc is <= pc. */
static int map_row(void *ctx, uint32_t table, uint32_t nrows, uint32_t pc, struct unwind_row *row)
{
	const struct maps *m = ctx;
	__u32 slot = UNWIND_SLOT(table), inner_id, lo = 0, hi = nrows, mid;
	int inner = -1, rc = -1;

	if (bpf_map_lookup_elem(m->tables, &slot, &inner_id) == 0)
		inner = bpf_map_get_fd_by_id(inner_id);
	if (inner < 0)
		return -1;
	while (lo + 1 < hi) {
		mid = lo + (hi - lo) / 2;
		if (bpf_map_lookup_elem(inner, &mid, row))
			goto out;
		if (row->pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (nrows && bpf_map_lookup_elem(inner, &lo, row) == 0 && row->pc <= pc)
		rc = 0;
out:
	close(inner);
	return rc;
}

static const char *end_name(enum stackwalk_end e)
{
	static const char *const names[] = { "end", "failed", "short", "truncated" };

	return (unsigned)e < sizeof(names) / sizeof(names[0]) ? names[e] : "?";
}

/* The walk of the whole copy is backtrace()'s: the same return addresses from the first caller on. */
static void test_whole(const struct maps *m, const struct unwind_proc *p)
{
	uint64_t ips[MAX_FRAMES];
	struct stackwalk_copy c = { .at = snap.regs.sp, .bytes = snap.copy, .len = snap.len };
	struct stackwalk_result res;
	int same = 0, skip = 1;

	stackwalk(p, map_row, (void *)m, &snap.regs, &c, NULL, true, ips, MAX_FRAMES, &res);
	/* backtrace()'s first frame is in stop_here (AddressSanitizer's interceptor adds one more): the
	 * callers start where the walk's first return address is. */
	while (skip < snap.nbt - 1 && res.n > 1 && (void *)ips[1] != snap.bt[skip])
		skip++;
	printf("# walked %zu frames (%s), backtrace %d from its frame %d; copy %zu bytes\n", res.n, end_name(res.end),
	       snap.nbt, skip, snap.len);
	for (size_t i = 0; i < res.n; i++)
		printf("#   %2zu %#" PRIx64 "%s\n", i, ips[i],
		       i && (int)i - 1 + skip < snap.nbt && (void *)ips[i] == snap.bt[i - 1 + skip] ? "" : " *");
	for (int i = skip; i < snap.nbt && (size_t)(i - skip + 1) < res.n; i++)
		same += (void *)ips[i - skip + 1] == snap.bt[i];
	CHECK(res.n >= 6, "a thread stopped 5 calls deep walks 6 frames or more (%zu)", res.n);
	CHECK(ips[0] == snap.regs.ip, "the first frame is the sampled ip");
	CHECK(res.end == STACKWALK_END, "the walk reaches the thread's outermost frame (%s)", end_name(res.end));
	CHECK((int)res.n == snap.nbt - skip + 1 && same == snap.nbt - skip,
	      "every caller is backtrace()'s, in order (%d of %d alike, %zu walked)", same, snap.nbt - skip, res.n);
	CHECK(res.used_table && !res.used_fp && !res.unknown, "tables alone walked it, every frame in a mapping");
}

/* A copy cut short ends the walk where it needs what is not there, with the frames up to it. */
static void test_short(const struct maps *m, const struct unwind_proc *p)
{
	uint64_t ips[MAX_FRAMES], whole[MAX_FRAMES];
	struct stackwalk_copy c = { .at = snap.regs.sp, .bytes = snap.copy, .len = snap.len };
	struct stackwalk_result res, all;
	bool prefix = true;

	stackwalk(p, map_row, (void *)m, &snap.regs, &c, NULL, true, whole, MAX_FRAMES, &all);
	c.len = 64;
	stackwalk(p, map_row, (void *)m, &snap.regs, &c, NULL, true, ips, MAX_FRAMES, &res);
	for (size_t i = 0; i < res.n && i < all.n; i++)
		prefix &= ips[i] == whole[i];
	CHECK(res.end == STACKWALK_SHORT && res.n >= 1 && res.n < all.n && prefix,
	      "64 bytes of copy: the walk stops short (%s) after %zu of %zu frames, the same ones", end_name(res.end),
	      res.n, all.n);
	c.len = snap.len;
	stackwalk(p, map_row, (void *)m, &snap.regs, &c, NULL, true, ips, 3, &res);
	CHECK(res.end == STACKWALK_TRUNCATED && res.n == 3, "room for 3 frames: 3 written, truncated (%s, %zu)",
	      end_name(res.end), res.n);
	c.len = 0;
	stackwalk(p, map_row, (void *)m, &snap.regs, &c, NULL, true, ips, MAX_FRAMES, &res);
	CHECK(res.n == 1 && res.end == STACKWALK_SHORT, "no copy: the sampled ip alone, short (%zu, %s)", res.n,
	      end_name(res.end));
}

/* Without tables: frame pointers, or a failure at once with no_fp. */
static void test_no_tables(const struct unwind_proc *p)
{
	static struct unwind_proc bare;
	uint64_t ips[MAX_FRAMES];
	struct stackwalk_copy c = { .at = snap.regs.sp, .bytes = snap.copy, .len = snap.len };
	struct stackwalk_result res;

	bare = *p;
	for (__u32 i = 0; i < bare.n && i < UNWIND_MAX_MAPPINGS; i++)
		bare.m[i].table = UNWIND_NO_TABLE;
	stackwalk(&bare, map_row, NULL, &snap.regs, &c, NULL, true, ips, MAX_FRAMES, &res);
	CHECK(res.n == 1 && res.end == STACKWALK_FAILED, "no tables, no frame pointers allowed: 1 frame, failed (%zu, %s)",
	      res.n, end_name(res.end));
	stackwalk(&bare, map_row, NULL, &snap.regs, &c, NULL, false, ips, MAX_FRAMES, &res);
	CHECK(res.used_fp && !res.used_table && res.n >= 1 && res.n <= MAX_FRAMES,
	      "no tables: frame pointers walked (%zu frames, %s; this build keeps none, so few)", res.n, end_name(res.end));
	bare.n = 0;
	stackwalk(&bare, map_row, NULL, &snap.regs, &c, NULL, false, ips, MAX_FRAMES, &res);
	CHECK(res.unknown, "no mappings: the frames are in none, and it says so");
}

/* Python frames in place of an eval-loop frame: chain_b's return address taken as the eval loop's, two
 * calls' frames given (P1 P2 | P3). The first call's go where chain_b was; the second has no eval frame
 * left, so a walk that ends well leaves it, and one cut short writes it after what it walked. */
static void test_python(const struct maps *m, const struct unwind_proc *p)
{
	uint64_t plain[MAX_FRAMES], ips[MAX_FRAMES];
	const uint64_t frames[] = { 0x5000000000010001ULL, 0x5000000000020002ULL, STACKWALK_PY_END,
				    0x5000000000030003ULL, STACKWALK_PY_END };
	struct stackwalk_copy c = { .at = snap.regs.sp, .bytes = snap.copy, .len = snap.len };
	struct stackwalk_py py = { .frames = frames, .n = sizeof(frames) / sizeof(frames[0]) };
	struct stackwalk_result res, all;
	bool same = true;

	stackwalk(p, map_row, (void *)m, &snap.regs, &c, NULL, true, plain, MAX_FRAMES, &all);
	if (all.n < 5)
		return;
	/* plain: stop_here, chain_c, chain_b, chain_a, ...: chain_b's return address is plain[2]. */
	py.eval_start[0] = plain[2] - 1;
	py.eval_end[0] = plain[2];
	stackwalk(p, map_row, (void *)m, &snap.regs, &c, &py, true, ips, MAX_FRAMES, &res);
	for (size_t i = 3; i < all.n && i + 1 < res.n; i++)
		same &= ips[i + 1] == plain[i];
	CHECK(res.n == all.n + 1 && ips[0] == plain[0] && ips[1] == plain[1] && ips[2] == frames[0] &&
	      ips[3] == frames[1] && same && res.py_written == 2 && !res.py_appended && res.end == STACKWALK_END,
	      "the eval-loop frame's Python frames in its place, the rest as walked (%zu frames, %zu Python)", res.n,
	      res.py_written);
	c.len = 64;
	stackwalk(p, map_row, (void *)m, &snap.regs, &c, &py, true, ips, MAX_FRAMES, &res);
	CHECK(res.end == STACKWALK_SHORT && res.py_appended && res.py_written == 3 && ips[res.n - 3] == frames[0] &&
	      ips[res.n - 1] == frames[3], "cut short before the eval frame: every Python frame after what was walked");
	c.len = snap.len;
	stackwalk(p, map_row, (void *)m, &snap.regs, &c, &py, true, ips, 3, &res);
	CHECK(res.n == 3 && res.end == STACKWALK_TRUNCATED, "room for 3: truncated within the Python frames");
}

/* ---- a made-up stack through a -X perf trampoline ---- */

/* Code: the eval loop (CFA = sp + 0x40), the evaluator calling the trampoline (sp + 16), main (the
 * outermost frame); the trampoline itself lies in no mapping, as anonymous code does. */
#define FAKE_EVAL 0x401000ULL
#define FAKE_EVALUATOR 0x403000ULL
#define FAKE_MAIN 0x404000ULL
#define FAKE_TRAMP 0x7f0000001000ULL
#define FAKE_SP 0x10000ULL

static int fake_row(void *ctx, uint32_t table, uint32_t nrows, uint32_t pc, struct unwind_row *row)
{
	(void)ctx, (void)table, (void)nrows;
	memset(row, 0, sizeof(*row));
	row->kinds = UNWIND_CFA_RSP;
	if (pc >= FAKE_MAIN)
		row->kinds = UNWIND_CFA_END;
	else if (pc >= FAKE_EVALUATOR)
		row->cfa_off = 16;
	else if (pc >= FAKE_EVAL)
		row->cfa_off = 0x40;
	else
		return -1;
	row->pc = pc;
	return 0;
}

/* eval (leaf, FAKE_SP) <- trampoline (+0x40) <- evaluator (+0x50) <- eval (+0x60) <- main (+0xa0): each
 * return address at its caller's CFA - 8. shim is where the first eval call's entry frame is said to be. */
static void test_trampoline(void)
{
	uint64_t stack[0x100 / 8] = { 0 }, ips[MAX_FRAMES];
	const uint64_t p1 = 0x5000000000010001ULL, p2 = 0x5000000000020002ULL;
	uint64_t frames[] = { p1, 0, STACKWALK_PY_END, p2, FAKE_SP + 0x70, STACKWALK_PY_END };
	struct unwind_proc p = { .n = 1 };
	struct stackwalk_regs r = { .ip = FAKE_EVAL + 0x10, .sp = FAKE_SP, .bp = 0 };
	struct stackwalk_copy c = { .at = FAKE_SP, .bytes = (const uint8_t *)stack, .len = sizeof(stack) };
	struct stackwalk_py py = { .frames = frames, .n = 6, .eval_start = { FAKE_EVAL, 0 },
				   .eval_end = { FAKE_EVAL + 0x1000, 0 }, .tramp_cfa = 16 };
	struct stackwalk_result res;

	p.m[0] = (struct unwind_mapping){ .start = 0x400000, .end = 0x500000, .bias = 0, .table = 1, .nrows = 1 };
	stack[0x38 / 8] = FAKE_TRAMP + 6;           /* the eval loop's caller: the trampoline */
	stack[0x48 / 8] = FAKE_EVALUATOR + 0x20;    /* the trampoline's: the evaluator */
	stack[0x58 / 8] = FAKE_EVAL + 0x30;         /* the evaluator's: the caller's eval loop */
	stack[0x98 / 8] = FAKE_MAIN + 0x10;         /* the eval loop's: main */

	frames[1] = FAKE_SP + 0x20; /* within the first eval loop's frame: its own */
	stackwalk(&p, fake_row, NULL, &r, &c, &py, true, ips, MAX_FRAMES, &res);
	CHECK(res.n == 3 && ips[0] == p1 && ips[1] == p2 && ips[2] == FAKE_MAIN + 0x10 && res.end == STACKWALK_END &&
	      res.py_written == 2 && res.py_moved == 0,
	      "through the trampoline by its layout, trampoline and evaluator not written (%zu frames, %zu Python)",
	      res.n, res.py_written);

	frames[1] = FAKE_SP + 0x70; /* in the caller's eval loop frame: the first call was just starting */
	stackwalk(&p, fake_row, NULL, &r, &c, &py, true, ips, MAX_FRAMES, &res);
	CHECK(res.n == 2 && ips[0] == p1 && ips[1] == FAKE_MAIN + 0x10 && res.end == STACKWALK_END &&
	      res.py_written == 1 && res.py_moved == 1,
	      "an entry frame above the eval loop's frame: its frames written at the caller's instead (%zu frames, %zu "
	      "moved)", res.n, res.py_moved);

	py.tramp_cfa = 0; /* no trampoline known: the frame pointer (0) ends the walk there */
	frames[1] = FAKE_SP + 0x20;
	stackwalk(&p, fake_row, NULL, &r, &c, &py, false, ips, MAX_FRAMES, &res);
	CHECK(res.n >= 2 && ips[0] == p1 && ips[1] == FAKE_TRAMP + 6, "without the layout the trampoline is a frame");
}

/* Random registers and copies (some of them the real copy with random words): every walk ends, within
 * max frames, reading nothing outside the copy (ASan watches). */
static void test_random(const struct maps *m, const struct unwind_proc *p)
{
	static uint8_t junk[4096];
	uint64_t ips[MAX_FRAMES];
	struct stackwalk_result res;
	size_t bad = 0, frames = 0;

	srand(7);
	for (int r = 0; r < RANDOM_ROUNDS; r++) {
		struct stackwalk_regs regs = snap.regs;
		struct stackwalk_copy c = { .at = snap.regs.sp, .bytes = snap.copy, .len = snap.len };

		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)rand();
		if (r & 1) {
			c.bytes = junk;
			c.len = (size_t)rand() % sizeof(junk);
			memcpy(&regs.bp, junk + 8, 8);
			if (r & 2)
				regs.sp = UINT64_MAX - (uint64_t)(rand() % 64);
			c.at = regs.sp;
		} else {
			static uint8_t mixed[COPY_MAX];

			memcpy(mixed, snap.copy, snap.len);
			for (int k = 0; k < 8; k++) {
				size_t at = ((size_t)rand() % (snap.len / 8)) * 8;
				memcpy(mixed + at, junk + k * 8, 8);
			}
			c.bytes = mixed;
		}
		stackwalk(p, map_row, (void *)m, &regs, &c, NULL, r % 3 == 0, ips, 1 + (size_t)(r % MAX_FRAMES), &res);
		bad += res.n > 1 + (size_t)(r % MAX_FRAMES) || (res.n && ips[0] != regs.ip);
		frames += res.n;
	}
	CHECK(bad == 0, "%d random walks ended within their room, each from its ip (%zu frames in all)", RANDOM_ROUNDS,
	      frames);
}

int main(void)
{
	struct maps m;
	struct unwind_proc p;
	struct unwinder *u;
	__u32 pid = (__u32)getpid();
	int err;

	if (geteuid() != 0) {
		SKIP("stackwalk", "needs root for BPF maps");
		return 0;
	}
	err = make_maps(&m, 16, 8);
	CHECK(err == 0, "BPF maps made (%d)", err);
	if (err)
		return CHECK_EXIT();
	CHECK(snap_take(), "the thread ran and stopped");
	u = new_unwinder(&m, 16, 8, 64 << 20);
	err = u ? unwinder_add(u, pid, 1) : -1;
	CHECK(err == 0, "the unwinder loads this process's tables (%d)", err);
	err = bpf_map_lookup_elem(m.procs, &pid, &p);
	CHECK(err == 0 && p.n > 0, "this process's mappings are in the map");
	if (err == 0 && u && snap.len) {
		test_whole(&m, &p);
		test_short(&m, &p);
		test_no_tables(&p);
		test_python(&m, &p);
		test_random(&m, &p);
	}
	test_trampoline();
	unwinder_free(u);
	close_maps(&m);
	return CHECK_EXIT();
}
