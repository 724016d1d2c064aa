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

/* Reads pid's maps now (a process seen for the first time, perhaps short-lived), whatever the flush,
 * and returns its table (*n mappings; NULL when it could not be read and none is kept). The table is
 * kept when the process is gone by the next flush. Valid until the next call on c. */
const struct procmap *proccache_snapshot(struct proccache *c, uint32_t pid, size_t *n);

/* Whether the last proccache_snapshot found the process's mappings other than its snapshot before (or
 * read them first). */
bool proccache_changed(const struct proccache *c);

/* Processes held. */
size_t proccache_count(const struct proccache *c);

#endif
