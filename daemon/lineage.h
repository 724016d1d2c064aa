/* lineage.h - who started whom: each sampled process's parent, and its parent's, up to a process
 * already known (so a process its children outlived, or one never sampled, still links them), from
 * the BPF program's record of forks, else /proc; written to the store with each flush, and again
 * about hourly while the process runs, so queries can take a process with its children. */
#ifndef FLAMED_LINEAGE_H
#define FLAMED_LINEAGE_H

#include <stdint.h>

struct lineage;
struct store;

struct lineage_opts {
	int forks_fd;          /* the forks map (child pid -> struct fork_info), or -1: /proc only */
	const char *proc_root; /* NULL: "/proc" */
	unsigned max_procs;    /* processes remembered at most (least recently noted forgotten); 0: 32768 */
};

struct lineage_stats {
	uint64_t noted;        /* processes reported at their first samples */
	uint64_t from_forks;   /* parents learnt from the record of their child's fork */
	uint64_t from_event;   /* ... from the process's parent at its first samples */
	uint64_t from_proc;    /* ... from /proc (the fork record was gone) */
	uint64_t unknown;      /* ancestors whose parent could not be learnt (gone, and its fork forgotten) */
	uint64_t written;      /* records written to the store */
	uint64_t forgotten;    /* processes forgotten at the max_procs bound before they ended */
	uint64_t known;        /* processes remembered now */
};

/* Creates the tracker. Returns 0, -EINVAL or -ENOMEM; *out set only on success. */
int lineage_new(const struct lineage_opts *o, struct lineage **out);

/* A process was sampled for the first time: pid started at start_ns (CLOCK_MONOTONIC ns, the
 * kernel's start_time), by ppid (0: not known) started at ppid_start_ns (0: not known). Its record
 * and those of its ancestors not known yet are written at the next lineage_store(). */
void lineage_note(struct lineage *l, uint32_t pid, uint64_t start_ns, uint32_t ppid, uint64_t ppid_start_ns);

/* Inside the store's open flush transaction: writes the records learnt since the last call, and about
 * once an hour those of every remembered process still running (forgetting those that ended).
 * Records the store refuses stay to be written next time. Returns 0 or the store's -errno. */
int lineage_store(struct lineage *l, struct store *st);

void lineage_get_stats(const struct lineage *l, struct lineage_stats *out);

/* Frees the tracker; NULL is safe. */
void lineage_free(struct lineage *l);

#endif
