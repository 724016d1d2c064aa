/* offcpu.h - the off-CPU part of profile.bpf.c: on sched_switch, a thread that blocks (sleeping or
 * uninterruptible) is stamped and its stacks taken with the same walk as a CPU sample, its user stack
 * by the walker program its process needs (offcpu_walk_native or offcpu_walk_python, tail-called as
 * profile_tick calls walk_native and walk_python); when it runs again the time blocked is gathered per
 * thread and second and added to (pid, tid, second, stacks) in the offcpu maps of the generation being
 * filled. Per-thread state lives in task storage, which dies with the thread. A thread that blocks
 * where it blocked last (same user registers and system call) within OFFCPU_REWALK_NS keeps its last
 * stacks without a walk: a context-switch storm walks each thread about once a second. Waits still
 * going on are counted at each flush by the offcpu_ongoing iterator, up to then. Included by
 * profile.bpf.c after the walk. */
#ifndef FLAMED_BPF_OFFCPU_H
#define FLAMED_BPF_OFFCPU_H

#define PF_KTHREAD 0x00200000
#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
/* A thread's stacks are walked again when its last walk is older than this, even where it blocks
 * as it did. */
#define OFFCPU_REWALK_NS 1000000000ULL
/* A wait going on is counted at a flush only when it has lasted this long (shorter ones end soon). */
#define OFFCPU_ONGOING_NS 100000000ULL

const volatile __u64 offcpu_min_ns = 0;   /* shorter waits are not counted */
const volatile bool offcpu_kthreads = false; /* follow kernel threads too */

/* One thread's off-CPU state. Times are CLOCK_BOOTTIME nanoseconds. */
struct offcpu_task {
	__u64 since;     /* when its wait began (or was last counted up to); 0: not waiting */
	__u64 where;     /* what its last block looked like (user registers, system call): 0 none */
	__u64 walked_ns; /* when its stacks were last walked */
	__u64 kstack, ustack;
	__u32 flags;     /* SAMPLE_* of that walk */
	__u32 gen;       /* 1 + the generation whose stacks map holds kstack and ustack; 0: none */
	__u64 acc_ns;    /* waits ended in second acc_sec with these stacks, not in a map yet */
	__u32 acc_sec;
	__u32 pad;
	__u64 cgroup;    /* the cgroup (v2 id) it blocked in, with those stacks */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_task);
} offcpu_tasks SEC(".maps");

/* Nanoseconds blocked per key, per CPU (no atomics, no contention), two generations as counts0/1. */
struct offcpu_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384); /* sized by the daemon before load */
	__type(key, struct sample_key);
	__type(value, __u64);
};
struct offcpu_map offcpu0 SEC(".maps");
struct offcpu_map offcpu1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct offcpu_map);
} offcpu_gen SEC(".maps") = {
	.values = { &offcpu0, &offcpu1 },
};

/* Puts the stack under h back into stacks from offcpu_frames; false when it is gone from there. */
static __always_inline bool offcpu_restore(void *stacks, __u64 h)
{
	struct stack_trace *st;

	if (!h || bpf_map_lookup_elem(stacks, &h))
		return true;
	st = bpf_map_lookup_elem(&offcpu_frames, &h);
	if (!st)
		return false;
	bpf_map_update_elem(stacks, &h, st, BPF_NOEXIST); /* full: the drain reports the stack lost */
	return true;
}

/* Adds ns blocked in second sec to task's key in generation gen, its stacks put in that generation
 * first. */
static __always_inline void offcpu_count(struct task_struct *task, struct offcpu_task *s, __u64 ns, __u32 sec,
					 __u32 gen)
{
	void *stacks = bpf_map_lookup_elem(&stacks_gen, &gen);
	void *counts = bpf_map_lookup_elem(&offcpu_gen, &gen);
	struct sample_key key = {};

	if (!stacks || !counts)
		return;

	key.pid = task->tgid;
	key.tid = task->pid;
	key.boot_sec = sec;
	key.flags = s->flags | SAMPLE_OFFCPU;
	key.kstack = s->kstack;
	key.ustack = s->ustack;
	key.cgroup = s->cgroup;
	__builtin_memcpy(key.comm, task->comm, sizeof(key.comm));
	__builtin_memcpy(key.pcomm, task->group_leader->comm, sizeof(key.pcomm));
	if (s->gen != gen + 1) {
		if (!offcpu_restore(stacks, key.kstack)) {
			key.kstack = 0;
			key.flags |= SAMPLE_KSTACK_LOST;
			stat_inc(STAT_OFFCPU_STACK_LOST);
		}
		/* A deferred stack's id: the daemon puts its walk there. */
		if (!(key.flags & SAMPLE_DEFERRED) && !offcpu_restore(stacks, key.ustack)) {
			key.ustack = 0;
			key.flags |= SAMPLE_USTACK_LOST;
			stat_inc(STAT_OFFCPU_STACK_LOST);
		}
		if (!(key.flags & (SAMPLE_KSTACK_LOST | SAMPLE_USTACK_LOST)))
			s->gen = gen + 1;
	}
	if (map_add(counts, &key, ns)) /* this CPU's slot */
		stat_inc(STAT_OFFCPU_COUNTS_FULL);
}

/* Moves the waits task gathered (acc_ns) into generation gen's map. */
static __always_inline void offcpu_flush(struct task_struct *task, struct offcpu_task *s, __u32 gen)
{
	__u64 ns = s->acc_ns ? __sync_lock_test_and_set(&s->acc_ns, 0) : 0; /* the iterator may take it too */

	if (ns)
		offcpu_count(task, s, ns, s->acc_sec, gen);
}

/* The walker programs by enum walker that a block's user stack is handed to, as cpu_walkers is for a CPU
 * sample (filled by the daemon, bpfload.c): a thread of a native-only process never runs the Python walk. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, WALKER_MAX);
	__type(key, __u32);
	__type(value, __u32);
} offcpu_walkers SEC(".maps");

/* Task (the current one, blocking at now in cgroup, its place `where`) is stamped in s with the stacks of
 * key, walked now into generation gen. */
static __always_inline void offcpu_walked(struct task_struct *task, struct offcpu_task *s, const struct sample_key *key,
					  __u64 where, __u64 now, __u64 cgroup, __u32 gen)
{
	if (key->ustack)
		note_process(task, key->pid);
	/* Walked again at its next block, by when its tables may be there; a deferred one is walked whole
	 * by the daemon, and its record is used again where the thread blocks alike. */
	if ((key->flags & (SAMPLE_WALK_PARTIAL | SAMPLE_DEFERRED)) == SAMPLE_WALK_PARTIAL)
		where = 0;
	s->kstack = key->kstack;
	s->ustack = key->ustack;
	s->flags = key->flags & ~SAMPLE_WALK_PARTIAL; /* SAMPLE_DEFERRED kept: ustack is an id */
	s->gen = gen + 1;
	s->where = where;
	s->walked_ns = now;
	s->cgroup = cgroup;
	stat_inc(STAT_OFFCPU_WALKED);
	*(volatile __u64 *)&s->since = now;
}

/* prev (the current task) blocks: stamps it, with its stacks (those of its last block, or walked: its
 * user stack by the walker program its process needs, tail-called, which stamps it). */
static __always_inline void offcpu_block(void *ctx, struct task_struct *prev, __u64 now, __u32 gen)
{
	struct offcpu_task *s = bpf_task_storage_get(&offcpu_tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct sample_key key = {};
	struct uregs r = {};
	__u64 where = 0, cgroup = bpf_get_current_cgroup_id();
	__u32 zero = 0, which = WALKER_NATIVE;
	struct walk *w;

	stat_inc(STAT_OFFCPU_BLOCKS);
	if (!s) {
		stat_inc(STAT_OFFCPU_NO_STORAGE);
		return;
	}
	key.pid = prev->tgid;
	key.tid = prev->pid;
	if (prev->mm) {
		task_uregs(prev, &r);
		where = (r.ip * 0x9e3779b97f4a7c15ULL) ^ (r.sp * 0xff51afd7ed558ccdULL) ^ r.bp ^ (r.syscall << 48);
	}
	if (where && where == s->where && s->gen && now - s->walked_ns < OFFCPU_REWALK_NS && cgroup == s->cgroup) {
		stat_inc(STAT_OFFCPU_REUSED);
		*(volatile __u64 *)&s->since = now;
		return;
	}
	/* (A Python thread's walk leaves where 0: it blocks from the same native place under any Python
	 * caller, so its stacks are never reused.) */
	if (python_walk && bpf_map_lookup_elem(&py_procs, &key.pid)) {
		where = 0;
		which = WALKER_PYTHON;
	}
	offcpu_flush(prev, s, gen); /* what it gathered belongs to its old stacks */
	key.kstack = capture(ctx, gen, 0, SAMPLE_KSTACK_LOST, STAT_KSTACK_ERROR, &key, true);
	if (unwind_mode != UNWIND_MODE_FP && prev->mm) {
		w = bpf_map_lookup_elem(&walks, &zero);
		if (w) {
			w->rec.key = key;
			w->r = r;
			w->gen = gen;
			w->block_where = where;
			w->block_now = now;
			w->block_cgroup = cgroup;
			bpf_tail_call(ctx, &offcpu_walkers, which);
		}
		stat_inc(STAT_OFFCPU_WALKER_MISSING); /* reached only when there was no program to go to */
	}
	key.ustack = prev->mm ? capture(ctx, gen, BPF_F_USER_STACK, SAMPLE_USTACK_LOST, STAT_USTACK_ERROR, &key, true) : 0;
	offcpu_walked(prev, s, &key, where, now, cgroup, gen);
}

/* A walker program which (a constant) for a block: the user stack of the thread offcpu_block left in this
 * CPU's walk, walked (the Python walker's with Python frames) or deferred, and the thread stamped. */
static __always_inline int offcpu_walk(void *ctx, const enum walker which)
{
	struct task_struct *task = bpf_get_current_task_btf(); /* prev: sched_switch runs before the switch */
	struct offcpu_task *s;
	struct sample_key key;
	struct uregs r;
	struct walk *w;
	__u64 where, now, cgroup;
	__u32 zero = 0, gen;

	stat_inc(STAT_OFFCPU_WALKER + which);
	w = bpf_map_lookup_elem(&walks, &zero);
	if (!w)
		return 0;
	key = w->rec.key; /* the walk reuses w: the input is copied out first */
	r = w->r;
	gen = w->gen;
	where = w->block_where;
	now = w->block_now;
	cgroup = w->block_cgroup;
	s = bpf_task_storage_get(&offcpu_tasks, task, 0, 0);
	if (!s)
		return 0;
	key.ustack = user_stack(ctx, &r, task, gen, &key, true, which == WALKER_PYTHON);
	offcpu_walked(task, s, &key, where, now, cgroup, gen);
	return 0;
}

/* next runs again: its wait, if it was blocked and no flush counted it meanwhile, is counted. */
static __always_inline void offcpu_wake(struct task_struct *next, __u64 now, __u32 gen)
{
	struct offcpu_task *s = bpf_task_storage_get(&offcpu_tasks, next, 0, 0);
	__u64 since;
	__u32 sec;

	if (!s || !s->since)
		return;
	since = __sync_lock_test_and_set(&s->since, 0); /* the iterator may count it at the same time */
	if (!since || now <= since)
		return;
	stat_inc(STAT_OFFCPU_WAKES);
	if (now - since < offcpu_min_ns) {
		stat_inc(STAT_OFFCPU_SHORT);
		return;
	}
	/* Gathered per thread and second, one map update a second at most (or at a flush, a new place
	 * to block, or the thread's exit), not one a switch. */
	sec = boot_second(now);
	if (s->acc_sec != sec) {
		offcpu_flush(next, s, gen);
		s->acc_sec = sec;
	}
	__sync_fetch_and_add(&s->acc_ns, now - since);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	__u32 gen = *(volatile __u32 *)&active_gen;
	__u64 now = bpf_ktime_get_boot_ns();

	if (test_refused(REFUSE_OFFCPU_SWITCH))
		return 0;
	if (next->pid)
		offcpu_wake(next, now, gen);
	/* Blocked: not preempted, and asleep (a task preempted while going to sleep is still runnable).
	 * Last: the walk of its user stack ends this program, in a walker it tail-calls. */
	if (!preempt && prev->pid && (prev_state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE)) &&
	    (offcpu_kthreads || !(prev->flags & PF_KTHREAD)))
		offcpu_block(ctx, prev, now, gen);
	return 0;
}

SEC("tp_btf/sched_switch")
int offcpu_walk_native(void *ctx)
{
	return offcpu_walk(ctx, WALKER_NATIVE);
}

SEC("tp_btf/sched_switch")
int offcpu_walk_python(void *ctx)
{
	return offcpu_walk(ctx, WALKER_PYTHON);
}

/* A thread exits: what it gathered goes into the map before its task storage goes. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offcpu_exit, struct task_struct *task)
{
	struct offcpu_task *s;

	if (test_refused(REFUSE_OFFCPU_EXIT))
		return 0;
	s = bpf_task_storage_get(&offcpu_tasks, task, 0, 0);
	if (s)
		offcpu_flush(task, s, *(volatile __u32 *)&active_gen);
	return 0;
}

/* Run by the daemon just before each flush: every wait going on for OFFCPU_ONGOING_NS or more is
 * counted up to now (and restarted from now), so a long wait shows while it lasts. */
SEC("iter/task")
int offcpu_ongoing(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct offcpu_task *s;
	__u64 since, now;
	__u32 gen;

	if (test_refused(REFUSE_OFFCPU_ONGOING) || !task)
		return 0;
	s = bpf_task_storage_get(&offcpu_tasks, task, 0, 0);
	if (!s)
		return 0;
	gen = *(volatile __u32 *)&active_gen;
	offcpu_flush(task, s, gen);
	since = s->since;
	now = bpf_ktime_get_boot_ns();
	if (!since || now < since + OFFCPU_ONGOING_NS)
		return 0;
	if (__sync_val_compare_and_swap(&s->since, since, now) != since)
		return 0; /* it woke meanwhile: its wake counts it */
	stat_inc(STAT_OFFCPU_ONGOING);
	offcpu_count(task, s, now - since, boot_second(now), gen);
	return 0;
}

#endif
