/* lineage.c - each sampled process's parent and ancestors, from the BPF forks map or /proc, kept in a
 * bounded table and written to the store's parents table with the flushes. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>

#include "lineage.h"
#include "profile.h"
#include "store/store.h"
#include "util/pidcache.h"
#include "util/procstat.h"

#define DEFAULT_MAX_PROCS 32768
/* Ancestors followed up from one noted process at most (a chain this deep is a loop or a fork bomb). */
#define ANCESTORS_MAX 64
/* Records of running processes are written again this often (seconds), so retention keeps them. */
#define REFRESH_S 3600
/* Two start times (from clocks read at different moments, rounded to seconds) name the same process
 * when this close. */
#define SAME_START_S 2

/* One remembered process. */
struct known {
	struct pidcache_entry e; /* first: the table's part */
	int64_t start;           /* unix seconds */
	uint32_t ppid;           /* 0: not known */
	bool dirty;              /* to be written at the next lineage_store */
};

struct lineage {
	struct pidcache procs;
	int forks_fd;
	char *proc_root;
	long ticks;             /* clock ticks a second, for /proc start times */
	int64_t last_refresh;   /* unix seconds */
	struct lineage_stats stats;
};

int lineage_new(const struct lineage_opts *o, struct lineage **out)
{
	struct lineage *l;
	int err;

	if (!o || !out)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->forks_fd = o->forks_fd;
	l->proc_root = strdup(o->proc_root ? o->proc_root : "/proc");
	l->ticks = sysconf(_SC_CLK_TCK);
	if (l->ticks <= 0)
		l->ticks = 100;
	l->last_refresh = time(NULL);
	err = l->proc_root ? pidcache_init(&l->procs, o->max_procs ? o->max_procs : DEFAULT_MAX_PROCS,
					   sizeof(struct known), NULL, NULL) : -ENOMEM;
	if (err) {
		free(l->proc_root);
		free(l);
		return err;
	}
	*out = l;
	return 0;
}

void lineage_free(struct lineage *l)
{
	if (!l)
		return;
	pidcache_fini(&l->procs);
	free(l->proc_root);
	free(l);
}

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A time of clock c (ns) on the wall clock, in unix seconds. */
static int64_t to_unix(clockid_t c, int64_t ns)
{
	int64_t ago = clock_ns(c) - ns;

	return (clock_ns(CLOCK_REALTIME) - (ago > 0 ? ago : 0)) / 1000000000;
}

/* The parent and start of pid as /proc says now; -errno when it is gone or unreadable. */
static int from_proc(struct lineage *l, uint32_t pid, uint32_t *ppid, int64_t *start)
{
	struct procstat ps;
	int err = procstat_read(l->proc_root, pid, &ps);

	if (err)
		return err;
	*ppid = ps.ppid;
	*start = to_unix(CLOCK_BOOTTIME, (int64_t)(ps.starttime * (1000000000 / (uint64_t)l->ticks)));
	return 0;
}

static bool same_start(int64_t a, int64_t b)
{
	return a - b <= SAME_START_S && b - a <= SAME_START_S;
}

/* Remembers pid (started at start, by ppid) to be written; the entry, or NULL out of memory. */
static struct known *remember(struct lineage *l, uint32_t pid, int64_t start, uint32_t ppid)
{
	struct known *k;

	if (!pidcache_find(&l->procs, pid) && l->procs.count >= l->procs.max)
		l->stats.forgotten++; /* the least recently noted goes */
	k = (struct known *)pidcache_get(&l->procs, pid);
	if (!k)
		return NULL;
	if (k->start && !same_start(k->start, start))
		k->ppid = 0; /* a later process with the pid */
	k->start = start;
	if (ppid && k->ppid <= 1) /* a parent gone hands its child to init: the first real one stays */
		k->ppid = ppid;
	k->dirty = true;
	return k;
}

/* Learns the ancestors of a process whose parent is ppid, started at ppid_start_ns (monotonic; 0:
 * not known), up to one already known, init, or one whose parent cannot be learnt. */
static void learn_ancestors(struct lineage *l, uint32_t ppid, uint64_t ppid_start_ns)
{
	for (int depth = 0; ppid > 1 && depth < ANCESTORS_MAX; depth++) {
		struct known *k = (struct known *)pidcache_find(&l->procs, ppid);
		int64_t start = ppid_start_ns ? to_unix(CLOCK_MONOTONIC, (int64_t)ppid_start_ns) : 0;
		struct fork_info f;
		uint32_t grand = 0;
		int64_t proc_start = 0;
		__u32 key = ppid;

		if (k && k->ppid && (!start || same_start(k->start, start)))
			return; /* known, with its parent */
		if (l->forks_fd >= 0 && bpf_map_lookup_elem(l->forks_fd, &key, &f) == 0 &&
		    (!ppid_start_ns || f.start_ns == ppid_start_ns)) {
			grand = f.ppid;
			start = to_unix(CLOCK_MONOTONIC, (int64_t)f.start_ns);
			ppid_start_ns = f.ppid_start_ns;
			l->stats.from_forks++;
		} else if (from_proc(l, ppid, &grand, &proc_start) == 0 && (!start || same_start(start, proc_start))) {
			start = proc_start;
			ppid_start_ns = 0;
			l->stats.from_proc++;
		} else {
			l->stats.unknown++;
			return;
		}
		if (!remember(l, ppid, start, grand))
			return;
		ppid = grand;
	}
}

void lineage_note(struct lineage *l, uint32_t pid, uint64_t start_ns, uint32_t ppid, uint64_t ppid_start_ns)
{
	int64_t start = to_unix(CLOCK_MONOTONIC, (int64_t)start_ns);
	int64_t proc_start;

	if (pid <= 1)
		return;
	l->stats.noted++;
	if (ppid) {
		l->stats.from_event++;
	} else if (from_proc(l, pid, &ppid, &proc_start) == 0 && same_start(start, proc_start)) {
		l->stats.from_proc++;
	} else {
		ppid = 0;
		l->stats.unknown++;
	}
	if (remember(l, pid, start, ppid) && ppid)
		learn_ancestors(l, ppid, ppid_start_ns);
}

/* Marks every remembered process still running to be written again, and forgets those that ended. */
static void refresh(struct lineage *l)
{
	struct lru_node *n = l->procs.lru.next;

	while (n != &l->procs.lru) {
		struct known *k = (struct known *)lru_entry(n, struct pidcache_entry, lru);
		uint32_t ppid;
		int64_t start;

		n = n->next;
		if (from_proc(l, k->e.pid, &ppid, &start) == 0 && same_start(start, k->start))
			k->dirty = true;
		else
			pidcache_drop(&l->procs, &k->e); /* it ended */
	}
}

int lineage_store(struct lineage *l, struct store *st)
{
	int64_t now = time(NULL);
	int err = 0;

	if (now - l->last_refresh >= REFRESH_S) {
		refresh(l);
		l->last_refresh = now;
	}
	for (struct lru_node *n = l->procs.lru.next; !err && n != &l->procs.lru; n = n->next) {
		struct known *k = (struct known *)lru_entry(n, struct pidcache_entry, lru);
		struct store_parent p = { .pid = k->e.pid, .ppid = k->ppid, .start = k->start,
					  .seen = now > k->start ? now : k->start };

		if (!k->dirty)
			continue;
		if (!k->ppid || k->ppid == k->e.pid || k->start < 0) {
			k->dirty = false; /* nothing worth a record */
			continue;
		}
		err = store_add_parent(st, &p); /* fails when the flush did: written at the next */
		if (!err) {
			k->dirty = false;
			l->stats.written++;
		}
	}
	return err;
}

void lineage_get_stats(const struct lineage *l, struct lineage_stats *out)
{
	if (!l) {
		*out = (struct lineage_stats){ 0 };
		return;
	}
	*out = l->stats;
	out->known = l->procs.count;
}
