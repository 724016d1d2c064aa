/* pidcache.c - per-process entries by pid: a chained hash for lookups, an LRU list for eviction. */
#include "util/pidcache.h"

#include <errno.h>
#include <stdlib.h>

#define MAX_BUCKETS (1u << 16)

int pidcache_init(struct pidcache *c, size_t max, size_t entry_size, pidcache_release_fn release, void *ctx)
{
	size_t nb = 16;

	if (max == 0 || entry_size < sizeof(struct pidcache_entry))
		return -EINVAL;
	while (nb < max && nb < MAX_BUCKETS)
		nb *= 2;
	*c = (struct pidcache){ .mask = nb - 1, .max = max, .entry_size = entry_size, .release = release,
				.ctx = ctx };
	c->buckets = calloc(nb, sizeof(*c->buckets));
	if (!c->buckets)
		return -ENOMEM;
	lru_init(&c->lru);
	return 0;
}

static size_t bucket_of(const struct pidcache *c, uint32_t pid)
{
	return (size_t)((pid * 2654435761u) >> 7) & c->mask;
}

struct pidcache_entry *pidcache_find(const struct pidcache *c, uint32_t pid)
{
	struct pidcache_entry *e;

	for (e = c->buckets[bucket_of(c, pid)]; e; e = e->hnext) {
		if (e->pid == pid)
			return e;
	}
	return NULL;
}

void pidcache_drop(struct pidcache *c, struct pidcache_entry *e)
{
	struct pidcache_entry **pp = &c->buckets[bucket_of(c, e->pid)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	lru_remove(&e->lru);
	if (c->release)
		c->release(e, c->ctx);
	free(e);
	c->count--;
}

struct pidcache_entry *pidcache_oldest(const struct pidcache *c)
{
	struct lru_node *old = lru_oldest(&c->lru);

	return old ? lru_entry(old, struct pidcache_entry, lru) : NULL;
}

struct pidcache_entry *pidcache_get(struct pidcache *c, uint32_t pid)
{
	struct pidcache_entry *e = pidcache_find(c, pid), *old;
	size_t b;

	if (!e) {
		if (c->count >= c->max && (old = pidcache_oldest(c)))
			pidcache_drop(c, old);
		e = calloc(1, c->entry_size);
		if (!e)
			return NULL;
		e->pid = pid;
		lru_init(&e->lru);
		b = bucket_of(c, pid);
		e->hnext = c->buckets[b];
		c->buckets[b] = e;
		c->count++;
	}
	e->used_gen = c->gen;
	lru_touch(&c->lru, &e->lru);
	return e;
}

void pidcache_keep(struct pidcache *c, uint32_t pid)
{
	struct pidcache_entry *e = pidcache_find(c, pid);

	if (e) {
		e->used_gen = c->gen;
		lru_touch(&c->lru, &e->lru);
	}
}

void pidcache_begin_flush(struct pidcache *c, unsigned idle)
{
	struct pidcache_entry *e;

	c->gen++;
	while ((e = pidcache_oldest(c)) && c->gen - e->used_gen >= idle)
		pidcache_drop(c, e);
}

void pidcache_fini(struct pidcache *c)
{
	struct pidcache_entry *e;

	if (!c->buckets)
		return;
	while ((e = pidcache_oldest(c)))
		pidcache_drop(c, e);
	free(c->buckets);
	c->buckets = NULL;
}
