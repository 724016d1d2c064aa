/* unwinder_impl.h - what the unwinder's files share (unwinder.c: tables and processes; unwqueue.c: the
 * requests and the thread that does them, which calls unwinder.c, never the other way round). Not for
 * use outside lib/unwind/unwinder.c and unwqueue.c. */
#ifndef FLAMED_UNWIND_UNWINDER_IMPL_H
#define FLAMED_UNWIND_UNWINDER_IMPL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

#include "elf/elf_file.h"
#include "elf/mapped.h"
#include "elf/procmaps.h"
#include "unwind/unwinder.h"

#define FAST_STREAK 4          /* fast requests done in a row before a waiting build gets its turn */
#define MAP_TRUST_S 1.0 /* a binary known by a mapping's device and inode is opened again after this */
#define MAPS_CURRENT_S 0.05 /* mappings read this recently stand for a read of the unwinder's own */
#define SLOW_AGE_S 2.0         /* a process waiting this long for builds goes first, whatever they cost */
#define FILL_CHUNK 65536     /* rows copied into an inner map per batch update */
#define MAX_ENTRIES_PER_SLOT 4 /* binaries remembered (with or without a table) per table slot */

#define TABLE_IDS 4 /* files (containers' copies of one build) that share a table by build-id */

/* A file, as fstat sees it: a replaced or rewritten binary is another file. */
struct file_id {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
};

/* One binary: the files it was found as, where its rows are, the segments that turn addresses into ELF
 * ones. */
struct table {
	struct file_id ids[TABLE_IDS];
	size_t nids;
	uint8_t build_id[ELF_BUILD_ID_MAX];
	int build_id_len; /* 0: none */
	uint32_t slot;    /* in unwind_tables; UNWIND_NO_TABLE: no rows loaded */
	uint32_t tag;     /* UNWIND_TABLE(slot, generation of the slot when loaded) */
	uint32_t nrows;
	bool refused;     /* had rows, not loaded for want of room: may be tried again once unused */
	struct elf_segment segs[ELF_MAX_SEGMENTS];
	size_t nsegs;
	unsigned users;   /* processes whose mappings use it */
	uint64_t last_used; /* sweep count when last used (the least recent goes first for room) */
	double used_at;     /* when last used (CLOCK_MONOTONIC seconds) */
	struct bin_seen seen; /* as a mapping last named it: taken for it unopened within MAP_TRUST_S */
	/* JIT code's rows: those of one process's mapping [jit_start, jit_end) as its GDB JIT list of
	 * signature jit_sig had them, else its jitdump file after read jit_dump_gen; never shared, dropped
	 * once unused */
	bool jit;
	uint32_t jit_pid;
	uint64_t jit_start, jit_end, jit_sig, jit_dump_gen;
};

/* How many tables one pass over a process may build (of binaries whose mapping is at most max_size
 * bytes), and how many it left unbuilt, the smallest mapping of those. */
struct budget {
	int builds;
	uint64_t max_size;
	int missing;
	uint64_t smallest;
	int failed; /* builds tried that gave no table (no room for another binary, or no memory) */
};

struct proc {
	uint32_t pid;
	uint64_t token;
	struct table **used; /* distinct tables its mappings use */
	size_t nused;
	double written_at;   /* when its entry was last written (CLOCK_MONOTONIC seconds) */
	uint64_t written_sig; /* value_sig of the entry written last; 0: none */
	bool gone;           /* written from the mappings read at its first sample: it was gone by then */
	/* The GDB JIT interface: its descriptor (0: none found when its mappings were searched, the
	 * number of them then jit_searched), the list's signature when read, its objects' rows. */
	uint64_t jit_desc, jit_sig;
	size_t jit_searched;
	struct jitrows *jit;
	/* Its jitdump file: the mapping it was found as (one, its path owned; NULL: none found), the rows
	 * of its unwinding information read so far, and how many reads added rows. */
	struct procmap *dump_map;
	struct dumprows *dump;
	uint64_t dump_gen;
};

/* A process gone by the time its entry was written (from its mappings as read at its first sample) is
 * kept this long before a sweep deletes it: its deferred samples are walked with it meanwhile. */
#define GONE_GRACE_S 3.0

struct unwinder {
	struct unwinder_opts o;
	double unused_s;       /* o.unused_s, or UNWINDER_UNUSED_S */
	char debug_dir[PATH_MAX];
	struct table **tables; /* every binary remembered, max_tables * MAX_ENTRIES_PER_SLOT */
	size_t ntables, cap_tables;
	bool *slot_used;       /* max_tables */
	uint16_t *slot_gen;    /* max_tables: loads into each slot so far, 1 to UNWIND_MAX_GEN (wrapping) */
	struct proc *procs;    /* max_procs */
	size_t nprocs;
	struct unwind_proc *value; /* the BPF value being written */
	struct jitlist_finder *finder; /* where processes' GDB JIT descriptors are */
	__u32 *fill_keys;      /* FILL_CHUNK: the keys of one batch update */
	uint64_t sweeps;
	struct unwinder_stats st;    /* the thread's */
	/* Shared with the callers of unwinder_request and unwinder_get_stats, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t wake;
	pthread_t thread;
	bool stop, sweep_wanted;
	bool busy; /* the thread is doing a request (it may queue it again) */
	unsigned fast_streak; /* fast requests done in a row while builds wait */
	struct ring { /* of requests, one per pid */
		struct request {
			uint32_t pid;
			uint64_t token, cost;
			double since;         /* when the process first asked (CLOCK_MONOTONIC seconds) */
			struct procmap *maps; /* as read at its first sample (owned), or NULL */
			size_t nmaps;
			double maps_at;       /* when maps were read, if the asker read them just then; 0: not */
		} e[UNWINDER_QUEUE];
		size_t head, count;
	} fast, slow; /* fast: with the tables built so far; slow: processes waiting for a table built */
	uint32_t busy_pid;    /* the request being done, while busy */
	uint64_t dropped;
	struct unwinder_stats published;
};

/* CLOCK_MONOTONIC, in seconds. */
double unwinder_now(void);

/* unwinder_add, building at most b->builds tables (the binaries left are counted in b->missing). When
 * pid's maps cannot be read (it is gone), snap (nsnap mappings read at its first sample; NULL: none)
 * stands for them; with current (they were read just now), they are used without a read. */
int unwinder_add_process(struct unwinder *u, uint32_t pid, uint64_t token, struct budget *b,
			 const struct procmap *snap, size_t nsnap, bool current);

/* An unwinder with no process and no table, its thread not started; unwinder_state_free (of one whose
 * thread is stopped, if started) undoes it. Returns 0 or -EINVAL (opts) or -ENOMEM. */
int unwinder_state_new(const struct unwinder_opts *opts, struct unwinder **out);
void unwinder_state_free(struct unwinder *u);

/* Calls ask for each process whose GDB JIT list changed since it was read (code compiled since, freed),
 * for it to be read again, or whose jitdump file, read on, gave more rows. */
void unwinder_jit_changed(struct unwinder *u, void (*ask)(struct unwinder *u, uint32_t pid));

#endif
