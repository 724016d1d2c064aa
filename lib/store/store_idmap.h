/* store_idmap.h - maps of int64 ids (stacks, frames, names) to dense indexes (store_idmap.c): how a
 * query's answer (store_answer.h) numbers what it reads. */
#ifndef FLAMED_STORE_IDMAP_H
#define FLAMED_STORE_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An open-addressing map of int64 ids to indexes, at most half full. */
struct idmap {
	struct idslot {
		int64_t key;
		uint32_t val;
		bool used;
	} *slots;
	size_t cap, n;
};

/* Frees the map and empties it. */
void store_idmap_free(struct idmap *m);

/* The index of key: *val and true when present. */
bool store_idmap_get(const struct idmap *m, int64_t key, uint32_t *val);

/* The index of key, given the next free index (*next, then moved on) when new; *added says which. */
int store_idmap_put(struct idmap *m, int64_t key, uint32_t *next, uint32_t *val, bool *added);

#endif
