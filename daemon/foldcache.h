/* foldcache.h - the folded stacks of one flush by raw stack: a stack drained in many keys (threads,
 * seconds) is named and folded once. Emptied at each flush, as names may change between flushes. */
#ifndef FLAMED_FOLDCACHE_H
#define FLAMED_FOLDCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct foldcache;

/* What a folded stack comes from: the process and the BPF program's hashes of its raw stacks. */
struct fold_key {
	uint32_t pid, flags; /* struct sample_key's */
	uint64_t ustack, kstack;
	uint32_t sec; /* the sample's second, where its names depend on the time (JIT code from a jitdump
		       * file: memory reused); else 0 */
};

/* A folded stack: its text and its frames, root first. */
struct folded {
	const char *text;
	const struct store_frame *frames;
	unsigned nframes;
	int64_t *stack_id; /* NULL, or the store's id of the stack in this flush (struct store_sample's) */
};

struct foldcache_stats {
	uint64_t hits, misses;
	uint64_t full; /* stacks not kept: max_entries or max_bytes reached in that flush */
};

/* Creates an empty cache of at most max_entries stacks (> 0) and max_bytes of them (> 0).
 * Returns 0, -EINVAL or -ENOMEM; *out set only on success. */
int foldcache_new(unsigned max_entries, size_t max_bytes, struct foldcache **out);

/* Empties the cache (at each flush's start). */
void foldcache_reset(struct foldcache *c);

/* The stack folded from k in this flush, or NULL. Valid until the next reset. */
const struct folded *foldcache_get(struct foldcache *c, const struct fold_key *k);

/* Keeps a copy of f under k, with a stack_id of its own (0), in *kept when kept is not NULL; when the
 * cache is full it keeps nothing (counted). Returns 0, -ENOSPC or -ENOMEM. */
int foldcache_put(struct foldcache *c, const struct fold_key *k, const struct folded *f, const struct folded **kept);

/* Copies the counters. */
void foldcache_get_stats(const struct foldcache *c, struct foldcache_stats *out);

/* Frees everything; NULL is safe. */
void foldcache_free(struct foldcache *c);

#endif
