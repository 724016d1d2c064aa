/* debugfetch.h - debug files fetched by build-id from debuginfod servers (libdebuginfod), on a thread of
 * its own, into a cache on disk bounded in bytes; asking never waits. */
#ifndef FLAMED_ELF_DEBUGFETCH_H
#define FLAMED_ELF_DEBUGFETCH_H

#include <stddef.h>
#include <stdint.h>

struct debugfetch;

struct debugfetch_opts {
	const char *urls;      /* the servers, space-separated (as DEBUGINFOD_URLS): required */
	const char *cache_dir; /* the files, as DIR/BUILD-ID/debuginfo (libdebuginfod's layout): required */
	uint64_t max_bytes;    /* the cache's bound (> 0); a larger file is not fetched */
	unsigned timeout_s;    /* a transfer that makes no progress this long fails (0: 5) */
	unsigned max_time_s;   /* a transfer takes at most this long (0: 120) */
	unsigned max_queue;    /* build-ids waiting to be asked for at most (0: 512); more are dropped */
	unsigned max_known;    /* build-ids waiting, in flight or missed that are remembered (0: 2048) */
	unsigned retry_s;      /* a build-id the servers had not, or failed on, is asked again after (0: 600) */
};

struct debugfetch_stats {
	uint64_t queued, fetching;        /* now: waiting, in flight (0 or 1) */
	uint64_t fetched, missed, failed; /* files received; answers "none"; errors (refused, timed out...) */
	uint64_t dropped;                 /* asked for with the queue or the memory of build-ids full */
	uint64_t files, bytes, evicted;   /* in the cache now; deleted for the bound */
	uint64_t too_big;                 /* fetched files larger than the whole bound, deleted */
};

/* Creates the cache directory (0700) if needed, sets libdebuginfod's environment (DEBUGINFOD_URLS,
 * DEBUGINFOD_CACHE_PATH, DEBUGINFOD_TIMEOUT unless set: call it before other threads start), opens libdebuginfod
 * (libdebuginfod.so.1, at the first call) and starts the fetching thread. A transfer past max_time_s or announcing (or reaching) more than max_bytes is cut
 * and counted failed. Returns 0, -EINVAL (no URL, no directory, bound 0),
 * -ELIBACC (no libdebuginfod.so.1: apt-get install libdebuginfod1), -ENOMEM or the -errno of mkdir or
 * pthread_create; *out set only on success. */
int debugfetch_new(const struct debugfetch_opts *opts, struct debugfetch **out);

/* Stops the thread (a transfer under way is cut within about a second) and frees everything; NULL is
 * safe. The cache stays on disk. */
void debugfetch_free(struct debugfetch *d);

/* Where the debug file of build_id (lowercase hex, 2 to 128 digits) is. Returns 0 with the path in
 * path (its use noted, for the bound's least recently used order) when the cache holds it; otherwise
 * asks for it, never waiting: -EAGAIN (asked: waiting or in flight), -ENOENT (the servers had none, or
 * failed, less than retry_s ago), -ENOSPC (dropped: queue or memory full), -EINVAL (not a build-id) or
 * -ENAMETOOLONG (path too short). Safe from any thread. */
int debugfetch_path(struct debugfetch *d, const char *build_id, char *path, size_t cap);

/* How many answers (files, misses, failures) came since the start: a change says that debug files asked
 * for may be there, and that the queue has room again. */
uint64_t debugfetch_arrivals(struct debugfetch *d);

/* Copies the counters. */
void debugfetch_get_stats(struct debugfetch *d, struct debugfetch_stats *out);

#endif
