/* proccache.c - keeps each process's executable mappings, refreshed once per flush, within a bound. */
#include "symbolize/proccache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "util/lru.h"

#define MAX_BUCKETS (1u << 16)

/* One process's mapping table. */
struct proc {
	uint32_t pid;
	bool read;          /* read at least once */
	uint64_t read_gen;  /* flush in which maps were last read */
	uint64_t used_gen;  /* flush in which it was last looked up */
	struct procmap *maps;
	size_t n;
	struct lru_node lru;
	struct proc *hnext;
};

struct proccache {
	struct proc **buckets;
	size_t mask;
	struct lru_node lru; /* most recently looked up first */
	size_t count, max;
	uint64_t gen;
};

int proccache_new(unsigned max, struct proccache **out)
{
	struct proccache *c;
	size_t nb = 16;

	if (max == 0)
		return -EINVAL;
	while (nb < max && nb < MAX_BUCKETS)
		nb *= 2;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->buckets = calloc(nb, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return -ENOMEM;
	}
	c->mask = nb - 1;
	c->max = max;
	lru_init(&c->lru);
	*out = c;
	return 0;
}

static size_t bucket_of(const struct proccache *c, uint32_t pid)
{
	return (size_t)((pid * 2654435761u) >> 7) & c->mask;
}

static struct proc *lookup(const struct proccache *c, uint32_t pid)
{
	struct proc *p;

	for (p = c->buckets[bucket_of(c, pid)]; p; p = p->hnext) {
		if (p->pid == pid)
			return p;
	}
	return NULL;
}

/* Unlinks p from the hash and the LRU list and frees it. */
static void drop(struct proccache *c, struct proc *p)
{
	struct proc **pp = &c->buckets[bucket_of(c, p->pid)];

	while (*pp != p)
		pp = &(*pp)->hnext;
	*pp = p->hnext;
	lru_remove(&p->lru);
	procmaps_free(p->maps, p->n);
	free(p);
	c->count--;
}

/* Adds an empty entry for pid, evicting the least recently used one when full. NULL: out of memory. */
static struct proc *insert(struct proccache *c, uint32_t pid)
{
	struct lru_node *old;
	struct proc *p;
	size_t b;

	if (c->count >= c->max) {
		old = lru_oldest(&c->lru);
		if (old)
			drop(c, lru_entry(old, struct proc, lru));
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	lru_init(&p->lru);
	b = bucket_of(c, pid);
	p->hnext = c->buckets[b];
	c->buckets[b] = p;
	c->count++;
	return p;
}

/* Re-reads the maps of p; keeps the old table when the process is gone or the read fails. */
static void refresh(struct proccache *c, struct proc *p)
{
	struct procmap *maps = NULL;
	size_t n = 0;

	p->read = true;
	p->read_gen = c->gen;
	if (procmaps_read(p->pid, &maps, &n) < 0)
		return;
	if (n == 0) {
		procmaps_free(maps, n);
		return;
	}
	procmaps_free(p->maps, p->n);
	p->maps = maps;
	p->n = n;
}

/* The mapping of p holding addr (the table is sorted and its ranges do not overlap), or NULL. */
static const struct procmap *find_mapping(const struct proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n, mid;

	while (lo < hi) { /* lo: the first mapping starting above addr */
		mid = lo + (hi - lo) / 2;
		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= p->maps[lo - 1].end)
		return NULL;
	return &p->maps[lo - 1];
}

const struct procmap *proccache_find(struct proccache *c, uint32_t pid, uint64_t addr)
{
	struct proc *p = lookup(c, pid);

	if (!p) {
		p = insert(c, pid);
		if (!p)
			return NULL;
	}
	if (!p->read || p->read_gen != c->gen)
		refresh(c, p);
	p->used_gen = c->gen;
	lru_touch(&c->lru, &p->lru);
	return find_mapping(p, addr);
}

const struct procmap *proccache_snapshot(struct proccache *c, uint32_t pid, size_t *n)
{
	struct proc *p = lookup(c, pid);

	*n = 0;
	if (!p) {
		p = insert(c, pid);
		if (!p)
			return NULL;
	}
	refresh(c, p);
	p->used_gen = c->gen;
	lru_touch(&c->lru, &p->lru);
	*n = p->n;
	return p->maps;
}

void proccache_begin_flush(struct proccache *c)
{
	struct lru_node *old;
	struct proc *p;

	c->gen++;
	while ((old = lru_oldest(&c->lru))) {
		p = lru_entry(old, struct proc, lru);
		if (c->gen - p->used_gen < PROCCACHE_IDLE_FLUSHES)
			break;
		drop(c, p);
	}
}

size_t proccache_count(const struct proccache *c)
{
	return c->count;
}

void proccache_free(struct proccache *c)
{
	struct lru_node *old;

	if (!c)
		return;
	while ((old = lru_oldest(&c->lru)))
		drop(c, lru_entry(old, struct proc, lru));
	free(c->buckets);
	free(c);
}
