/* proccache.h - per-process tables of executable mappings: re-read once per flush, bounded, LRU-evicted. */
#ifndef FLAMED_SYMBOLIZE_PROCCACHE_H
#define FLAMED_SYMBOLIZE_PROCCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/procmaps.h"

#define PROCCACHE_IDLE_FLUSHES 6 /* a process not looked up for this many flushes is dropped */

struct proccache;

/* Creates a cache of at most max processes (max > 0). Returns 0 or -ENOMEM; *out set only on success. */
int proccache_new(unsigned max, struct proccache **out);

/* Frees everything; NULL is safe. */
void proccache_free(struct proccache *c);

/* Starts a flush: each table is re-read at its process's next lookup, and processes not looked up for
 * PROCCACHE_IDLE_FLUSHES flushes are dropped. */
void proccache_begin_flush(struct proccache *c);

/* Keeps pid's entry, if any, from being dropped as idle at the next flushes' start (its samples wait
 * elsewhere to be named). */
void proccache_keep(struct proccache *c, uint32_t pid);

/* The executable mapping of pid holding addr, or NULL (no such mapping, or out of memory).
 * The first lookup of a pid in a flush reads /proc/PID/maps; when that fails or finds no executable
 * mapping (the process is gone), the previous table is kept. A new pid beyond the limit evicts the
 * least recently looked-up one. The pointer is valid until the next call on c. */
const struct procmap *proccache_find(struct proccache *c, uint32_t pid, uint64_t addr);

/* Every executable mapping of pid (*n of them, sorted by start; NULL when none is known), read as
 * proccache_find reads them: at the first lookup of pid in a flush. Valid until the next call on c. */
const struct procmap *proccache_maps(struct proccache *c, uint32_t pid, size_t *n);

/* How proccache_snapshot reads a process's /proc/PID/maps: a process read again shortly (a new one, a few
 * times in its first quarter second) keeps the file open between reads, as the kernel answers a held
 * file with the mappings as they are then (PROCMAP_QUERY or the text from its start) and its open is
 * most of a read's cost. A held file is that of one program image: after an execve it reads nothing,
 * and is closed. A recheck (PROCCACHE_KEEP_FD or CLOSE_FD) then reads no more: the new image has its
 * own first report, read with PROCCACHE_FRESH. A flush's read opens the file again. */
#define PROCCACHE_FRESH 1u    /* open the file again, not by the held one (a new image's first read) */
#define PROCCACHE_KEEP_FD 2u  /* hold the file open after this read, for the next */
#define PROCCACHE_CLOSE_FD 4u /* close the held file after this read: the last it was held for */
#define PROCCACHE_MAX_FDS 64  /* files held open at most; past it one is read and closed (fds_full) */

struct proccache_stats {
	uint64_t opens;    /* /proc/PID/maps opened */
	uint64_t fd_reads; /* reads by a held file instead */
	uint64_t fds_full; /* files not held: PROCCACHE_MAX_FDS were */
	uint64_t fds_held; /* held now */
};

/* Reads pid's maps now (a process seen for the first time, perhaps short-lived), whatever the flush,
 * and returns its table (*n mappings; NULL when it could not be read and none is kept); flags: the
 * PROCCACHE_* above. The table is kept when the process is gone by the next flush. Valid until the next
 * call on c. The flush's reads (proccache_find, proccache_maps) use a held file and leave it held. */
const struct procmap *proccache_snapshot(struct proccache *c, uint32_t pid, unsigned flags, size_t *n);

/* What the reads of /proc/PID/maps cost: opens, reads by held files, files held now. */
void proccache_get_stats(const struct proccache *c, struct proccache_stats *out);

/* Whether the last proccache_snapshot found the process's mappings other than its snapshot before (or
 * read them first). */
bool proccache_changed(const struct proccache *c);

/* Processes held. */
size_t proccache_count(const struct proccache *c);

#endif
