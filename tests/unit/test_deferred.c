/* test_deferred.c - deferred samples kept and walked (root: real BPF maps): a real thread's stack, sent as
 * the BPF program sends a deferred sample, waits while its process has no tables (or tables still being
 * built), is walked once the unwinder has put them in the maps, and reaches the flush whole (glibc's
 * backtrace), with its kernel frames and key; one whose tables never come is walked by frame pointers
 * after its wait, or at once when its process is gone; the memory bound drops and counts; short records
 * are refused. An off-CPU block's waits, counted under its record's id, are held until it is walked,
 * then stored with its frames; later ones with the walk kept; an unknown id's without user frames. */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
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

/* Boot seconds as unix seconds: as they are, and 100 s later; the drain long after. */
static const struct unix_clock clock0 = { .offset = 0, .now = INT64_MAX };
static const struct unix_clock clock100 = { .offset = 100, .now = INT64_MAX };

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
	if (g->nk) /* a sample without frames may have no array for them */
		memcpy(g->kips, s->kips, g->nk * sizeof(__u64));
	if (g->nu)
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
	CHECK(deferred_poll(d, false) > 0 && deferred_emit(d, &clock0, on_sample, &g) == 0 && g.n == 0,
	      "no tables yet: it waits, and the flush gets nothing");
	err = unwinder_add(u, pid, TOKEN);
	CHECK(err == 0 && bpf_map_lookup_elem(m->procs, &pid, v) == 0, "the unwinder gives this process tables (%d)", err);
	v->flags |= UNWIND_PROC_PENDING;
	CHECK(bpf_map_update_elem(m->procs, &pid, v, BPF_ANY) == 0 && deferred_poll(d, false) > 0 &&
	      deferred_emit(d, &clock0, on_sample, &g) == 0, "tables still being built (UNWIND_PROC_PENDING): it waits");
	v->flags = 0;
	v->token = TOKEN - 1;
	CHECK(bpf_map_update_elem(m->procs, &pid, v, BPF_ANY) == 0 && deferred_poll(d, false) > 0 &&
	      deferred_emit(d, &clock0, on_sample, &g) == 0, "tables of the image before (an older token): it waits");
	v->token = TOKEN;
	bpf_map_update_elem(m->procs, &pid, v, BPF_ANY);
	CHECK(deferred_poll(d, false) == -1, "the tables are there: it is walked, nothing waits");
	CHECK(deferred_emit(d, &clock100, on_sample, &g) == 1 && g.n == 1 && g.count == 1, "the flush gets it, once");
	CHECK(whole(&g), "its user frames are backtrace()'s, whole (%u)", g.nu);
	CHECK(g.nk == 1 && g.kips[0] == 0xffffffff81000000ULL, "its kernel frame is kept");
	CHECK(g.key.pid == pid && g.key.tid == pid + 1 && !strcmp(g.key.comm, "deferred") && g.unix_sec == 1100,
	      "its key is kept, its second on the wall clock");
	/* boot_sec + offset past the drain's second (the wall clock set back since): the drain's. */
	CHECK(unix_clock_sec(&(struct unix_clock){ .offset = 100, .now = 1099 }, 1000) == 1099 &&
	      unix_clock_sec(&(struct unix_clock){ .offset = 100, .now = 1100 }, 1000) == 1100,
	      "a second past the drain's is the drain's");
	CHECK(!(g.key.flags & (SAMPLE_USTACK_FP | SAMPLE_USTACK_LOST | SAMPLE_USTACK_TRUNCATED)), "flags: none");
	CHECK(g.key.ustack && g.key.kstack, "its stacks have hashes (the flush folds each distinct pair once)");
	deferred_get_stats(d, &st);
	CHECK(st.walked == 1 && st.given_up == 0 && st.stored == 1 && st.waiting == 0 && st.waiting_bytes == 0 &&
	      st.short_copies == 0 && st.wait_seconds > 0, "stats: walked 1, stored 1, nothing waiting");
	CHECK(deferred_emit(d, &clock0, on_sample, &g) == 0 && g.n == 1, "a second flush gets nothing");
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
	CHECK(deferred_poll(d, false) == -1 && deferred_emit(d, &clock0, on_sample, &g) == 1,
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
	CHECK(deferred_poll(d, false) == -1 && deferred_emit(d, &clock0, on_sample, &g) == 1,
	      "its process is gone (no tables will come): walked at once, whatever the wait");
	r->key.pid = (__u32)getpid(); /* alive, and no tables in the maps */
	deferred_add(r, sizeof(*r), d);
	CHECK(deferred_poll(d, false) == 20 && deferred_emit(d, &clock0, on_sample, &g) == 0,
	      "a live process without tables: it waits, looked at every 20 ms");
	CHECK(deferred_poll(d, true) == -1 && deferred_emit(d, &clock0, on_sample, &g) == 1,
	      "the last flush walks what still waits");
out:
	deferred_free(d);
	free(r);
}

/* Taken before the process exec'd (its tables are a later image's): stored at once without user frames,
 * not walked over the new image's mappings, not waiting for tables that will not come. */
static void test_superseded(const struct maps *m)
{
	struct deferred *d = new_deferred(m, 16 << 20, 3600);
	struct deferred_sample *r = record((__u32)getpid(), TOKEN);
	struct unwind_proc *v = calloc(1, sizeof(*v));
	struct deferred_stats st;
	struct got g = { 0 };
	__u32 pid = (__u32)getpid();

	if (!d || !r || !v)
		goto out;
	v->token = TOKEN + 1;
	CHECK(bpf_map_update_elem(m->procs, &pid, v, BPF_ANY) == 0, "tables of a later image of this process");
	deferred_add(r, sizeof(*r), d);
	CHECK(deferred_poll(d, false) == -1 && deferred_emit(d, &clock0, on_sample, &g) == 1,
	      "the sample is stored at once, the process alive and the wait an hour");
	CHECK(g.nu == 0 && (g.key.flags & SAMPLE_USTACK_LOST) && !(g.key.flags & SAMPLE_USTACK_FP),
	      "without user frames (%u), flagged lost", g.nu);
	CHECK(g.nk == 1 && g.kips[0] == 0xffffffff81000000ULL, "its kernel frame is kept");
	deferred_get_stats(d, &st);
	CHECK(st.superseded == 1 && st.walked == 0 && st.given_up == 0 && st.waiting == 0,
	      "stats: superseded 1, not walked, not given up");
out:
	bpf_map_delete_elem(m->procs, &pid);
	deferred_free(d);
	free(r);
	free(v);
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
	deferred_add(r, offsetof(struct deferred_sample, stack) - 1, d);
	deferred_get_stats(d, &st);
	CHECK(st.received >= 1 && st.received < 10 && st.dropped == 11 - st.received,
	      "past the memory bound: %" PRIu64 " kept, %" PRIu64 " dropped (a record short of its head too)", st.received,
	      st.dropped);
	CHECK(st.waiting_bytes <= bound, "what waits stays within the bound (%" PRIu64 " of %zu bytes)", st.waiting_bytes,
	      bound);
	deferred_free(d);
	d = new_deferred(m, 16 << 20, 60);
	if (!d)
		goto out;
	deferred_add(r, offsetof(struct deferred_sample, stack) + 100, d);
	deferred_get_stats(d, &st);
	CHECK(st.received == 1 && st.bytes_copied == 100,
	      "a record ending 100 bytes into its stack keeps those (it said %u): the ring's records end where their "
	      "copies do", r->copied);
	r->copied = 0xffffffff;
	r->nk = 0xffffffff;
	deferred_free(d);
	d = new_deferred(m, 16 << 20, 0);
	if (!d)
		goto out;
	deferred_add(r, sizeof(*r), d);
	deferred_poll(d, true);
	CHECK(deferred_emit(d, &clock0, on_sample, &g) == 1 && g.nk == PROFILE_MAX_DEPTH,
	      "counts past the record's room are clamped to it");
out:
	deferred_free(d);
	free(r);
}

/* The wait of pid's thread tid in second sec, count microseconds, under the deferred block id. */
static struct sampler_sample wait_of(struct sample_key *key, uint32_t pid, uint32_t sec, uint64_t id, uint64_t count)
{
	*key = (struct sample_key){ .pid = pid, .tid = pid + 2, .boot_sec = sec, .ustack = id, .kstack = 99,
				    .flags = SAMPLE_OFFCPU | SAMPLE_DEFERRED | SAMPLE_KSTACK_LOST };
	memcpy(key->comm, "waiter", 7);
	return (struct sampler_sample){ .key = key, .unix_sec = sec + 100, .count = count };
}

/* An off-CPU block deferred: its waits held for its walk, then stored with it; later ones with the walk
 * kept; a wait under an id with no record, and under one whose slot a later block took, without user
 * frames. */
static void test_offcpu(const struct maps *m)
{
	struct unwinder *u = new_unwinder(m, 16, 8, 64 << 20);
	struct deferred *d = new_deferred(m, 16 << 20, 60);
	struct deferred_sample *r = record((__u32)getpid(), TOKEN);
	__u32 pid = (__u32)getpid();
	struct sample_key key;
	struct sampler_sample s;
	struct deferred_stats st;
	struct got g = { 0 };
	int err;

	if (!u || !d || !r)
		goto out;
	r->key.flags = SAMPLE_OFFCPU;
	r->key.ustack = 5;
	deferred_add(r, sizeof(*r), d);
	s = wait_of(&key, pid, 1001, 5, 1000);
	CHECK(deferred_offcpu(d, &s, on_sample, &g) == 0 && g.n == 0, "a wait under a block still waiting: held");
	s = wait_of(&key, pid, 1001, 6, 70);
	CHECK(deferred_offcpu(d, &s, on_sample, &g) == 0 && g.n == 1 && g.count == 70 && g.nu == 0 &&
	      (g.key.flags & SAMPLE_USTACK_LOST) && !(g.key.flags & SAMPLE_DEFERRED) && !g.key.ustack,
	      "a wait under an id with no record: stored at once, without user frames");
	CHECK(deferred_poll(d, false) > 0 && deferred_emit(d, &clock0, on_sample, &g) == 0 && g.n == 1,
	      "no tables yet: the block and its wait wait");
	err = unwinder_add(u, pid, TOKEN);
	CHECK(err == 0, "the unwinder gives this process tables (%d)", err);
	CHECK(deferred_poll(d, false) == -1, "the tables are there: the block is walked");
	CHECK(deferred_emit(d, &clock100, on_sample, &g) == 0 && g.n == 2, "the flush gets its held wait (no CPU sample)");
	CHECK(g.count == 1000 && whole(&g) && g.nk == 1 && g.kips[0] == 0xffffffff81000000ULL,
	      "the wait, with the block's frames, whole (%u user frames)", g.nu);
	CHECK(g.key.tid == pid + 2 && g.unix_sec == 1101 && !strcmp(g.key.comm, "waiter") &&
	      (g.key.flags & SAMPLE_OFFCPU) && !(g.key.flags & (SAMPLE_DEFERRED | SAMPLE_KSTACK_LOST | SAMPLE_USTACK_LOST)) &&
	      g.key.ustack && g.key.ustack != 5 && g.key.kstack != 99,
	      "its key is the wait's (thread, second), its flags and stack hashes the walk's");
	s = wait_of(&key, pid, 1003, 5, 500);
	CHECK(deferred_offcpu(d, &s, on_sample, &g) == 0 && g.n == 3 && g.count == 500 && whole(&g) &&
	      g.unix_sec == 1103, "a later wait under it: stored at once with the walk kept");
	deferred_get_stats(d, &st);
	CHECK(st.offcpu_received == 1 && st.offcpu_held == 1 && st.offcpu_stored == 2 && st.offcpu_unmatched == 1 &&
	      st.offcpu_kept == 1 && st.stored == 0 && st.walked == 1,
	      "stats: 1 block, 1 wait held, 2 stored with it, 1 unmatched, its walk kept");
	r->key.ustack = 5 + 1024; /* the same slot */
	deferred_add(r, sizeof(*r), d);
	s = wait_of(&key, pid, 1004, 5, 10);
	CHECK(deferred_offcpu(d, &s, on_sample, &g) == 0 && g.n == 4 && g.nu == 0,
	      "a later block took its slot: its walk forgotten, the wait without user frames");
	deferred_get_stats(d, &st);
	CHECK(st.offcpu_kept == 0 && st.offcpu_unmatched == 2, "stats: no walk kept, 2 unmatched");
out:
	deferred_free(d); /* frees the block still waiting */
	unwinder_free(u);
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
	test_superseded(&m);
	test_bounds(&m);
	test_offcpu(&m);
	close_maps(&m);
	return CHECK_EXIT();
}
