/* store_ids.c - the id caches of the write path: text (a name, a stack, a module, a frame) -> row
 * id, open addressing, bounded in entries and bytes, emptied when full. No SQL. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"

#define CACHE_MAX_ENTRIES 65536      /* per cache; the cache is emptied when full */
#define CACHE_MAX_BYTES (16u << 20)  /* key text per cache; the cache is emptied when over */

/* Frees every key and the table. */
void store_cache_clear(struct id_cache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->slots[i].key);
	free(c->slots);
	*c = (struct id_cache){ .max = c->max };
}

/* The entry of key, or NULL when not cached. */
struct cache_slot *store_cache_find(const struct id_cache *c, const char *key, size_t len, uint64_t hash)
{
	if (!c->cap)
		return NULL;
	for (size_t i = hash & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
		struct cache_slot *e = &c->slots[i];

		if (!e->key)
			return NULL;
		if (e->hash == hash && e->len == len && memcmp(e->key, key, len) == 0)
			return e;
	}
}

/* Finds key's id; false when not cached. */
bool store_cache_get(const struct id_cache *c, const char *key, size_t len, uint64_t hash, int64_t *id)
{
	const struct cache_slot *e = store_cache_find(c, key, len, hash);

	if (e)
		*id = e->id;
	return e != NULL;
}

/* Places an entry into a table with a free slot. */
static void cache_place(struct cache_slot *slots, size_t cap, const struct cache_slot *e)
{
	size_t i = e->hash & (cap - 1);

	while (slots[i].key)
		i = (i + 1) & (cap - 1);
	slots[i] = *e;
}

/* Doubles the table (first size 1024). */
static int cache_grow(struct id_cache *c)
{
	size_t cap = c->cap ? c->cap * 2 : 1024;
	struct cache_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++)
		if (c->slots[i].key)
			cache_place(slots, cap, &c->slots[i]);
	free(c->slots);
	c->slots = slots;
	c->cap = cap;
	return 0;
}

/* Remembers key -> id, emptying the cache first when it is full. Best effort: a failed allocation
 * only means a later lookup goes to the database. */
void store_cache_put(struct id_cache *c, const char *key, size_t len, uint64_t hash, int64_t id, bool tag)
{
	struct cache_slot e = { .len = len, .hash = hash, .id = id, .tag = tag };

	if (c->n >= (c->max ? c->max : CACHE_MAX_ENTRIES) || c->bytes + len > CACHE_MAX_BYTES)
		store_cache_clear(c);
	if ((c->n + 1) * 2 > c->cap && cache_grow(c) < 0)
		return;
	e.key = malloc(len + 1);
	if (!e.key)
		return;
	memcpy(e.key, key, len);
	e.key[len] = '\0';
	cache_place(c->slots, c->cap, &e);
	c->n++;
	c->bytes += len;
}

void store_forget_ids(struct store *st)
{
	store_cache_clear(&st->stacks);
	store_cache_clear(&st->names);
	store_cache_clear(&st->cgroups);
}
