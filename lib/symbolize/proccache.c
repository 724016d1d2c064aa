/* proccache.c - keeps each process's executable mappings, refreshed once per flush, within a bound. */
#include "symbolize/proccache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "util/pidcache.h"

/* One process's mapping table. */
struct proc {
	struct pidcache_entry e; /* pid, last use, LRU */
	bool read;               /* read at least once */
	uint64_t read_gen;       /* flush in which maps were last read */
	struct procmap *maps;
	size_t n;
	uint64_t snap_sig;       /* procmaps_sig of the maps its last snapshot read; 0: none */
};

struct proccache {
	struct pidcache procs; /* of struct proc */
	bool changed;          /* the last snapshot found other mappings than the snapshot before */
};

static void release(struct pidcache_entry *e, void *ctx)
{
	struct proc *p = (struct proc *)e;

	(void)ctx;
	procmaps_free(p->maps, p->n);
}

int proccache_new(unsigned max, struct proccache **out)
{
	struct proccache *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	err = pidcache_init(&c->procs, max, sizeof(struct proc), release, NULL);
	if (err) {
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

/* Re-reads the maps of p; keeps the old table when the process is gone or the read fails. */
static void refresh(struct proccache *c, struct proc *p)
{
	struct procmap *maps = NULL;
	size_t n = 0;

	p->read = true;
	p->read_gen = c->procs.gen;
	if (procmaps_read(p->e.pid, &maps, &n) < 0)
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
	struct proc *p = (struct proc *)pidcache_get(&c->procs, pid);

	if (!p)
		return NULL;
	if (!p->read || p->read_gen != c->procs.gen)
		refresh(c, p);
	return find_mapping(p, addr);
}

const struct procmap *proccache_maps(struct proccache *c, uint32_t pid, size_t *n)
{
	struct proc *p = (struct proc *)pidcache_get(&c->procs, pid);

	*n = 0;
	if (!p)
		return NULL;
	if (!p->read || p->read_gen != c->procs.gen)
		refresh(c, p);
	*n = p->n;
	return p->maps;
}

const struct procmap *proccache_snapshot(struct proccache *c, uint32_t pid, size_t *n)
{
	struct proc *p = (struct proc *)pidcache_get(&c->procs, pid);
	uint64_t sig;

	*n = 0;
	c->changed = false;
	if (!p)
		return NULL;
	refresh(c, p);
	if (p->n) { /* compared with its last snapshot's, not a flush's read between: what was handed on */
		sig = procmaps_sig(p->maps, p->n);
		c->changed = sig != p->snap_sig;
		p->snap_sig = sig;
	}
	*n = p->n;
	return p->maps;
}

bool proccache_changed(const struct proccache *c)
{
	return c->changed;
}

void proccache_begin_flush(struct proccache *c)
{
	pidcache_begin_flush(&c->procs, PROCCACHE_IDLE_FLUSHES);
}

void proccache_keep(struct proccache *c, uint32_t pid)
{
	pidcache_keep(&c->procs, pid);
}

size_t proccache_count(const struct proccache *c)
{
	return c->procs.count;
}

void proccache_free(struct proccache *c)
{
	if (!c)
		return;
	pidcache_fini(&c->procs);
	free(c);
}
