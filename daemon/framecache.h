/* framecache.h - the user frames of one flush named so far, by process, address and how it was reached:
 * a frame shared by many stacks (every caller of a deep Python stack whose leaf moved) is named once.
 * Emptied at each flush, as names may change between flushes. */
#ifndef FLAMED_FRAMECACHE_H
#define FLAMED_FRAMECACHE_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize/symbolizer.h"

struct framecache;

/* What a user frame's name comes from: its process, its frame value (an address, or a runtime's frame
 * value) and how it was reached (bits the caller defines: a return address, a frame-pointer walk). */
struct frame_key {
	uint32_t pid, how;
	uint64_t value;
};

/* A user frame named: as struct user_frame holds it at ingest, its strings kept by the cache. */
struct named_frame {
	int kind;             /* enum frame_kind, or the ingest's runtime kind */
	const char *name;     /* as folded, without a suffix */
	const char *module;   /* struct frame_origin's: "" for none */
	const char *build_id;
	const char *file;     /* a runtime frame's source, "" for none */
	int start_line, line;
	int ninlined;         /* names inlined at the address, outermost first */
	const char *inlined[SYMBOLIZER_MAX_INLINED];
};

struct framecache_stats {
	uint64_t hits, misses;
	uint64_t full; /* frames not kept: max_entries or max_bytes reached in that flush */
};

/* Creates an empty cache of at most max_entries frames (> 0) and max_bytes of them (> 0).
 * Returns 0, -EINVAL or -ENOMEM; *out set only on success. */
int framecache_new(unsigned max_entries, size_t max_bytes, struct framecache **out);

/* Empties the cache (at each flush's start). */
void framecache_reset(struct framecache *c);

/* The frame named from k in this flush, or NULL (counted as a miss). Valid until the next reset. */
const struct named_frame *framecache_get(struct framecache *c, const struct frame_key *k);

/* Keeps a copy of f (its strings too) under k; when the cache is full it keeps nothing (counted).
 * Returns 0, -ENOSPC or -ENOMEM. */
int framecache_put(struct framecache *c, const struct frame_key *k, const struct named_frame *f);

/* Copies the counters. */
void framecache_get_stats(const struct framecache *c, struct framecache_stats *out);

/* Frees everything; NULL is safe. */
void framecache_free(struct framecache *c);

#endif
