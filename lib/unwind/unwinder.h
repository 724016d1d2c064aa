/* unwinder.h - gives the BPF program the unwind tables of the processes it samples: each binary's rows
 * (built once, shared by every process mapping it) in an inner map of unwind_tables, each process's
 * mappings in unwind_procs. Tables take kernel memory up to a budget; unused ones are dropped first. */
#ifndef FLAMED_UNWIND_UNWINDER_H
#define FLAMED_UNWIND_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/procmaps.h"
#include "unwind/dumprows.h"
#include "unwind/jitrows.h"
#include "unwind/tablecache.h"

struct unwinder;

struct unwinder_opts {
	int tables_fd;        /* unwind_tables: BPF_MAP_TYPE_ARRAY_OF_MAPS with max_tables slots */
	int procs_fd;         /* unwind_procs: pid -> struct unwind_proc, max_procs entries */
	unsigned max_tables;  /* binaries with tables at once (> 0) */
	unsigned max_procs;   /* processes with tables at once (> 0) */
	size_t max_bytes;     /* kernel memory the rows of all tables may take (> 0) */
	const char *debug_dir; /* where separate debug files are (.debug_frame); NULL: "/usr/lib/debug" */
	double unused_s;       /* a table no process used for this long is dropped at a sweep; 0: UNWINDER_UNUSED_S */
	struct tablecache *cache; /* tables on disk by build-id: read before building, written after; NULL:
				   * none. Used by the unwinder's thread alone; freed by the caller after
				   * unwinder_free */
	bool verbose;          /* log each table built to stderr */
};

struct unwinder_stats {
	uint64_t tables;          /* binaries with a table loaded now */
	uint64_t table_bytes;     /* kernel memory their rows take */
	uint64_t table_rows;
	uint64_t tables_built;    /* tables loaded since start: built, or read from the cache (cache.hits) */
	uint64_t tables_evicted;  /* unused tables dropped for room */
	uint64_t tables_expired;  /* tables dropped at a sweep: no process used them for unused_s */
	uint64_t tables_refused;  /* tables not loaded: over the budget of bytes or binaries */
	uint64_t binaries_without; /* binaries with no usable CFI (they unwind with frame pointers) */
	uint64_t processes;       /* processes with tables now */
	uint64_t processes_refused; /* not given tables: unwind_procs full */
	uint64_t processes_gone;  /* given tables from their mappings as read at their first sample: gone
				   * before the request was done (a short-lived process under load) */
	uint64_t binaries_known;  /* mappings taken for a binary checked lately by device and inode, not opened */
	uint64_t maps_given;      /* requests done with the mappings their asker had just read (no read here) */
	uint64_t entries_unchanged; /* requests whose process entry came out as written last: not written */
	uint64_t mappings_dropped; /* mappings past UNWIND_MAX_MAPPINGS in a process (frame pointers) */
	uint64_t mappings_unplaced; /* mappings at a file offset no segment of their binary holds (a binary
				     * or mapping that lies): walked with frame pointers */
	uint64_t prologue_functions; /* functions without CFI given rows from their prologues (assembly
				      * kernels), in tables built since start */
	double build_seconds;     /* time spent building (or reading) and loading tables */
	uint64_t requests_dropped; /* unwinder_request calls refused: UNWINDER_QUEUE waiting */
	uint64_t requests_pending; /* waiting now (a burst of new binaries: tables come late) */
	struct tablecache_stats cache; /* opts.cache's; zeros without one */
	/* JIT code registered with the GDB JIT interface: its objects' .eh_frame read as rows
	 * (jitrows.h), one table per mapping of anonymous memory holding them */
	struct jitrows_stats jit;
	struct dumprows_stats jitdump; /* jitdump files' unwinding information read (dumprows.h) */
	uint64_t jit_tables;      /* such tables loaded now */
};

/* How long a table no process uses is kept (unless room is needed first): a program run again within
 * it (a build's compiler, a cron job) finds its tables built. */
#define UNWINDER_UNUSED_S 600.0

#define UNWINDER_QUEUE 4096 /* requests waiting for the unwinder's thread; more are counted and dropped */

/* Creates an unwinder writing to the given maps, and its thread: building a table can take a second
 * (libLLVM: 950k rows), which must not hold up the daemon's loop. Returns 0, -EINVAL, -ENOMEM or the
 * error of pthread_create. */
int unwinder_new(const struct unwinder_opts *opts, struct unwinder **out);

/* Asks the unwinder's thread for unwinder_add(pid, token); a request already waiting for the same pid
 * is updated instead. Never blocks on the work. */
void unwinder_request(struct unwinder *u, uint32_t pid, uint64_t token);

/* unwinder_request with pid's executable mappings as read at its first sample (copied; at most
 * UNWIND_MAX_MAPPINGS): when the process is gone by the time the request is done, its tables are found
 * from these (the files opened by path), so the samples it left waiting (deferred) are walked with them;
 * the entry is then kept a few seconds (GONE_GRACE_S) past its exit. With current (the caller read them
 * just now), a request done within MAPS_CURRENT_S uses them in place of a read of its own: one read of
 * /proc/PID/maps serves the symbolizer, the runtimes and the unwinder. */
void unwinder_request_maps(struct unwinder *u, uint32_t pid, uint64_t token, const struct procmap *maps,
			   size_t n, bool current);

/* Whether a request for pid waits or is being done now (thread-safe). */
bool unwinder_pending(struct unwinder *u, uint32_t pid);

/* Asks the unwinder's thread for unwinder_sweep(). */
void unwinder_request_sweep(struct unwinder *u);

/* The work of one request, in the caller's thread (tests; the daemon uses unwinder_request).
 * Reads pid's executable mappings, builds or reuses the tables of their binaries (and of the JIT code in
 * its anonymous mappings, from the objects listed by the GDB JIT interface's descriptor, when a binary
 * it maps defines one: read again when the list changed) and writes the process
 * into unwind_procs under token (struct process_event's; 0: keep the one known), flagged
 * UNWIND_PROC_PENDING while tables of its binaries are still to be built (unwinder_request builds them
 * one at a time, then writes the process again). Again for a known pid:
 * its mappings are read afresh (dlopen, exec). The BPF side uses them only while token names the
 * image the process runs, so mappings read just before an execve are never applied to the new image.
 * Returns 0 or -errno (-ENOENT: the process is gone). */
int unwinder_add(struct unwinder *u, uint32_t pid, uint64_t token);

/* unwinder_add, with maps (n of them) standing for pid's when they cannot be read (it is gone), or with
 * current (read just now by the caller) in place of a read. */
int unwinder_add_maps(struct unwinder *u, uint32_t pid, uint64_t token, const struct procmap *maps, size_t n,
		      bool current);

/* Forgets processes that have exited (a few seconds after their entry was written), and their tables'
 * uses; asks for the processes whose GDB JIT list changed since it was read (in the caller's thread, as
 * unwinder_add). */
void unwinder_sweep(struct unwinder *u);

/* Copies the counters as of the last request done (thread-safe). */
void unwinder_get_stats(struct unwinder *u, struct unwinder_stats *out);

/* Stops the thread (after the request in progress), frees everything and empties the maps; NULL is safe. */
void unwinder_free(struct unwinder *u);

#endif
