/* profile.h - types shared by bpf/profile.bpf.c and the daemon's sampler (fixed-size types only). */
#ifndef FLAMED_PROFILE_H
#define FLAMED_PROFILE_H

#define PROFILE_COMM_LEN 16
/* Frames kept per stack; the kernel's own limit (PERF_MAX_STACK_DEPTH). */
#define PROFILE_MAX_DEPTH 127

/* One counted key: who was on the CPU, where, and in which second (boot clock). */
struct sample_key {
	__u32 pid;          /* tgid in the initial pid namespace */
	__u32 tid;
	__u32 boot_sec;     /* CLOCK_BOOTTIME seconds */
	__s32 kstack_id;    /* >= 0: id in the stack map; < 0: -errno from bpf_get_stackid */
	__s32 ustack_id;
	char comm[PROFILE_COMM_LEN];   /* thread name */
	char pcomm[PROFILE_COMM_LEN];  /* process (group leader) name */
};

/* Per-CPU counters in the stats map, indexed by these. */
enum profile_stat {
	STAT_SAMPLES = 0,        /* samples counted into a key */
	STAT_IDLE,               /* idle samples left out (pid 0) */
	STAT_KSTACK_COLLISION,   /* kernel stack lost: stack map bucket taken (-EEXIST) */
	STAT_USTACK_COLLISION,   /* user stack lost: stack map bucket taken (-EEXIST) */
	STAT_STACK_MAP_FULL,     /* stack lost: stack map out of entries (-ENOMEM) */
	STAT_STACK_OTHER,        /* stack lost for another reason */
	STAT_COUNTS_FULL,        /* sample lost: counts map full */
	STAT_MAX,
};

#endif
