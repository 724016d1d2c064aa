/* test_deferred.c - deferred samples kept and walked (root: real BPF maps): a real thread's stack, sent as
 * the BPF program sends a deferred sample, waits while its process has no tables (or tables still being
 * built), is walked once the unwinder has put them in the maps, and reaches the flush whole (glibc's
 * backtrace), with its kernel frames and key; one whose tables never come is walked by frame pointers
 * after its wait, or at once when its process is gone; the memory bound drops and counts; short records
 * are refused. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>

#include "check.h"
#include "deferred.h"
#include "stacksnap.h"
#include "unwind.h"
#include "unwindmaps.h"

#define TOKEN 77

/* What the flush got. */
struct got {
	unsigned n;
	struct sample_key key;
	__u64 kips[PROFILE_MAX_DEPTH], uips[PROFILE_MAX_DEPTH];
	unsigned nk, nu;
	int64_t unix_sec;
	uint64_t count;
};

static int on_sample(const struct sampler_sample *s, void *ctx)
{
	struct got *g = ctx;

	g->n++;
	g->key = *s->key;
	g->nk = s->nk < PROFILE_MAX_DEPTH ? s->nk : PROFILE_MAX_DEPTH;
	g->nu = s->nu < PROFILE_MAX_DEPTH ? s->nu : PROFILE_MAX_DEPTH;
	memcpy(g->kips, s->kips, g->nk * sizeof(__u64));
	memcpy(g->uips, s->uips, g->nu * sizeof(__u64));
	g->unix_sec = s->unix_sec;
	g->count = s->count;
	return 0;
}

/* The snapshot as the BPF program sends it: pid, a kernel frame, the registers and the copy. */
static struct deferred_sample *record(uint32_t pid, uint64_t token)
{
	struct deferred_sample *r = calloc(1, sizeof(*r));
	size_t n = snap.len < DEFER_STACK_BYTES ? snap.len : DEFER_STACK_BYTES;

	if (!r)
		return NULL;
	r->key.pid = pid;
	r->key.tid = pid + 1;
	r->key.boot_sec = 1000;
	memcpy(r->key.comm, "deferred", 9);
	r->token = token;
	r->ip = snap.regs.ip;
	r->sp = snap.regs.sp;
	r->bp = snap.regs.bp;
	r->nk = 1;
	r->kips[0] = 0xffffffff81000000ULL;
	r->copied = (__u32)n;
	memcpy(r->stack, snap.copy, n);
	return r;
}

static struct deferred *new_deferred(const struct maps *m, size_t bytes, double wait)
{
	struct deferred_opts o = { .tables_fd = m->tables, .procs_fd = m->procs, .py_fd = -1, .max_tables = 16,
				   .max_bytes = bytes,
				   .max_wait_s = wait };
	struct deferred *d = NULL;
	int err = deferred_new(&o, &d);

	CHECK(err == 0, "deferred_new (%d)", err);
	return d;
}

/* backtrace()'s callers (after stop_here's own frame, and ASan's) are the walk's from its second frame. */
static bool whole(const struct got *g)
{
	int skip = 1;

	while (skip < snap.nbt - 1 && g->nu > 1 && (void *)g->uips[1] != snap.bt[skip])
		skip++;
	if (!g->nu || g->uips[0] != snap.regs.ip || (int)g->nu != snap.nbt - skip + 1)
		return false;
	for (int i = skip; i < snap.nbt; i++)
		if ((void *)g->uips[i - skip + 1] != snap.bt[i])
			return false;
	return true;
}

/* Waits while there are no tables, and while they are still being built; walked once they are there. */
static void test_walked(const struct maps *m)
{
	struct unwinder *u = new_unwinder(m, 16, 8, 64 << 20);
	struct deferred *d = new_deferred(m, 16 << 20, 60);
	struct deferred_sample *r = record((__u32)getpid(), TOKEN);
	struct unwind_proc *v = calloc(1, sizeof(*v));
	struct deferred_stats st;
	struct got g = { 0 };
	__u32 pid = (__u32)getpid();
	int err;

	if (!u || !d || !r || !v)
		goto out;
	deferred_add(r, sizeof(*r), d);
	deferred_get_stats(d, &st);
	CHECK(st.received == 1 && st.waiting == 1 && st.bytes_copied == r->copied,
	      "a sample kept, with its %u bytes of stack", r->copied);
	CHECK(deferred_poll(d, false) > 0 && deferred_emit(d, 0, on_sample, &g) == 0 && g.n == 0,
	      "no tables yet: it waits, and the flush gets nothing");
	err = unwinder_add(u, pid, TOKEN);
	CHECK(err == 0 && bpf_map_lookup_elem(m->procs, &pid, v) == 0, "the unwinder gives this process tables (%d)", err);
	v->flags |= UNWIND_PROC_PENDING;
	CHECK(bpf_map_update_elem(m->procs, &pid, v, BPF_ANY) == 0 && deferred_poll(d, false) > 0 &&
	      deferred_emit(d, 0, on_sample, &g) == 0, "tables still being built (UNWIND_PROC_PENDING): it waits");
	v->flags = 0;
	v->token = TOKEN + 1;
	CHECK(bpf_map_update_elem(m->procs, &pid, v, BPF_ANY) == 0 && deferred_poll(d, false) > 0 &&
	      deferred_emit(d, 0, on_sample, &g) == 0, "tables of another image (token): it waits");
	v->token = TOKEN;
	bpf_map_update_elem(m->procs, &pid, v, BPF_ANY);
	CHECK(deferred_poll(d, false) == -1, "the tables are there: it is walked, nothing waits");
	CHECK(deferred_emit(d, 100, on_sample, &g) == 1 && g.n == 1 && g.count == 1, "the flush gets it, once");
	CHECK(whole(&g), "its user frames are backtrace()'s, whole (%u)", g.nu);
	CHECK(g.nk == 1 && g.kips[0] == 0xffffffff81000000ULL, "its kernel frame is kept");
	CHECK(g.key.pid == pid && g.key.tid == pid + 1 && !strcmp(g.key.comm, "deferred") && g.unix_sec == 1100,
	      "its key is kept, its second on the wall clock");
	CHECK(!(g.key.flags & (SAMPLE_USTACK_FP | SAMPLE_USTACK_LOST | SAMPLE_USTACK_TRUNCATED)), "flags: none");
	CHECK(g.key.ustack && g.key.kstack, "its stacks have hashes (the flush folds each distinct pair once)");
	deferred_get_stats(d, &st);
	CHECK(st.walked == 1 && st.given_up == 0 && st.stored == 1 && st.waiting == 0 && st.waiting_bytes == 0 &&
	      st.short_copies == 0 && st.wait_seconds > 0, "stats: walked 1, stored 1, nothing waiting");
	CHECK(deferred_emit(d, 0, on_sample, &g) == 0 && g.n == 1, "a second flush gets nothing");
out:
	deferred_free(d);
	unwinder_free(u);
	free(r);
	free(v);
}

/* No tables within the wait, its process gone, or the last flush: frame pointers, from the copy, flagged. */
static void test_given_up(const struct maps *m)
{
	struct deferred *d = new_deferred(m, 16 << 20, 0);
	struct deferred_sample *r = record(0x3ffffff0, TOKEN);
	struct deferred_stats st;
	struct got g = { 0 };

	if (!d || !r)
		goto out;
	deferred_add(r, sizeof(*r), d);
	usleep(2000);
	CHECK(deferred_poll(d, false) == -1 && deferred_emit(d, 0, on_sample, &g) == 1,
	      "no tables within its wait: walked anyway");
	CHECK((g.key.flags & SAMPLE_USTACK_FP) && g.nu >= 1 && g.uips[0] == snap.regs.ip,
	      "by frame pointers, from its ip (%u frames)", g.nu);
	deferred_get_stats(d, &st);
	CHECK(st.given_up == 1 && st.walked == 0, "counted as given up");
	deferred_free(d);
	d = new_deferred(m, 16 << 20, 3600);
	if (!d)
		goto out;
	deferred_add(r, sizeof(*r), d);
	CHECK(deferred_poll(d, false) == -1 && deferred_emit(d, 0, on_sample, &g) == 1,
	      "its process is gone (no tables will come): walked at once, whatever the wait");
	r->key.pid = (__u32)getpid(); /* alive, and no tables in the maps */
	deferred_add(r, sizeof(*r), d);
	CHECK(deferred_poll(d, false) == 20 && deferred_emit(d, 0, on_sample, &g) == 0,
	      "a live process without tables: it waits, looked at every 20 ms");
	CHECK(deferred_poll(d, true) == -1 && deferred_emit(d, 0, on_sample, &g) == 1,
	      "the last flush walks what still waits");
out:
	deferred_free(d);
	free(r);
}

/* The memory bound and short records: dropped, counted, nothing kept. */
static void test_bounds(const struct maps *m)
{
	struct deferred_sample *r = record(0x3ffffff0, TOKEN);
	/* Room for 3 of these records (each keeps its copy, its frames and its header, under 4 KiB). */
	size_t bound = r ? 3 * ((size_t)r->copied + 4096) : 0;
	struct deferred *d = r ? new_deferred(m, bound, 60) : NULL;
	struct deferred_stats st;
	struct got g = { 0 };

	if (!d || !r)
		goto out;
	for (int i = 0; i < 10; i++)
		deferred_add(r, sizeof(*r), d);
	deferred_add(r, sizeof(*r) - 1, d);
	deferred_get_stats(d, &st);
	CHECK(st.received >= 1 && st.received < 10 && st.dropped == 11 - st.received,
	      "past the memory bound: %" PRIu64 " kept, %" PRIu64 " dropped (a short record too)", st.received, st.dropped);
	CHECK(st.waiting_bytes <= bound, "what waits stays within the bound (%" PRIu64 " of %zu bytes)", st.waiting_bytes,
	      bound);
	r->copied = 0xffffffff;
	r->nk = 0xffffffff;
	deferred_free(d);
	d = new_deferred(m, 16 << 20, 0);
	if (!d)
		goto out;
	deferred_add(r, sizeof(*r), d);
	deferred_poll(d, true);
	CHECK(deferred_emit(d, 0, on_sample, &g) == 1 && g.nk == PROFILE_MAX_DEPTH,
	      "counts past the record's room are clamped to it");
out:
	deferred_free(d);
	free(r);
}

int main(void)
{
	struct maps m;
	int err;

	if (geteuid() != 0) {
		SKIP("deferred", "needs root for BPF maps");
		return 0;
	}
	err = make_maps(&m, 16, 8);
	CHECK(err == 0, "BPF maps made (%d)", err);
	if (err)
		return CHECK_EXIT();
	CHECK(snap_take(), "the thread ran and stopped");
	test_walked(&m);
	test_given_up(&m);
	test_bounds(&m);
	close_maps(&m);
	return CHECK_EXIT();
}
