/* profile.h - types shared by bpf/profile.bpf.c and the daemon's sampler (fixed-size types only). */
#ifndef FLAMED_PROFILE_H
#define FLAMED_PROFILE_H

#define PROFILE_COMM_LEN 16
/* Frames kept per stack; the kernel's own limit (PERF_MAX_STACK_DEPTH). */
#define PROFILE_MAX_DEPTH 127

/* sample_key.flags: a stack that was there but could not be kept. */
#define SAMPLE_KSTACK_LOST 1u
#define SAMPLE_USTACK_LOST 2u
/* sample_key.flags: the user stack is deeper than PROFILE_MAX_DEPTH; its outermost frames are cut. */
#define SAMPLE_USTACK_TRUNCATED 4u
/* sample_key.flags: an off-CPU key (offcpu0/offcpu1): its value is nanoseconds blocked, not samples. */
#define SAMPLE_OFFCPU 8u
/* Set by a user stack's walk, cleared before a key is counted (never seen by the daemon): the walk was
 * made before the process's unwind tables were built, or met an address in no mapping they know, so
 * its stack may be short. An off-CPU block does not reuse such a stack. */
#define SAMPLE_WALK_PARTIAL 16u

/* sample_key.flags: the user stack was read by frame pointers (bpf_get_stack), not walked with unwind
 * tables: it holds no Python frame, whatever its values look like. */
#define SAMPLE_USTACK_FP 32u
/* Set on a sample whose user stack was deferred (struct deferred_sample). A CPU sample so marked is not
 * counted by the BPF program (never seen by the daemon in a key). An off-CPU key keeps it: its ustack is
 * then the id of the deferred record (deferred_sample.key.ustack), whose walk the daemon puts there. */
#define SAMPLE_DEFERRED 64u
/* Tests only (FLAMED_TEST_REFUSE, the BPF program's test_refuse): what the verifier is made to refuse, so
 * a test sees flamed load without it. */
#define REFUSE_PROFILE_TICK 1u
#define REFUSE_PROCESS_EXEC 2u
#define REFUSE_PROCESS_FORK 4u
#define REFUSE_OFFCPU_SWITCH 8u
#define REFUSE_OFFCPU_EXIT 16u
#define REFUSE_OFFCPU_ONGOING 32u
#define REFUSE_PYTHON 64u   /* the Python walk, in the programs that walk stacks */
/* The programs a CPU sample's user stack is handed to by tail call (the BPF program's cpu_walkers array),
 * one per unwinder: a sample runs, and the verifier checks apart, only the one its process needs. The
 * next runtimes add theirs before WALKER_MAX. */
enum walker {
	WALKER_NATIVE = 0, /* unwind tables and frame pointers (walk_native) */
	WALKER_PYTHON,     /* the same, with CPython's frames in place of its eval loop (walk_python) */
	WALKER_MAX,
};

/* How user stacks are walked (the BPF program's unwind_mode). */
enum unwind_mode {
	UNWIND_MODE_FP = 0,    /* frame pointers only (bpf_get_stack) */
	UNWIND_MODE_DWARF = 1, /* unwind tables only: a frame with no table ends the stack */
	UNWIND_MODE_AUTO = 2,  /* unwind tables where a process has them, frame pointers elsewhere */
};

/* One counted key: who was on the CPU, where, and in which second (boot clock). */
struct sample_key {
	__u32 pid;          /* tgid in the initial pid namespace */
	__u32 tid;
	__u32 boot_sec;     /* CLOCK_BOOTTIME seconds, begun where the wall clock's begin (unix_frac_ns) */
	__u32 flags;        /* SAMPLE_*_LOST */
	__u64 kstack;       /* key of the kernel stack in the stacks map (a hash of its frames); 0: none */
	__u64 ustack;       /* likewise for the user stack */
	__u64 cgroup;       /* the cgroup v2 id it ran in (bpf_get_current_cgroup_id); 0: none */
	char comm[PROFILE_COMM_LEN];   /* thread name */
	char pcomm[PROFILE_COMM_LEN];  /* process (group leader) name */
};

/* A stack as stored in the stacks map: frames leaf first, zeros after the last. */
struct stack_trace {
	__u64 ips[PROFILE_MAX_DEPTH];
};

/* A CPU sample sent whole through the samples ring buffer rather than counted in the maps: one taken in
 * user code whose stack a walker program walked. At 99 Hz every sample's maps are cold: a lookup (and
 * mostly an insert: a Python stack's leaf instruction changes) in two hash maps cost more than a copy of
 * the frames the stack holds (BPF time per sample -35% over C burners, -13% over deep Python stacks).
 * The ring's record ends with its nu frames. */
struct sample_record {
	struct sample_key key; /* ustack: the hash of the frames (as the stacks map's key); kstack 0 */
	__u32 nu;              /* user frames in ips, leaf first */
	__u32 pad;
	__u64 ips[PROFILE_MAX_DEPTH];
};

/* Sent through the events ring buffer at the first sample of a process (by pid and start time), so
 * the daemon can capture its mappings while it lives. */
enum process_event_kind {
	PROCESS_NEW = 0,      /* first samples of a process */
	PROCESS_MAPPINGS = 1, /* a user stack met an address in none of its known mappings (dlopen, JIT) */
	PROCESS_PY_CODE = 2,  /* a Python frame of a code object not seen lately (addr): name it now */
};

struct process_event {
	__u32 pid;
	__u32 kind;     /* enum process_event_kind */
	__u64 start_ns; /* the process's start time, CLOCK_MONOTONIC ns */
	__u64 token;    /* names this program image of the process: it changes at execve() and when the pid
			 * is reused; unwind tables written for another token are not used */
	__u64 addr;     /* PROCESS_PY_CODE: the code object's address; else 0 */
	__u32 ppid;     /* PROCESS_NEW: the parent process (as its fork recorded it, else the current one); 0 */
	__u32 pad;
	__u64 ppid_start_ns; /* PROCESS_NEW: the parent's start time, CLOCK_MONOTONIC ns; else 0 */
};

/* A CPU sample, or an off-CPU block, taken before its process's unwind tables were ready (bpf/defer.h):
 * not walked, but its registers, kernel stack and the top of its user stack sent through the deferred
 * ring buffer, for the daemon to walk once the tables are built (lib/unwind/stackwalk.c), with a Python
 * process's Python frames read now. Only the first nk kernel frames, npy Python ones and copied stack
 * bytes are meaningful; the ring buffer's record ends with the last of those (its size is the record's
 * up to stack, plus copied). An off-CPU block's key has SAMPLE_OFFCPU and, as ustack, the id its waits
 * are counted under (with SAMPLE_DEFERRED) in the offcpu maps. */
#define DEFER_STACK_BYTES 32768 /* of user stack copied from the sampled sp (perf dwarf: 8192, at most 65528) */
#define DEFER_PAGE 4096         /* the copy is read a page at a time and stops at the first it cannot read */
/* A process's samples are deferred only in its first DEFER_WINDOW_S seconds seen (then, tables or not,
 * they are walked at once, as before): one never given tables (--unwind-processes reached) costs copies
 * for that long, not for its life. The daemon waits as long for a sample's tables. */
#define DEFER_WINDOW_S 30
struct deferred_sample {
	struct sample_key key; /* kstack and ustack 0 */
	__u64 token;           /* the process_event.token of the image sampled */
	__u64 ip, sp, bp;      /* the user registers */
	__u32 nk;              /* kernel frames in kips */
	__u32 copied;          /* user stack bytes in stack, from sp */
	__u32 npy;             /* a Python process's: its thread's Python frames in pyips */
	__u32 pad;
	__u64 kips[PROFILE_MAX_DEPTH];
	__u64 pyips[PROFILE_MAX_DEPTH]; /* innermost first (PY_FRAME), each eval-loop call's closed by a 0 */
	__u8 stack[DEFER_STACK_BYTES + DEFER_PAGE]; /* room for a page read past DEFER_STACK_BYTES */
};

/* A fork of a new process, in the forks map by the child's pid. Times are CLOCK_MONOTONIC ns (the
 * kernel's task start_time). */
struct fork_info {
	__u64 start_ns;      /* the child's start */
	__u32 ppid;          /* the process that forked it */
	__u32 pad;
	__u64 ppid_start_ns; /* that process's start */
};

/* Per-CPU counters in the stats map, indexed by these. */
enum profile_stat {
	STAT_SAMPLES = 0,        /* samples counted into a key */
	STAT_IDLE,               /* idle samples left out (pid 0) */
	STAT_KSTACK_ERROR,       /* kernel stack lost: bpf_get_stack() failed */
	STAT_USTACK_ERROR,       /* user stack lost: bpf_get_stack() failed (e.g. user memory paged out) */
	STAT_STACK_MAP_FULL,     /* stack lost: the stacks map is full (--max-stacks) */
	STAT_STACK_NOMEM,        /* stack lost: the kernel could not allocate its entry just then */
	STAT_COUNTS_FULL,        /* sample lost: counts map full */
	STAT_EVENTS_LOST,        /* first-sample events of new processes lost: ring buffer full */
	STAT_UNWIND_FP,          /* user stacks walked with frame pointers only */
	STAT_UNWIND_DWARF,       /* user stacks walked with unwind tables only */
	STAT_UNWIND_MIXED,       /* user stacks walked with unwind tables and frame pointers */
	STAT_UNWIND_TRUNCATED,   /* user stacks deeper than PROFILE_MAX_DEPTH, cut */
	STAT_UNWIND_FAILED,      /* user stacks whose walk stopped early: unreadable stack, rule not followed */
	STAT_UNWIND_REFRESH,     /* mappings re-read requests sent (an address in no known mapping) */
	STAT_PY_STACKS,          /* user stacks with Python frames in them */
	STAT_PY_NO_THREAD,       /* samples of a Python process whose thread has no thread state found */
	STAT_PY_READ_FAILED,     /* Python walks cut short: a thread state or frame could not be read */
	STAT_PY_TRUNCATED,       /* Python walks cut at the most Python frames a stack may hold */
	STAT_PY_UNMATCHED,       /* Python frames left over when the native walk ended (not written) */
	STAT_PY_APPENDED,        /* native walks that failed, the rest of the Python frames written after */
	STAT_PY_CALL_EDGE,       /* eval-loop calls sampled starting or ending: their frames the caller's */
	STAT_PY_TRAMP_LEAF,      /* samples whose leaf was a perf trampoline, unwound by its instruction */
	STAT_PY_EVENTS_LOST,     /* code objects first written not reported: py_events ring buffer full */
	STAT_OFFCPU_BLOCKS,      /* threads switched out blocked (sleeping or uninterruptible) */
	STAT_OFFCPU_WALKED,      /* ... whose stacks were walked */
	STAT_OFFCPU_REUSED,      /* ... whose stacks were those of their last block (same place, lately) */
	STAT_OFFCPU_NO_STORAGE,  /* ... not followed: no task storage could be had */
	STAT_OFFCPU_WAKES,       /* blocked threads switched in again, their wait counted */
	STAT_OFFCPU_SHORT,       /* ... whose wait was under --off-cpu-min-us: not counted */
	STAT_OFFCPU_ONGOING,     /* waits still going on counted at a flush (up to it) */
	STAT_OFFCPU_STACK_LOST,  /* off-CPU stacks gone from offcpu_frames before their wait was counted */
	STAT_OFFCPU_COUNTS_FULL, /* off-CPU waits lost: the offcpu counts map was full */
	STAT_DEFERRED,           /* CPU samples deferred: their process's unwind tables were not ready */
	STAT_DEFER_LOST,         /* ... not deferred (walked by frame pointers): deferred ring buffer full */
	STAT_OFFCPU_DEFERRED,    /* off-CPU blocks whose user stack was deferred (tables not ready) */
	STAT_WALKER,             /* CPU samples handed to each walker program: STAT_WALKER + enum walker */
	STAT_WALKER_LAST = STAT_WALKER + WALKER_MAX - 1,
	STAT_WALKER_MISSING,     /* ... not: the tail call failed (no program there); read by frame pointers */
	STAT_SENT,               /* CPU samples sent whole through the samples ring (struct sample_record) */
	STAT_SEND_FULL,          /* ... not: the ring was full; stored in the maps instead */
	STAT_OFFCPU_WALKER,      /* off-CPU blocks whose user stack each walker program walked: + enum walker */
	STAT_OFFCPU_WALKER_LAST = STAT_OFFCPU_WALKER + WALKER_MAX - 1,
	STAT_OFFCPU_WALKER_MISSING, /* ... not: the tail call failed (no program there); read by frame pointers */
	STAT_MAX,
};

#endif
