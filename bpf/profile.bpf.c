// SPDX-License-Identifier: GPL-2.0
/* profile.bpf.c - counts (process, thread, second, kernel stack, user stack) at every cpu-clock tick.
 *
 * Stacks are read with bpf_get_stack() and stored in a hash map under a 64-bit hash of their frames,
 * so two stacks never compete for a bucket (as they do in a BPF_MAP_TYPE_STACK_TRACE map) and the map
 * only takes memory for the stacks it holds.
 *
 * Two generations of maps (counts0/stacks0, counts1/stacks1) let the daemon drain one while the
 * other fills: it flips active_gen, then waits for running programs to finish (an update of the
 * map-of-maps `barrier` returns only after an RCU grace period), so the old generation is quiescent
 * and is read in full and emptied with no sample lost or counted twice. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "profile.h"

#define ENOMEM 12
#define EFAULT 14
#define EEXIST 17

/* Knobs set by the daemon before load. */
const volatile bool include_idle = false;

/* Generation being filled: 0 or 1. Written by the daemon through the mmaped .bss. */
__u32 active_gen = 0;

struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* sized by the daemon before load */
	__type(key, struct sample_key);
	__type(value, __u64);
};
struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");

struct stacks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* sized by the daemon before load */
	__uint(map_flags, BPF_F_NO_PREALLOC); /* the daemon falls back to preallocation if refused */
	__type(key, __u64);
	__type(value, struct stack_trace);
};
struct stacks_map stacks0 SEC(".maps");
struct stacks_map stacks1 SEC(".maps");

/* Where bpf_get_stack() writes: a stack is too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_trace);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* A process is reported at its first sample and again at later ones, REPORT_GAP_NS apart then twice
 * that: a first sample during execve or in the dynamic loader sees the libraries not mapped yet. */
#define REPORTS 3
#define REPORT_GAP_NS 5000000ULL

struct seen_process {
	__u64 start;    /* start time: a reused pid starts later */
	__u64 last_ns;  /* when it was last reported */
	__u32 reports;
	__u32 pad;
};

/* Processes reported, by pid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct seen_process);
} seen SEC(".maps");

/* First samples of processes, for the daemon to capture their mappings while they live. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} events SEC(".maps");

/* Never read by the program: updating it from user space waits for running programs. */
struct barrier_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} barrier_inner SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct barrier_inner);
} barrier SEC(".maps") = {
	.values = { &barrier_inner },
};

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += 1; /* per-CPU slot: no other writer */
}

/* A 64-bit hash of the first n frames; never 0 (0 means "no stack"). */
static __always_inline __u64 hash_frames(const struct stack_trace *st, __u32 n)
{
	__u64 h = 0x9e3779b97f4a7c15ULL ^ n;

	for (__u32 i = 0; i < PROFILE_MAX_DEPTH; i++) {
		if (i >= n)
			break;
		h ^= st->ips[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 33;
	}
	return h ? h : 1;
}

/* Reads the kernel or user stack (flags) into the stacks map. Returns its key, or 0 when there is no
 * such stack (a kernel thread has no user stack, user code no kernel stack) or it was lost (counted,
 * and lost_flag set in key->flags). */
static __always_inline __u64 capture(void *ctx, void *stacks, __u64 flags, __u32 lost_flag, __u32 err_stat,
				     struct sample_key *key)
{
	__u32 zero = 0;
	struct stack_trace *st = bpf_map_lookup_elem(&scratch, &zero);
	long len, err;
	__u64 h;

	if (!st)
		return 0;
	len = bpf_get_stack(ctx, st->ips, sizeof(st->ips), flags); /* zero-fills after the last frame */
	if (len <= 0) {
		if (len < 0 && len != -EFAULT) {
			key->flags |= lost_flag;
			stat_inc(err_stat);
		}
		return 0;
	}
	h = hash_frames(st, (__u32)len / sizeof(__u64));
	if (bpf_map_lookup_elem(stacks, &h))
		return h;
	err = bpf_map_update_elem(stacks, &h, st, BPF_NOEXIST);
	if (err && err != -EEXIST) { /* -EEXIST: another CPU stored the same stack first */
		key->flags |= lost_flag;
		stat_inc(err == -ENOMEM ? STAT_STACK_NOMEM : STAT_STACK_MAP_FULL);
		return 0;
	}
	return h;
}

static __always_inline void count(void *counts, struct sample_key *key)
{
	__u64 one = 1, *v;
	long err;

	v = bpf_map_lookup_elem(counts, key);
	if (v) {
		__sync_fetch_and_add(v, 1);
		stat_inc(STAT_SAMPLES);
		return;
	}
	err = bpf_map_update_elem(counts, key, &one, BPF_NOEXIST);
	if (err == -EEXIST) { /* another CPU inserted it first */
		v = bpf_map_lookup_elem(counts, key);
		if (v) {
			__sync_fetch_and_add(v, 1);
			err = 0;
		}
	}
	stat_inc(err ? STAT_COUNTS_FULL : STAT_SAMPLES);
}

/* Reports a process's first samples (pid and start time) through the events ring buffer. */
static __always_inline void note_process(struct task_struct *task, __u32 pid)
{
	__u64 start = BPF_CORE_READ(task, group_leader, start_time), now = bpf_ktime_get_ns();
	struct seen_process *known = bpf_map_lookup_elem(&seen, &pid), fresh = { .start = start };
	struct process_event *e;

	if (known && known->start == start) {
		if (known->reports >= REPORTS || now - known->last_ns < (REPORT_GAP_NS << (known->reports - 1)))
			return;
		known->reports++;
		known->last_ns = now;
	} else {
		fresh.last_ns = now;
		fresh.reports = 1;
		bpf_map_update_elem(&seen, &pid, &fresh, BPF_ANY);
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(STAT_EVENTS_LOST);
		return;
	}
	e->pid = pid;
	e->pad = 0;
	e->start_ns = start;
	bpf_ringbuf_submit(e, 0);
}

SEC("perf_event")
int profile_tick(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task;
	struct sample_key key = {};
	__u32 gen = *(volatile __u32 *)&active_gen;

	key.pid = id >> 32;
	key.tid = (__u32)id;
	if (key.tid == 0 && !include_idle) {
		stat_inc(STAT_IDLE);
		return 0;
	}
	key.boot_sec = bpf_ktime_get_boot_ns() / 1000000000ULL;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	task = (struct task_struct *)bpf_get_current_task();
	BPF_CORE_READ_STR_INTO(&key.pcomm, task, group_leader, comm);

	if (gen == 0) {
		key.kstack = capture(ctx, &stacks0, 0, SAMPLE_KSTACK_LOST, STAT_KSTACK_ERROR, &key);
		key.ustack = capture(ctx, &stacks0, BPF_F_USER_STACK, SAMPLE_USTACK_LOST, STAT_USTACK_ERROR, &key);
	} else {
		key.kstack = capture(ctx, &stacks1, 0, SAMPLE_KSTACK_LOST, STAT_KSTACK_ERROR, &key);
		key.ustack = capture(ctx, &stacks1, BPF_F_USER_STACK, SAMPLE_USTACK_LOST, STAT_USTACK_ERROR, &key);
	}

	if (key.ustack)
		note_process(task, key.pid);
	if (gen == 0)
		count(&counts0, &key);
	else
		count(&counts1, &key);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
