/* flushtab.h - a table of one flush: entries of any size in one arena, found by a hash of their key with
 * open addressing, all dropped at once at the next flush. Bounded by entries and bytes; the caches of
 * the ingest (foldcache.c, framecache.c) are each one, with their keys and copies. */
#ifndef FLAMED_FLUSHTAB_H
#define FLAMED_FLUSHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct flushtab {
	void **slots;         /* open addressing; twice max_entries, a power of two */
	size_t nslots, count;
	unsigned max_entries;
	char *arena;          /* max_bytes, allocated at the first add; its pages stay once touched */
	size_t used, max_bytes;
};

/* Makes t an empty table of at most max_entries entries (> 0) and max_bytes of them (> 0). Returns 0,
 * -EINVAL or -ENOMEM (t then needs no flushtab_fini). */
int flushtab_init(struct flushtab *t, unsigned max_entries, size_t max_bytes);

/* Drops every entry (at a flush's start). */
void flushtab_reset(struct flushtab *t);

/* The entry at hash that same(entry, key) says is key's, or NULL. */
void *flushtab_find(const struct flushtab *t, uint64_t hash, bool (*same)(const void *entry, const void *key),
		    const void *key);

/* Room for a new entry of bytes at hash, aligned for any object, in *out, for the caller to fill before
 * the next find. Returns 0, -ENOSPC (max_entries or max_bytes reached: nothing added) or -ENOMEM. */
int flushtab_add(struct flushtab *t, uint64_t hash, size_t bytes, void **out);

/* The bytes s (NULL: "") takes in an entry, its NUL with it. */
size_t flushtab_str_bytes(const char *s);

/* Copies s (NULL: "") into an entry's room at *at and returns where it went; *at moves past it. */
const char *flushtab_copy_str(char **at, const char *s);

/* Frees what t holds; t zeroed (or never made) is safe. */
void flushtab_fini(struct flushtab *t);

#endif
