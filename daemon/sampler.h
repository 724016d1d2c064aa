/* sampler.h - the BPF side of flamed: attaches profile.bpf.c to a cpu-clock event on every online CPU
 * and drains what it counted, one generation of maps at a time, with no sample lost or counted twice. */
#ifndef FLAMED_SAMPLER_H
#define FLAMED_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "profile.h"

struct sampler;

struct sampler_opts {
	unsigned frequency;  /* samples per second per CPU */
	unsigned flush_interval; /* seconds between drains: the samples ring holds what comes between two */
	bool include_idle;   /* count the idle task (pid 0) */
	unsigned max_stacks; /* stack map entries per generation (kernel and user stacks share it) */
	unsigned max_keys;   /* distinct keys counted per generation */
	unsigned unwind_mode;      /* enum unwind_mode */
	unsigned max_unwind_tables; /* binaries with unwind tables loaded at once (not UNWIND_MODE_FP) */
	unsigned max_unwind_procs;  /* processes with unwind tables at once (not UNWIND_MODE_FP) */
	bool defer_new;             /* samples taken before their process's tables are ready: copied and
				     * walked later (sampler_on_deferred), not by frame pointers (not UNWIND_MODE_FP) */
	bool python;                /* write Python frames (include/python.h; not UNWIND_MODE_FP) */
	unsigned max_python_procs;  /* Python processes walked at once */
	unsigned max_python_threads; /* threads whose thread state is remembered */
	bool off_cpu;               /* count the time threads spend blocked (bpf/offcpu.h) */
	uint64_t off_cpu_min_ns;    /* shorter waits are not counted */
	unsigned max_off_cpu_stacks; /* stacks of blocked threads kept across generations */
};

/* One drained key with its stacks, valid only during the callback. */
struct sampler_sample {
	const struct sample_key *key;
	int64_t unix_sec;     /* key->boot_sec on the wall clock */
	const __u64 *kips;    /* kernel frames, leaf first (nk of them) */
	unsigned nk;
	const __u64 *uips;    /* user frames, leaf first */
	unsigned nu;
	uint64_t count;       /* samples; with SAMPLE_OFFCPU in key->flags, microseconds blocked */
};

struct sampler_stats {
	uint64_t stat[STAT_MAX]; /* cumulative, summed over CPUs (enum profile_stat) */
	unsigned cpus;           /* CPUs with an attached event */
	uint64_t drains;
	uint64_t stacks_stashed;   /* stacks of drained keys found among those a drain read in batches */
	uint64_t stacks_looked_up; /* ... and read one lookup each (the batches' stash was full) */
	uint64_t sent_read;        /* samples read whole from the samples ring (struct sample_record) */
	uint64_t sent_malformed;   /* ... refused: a record shorter than its frames */
	unsigned sent_ring_bytes;  /* the samples ring's size (0: not used) */
};

typedef int (*sampler_cb)(const struct sampler_sample *s, void *ctx);

/* Called with an event of a process (struct process_event): at its first samples (PROCESS_NEW, with its
 * parent; again after an execve), when its user stack met an address in none of the mappings it has unwind tables for
 * (PROCESS_MAPPINGS), or when a Python frame of a code object not seen lately was written
 * (PROCESS_PY_CODE); e->token names the program image. */
typedef void (*sampler_process_cb)(const struct process_event *e, void *ctx);

/* Called with each deferred sample (struct deferred_sample, size bytes of it: the record as the ring
 * buffer holds it), valid only during the call. */
typedef void (*sampler_deferred_cb)(const struct deferred_sample *d, size_t size, void *ctx);

struct bpfload_report;

/* Opens, sizes, loads and attaches the BPF program on every online CPU (offline ones skipped), with
 * each optional feature opts ask for that the kernel accepts (bpfload.h). rep (the caller's) says what
 * loaded and what was left out and why, and on failure which program the kernel refused, if one was.
 * Returns 0 or -errno: -EPERM without CAP_BPF/CAP_PERFMON, -ENODEV when no CPU could be attached. */
int sampler_new(const struct sampler_opts *opts, struct sampler **out, struct bpfload_report *rep);

/* Counts the waits going on (with off_cpu) up to now, switches generations, waits until no program
 * writes the old one, then calls cb for every key it counted (CPU samples, the samples sent whole
 * through the ring so far, then off-CPU time) and empties it. Returns 0, the first non-zero cb return,
 * or -errno from a map operation. */
int sampler_drain(struct sampler *s, sampler_cb cb, void *ctx);

/* Where deferred samples go while sampler_read_events reads them (cb NULL: they are dropped). */
void sampler_on_deferred(struct sampler *s, sampler_deferred_cb cb, void *ctx);

/* How a drain turns key->boot_sec into unix_sec: the BPF program begins a key's seconds where the wall
 * clock's begin (unix_frac_ns), so offset, the whole seconds of unix - boot time, puts a sample in the
 * unix second it was taken in (CLOCK_BOOTTIME in whole seconds plus a rounded offset put up to half of
 * them a second late or early: a query for up to now made just after missed some, a window from the
 * second after a process ended got some of its last samples). now is the unix second of the drain: a
 * guard for the wall clock set back, as no sample is taken after its drain. */
struct unix_clock {
	int64_t offset, now;
};

/* The clock the samples taken since the last drain were taken by. */
struct unix_clock sampler_clock(const struct sampler *s);

static inline int64_t unix_clock_sec(const struct unix_clock *c, uint32_t boot_sec)
{
	int64_t t = (int64_t)boot_sec + c->offset;

	return t < c->now ? t : c->now;
}

/* A descriptor that polls readable when events of processes (or deferred samples) are waiting. */
int sampler_events_fd(const struct sampler *s);

/* Calls cb for every waiting event. Returns how many, or -errno. */
int sampler_read_events(struct sampler *s, sampler_process_cb cb, void *ctx);

/* The descriptors of the unwind_tables (array of maps) and unwind_procs maps, for the unwinder. */
void sampler_unwind_fds(const struct sampler *s, int *tables_fd, int *procs_fd);

/* The descriptor of the py_procs map (pid -> struct py_proc), for the Python process tracker. */
int sampler_python_fd(const struct sampler *s);

/* The descriptor of the forks map (child pid -> struct fork_info), for the process tree. */
int sampler_forks_fd(const struct sampler *s);

/* Reads the cumulative counters. Returns 0 or -errno. */
int sampler_get_stats(struct sampler *s, struct sampler_stats *out);

/* Detaches and frees; NULL is safe. */
void sampler_free(struct sampler *s);

#endif
