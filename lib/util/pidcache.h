/* pidcache.h - a bounded table of per-process entries by pid, in least-recently-used order, aged by
 * flushes: the shape of the symbolizer's caches of mappings (proccache.c) and of perf maps
 * (perfmap.c), which embed struct pidcache_entry in entries of their own. */
#ifndef FLAMED_UTIL_PIDCACHE_H
#define FLAMED_UTIL_PIDCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "util/lru.h"

/* The part of a caller's entry the table keeps; the first member of that entry. */
struct pidcache_entry {
	uint32_t pid;
	uint64_t used_gen; /* flush in which it was last looked up */
	struct lru_node lru;
	struct pidcache_entry *hnext;
};

/* Called before an entry is freed (evicted, dropped, or at pidcache_fini), to free what it holds. */
typedef void (*pidcache_release_fn)(struct pidcache_entry *e, void *ctx);

struct pidcache {
	struct pidcache_entry **buckets;
	size_t mask;
	struct lru_node lru; /* most recently looked up first */
	size_t count, max;
	size_t entry_size;
	uint64_t gen; /* flushes begun */
	pidcache_release_fn release;
	void *ctx;
};

/* Makes c an empty table of at most max entries of entry_size bytes (a struct that starts with struct
 * pidcache_entry). Returns 0, -EINVAL (max 0, or entry_size too small) or -ENOMEM. */
int pidcache_init(struct pidcache *c, size_t max, size_t entry_size, pidcache_release_fn release, void *ctx);

/* Releases and frees every entry; c is then empty and must be initialised again to be used. */
void pidcache_fini(struct pidcache *c);

/* The entry of pid (NULL: none), untouched. */
struct pidcache_entry *pidcache_find(const struct pidcache *c, uint32_t pid);

/* The entry of pid, created zeroed when missing (the least recently used one evicted when the table is
 * full), marked used in this flush and made the most recently used. NULL: out of memory. */
struct pidcache_entry *pidcache_get(struct pidcache *c, uint32_t pid);

/* Marks pid's entry, if any, used in this flush (kept from idle dropping), as a lookup would. */
void pidcache_keep(struct pidcache *c, uint32_t pid);

/* Unlinks e, releases and frees it. */
void pidcache_drop(struct pidcache *c, struct pidcache_entry *e);

/* The least recently used entry, or NULL when empty. */
struct pidcache_entry *pidcache_oldest(const struct pidcache *c);

/* Starts a flush: drops the entries not looked up in the last idle flushes. */
void pidcache_begin_flush(struct pidcache *c, unsigned idle);

#endif
