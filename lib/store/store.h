/* store.h - the SQLite store: folded stacks stored once, samples (second, pid, tid, names, count) referencing them, folded into per-minute and per-hour rollups as they age. */
#ifndef FLAMED_STORE_H
#define FLAMED_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/demangle.h"

struct store;

/* The history at three resolutions. Raw rows (per second, per thread) are kept for the last
 * raw_seconds; store_prune folds each minute, once it is fold_delay old, into per-minute rollups (per
 * process name and stack, no threads) kept for minute_seconds, and each complete hour of those into
 * per-hour rollups kept as long as retention says. A query takes every second of its window from one
 * source only: whole hours from the hour rollups and whole minutes from the minute rollups where they
 * lie inside the window, raw rows for the rest where raw rows are kept. Where they are not (older
 * than raw_seconds), a window's ragged edge is rounded: a rollup bucket counts in full when its first
 * second is in the window, else not at all, as if all its samples were taken at that second. Sums over
 * the same seconds are thus equal whatever the source, and windows that split a longer one split its
 * totals exactly. What needs threads (a tid filter, threads, a timeline per thread) sees raw rows only.
 * A rollup bucket's samples are dated to its first second: a timeline step finer than the rollup, or
 * not aligned to it, gets the bucket's count in the step holding that second, where no raw rows are
 * kept (where they are, raw rows answer). */
struct store_rollup_opts {
	int64_t raw_seconds;    /* default 3600; 60 .. 366 days */
	int64_t minute_seconds; /* default 86400; at least raw_seconds + 3600, at most 366 days */
	int64_t fold_delay;     /* default 30; 0 .. 86400: longer than the flush interval, so that a
				 * minute's samples are all stored when it is folded (later ones are merged
				 * into its rollups at the commit that brings them, at a cost) */
};

enum store_mode {
	STORE_READ_WRITE, /* creates the file and schema when missing (the daemon) */
	STORE_READ_ONLY,  /* fails with -ENOENT when the file is missing (flamectl) */
};

/* One frame of a stack, with the binary it came from (what pprof's mappings need) and, for a Python
 * frame, its source: two frames that differ in file or line are two frames, and two stacks whose frames
 * differ so are two stacks, even with the same folded text. */
struct store_frame {
	const char *name;     /* the frame exactly as in the folded stack */
	const char *module;   /* path of the binary, "[kernel]", or "" when unknown */
	const char *build_id; /* lowercase hex, or "" */
	const char *system_name; /* the name as the binary has it, where the query demangled it; else NULL */
	const char *file;     /* a Python frame's file as its code object names it; NULL or "" for others */
	int start_line;       /* the function's first line; 0: not known or not Python */
	int line;             /* the line being run; 0: not known or not Python */
};

/* What a sample counts. Rows are STORE_CPU or STORE_OFFCPU; STORE_WALL is a query of both, in time. */
enum store_kind {
	STORE_CPU = 0,    /* CPU-clock samples (count: samples) */
	STORE_OFFCPU = 1, /* time blocked (count: microseconds) */
	STORE_WALL = 2,   /* queries only: CPU samples as time (x the sampling period) plus time blocked, in µs */
};

/* One aggregated sample to write. */
struct store_sample {
	int64_t ts;         /* unix seconds */
	uint32_t pid, tid;
	const char *comm;   /* process name */
	const char *thread; /* thread name */
	const char *folded; /* frames root first, ';' between them, no newline */
	uint64_t count;     /* > 0 */
	const struct store_frame *frames; /* NULL, or one per frame of folded, root first */
	unsigned nframes;                 /* how many frames; ignored when frames is NULL */
	enum store_kind kind;             /* STORE_CPU (0) or STORE_OFFCPU */
	const char *cgroup; /* NULL or "": not known; else the cgroup v2 path it ran in ("/system.slice/x.service",
			     * at most STORE_CGROUP_MAX_BYTES, cleaned: no control character) */
	int64_t *stack_id;  /* NULL, or where the caller keeps this stack's id for its other samples in this
			     * transaction (the same folded and frames only): 0 at first, set by store_add;
			     * its stack is then neither hashed nor looked up again */
};

#define STORE_CGROUP_MAX_BYTES 511 /* longest cgroup path accepted */
#define STORE_CGROUPS_MAX 65536    /* cgroups a unit, container, pod or cgroup filter looks through */

/* Which samples a query covers. */
struct store_filter {
	int64_t pid;       /* -1: any */
	bool children;     /* with a pid: also every process it started, their children and so on (as
			    * store_add_parent recorded them), each over the seconds its pid was its own */
	bool merge;        /* with children: stacks are summed whichever process of the family they came
			    * from (named by one of its processes' names; pid: the asked one) */
	int64_t tid;       /* -1: any */
	int64_t from, to;  /* unix seconds, half-open [from, to) */
	const char *comm;  /* NULL: any process name; else only samples of processes so named */
	enum store_kind kind;   /* STORE_CPU (0): samples; STORE_OFFCPU: µs blocked; STORE_WALL: both in µs */
	int64_t cpu_period_us;  /* STORE_WALL: what one CPU sample is worth (1 .. 1000000 µs) */
	/* Where the samples ran (schema version 7 on; an older database has none to match): each NULL for
	 * any; all given must hold. */
	const char *unit;      /* a systemd unit or slice the cgroup path holds as a component ("nginx.service",
				* "user@1000.service", "system.slice") */
	const char *container; /* a container id, or a prefix of it that names one container */
	const char *pod;       /* a Kubernetes pod uid, or a prefix of it that names one pod */
	const char *cgroup;    /* a cgroup path or a prefix of it in whole components ("/system.slice") */
	enum demangle_mode demangle; /* how C++ and Rust names are written (DEMANGLE_SHORT, 0, by default); frames
				      * that read alike so are one frame (overloads), their stacks one stack */
};

/* A process seen in a window (one row per pid, named by its latest name). */
struct store_process {
	uint32_t pid;
	uint32_t ppid;    /* its parent as recorded (store_add_parent), 0: not known */
	uint32_t parent;  /* its nearest ancestor among the processes answered, 0: none (a root there) */
	const char *comm;
	uint64_t samples;
	int64_t first_seen, last_seen; /* unix seconds of its first and last sample in the window */
	const char *cgroup; /* the cgroup path of its newest sample in the window ("": not known) */
};

/* A thread of one process seen in a window (named by its latest name). */
struct store_thread {
	uint32_t tid;
	const char *name;
	uint64_t samples;
};

/* Samples in one time step [ts, ts + step), of one thread when asked per thread (else tid 0). */
struct store_point {
	int64_t ts;
	uint32_t tid;  /* per_thread: the thread, else 0 */
	uint32_t pid;  /* per_thread: its process, else 0 */
	uint64_t count;
};

struct store_stats {
	uint64_t stacks;       /* distinct stacks stored */
	uint64_t sample_rows;  /* raw rows (per second and thread) */
	uint64_t db_bytes;     /* page_count * page_size */
	uint64_t rollup_rows;  /* rows of the per-minute and per-hour rollups */
};

/* Called once per aggregated stack, most samples first. A non-zero return stops the query and is
 * returned by it. */
typedef int (*store_stack_cb)(const char *comm, const char *folded, uint64_t count, void *ctx);

/* Like store_stack_cb, per (pid, process name, stack), with the stack's frames root first
 * (nframes 0 when the stack was stored without them). */
typedef int (*store_frames_cb)(uint32_t pid, const char *comm, const char *folded,
			       const struct store_frame *frames, unsigned nframes, uint64_t count,
			       void *ctx);
typedef int (*store_process_cb)(const struct store_process *p, void *ctx);
typedef int (*store_thread_cb)(const struct store_thread *t, void *ctx);
typedef int (*store_point_cb)(const struct store_point *p, void *ctx);

/* Opens (and in READ_WRITE mode creates) the database at path, in WAL mode.
 * Returns 0 or -errno (-ENOENT: no database there in READ_ONLY mode). */
/* On failure *out is NULL, so store_errmsg has nothing to say; the codes tell the caller what to
 * report: -ENOENT no file (READ_ONLY; nothing is created), -EISDIR a directory, -EACCES/-EPERM no
 * permission, -EIO corrupt or not an SQLite file, -EINVAL an SQLite file that is not flamed's
 * (READ_WRITE leaves it alone), -ENOTSUP written by a newer flamed (schema_version > 6), -ENOLCK the
 * file system cannot do WAL, -EBUSY locked past the 5 s busy timeout, -ENOSPC, -ENOMEM.
 * READ_ONLY never creates a file. When no writer has the database open (no PATH-wal file) it reads
 * the file as immutable: that works for a user who cannot write the directory, but the store does
 * not see writes made after it opened, so keep such a store for one command, not for hours. While
 * flamed runs, a READ_ONLY store sees each commit. One store is for one thread at a time.
 * READ_WRITE upgrades a schema version 1 or 2 database in place, in one transaction that keeps its
 * data (it builds new indexes, so on a large database the first open takes a while); its raw rows are
 * folded into rollups by the store_prune calls that follow, a bounded batch each. READ_ONLY reads an
 * older database as it is: raw rows only, a version 1 database's stacks without frames. */
int store_open(const char *path, enum store_mode mode, struct store **out);

/* Sets how long raw rows and minute rollups are kept (o NULL: the defaults), for the store_prune
 * calls that follow. -EINVAL (nothing changed) outside the bounds above. */
int store_set_rollups(struct store *st, const struct store_rollup_opts *o);

/* Names a frame stored unnamed, "MODULE+0xADDR" (MODULE the file name of its module, ADDR its ELF virtual
 * address, or for a jitdump file's its address in the process), when an answer reads it: name gets the
 * module's path, its build-id (lowercase hex; a jitdump file's: its header's timestamp) and ADDR, and
 * writes a name (NUL-terminated, no ';') into buf and returns 0, or returns -ENOENT (left as stored). A
 * debug file that came after the frame was stored, or JIT code a runtime wrote down late, so names it in
 * every output. */
#define STORE_NAME_MAX 1024 /* bytes of a name a namer writes, its NUL included */

struct store_namer {
	int (*name)(void *ctx, const char *module, const char *build_id, uint64_t addr, char *buf, size_t cap);
	void *ctx; /* shared by the stores of every thread: name must be thread-safe */
};

/* Sets (n NULL: clears) the namer of st's answers. */
void store_set_namer(struct store *st, const struct store_namer *n);

/* Closes; a transaction still open is rolled back. NULL is safe. */
void store_close(struct store *st);

/* The last error in words (SQLite's message or the validation failure); never NULL. */
const char *store_errmsg(const struct store *st);

/* Starts the transaction of one flush. */
/* -EROFS on a READ_ONLY store, -EINVAL when one is open, -EBUSY when another writer holds the
 * database past the busy timeout. */
int store_begin(struct store *st);

/* Adds one sample to the open transaction. Rejects (-EINVAL, nothing stored) an empty or malformed
 * stack (newline, empty frame), count 0, or NULL names. */
/* Also -EINVAL: names over 255 bytes, a stack over 64 KiB, a count over INT64_MAX, no open
 * transaction. Samples equal in (ts, pid, tid, comm, thread, folded) are merged (counts summed);
 * -EOVERFLOW when the sum would pass INT64_MAX. After -EINVAL or -EOVERFLOW the transaction goes on
 * without that sample; after any other error (-ENOSPC, -EIO, -ENOMEM, ...) it has been rolled back
 * and store_commit returns -EINVAL: start the next flush with store_begin.
 * Frames, when given, are -EINVAL unless there is one per frame of folded with exactly its text (a
 * NULL name included), each module path is at most 4096 bytes and each build-id at most 128
 * characters of [0-9a-f]; a NULL module or build-id is "". A stack keeps the frames of the first
 * sample that brought them: a stack stored without frames gets them from a later sample with
 * frames; frames of later samples are not compared with them. */
int store_add(struct store *st, const struct store_sample *s);

/* Commits the flush's transaction: all of it or nothing. */
/* On failure the transaction has been rolled back (store_rollback is then a no-op). */
int store_commit(struct store *st);

/* Abandons the open transaction. */
/* A no-op when none is open; NULL is safe. */
void store_rollback(struct store *st);

/* Aggregates the samples matching f by (process name, stack), calls cb for each, most first. */
/* Ties are ordered by process name, then stack. f NULL: every sample. -EINVAL when pid or tid is
 * neither -1 nor in 0..UINT32_MAX. The window is answered from raw rows and rollups as the comment of
 * struct store_rollup_opts says; with a tid, from raw rows only (the raw window). Sums are made in
 * memory (at most 2^22 distinct keys: -E2BIG past that) and read in one read transaction: cb runs
 * after it, and may take its time. The strings passed to cb live until cb returns; cb must not call
 * back into this store. Returns 0, cb's non-zero return, or -errno (-EIO: damaged rows). */
int store_query_stacks(struct store *st, const struct store_filter *f, store_stack_cb cb, void *ctx);

/* Like store_query_stacks, aggregated by (pid, process name, stack) and with each stack's frames
 * and their binaries; for pprof. Most samples first. */
/* Ties are ordered by pid, process name, then stack. frames is NULL and nframes 0 for a stack stored
 * without frames. Every string (comm, folded, and those of frames) lives until cb returns. f NULL:
 * every sample; the filter is checked as by store_query_stacks. -EIO when a stack's frames are
 * damaged. */
int store_query_stacks_frames(struct store *st, const struct store_filter *f, store_frames_cb cb, void *ctx);

/* One (process name, stack) of a diff: its samples in each window, and each window's total. */
struct store_diff_row {
	const char *comm, *folded;
	uint64_t base, now;
	uint64_t base_total, now_total;
};
typedef int (*store_diff_cb)(const struct store_diff_row *r, void *ctx);

/* The stacks of two filters side by side: cb once per (process name, stack) with samples in either,
 * by process name, then stack. */
/* Both windows are read in one read transaction (as store_query_stacks reads one) and summed in
 * memory. The row and its strings live until cb returns. Returns 0, cb's non-zero return, or -errno
 * (-EINVAL: a filter store_query_stacks rejects, or NULL). */
int store_query_diff(struct store *st, const struct store_filter *base, const struct store_filter *now,
		     store_diff_cb cb, void *ctx);

/* Processes with samples matching f (pid and tid ignored), most samples first. */
/* Then by pid. Each is named by the process name of its newest sample matching f (of several rows
 * in that second, the one written last; in rolled-up time, of several names with a sample in the
 * same second, either). Over rolled-up time first_seen is the start of the process's first bucket
 * and last_seen the second of its newest sample (at most f->to - 1). f NULL: every sample. p and its
 * strings live until cb returns. */
int store_query_processes(struct store *st, const struct store_filter *f, store_process_cb cb, void *ctx);

/* A cgroup samples ran in, over a window. */
struct store_cgroup_total {
	const char *path;   /* its cgroup v2 path; "": samples whose cgroup is not known */
	uint64_t samples;   /* as store_query_processes counts them */
	uint32_t processes; /* processes with samples in it */
};

typedef int (*store_cgroup_cb)(const struct store_cgroup_total *c, void *ctx);

/* The cgroups of samples matching f (a pid filter is kept only with children), most samples first,
 * then by path; a process that moved counts in each where it ran. A database before schema version 7
 * has one: "" with every sample. c and its path live until cb returns. At most STORE_CGROUPS_MAX
 * cgroups (-E2BIG past them). */
int store_query_cgroups(struct store *st, const struct store_filter *f, store_cgroup_cb cb, void *ctx);

/* Threads of process f->pid (required, else -EINVAL) with samples in the window, most first. */
/* Then by tid. Raw rows only: the part of the window within the raw window. f->tid is ignored,
 * f->comm applies. Each is named by the thread name of its newest sample (as for processes). t and
 * its strings live until cb returns (cb runs inside the read). */
int store_query_threads(struct store *st, const struct store_filter *f, store_thread_cb cb, void *ctx);

/* Samples matching f per step seconds (>= 1), steps aligned to f->from, in time order; only steps
 * with samples are reported. per_thread: one point per (step, thread), with the thread's pid. */
/* A step starts at f->from + ((ts - f->from) / step) * step, computed without overflow (f NULL:
 * every sample, from INT64_MIN). Points of one step are ordered by tid; tid is 0 unless
 * per_thread. Rollups answer only where their buckets fit the steps (the step a multiple of the
 * bucket, f->from on a bucket boundary), raw rows elsewhere; where no raw rows are kept a bucket's
 * samples land in the step holding its first second. per_thread or a tid: raw rows only. -EINVAL
 * for step < 1 or a pid or tid as store_query_stacks rejects. */
int store_query_timeline(struct store *st, const struct store_filter *f, int64_t step, int per_thread,
			 store_point_cb cb, void *ctx);

/* A process and the process that started it, as the daemon learnt them (the kernel's record of its
 * fork, else its parent at its first samples). A pid is used again by later processes: (pid, start)
 * names one. */
struct store_parent {
	uint32_t pid, ppid;
	int64_t start; /* unix seconds it started */
	int64_t seen;  /* unix seconds it was last known to run (>= start) */
};

/* Records p inside the open flush's transaction. A (pid, start) recorded already keeps its parent
 * (unless that was 0 or 1: a parent gone before its child was first seen hands it to init) and
 * takes the later seen. -EINVAL (nothing stored) without an open transaction, for pid 0 or 1, a ppid
 * equal to pid, start < 0 or seen < start; after another error the transaction is rolled back, as
 * store_add says. Queries with children follow these records; store_prune deletes those not seen
 * since its cut. */
int store_add_parent(struct store *st, const struct store_parent *p);

/* Records what one CPU sample stands for, in microseconds (1e6 / the sampling frequency: 1 ..
 * 1000000, else -EINVAL), so that a wall-clock query of this database can be asked later without the
 * daemon (flamectl --db). READ_WRITE only (-EROFS), outside a flush's transaction or inside it. */
int store_set_cpu_period(struct store *st, int64_t us);

/* The CPU sampling period recorded last, in microseconds; -ENOENT when none was (a database written
 * by an older flamed), -EIO when the recorded value is out of bounds. */
int store_cpu_period(struct store *st, int64_t *us);

/* The unix seconds of the oldest and newest stored sample; -ENOENT when there is none. */
/* A few index seeks, however many samples. Where the oldest is in rolled-up time, its bucket's start. */
int store_time_range(struct store *st, int64_t *oldest, int64_t *newest);

/* What store_prune() did. */
struct store_prune_result {
	uint64_t samples_deleted;          /* raw and rollup rows deleted by age or the size cap: samples gone */
	uint64_t stacks_deleted;           /* stacks no sample referred to any more */
	uint64_t bytes_before, bytes_after; /* bytes in use (pages less free pages) */
	int64_t cut;                       /* samples before this unix second are gone */
	uint64_t raw_folded;               /* raw rows folded into minute rollups */
	uint64_t rollup_rows_written;      /* minute and hour rollup rows written by the folds */
	uint64_t rows_expired;             /* raw rows and minute rollups deleted past their windows, their
					    * samples kept by a coarser level */
};

/* Retention and rollups, in one transaction: deletes samples older than before (unix seconds; a
 * rollup bucket that starts earlier goes whole); folds every whole minute that ended fold_delay before
 * the newest sample (or the clock, when that is earlier) into minute rollups, and every whole hour of
 * those into hour rollups; deletes raw rows and minute rollups past their windows once folded; then,
 * while the database uses more than max_bytes (0: no cap), the oldest samples an hour at a time; then
 * the stacks and names nothing refers to (after deletions: at the first call and every 60th, as that
 * reads every row), and returns freed pages to the file system (databases created by this version).
 * Works in bounded batches (about 500000 raw rows folded, 24 hours, 32 MiB given back per call, raw rows deleted
 * 200000 at a time): a backlog is worked off over several calls. A call that fails leaves everything as it was. Not inside
 * a flush's transaction (-EINVAL), READ_WRITE only. Returns 0 or -errno; out (may be NULL) says what
 * was done. */
int store_prune(struct store *st, int64_t before, uint64_t max_bytes, struct store_prune_result *out);

/* Fills out with counts and the database size. */
int store_get_stats(struct store *st, struct store_stats *out);

#endif
