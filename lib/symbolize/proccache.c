/* proccache.c - keeps each process's executable mappings, refreshed once per flush, within a bound. */
#include "symbolize/proccache.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/pidcache.h"

/* One process's mapping table. */
struct proc {
	struct pidcache_entry e; /* pid, last use, LRU */
	bool read;               /* read at least once */
	uint64_t read_gen;       /* flush in which maps were last read */
	struct procmap *maps;
	size_t n;
	uint64_t snap_sig;       /* procmaps_sig of the maps its last snapshot read; 0: none */
	bool has_fd;             /* fd: its /proc/PID/maps held open (PROCCACHE_KEEP_FD) */
	int fd;
};

struct proccache {
	struct pidcache procs; /* of struct proc */
	bool changed;          /* the last snapshot found other mappings than the snapshot before */
	unsigned fds;          /* maps files held open */
	struct proccache_stats st;
};

static void close_fd(struct proccache *c, struct proc *p)
{
	if (!p->has_fd)
		return;
	close(p->fd);
	p->has_fd = false;
	c->fds--;
}

static void release(struct pidcache_entry *e, void *ctx)
{
	struct proc *p = (struct proc *)e;

	close_fd(ctx, p);
	procmaps_free(p->maps, p->n);
}

int proccache_new(unsigned max, struct proccache **out)
{
	struct proccache *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	err = pidcache_init(&c->procs, max, sizeof(struct proc), release, c);
	if (err) {
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

/* Reads p's mappings into maps (flags: PROCCACHE_*): by its held file where it has one, else by opening
 * /proc/PID/maps, held open afterwards with PROCCACHE_KEEP_FD while fewer than PROCCACHE_MAX_FDS are. A
 * held file that reads nothing (its image gone: an execve, or the process's end) is closed; the file is
 * opened again for a flush's read of a live process, not for a recheck. */
static int read_maps(struct proccache *c, struct proc *p, unsigned flags, struct procmap **maps, size_t *n)
{
	int fd, err;

	if (p->has_fd && (flags & PROCCACHE_FRESH))
		close_fd(c, p);
	if (p->has_fd) {
		err = procmaps_read_fd(p->fd, maps, n);
		if (!err && *n) {
			c->st.fd_reads++;
			return 0;
		}
		procmaps_free(*maps, *n);
		*maps = NULL;
		*n = 0;
		close_fd(c, p);
		/* Its image is gone: an execve, or the process's end. A recheck is of the image it was held
		 * for (the one first reported): a new image has its own report, read fresh, and rechecks.
		 * Opening the file again cost a sixth of the daemon's time over a shell's short-lived
		 * children (most reported first in the shell's image, before their execve). A flush's read
		 * opens it again, unless the process has ended (an open would fail, after looking the pid
		 * up in /proc). */
		if ((flags & (PROCCACHE_KEEP_FD | PROCCACHE_CLOSE_FD)) || (kill((pid_t)p->e.pid, 0) && errno == ESRCH))
			return -ESRCH;
	}
	fd = procmaps_open(p->e.pid);
	if (fd < 0)
		return fd;
	err = procmaps_read_fd(fd, maps, n);
	c->st.opens++;
	if (!err && *n && (flags & PROCCACHE_KEEP_FD)) {
		if (c->fds < PROCCACHE_MAX_FDS) {
			p->fd = fd;
			p->has_fd = true;
			c->fds++;
			return 0;
		}
		c->st.fds_full++;
	}
	close(fd);
	return err;
}

/* Re-reads the maps of p; keeps the old table when the process is gone or the read fails. */
static void refresh(struct proccache *c, struct proc *p, unsigned flags)
{
	struct procmap *maps = NULL;
	size_t n = 0;

	p->read = true;
	p->read_gen = c->procs.gen;
	if (read_maps(c, p, flags, &maps, &n) < 0)
		return;
	if (flags & PROCCACHE_CLOSE_FD)
		close_fd(c, p); /* the last read it was held for */
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
		refresh(c, p, 0); /* by its held file, if it has one */
	return find_mapping(p, addr);
}

const struct procmap *proccache_maps(struct proccache *c, uint32_t pid, size_t *n)
{
	struct proc *p = (struct proc *)pidcache_get(&c->procs, pid);

	*n = 0;
	if (!p)
		return NULL;
	if (!p->read || p->read_gen != c->procs.gen)
		refresh(c, p, 0); /* by its held file, if it has one */
	*n = p->n;
	return p->maps;
}

const struct procmap *proccache_snapshot(struct proccache *c, uint32_t pid, unsigned flags, size_t *n)
{
	struct proc *p = (struct proc *)pidcache_get(&c->procs, pid);
	uint64_t sig;

	*n = 0;
	c->changed = false;
	if (!p)
		return NULL;
	refresh(c, p, flags);
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

void proccache_get_stats(const struct proccache *c, struct proccache_stats *out)
{
	*out = c->st;
	out->fds_held = c->fds;
}

void proccache_free(struct proccache *c)
{
	if (!c)
		return;
	pidcache_fini(&c->procs);
	free(c);
}
