/* store_idmap.c - maps of int64 ids (stacks, frames, names) to dense indexes, open addressing, at
 * most half full: how a query's answer numbers what it reads. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_idmap.h"

void store_idmap_free(struct idmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static struct idslot *idmap_slot(const struct idmap *m, int64_t key)
{
	size_t i = ((uint64_t)key * 0x9e3779b97f4a7c15ULL) >> 17;

	for (i &= m->cap - 1; m->slots[i].used && m->slots[i].key != key; i = (i + 1) & (m->cap - 1))
		;
	return &m->slots[i];
}

/* The index of key: *val and true when present. */
bool store_idmap_get(const struct idmap *m, int64_t key, uint32_t *val)
{
	const struct idslot *s = m->cap ? idmap_slot(m, key) : NULL;

	if (!s || !s->used)
		return false;
	*val = s->val;
	return true;
}

/* The index of key, given the next free index (*next, then moved on) when new; *added says which. */
int store_idmap_put(struct idmap *m, int64_t key, uint32_t *next, uint32_t *val, bool *added)
{
	struct idslot *s;

	if ((m->n + 1) * 2 > m->cap) {
		struct idmap bigger = { .cap = m->cap ? m->cap * 2 : 256, .n = m->n };

		bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
		if (!bigger.slots)
			return -ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->slots[i].used)
				*idmap_slot(&bigger, m->slots[i].key) = m->slots[i];
		free(m->slots);
		*m = bigger;
	}
	s = idmap_slot(m, key);
	*added = !s->used;
	if (!s->used) {
		*s = (struct idslot){ .key = key, .val = (*next)++, .used = true };
		m->n++;
	}
	*val = s->val;
	return 0;
}
