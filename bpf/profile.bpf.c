// SPDX-License-Identifier: GPL-2.0
/* profile.bpf.c - counts (process, thread, second, kernel stack, user stack) at every cpu-clock tick.
 *
 * Two generations of maps (counts0/stacks0, counts1/stacks1) let the daemon drain one while the
 * other fills: it flips active_gen, then waits for running programs to finish (an update of the
 * map-of-maps `barrier` returns only after an RCU grace period), so the old generation is quiescent
 * and is read in full and emptied with no sample lost or counted twice. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "profile.h"

#define EFAULT 14
#define EEXIST 17
#define ENOMEM 12

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
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 8192); /* sized by the daemon before load */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_MAX_DEPTH * sizeof(__u64));
};
struct stacks_map stacks0 SEC(".maps");
struct stacks_map stacks1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

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

/* Counts a failed bpf_get_stackid() by kind; an empty stack (-EFAULT) is no failure. */
static __always_inline void stack_error(long err, __u32 collision_stat)
{
	if (err >= 0 || err == -EFAULT)
		return;
	if (err == -EEXIST)
		stat_inc(collision_stat);
	else if (err == -ENOMEM)
		stat_inc(STAT_STACK_MAP_FULL);
	else
		stat_inc(STAT_STACK_OTHER);
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
		key.kstack_id = bpf_get_stackid(ctx, &stacks0, 0);
		key.ustack_id = bpf_get_stackid(ctx, &stacks0, BPF_F_USER_STACK);
	} else {
		key.kstack_id = bpf_get_stackid(ctx, &stacks1, 0);
		key.ustack_id = bpf_get_stackid(ctx, &stacks1, BPF_F_USER_STACK);
	}
	stack_error(key.kstack_id, STAT_KSTACK_COLLISION);
	stack_error(key.ustack_id, STAT_USTACK_COLLISION);

	if (gen == 0)
		count(&counts0, &key);
	else
		count(&counts1, &key);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
