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
 * and is read in full and emptied with no sample lost or counted twice. The walk of user stacks is walk.h's. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "profile.h"
#include "python.h"
#include "unwind.h"

#define ENOMEM 12
#define EFAULT 14
#define EEXIST 17

/* Knobs set by the daemon before load. */
const volatile bool include_idle = false;
const volatile __u32 unwind_mode = UNWIND_MODE_FP; /* enum unwind_mode */
const volatile bool python_walk = false;           /* write Python frames (python/pywalk.bpf.h) */
const volatile __u32 test_refuse = 0;              /* tests only: REFUSE_* programs the verifier refuses */

/* Generation being filled: 0 or 1. Written by the daemon through the mmaped .bss. */
__u32 active_gen = 0;

/* The part of a second by which the wall clock is ahead of CLOCK_BOOTTIME (unix - boot time, less its
 * whole seconds), written by the daemon through the mmaped .bss at each drain: a key's boot_sec is
 * CLOCK_BOOTTIME moved by it, so its seconds begin where the wall clock's do, and the daemon puts each
 * sample in the unix second it was taken in by adding the whole seconds. */
__u64 unix_frac_ns = 0;

/* boot_sec of a key for CLOCK_BOOTTIME ns (see unix_frac_ns). */
static __always_inline __u32 boot_second(__u64 boot_ns)
{
	return (boot_ns + *(volatile __u64 *)&unix_frac_ns) / 1000000000ULL;
}

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

/* The generation being filled is found through these arrays of maps, indexed by active_gen: one map
 * pointer, whichever generation it is, so the verifier checks what follows once (a map chosen by a
 * branch would have it check everything after the choice once per map). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct counts_map);
} counts_gen SEC(".maps") = {
	.values = { &counts0, &counts1 },
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct stacks_map);
} stacks_gen SEC(".maps") = {
	.values = { &stacks0, &stacks1 },
};

/* Where bpf_get_stack() writes: a stack is too large for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_trace);
} scratch SEC(".maps");

/* CPU samples sent whole (struct sample_record): those taken in user code whose stack a walker walked.
 * Read by the daemon at each drain, never woken for; sized by it before load. A full one: the sample
 * goes to the maps (STAT_SEND_FULL). */
const volatile bool send_walked = false; /* set by the daemon: use it */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} samples SEC(".maps");

/* Stacks taken at an off-CPU block (offcpu.h), by key: a wait may end (or be counted) in a later
 * generation, whose stacks map is then given them again from here. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192); /* sized by the daemon before load */
	__type(key, __u64);
	__type(value, struct stack_trace);
} offcpu_frames SEC(".maps");

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

/* Mappings of a process are asked for again at most this often (an address in none of them): a
 * library loaded with dlopen waits at most this long, plus its table's build. */
#define REFRESH_GAP_NS 200000000ULL

struct seen_process {
	__u64 start;      /* start time: a reused pid starts later */
	__u64 token;      /* when this entry was made: process_event.token */
	__u64 last_ns;    /* when it was last reported */
	__u64 refresh_ns; /* when its mappings were last asked for again */
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

/* Unwind tables, one inner array of struct unwind_row per binary, each sized to its rows; written by
 * the daemon. */
struct unwind_table_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP); /* inner maps of any size */
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct unwind_row)); /* no BTF type: the rows are plain bytes to the kernel */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1024); /* sized by the daemon before load */
	__type(key, __u32);
	__array(values, struct unwind_table_map);
} unwind_tables SEC(".maps");

/* Each process's mappings and their tables, by pid; written by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024); /* sized by the daemon before load */
	__uint(map_flags, BPF_F_NO_PREALLOC); /* the daemon falls back to preallocation if refused */
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_procs SEC(".maps");

/* Rows found lately, per CPU, by (table, ELF address): a hot stack's frames are found again in one
 * lookup instead of a binary search of a few dozen map lookups. Direct-mapped; 2048 slots (32 KiB, the
 * largest per-CPU value the kernel allows): bench/burn's 256 chains missed 20% of frames at 1024, 0.4% here. */
#define ROW_CACHE 2048
struct row_cache_slot {
	__u32 table; /* unwind_mapping.table (slot and generation); 0: empty */
	__u32 pc;
	struct unwind_row row;
};
struct row_cache {
	struct row_cache_slot s[ROW_CACHE];
};
_Static_assert(sizeof(struct row_cache) <= 32768, "the kernel's largest per-CPU value is 32 KiB");
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct row_cache);
} row_cache SEC(".maps");

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

/* Reserves an event of kind about process pid (program image token) in ring (events or py_events), its
 * other fields zero, for the caller to fill and submit; NULL, counted as lost_stat, when the ring is full. */
static __always_inline struct process_event *event_new(void *ring, __u32 pid, __u32 kind, __u64 token,
						      __u32 lost_stat)
{
	struct process_event *e = bpf_ringbuf_reserve(ring, sizeof(*e), 0);

	if (!e) {
		stat_inc(lost_stat);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->kind = kind;
	e->token = token;
	return e;
}

/* Adds n to key's value in the hash map m, inserting it when missing. Returns 0, or the map's error
 * (full). */
static __always_inline long map_add(void *m, const void *key, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(m, key);
	long err;

	if (v) {
		__sync_fetch_and_add(v, n);
		return 0;
	}
	err = bpf_map_update_elem(m, key, &n, BPF_NOEXIST);
	if (err == -EEXIST) { /* another CPU inserted it first */
		v = bpf_map_lookup_elem(m, key);
		if (v) {
			__sync_fetch_and_add(v, n);
			err = 0;
		}
	}
	return err;
}

/* Tests only: a program test_refuse names (REFUSE_* bit what) reads a hash map's value without the NULL
 * check the verifier demands, so the kernel refuses it as it would a program too complex for it. Otherwise
 * the verifier knows the branch is never taken (test_refuse is read-only) and never looks into it. */
static __always_inline bool test_refused(__u32 what)
{
	__u32 zero = 0;
	struct seen_process *v;

	if (!(test_refuse & what))
		return false;
	v = bpf_map_lookup_elem(&seen, &zero); /* a hash map: the lookup may miss (an array's may not) */
	return *(volatile __u64 *)&v->start != 0;
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

/* The key of the first n frames of the scratch stack (hash_frames); 0 when there is no scratch. A global
 * function, as the walk is: the verifier checks it once per program, not once per call. */
__noinline __u64 stack_hash(__u32 n)
{
	__u32 zero = 0;
	struct stack_trace *st = bpf_map_lookup_elem(&scratch, &zero);

	return st ? hash_frames(st, n) : 0;
}

/* Stores the first n frames of the scratch stack, hashed h (0: hashed here), in generation gen's stacks
 * map (and, with keep, in offcpu_frames: off-CPU stacks outlive a generation). Returns its key, or 0 when
 * it was lost (counted). A global function, as the walk is. */
__noinline __u64 stack_store(__u32 gen, __u32 n, __u32 keep, __u64 h)
{
	__u32 zero = 0;
	struct stack_trace *st = bpf_map_lookup_elem(&scratch, &zero);
	void *stacks = bpf_map_lookup_elem(&stacks_gen, &gen);
	long err;

	if (!st || !stacks)
		return 0;
	if (!h)
		h = stack_hash(n);
	/* An LRU map: never full. Only a stack it does not hold is written: an update of one it holds
	 * would take a fresh entry each time (and so push out the stacks of long waits sooner). */
	if (keep && !bpf_map_lookup_elem(&offcpu_frames, &h))
		bpf_map_update_elem(&offcpu_frames, &h, st, BPF_NOEXIST);
	if (bpf_map_lookup_elem(stacks, &h))
		return h;
	err = bpf_map_update_elem(stacks, &h, st, BPF_NOEXIST);
	if (err && err != -EEXIST) { /* -EEXIST: another CPU stored the same stack first */
		stat_inc(err == -ENOMEM ? STAT_STACK_NOMEM : STAT_STACK_MAP_FULL);
		return 0;
	}
	return h;
}

/* Reads the kernel or user stack (flags) with bpf_get_stack() into generation gen's stacks map. Returns
 * its key, or 0 when there is no such stack (a kernel thread has no user stack, user code no kernel
 * stack) or it was lost (counted, and lost_flag set in key->flags). */
static __always_inline __u64 capture(void *ctx, __u32 gen, __u64 flags, __u32 lost_flag, __u32 err_stat,
				     struct sample_key *key, bool keep)
{
	__u32 zero = 0;
	struct stack_trace *st = bpf_map_lookup_elem(&scratch, &zero);
	long len;
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
	if (flags & BPF_F_USER_STACK) {
		key->flags |= SAMPLE_USTACK_FP;
		stat_inc(STAT_UNWIND_FP);
		if (len == sizeof(st->ips)) { /* as deep as kept: maybe deeper */
			key->flags |= SAMPLE_USTACK_TRUNCATED;
			stat_inc(STAT_UNWIND_TRUNCATED);
		}
	}
	h = stack_store(gen, (__u32)len / sizeof(__u64), keep, 0);
	if (!h)
		key->flags |= lost_flag;
	return h;
}

#include "walk.h"

/* The walker programs by enum walker, filled by the daemon after the load (bpfload.c): profile_tick
 * tail-calls the one a sample's process needs. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, WALKER_MAX);
	__type(key, __u32);
	__type(value, __u32);
} cpu_walkers SEC(".maps");

static __always_inline void count(void *counts, struct sample_key *key)
{
	key->flags &= ~SAMPLE_WALK_PARTIAL;
	stat_inc(map_add(counts, key, 1) ? STAT_COUNTS_FULL : STAT_SAMPLES);
}

/* Sends the sample of key whole through the samples ring, with the w->n frames of the scratch stack.
 * Returns whether it went (false: count it in the maps). */
static __always_inline bool send_sample(struct walk *w, const struct sample_key *key)
{
	__u32 zero = 0, n = w->n;
	struct stack_trace *st = bpf_map_lookup_elem(&scratch, &zero);

	if (!st || !n || n > PROFILE_MAX_DEPTH)
		return false;
	w->rec.key = *key;
	w->rec.key.flags &= ~SAMPLE_WALK_PARTIAL;
	w->rec.nu = n;
	if (bpf_probe_read_kernel(w->rec.ips, n * sizeof(__u64), st->ips))
		return false;
	if (bpf_ringbuf_output(&samples, &w->rec, offsetof(struct sample_record, ips) + n * sizeof(__u64),
			       BPF_RB_NO_WAKEUP)) {
		stat_inc(STAT_SEND_FULL);
		return false;
	}
	stat_inc(STAT_SAMPLES);
	stat_inc(STAT_SENT);
	return true;
}

SEC("perf_event")
int profile_tick(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task;
	struct sample_key key = {};
	__u32 gen = *(volatile __u32 *)&active_gen;
	struct uregs r;
	__u32 zero = 0;
	void *counts;
	bool kernel;

	if (test_refused(REFUSE_PROFILE_TICK))
		return 0;
	key.pid = id >> 32;
	key.tid = (__u32)id;
	if (key.tid == 0 && !include_idle) {
		stat_inc(STAT_IDLE);
		return 0;
	}
	key.boot_sec = boot_second(bpf_ktime_get_boot_ns());
	key.cgroup = bpf_get_current_cgroup_id();
	/* The task's fields are read with plain loads (a BTF pointer), not with helper calls. */
	task = bpf_get_current_task_btf();
	__builtin_memcpy(key.comm, task->comm, sizeof(key.comm));
	__builtin_memcpy(key.pcomm, task->group_leader->comm, sizeof(key.pcomm));

	/* Interrupted in user mode there is no kernel stack to read; in the kernel, the user stack starts
	 * where it entered. */
	kernel = ctx->regs.ip >= USER_TOP;
	if (kernel) {
		task_uregs(task, &r);
	} else {
		r.ip = ctx->regs.ip;
		r.sp = ctx->regs.sp;
		r.bp = ctx->regs.bp;
		r.syscall = 0;
	}
	counts = bpf_map_lookup_elem(&counts_gen, &gen);
	if (!counts)
		return 0;
	key.kstack = kernel ? capture(ctx, gen, 0, SAMPLE_KSTACK_LOST, STAT_KSTACK_ERROR, &key, false) : 0;
	if (task->mm) /* first: a deferred sample carries the token it names the image by */
		note_process(task, key.pid);
	/* With unwind tables, the user stack is the walker program's that the process needs: handed over
	 * with the key, the generation and the registers in this CPU's walk. */
	if (unwind_mode != UNWIND_MODE_FP && task->mm) {
		struct walk *w = bpf_map_lookup_elem(&walks, &zero);
		__u32 which = WALKER_NATIVE;

		if (w) {
			w->rec.key = key;
			w->r = r;
			w->gen = gen;
			if (python_walk && bpf_map_lookup_elem(&py_procs, &key.pid))
				which = WALKER_PYTHON;
			bpf_tail_call(ctx, &cpu_walkers, which);
		}
		stat_inc(STAT_WALKER_MISSING); /* reached only when there was no program to go to */
	}
	key.ustack = capture(ctx, gen, BPF_F_USER_STACK, SAMPLE_USTACK_LOST, STAT_USTACK_ERROR, &key, false);
	count(counts, &key);
	return 0;
}

/* A walker program which (a constant): the user stack of the CPU sample profile_tick left in this CPU's
 * walk, walked (the Python walker's with Python frames) or deferred, and the sample counted. */
static __always_inline int walk_sample(struct bpf_perf_event_data *ctx, const enum walker which)
{
	const bool with_py = which == WALKER_PYTHON;
	struct task_struct *task = bpf_get_current_task_btf();
	struct sample_key key;
	struct uregs r;
	struct walk *w;
	__u32 zero = 0, gen;
	void *counts;

	stat_inc(STAT_WALKER + which);
	w = bpf_map_lookup_elem(&walks, &zero);
	if (!w)
		return 0;
	key = w->rec.key; /* the walk reuses w: the input is copied out first */
	r = w->r;
	gen = w->gen;
	counts = bpf_map_lookup_elem(&counts_gen, &gen);
	if (!counts)
		return 0;
	w->unsent = 0;
	key.ustack = user_stack(ctx, &r, task, gen, &key, false, with_py);
	if (key.flags & SAMPLE_DEFERRED)
		return 0;
	if (w->unsent) { /* taken in user code: whole through the ring, or (the ring full) stored now */
		if (send_sample(w, &key))
			return 0;
		key.ustack = stack_store(gen, w->n, 0, key.ustack);
		if (!key.ustack)
			key.flags |= SAMPLE_USTACK_LOST;
	}
	count(counts, &key);
	return 0;
}

SEC("perf_event")
int walk_native(struct bpf_perf_event_data *ctx)
{
	return walk_sample(ctx, WALKER_NATIVE);
}

SEC("perf_event")
int walk_python(struct bpf_perf_event_data *ctx)
{
	return walk_sample(ctx, WALKER_PYTHON);
}

/* A process that calls execve() has new mappings: forget it, so its next sample reports it as new and
 * no table of the old program applies to the new one. */
SEC("tp_btf/sched_process_exec")
int process_exec(void *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;

	(void)ctx;
	if (test_refused(REFUSE_PROCESS_EXEC))
		return 0;
	bpf_map_delete_elem(&unwind_procs, &pid);
	bpf_map_delete_elem(&seen, &pid);
	return 0;
}

#include "offcpu.h"

char LICENSE[] SEC("license") = "GPL";
