/* deferred.h - the CPU samples and off-CPU blocks the BPF program deferred (struct deferred_sample: taken
 * before their process's unwind tables were ready): kept until the unwinder has put the process in
 * unwind_procs, then walked from their stack copies with the rows of unwind_tables
 * (lib/unwind/stackwalk.c), a Python process's Python frames (read when the sample was taken) put in
 * place of its eval-loop frames, and handed to the next flush as drained samples. A sample whose tables
 * do not come within max_wait_s is walked by frame pointers from its copy, and counted as given up. A
 * block's waits, drained from the offcpu maps under its record's id (deferred_offcpu), are stored with
 * its walk: held until it is walked, then with the walk kept for the waits counted under it later. */
#ifndef FLAMED_DEFERRED_H
#define FLAMED_DEFERRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler.h"

struct symbolizer;
struct unwinder;

struct deferred;

struct deferred_opts {
	int tables_fd, procs_fd; /* the sampler's unwind_tables and unwind_procs (sampler_unwind_fds) */
	int py_fd;               /* its py_procs (sampler_python_fd): where eval-loop frames are; -1: none */
	unsigned max_tables;     /* unwind_tables' slots */
	size_t max_bytes;        /* samples kept (waiting or walked) take at most this much; more are dropped */
	double max_wait_s;       /* how long a sample waits for its process's tables */
	bool no_fp;              /* --unwind dwarf: a frame without a table ends the walk */
	/* The unwinder writing unwind_procs: the samples of a process gone before its entry was written
	 * wait while it still has a request for it (unwinder_pending), as it writes one from the mappings
	 * read at its first sample. NULL: they do not wait. */
	struct unwinder *unwinder;
};

struct deferred_stats {
	uint64_t received;      /* deferred samples read from the ring buffer */
	uint64_t bytes_copied;  /* user stack bytes they carried */
	uint64_t walked;        /* walked with their process's tables */
	uint64_t given_up;      /* walked with what tables there were: none within max_wait_s, or the process
				 * exited without */
	uint64_t superseded;    /* taken of an image the process left by exec since: stored without user
				 * frames */
	uint64_t dropped;       /* not kept: max_bytes reached, or a record too short */
	uint64_t short_copies;  /* walks that needed more of the stack than was copied */
	uint64_t stored;        /* CPU samples handed to a flush */
	uint64_t offcpu_received;  /* off-CPU blocks' records among those received */
	uint64_t offcpu_held;      /* waits counted under a block still waiting, held for its walk */
	uint64_t offcpu_stored;    /* waits stored with a block's walk */
	uint64_t offcpu_unmatched; /* waits under a block whose record was lost or whose walk was forgotten:
				    * stored without user frames */
	uint64_t offcpu_kept;      /* now: blocks' walks kept for the waits counted under them later */
	uint64_t waiting, waiting_bytes, ready; /* now: samples waiting for tables, their bytes; walked ones */
	double wait_seconds;    /* summed over the samples walked with tables: from taken to walked */
	double wait_max_seconds;
	double oldest_seconds;  /* now: how long the sample waiting longest has waited (0: none waits) */
};

/* Returns 0, -EINVAL or -ENOMEM; *out set only on success. */
int deferred_new(const struct deferred_opts *o, struct deferred **out);

/* sampler_deferred_cb (ctx: the deferred): keeps a copy of the sample (at most size bytes of the record
 * are read). */
void deferred_add(const struct deferred_sample *s, size_t size, void *ctx);

/* Walks the waiting samples whose process's tables are in unwind_procs now (a walk that meets an address
 * in none of its mappings waits for them to be read again), and those waiting longer
 * than max_wait_s or whose process has exited (no more tables will come), or every one with all (the
 * last flush), with the tables there are (frame pointers elsewhere). Returns the poll timeout (ms) until
 * it should be called again: 20 while a sample has waited under a second, 200 after; -1 when none waits. */
int deferred_poll(struct deferred *d, bool all);

/* An off-CPU wait drained under a deferred block's id (SAMPLE_OFFCPU and SAMPLE_DEFERRED in s->key, its
 * ustack the id): handed to cb (ctx) now with the block's frames where it was walked, held for its walk
 * where it still waits (then stored by deferred_emit), else handed on without user frames
 * (SAMPLE_USTACK_LOST). Returns cb's return, or 0. */
int deferred_offcpu(struct deferred *d, const struct sampler_sample *s, sampler_cb cb, void *ctx);

/* Hands every walked sample (and off-CPU wait held for a walk) to cb (a flush's ingest_sample) and forgets
 * it; forgets the blocks' walks no wait was counted under for two minutes. clock turns key->boot_sec
 * into unix seconds (sampler_clock). Returns how many CPU samples. */
uint64_t deferred_emit(struct deferred *d, const struct unix_clock *clock, sampler_cb cb, void *ctx);

void deferred_get_stats(const struct deferred *d, struct deferred_stats *out);

/* Keeps what sym needs to name the frames of each waiting sample's process (symbolizer_keep): a sample
 * may wait for its tables (DEFER_WINDOW_S) longer than sym keeps a process not looked up. Call it
 * before each flush begins. */
void deferred_keep_names(const struct deferred *d, struct symbolizer *sym);

/* Frees what is kept (the samples not emitted are lost) and the descriptors it opened; NULL is safe. */
void deferred_free(struct deferred *d);

#endif
