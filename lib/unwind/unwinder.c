/* unwinder.c - builds, loads and shares the unwind tables of sampled processes (see unwinder.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>

#include "unwind.h"
#include "unwind/cfi.h"
#include "unwind/dumprows.h"
#include "unwind/jitrows.h"
#include "unwind/prologue.h"
#include "unwind/unwinder.h"
#include "unwind/unwinder_impl.h"
#include "elf/mapped.h"
#include "elf/debuginfo.h"
#include "elf/elf_file.h"
#include "elf/jitlist.h"
#include "elf/procmaps.h"
#include "util/hash.h"

double unwinder_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Makes the thread's counters those unwinder_get_stats returns. */
static void publish(struct unwinder *u)
{
	u->st.jit_tables = 0;
	for (size_t i = 0; i < u->ntables; i++)
		u->st.jit_tables += u->tables[i]->jit && u->tables[i]->slot != UNWIND_NO_TABLE;
	pthread_mutex_lock(&u->mu);
	u->published = u->st;
	u->published.requests_dropped = u->dropped;
	tablecache_get_stats(u->o.cache, &u->published.cache);
	pthread_mutex_unlock(&u->mu);
}

int unwinder_state_new(const struct unwinder_opts *opts, struct unwinder **out)
{
	struct unwinder *u;

	if (!opts->max_tables || opts->max_tables > UNWIND_MAX_SLOTS || !opts->max_procs || !opts->max_bytes || opts->tables_fd < 0 || opts->procs_fd < 0)
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->o = *opts;
	u->unused_s = opts->unused_s > 0 ? opts->unused_s : UNWINDER_UNUSED_S;
	snprintf(u->debug_dir, sizeof(u->debug_dir), "%s", opts->debug_dir ? opts->debug_dir : "/usr/lib/debug");
	u->o.debug_dir = u->debug_dir;
	u->cap_tables = (size_t)opts->max_tables * MAX_ENTRIES_PER_SLOT;
	u->tables = calloc(u->cap_tables, sizeof(*u->tables));
	u->slot_used = calloc(opts->max_tables, sizeof(*u->slot_used));
	u->slot_gen = calloc(opts->max_tables, sizeof(*u->slot_gen));
	u->procs = calloc(opts->max_procs, sizeof(*u->procs));
	u->value = calloc(1, sizeof(*u->value));
	u->fill_keys = malloc(FILL_CHUNK * sizeof(*u->fill_keys));
	pthread_mutex_init(&u->mu, NULL);
	pthread_cond_init(&u->wake, NULL);
	if (!u->tables || !u->slot_used || !u->slot_gen || !u->procs || !u->value || !u->fill_keys ||
	    jitlist_finder_new(&u->finder)) {
		unwinder_state_free(u);
		return -ENOMEM;
	}
	*out = u;
	return 0;
}

/* Unloads t's rows (if loaded) and forgets it. */
static void drop_table(struct unwinder *u, size_t i)
{
	struct table *t = u->tables[i];

	if (t->slot != UNWIND_NO_TABLE) {
		bpf_map_delete_elem(u->o.tables_fd, &t->slot);
		u->slot_used[t->slot] = false;
		u->st.tables--;
		u->st.table_rows -= t->nrows;
		u->st.table_bytes -= (uint64_t)t->nrows * sizeof(struct unwind_row);
	}
	free(t);
	u->tables[i] = u->tables[--u->ntables];
}

/* Drops the least recently used table no process uses and that holds rows (or, when rows is false,
 * any unused entry). Returns false when there is none. */
static bool evict_one(struct unwinder *u, bool rows)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < u->ntables; i++) {
		const struct table *t = u->tables[i];

		if (t->users || (rows && t->slot == UNWIND_NO_TABLE))
			continue;
		if (best == SIZE_MAX || t->last_used < u->tables[best]->last_used)
			best = i;
	}
	if (best == SIZE_MAX)
		return false;
	if (u->tables[best]->slot != UNWIND_NO_TABLE)
		u->st.tables_evicted++;
	drop_table(u, best);
	return true;
}

/* A free slot of unwind_tables, or UNWIND_NO_TABLE. */
static uint32_t free_slot(const struct unwinder *u)
{
	for (uint32_t i = 0; i < u->o.max_tables; i++)
		if (!u->slot_used[i])
			return i;
	return UNWIND_NO_TABLE;
}

/* Makes room for rows more rows and a slot, evicting unused tables. Returns the slot or UNWIND_NO_TABLE. */
static uint32_t make_room(struct unwinder *u, size_t rows)
{
	uint64_t bytes = (uint64_t)rows * sizeof(struct unwind_row);
	uint32_t slot;

	if (bytes > u->o.max_bytes)
		return UNWIND_NO_TABLE;
	while (u->st.table_bytes + bytes > u->o.max_bytes || (slot = free_slot(u)) == UNWIND_NO_TABLE)
		if (!evict_one(u, true))
			return UNWIND_NO_TABLE;
	return slot;
}

/* Copies rows into a new inner map and puts it in slot. Returns 0 or -errno. */
static int load_rows(struct unwinder *u, uint32_t slot, const struct unwind_row *rows, size_t n)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_INNER_MAP);
	int fd, err = 0;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "flamed_unwind", sizeof(__u32), sizeof(struct unwind_row),
			    (__u32)n, &mo);
	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < n && !err;) {
		__u32 count = n - done < FILL_CHUNK ? (__u32)(n - done) : FILL_CHUNK;

		for (__u32 i = 0; i < count; i++)
			u->fill_keys[i] = (__u32)done + i;
		if (bpf_map_update_batch(fd, u->fill_keys, rows + done, &count, NULL))
			err = -errno;
		done += count;
	}
	if (!err && bpf_map_update_elem(u->o.tables_fd, &slot, &fd, BPF_ANY))
		err = -errno;
	close(fd);
	return err;
}

/* Builds the rows of the binary open on fd (ef its parsed copy): its .eh_frame, else a separate debug
 * file's .debug_frame; then rows from the prologues of its functions neither covers (prologue.c).
 * Returns 0 with *rows and *n set, or -errno. */
static int build_rows(struct unwinder *u, int fd, const struct elf_file *ef, const char *root, const char *path,
		      struct unwind_row **rows, size_t *n)
{
	char found[PATH_MAX] = "";
	struct debuginfo_query q = { .root = root, .debug_dir = u->debug_dir, .path = path, .bin = ef,
				     .found = found, .found_len = sizeof(found) };
	struct elf_file *dbg;
	struct cfi_stats cs;
	int dfd, err, added;

	err = cfi_build(fd, -1, UNWIND_MAX_ROWS, rows, n, &cs);
	if (err == -ENOENT && debuginfo_find(&q, &dbg) == 0) {
		elf_file_free(dbg);
		dfd = elf_file_open_fd(found);
		if (dfd >= 0) {
			err = cfi_build(fd, dfd, UNWIND_MAX_ROWS, rows, n, &cs);
			close(dfd);
		}
	}
	if (!err && (added = prologue_fill(ef, rows, n, UNWIND_MAX_ROWS)) > 0)
		u->st.prologue_functions += (uint64_t)added;
	return err;
}

/* Loads n (at least 2) rows into a slot for t, making room; counted as refused when there is none. */
static void load_table(struct unwinder *u, struct table *t, const struct unwind_row *rows, size_t n)
{
	if ((t->slot = make_room(u, n)) == UNWIND_NO_TABLE) {
		t->refused = true;
		u->st.tables_refused++;
	} else if (load_rows(u, t->slot, rows, n)) {
		t->slot = UNWIND_NO_TABLE;
		t->refused = true;
		u->st.tables_refused++;
	} else {
		u->slot_used[t->slot] = true;
		u->slot_gen[t->slot] = u->slot_gen[t->slot] % UNWIND_MAX_GEN + 1;
		t->tag = UNWIND_TABLE(t->slot, u->slot_gen[t->slot]);
		t->nrows = (uint32_t)n;
		u->st.tables++;
		u->st.tables_built++;
		u->st.table_rows += n;
		u->st.table_bytes += (uint64_t)n * sizeof(struct unwind_row);
	}
}

/* Builds (or reads from the cache) and loads the rows of t's binary (open on fd, parsed as ef). */
static void fill_table(struct unwinder *u, struct table *t, int fd, const struct elf_file *ef, const char *root,
		       const char *path)
{
	struct unwind_row *rows = NULL;
	double t0 = unwinder_now();
	bool cached = false;
	size_t n = 0;
	int err = -ENOENT;

	if (u->o.cache && t->build_id_len > 0)
		cached = !(err = tablecache_get(u->o.cache, t->build_id, t->build_id_len, &rows, &n));
	if (!cached) {
		err = build_rows(u, fd, ef, root, path, &rows, &n);
		if (!err && n >= 2 && u->o.cache && t->build_id_len > 0)
			tablecache_put(u->o.cache, t->build_id, t->build_id_len, rows, n);
	}
	if (err || n < 2)
		u->st.binaries_without++;
	else
		load_table(u, t, rows, n);
	free(rows);
	u->st.build_seconds += unwinder_now() - t0;
	if (u->o.verbose)
		fprintf(stderr, "flamed: unwind table of %s: %zu rows, %zu KiB, %s%s, %.1f ms\n", path, n,
			n * sizeof(struct unwind_row) >> 10, t->nrows ? "loaded" : t->refused ? "no room" : "none usable",
			cached ? " (from the cache)" : "", (unwinder_now() - t0) * 1e3);
}

/* A loaded table of the same build as ef (by build-id) with room for another file, or NULL. */
static struct table *same_build(struct unwinder *u, const uint8_t *id, int len)
{
	for (size_t i = 0; len > 0 && i < u->ntables; i++) {
		struct table *t = u->tables[i];

		if (t->build_id_len == len && !memcmp(t->build_id, id, (size_t)len) && t->slot != UNWIND_NO_TABLE &&
		    t->nids < TABLE_IDS)
			return t;
	}
	return NULL;
}

/* The table of the binary open on fd (taken over), file id: another file of a build already loaded
 * shares its table; else a new entry is built. Returns it (its slot UNWIND_NO_TABLE when it has no
 * usable rows, no room, or the file does not parse as ELF: remembered, not tried again) or NULL (out of
 * memory, or no room for another binary). */
static struct table *new_table(struct unwinder *u, int fd, const struct file_id *id, const char *root,
			       const char *path)
{
	uint8_t bid[ELF_BUILD_ID_MAX];
	struct elf_file *ef = NULL;
	struct table *t;
	int cfd = dup(fd), nsegs, bid_len = 0;

	if (cfd < 0) {
		close(fd);
		return NULL;
	}
	if (elf_file_from_fd(fd, &ef)) /* takes fd over */
		ef = NULL;
	if (ef)
		bid_len = elf_file_build_id(ef, bid, sizeof(bid));
	t = same_build(u, bid, bid_len);
	if (t) {
		t->ids[t->nids++] = *id;
		goto out;
	}
	if (u->ntables == u->cap_tables && !evict_one(u, false))
		goto out;
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out;
	t->ids[0] = *id;
	t->nids = 1;
	if (bid_len > 0) {
		memcpy(t->build_id, bid, (size_t)bid_len);
		t->build_id_len = bid_len;
	}
	t->slot = UNWIND_NO_TABLE;
	t->last_used = u->sweeps;
	t->used_at = unwinder_now();
	if (ef) {
		nsegs = elf_file_segments(ef, t->segs, ELF_MAX_SEGMENTS);
		t->nsegs = nsegs > 0 ? (size_t)nsegs : 0;
		fill_table(u, t, cfd, ef, root, path);
	} else {
		u->st.binaries_without++; /* with its ELF magic, but broken: frame pointers there */
	}
	u->tables[u->ntables++] = t;
out:
	elf_file_free(ef);
	close(cfd);
	return t;
}

/* new_table, as one of b's builds: a build that gives no table is counted in b->failed. */
static struct table *build(struct unwinder *u, int fd, const struct file_id *id, const char *root, const char *path,
			   struct budget *b)
{
	struct table *t;

	b->builds--;
	t = new_table(u, fd, id, root, path);
	b->failed += !t;
	return t;
}

/* Notes that src names t's binary, opened and checked now; returns t. */
static struct table *seen_as(struct table *t, const struct bin_source *src)
{
	if (t)
		bin_seen_note(&t->seen, src, unwinder_now());
	return t;
}

/* The table of the file mapped at m in pid, built on first use if b allows one more build (else counted
 * in b->missing). NULL: none (not a file, unreadable, out of memory, or not built now). */
static struct table *table_for(struct unwinder *u, uint32_t pid, const struct procmap *m, struct budget *b)
{
	struct bin_source src = bin_source_of(pid, m);
	char root[BIN_ROOT_LEN];
	struct file_id id;
	struct stat st;
	double now;
	int fd;

	if (!m->path || m->path[0] != '/')
		return NULL; /* anonymous (JIT), [vdso], [stack]... */
	now = m->inode ? unwinder_now() : 0;
	for (size_t i = 0; m->inode && i < u->ntables; i++) {
		struct table *t = u->tables[i];

		if (!t->jit && !t->refused && bin_seen_is(&t->seen, &src, now, MAP_TRUST_S)) {
			u->st.binaries_known++;
			return t;
		}
	}
	fd = bin_open_mapped(&src, root);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return NULL;
	}
	id = (struct file_id){ st.st_dev, st.st_ino, st.st_size, (int64_t)st.st_mtim.tv_sec * 1000000000LL +
			       st.st_mtim.tv_nsec };
	for (size_t i = 0; i < u->ntables; i++) {
		struct table *t = u->tables[i];

		for (size_t j = 0; j < t->nids; j++) {
			if (memcmp(&t->ids[j], &id, sizeof(id)))
				continue;
			if (t->refused && !t->users && b->builds > 0) { /* try again: room may have come */
				drop_table(u, i);
				return seen_as(build(u, fd, &id, root, m->path, b), &src);
			}
			close(fd);
			return seen_as(t, &src);
		}
	}
	/* No binary: no table will ever come, so none is waited for (a jitdump file, which grows, would
	 * be a new file at each look). */
	if (!elf_file_has_magic(fd)) {
		close(fd);
		return NULL;
	}
	if (b->builds <= 0 || m->end - m->start > b->max_size) {
		b->missing++;
		if (!b->smallest || m->end - m->start < b->smallest)
			b->smallest = m->end - m->start;
		close(fd);
		return NULL;
	}
	return seen_as(build(u, fd, &id, root, m->path, b), &src);
}

static struct proc *find_proc(struct unwinder *u, uint32_t pid)
{
	for (size_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].pid == pid)
			return &u->procs[i];
	return NULL;
}

/* Adds t to the distinct tables of a process being built (used, *n of them), counting the use at once
 * so that later mappings of the process cannot evict it. */
static void use_table(struct table **used, size_t *n, struct table *t)
{
	for (size_t i = 0; i < *n; i++)
		if (used[i] == t)
			return;
	used[(*n)++] = t;
	t->users++;
}

static void release(struct proc *p)
{
	for (size_t i = 0; i < p->nused; i++)
		p->used[i]->users--;
	free(p->used);
	p->used = NULL;
	p->nused = 0;
}

/* ---- JIT code registered with the GDB JIT interface ---- */

/* Reads p's GDB JIT list again when it changed (maps: its mappings as read now, n of them). The
 * descriptor is looked for while the process has anonymous executable memory, again whenever its
 * mappings are more or fewer than at the last search (a JIT library loaded since). */
static void jit_update(struct unwinder *u, struct proc *p, const struct procmap *maps, size_t n)
{
	void *ctx = (void *)(uintptr_t)p->pid;
	struct jitrows *j;
	uint64_t sig;
	bool anon = false;
	int err;

	for (size_t i = 0; i < n && !anon; i++)
		anon = !maps[i].path;
	if (!anon)
		return;
	if (!p->jit_desc && p->jit_searched != n) {
		p->jit_desc = jitlist_find(u->finder, p->pid, maps, n);
		p->jit_searched = n;
	}
	if (!p->jit_desc)
		return;
	sig = jitlist_signature(jitlist_read_process, ctx, p->jit_desc);
	if (!sig || sig == p->jit_sig)
		return;
	err = jitrows_read(jitlist_read_process, ctx, p->jit_desc, &sig, p->jit, &j, &u->st.jit);
	if (err && err != -ENOENT)
		return;
	jitrows_free(p->jit);
	p->jit = err ? NULL : j; /* -ENOENT: the list is empty now */
	p->jit_sig = sig;
}

/* Opens the jitdump file p maps, as it was found. Returns the descriptor or -errno. */
static int dump_open(const struct proc *p)
{
	struct bin_source src = bin_source_of(p->pid, p->dump_map);
	char root[BIN_ROOT_LEN];

	return bin_open_mapped(&src, root);
}

static void dump_forget(struct proc *p)
{
	procmaps_free(p->dump_map, p->dump_map ? 1 : 0);
	dumprows_free(p->dump);
	p->dump_map = NULL;
	p->dump = NULL;
}

/* Reads on p's jitdump file, if it has one: whether that added rows (p->dump_gen counts them), for p's
 * entry to be written again. A file that grew by records without unwinding information (V8's, unless
 * --perf-prof-unwinding-info) adds none. */
static bool dump_read_on(struct unwinder *u, struct proc *p)
{
	int fd, r;

	if (!p->dump_map)
		return false;
	fd = dump_open(p);
	if (fd < 0)
		return false;
	r = dumprows_read(p->dump, fd, &u->st.jit, &u->st.jitdump);
	close(fd);
	if (r <= 0)
		return false;
	p->dump_gen++;
	return true;
}

/* Reads on p's jitdump file, the one of maps (n) named jit-N.dump, for the rows of its unwinding
 * information; another file than the one read before starts anew. */
static void dump_update(struct unwinder *u, struct proc *p, const struct procmap *maps, size_t n)
{
	const struct procmap *m = NULL;

	for (size_t i = 0; i < n && !m; i++)
		if (maps[i].path && maps[i].path[0] == '/' && jitdump_path(maps[i].path))
			m = &maps[i];
	if (!m)
		return;
	if (p->dump_map && (p->dump_map->inode != m->inode || p->dump_map->dev_major != m->dev_major ||
			    p->dump_map->dev_minor != m->dev_minor || p->dump_map->start != m->start))
		dump_forget(p);
	if (!p->dump_map && (procmaps_copy(m, 1, &p->dump_map) || dumprows_new(&p->dump))) {
		dump_forget(p);
		return;
	}
	dump_read_on(u, p);
}

/* The table of p's JIT code in its anonymous mapping m, built from p->jit when p's list changed since
 * (or m did), else from its jitdump file's rows when they did. NULL: no object there, no room for another
 * entry, or out of memory. */
static struct table *jit_table(struct unwinder *u, const struct proc *p, const struct procmap *m)
{
	struct unwind_row *rows;
	struct table *t;
	size_t n;

	for (size_t i = 0; i < u->ntables; i++) {
		t = u->tables[i];
		if (t->jit && t->jit_pid == p->pid && t->jit_start == m->start && t->jit_end == m->end &&
		    t->jit_sig == p->jit_sig && t->jit_dump_gen == p->dump_gen)
			return t;
	}
	if (jitrows_range(p->jit, m->start, m->end, UNWIND_MAX_ROWS, &rows, &n) &&
	    jitrows_range(dumprows_rows(p->dump), m->start, m->end, UNWIND_MAX_ROWS, &rows, &n))
		return NULL;
	if ((u->ntables == u->cap_tables && !evict_one(u, false)) || !(t = calloc(1, sizeof(*t)))) {
		free(rows);
		return NULL;
	}
	*t = (struct table){ .slot = UNWIND_NO_TABLE, .last_used = u->sweeps, .used_at = unwinder_now(), .jit = true,
			     .jit_pid = p->pid, .jit_start = m->start, .jit_end = m->end, .jit_sig = p->jit_sig,
			     .jit_dump_gen = p->dump_gen };
	load_table(u, t, rows, n);
	free(rows);
	u->tables[u->ntables++] = t;
	return t;
}

/* Drops the JIT tables no process uses: each is one process's, of one version of its list. */
static void drop_unused_jit(struct unwinder *u)
{
	for (size_t i = 0; i < u->ntables;) {
		if (u->tables[i]->jit && !u->tables[i]->users)
			drop_table(u, i);
		else
			i++;
	}
}

/* Forgets p (its tables' uses, its JIT rows) and its place in u->procs. */
static void forget_proc(struct unwinder *u, struct proc *p)
{
	release(p);
	jitrows_free(p->jit);
	dump_forget(p);
	*p = u->procs[--u->nprocs];
	u->st.processes--;
}

/* Fills u->value with p's mappings; used gets the distinct tables (UNWIND_MAX_MAPPINGS room). */
static void fill_value(struct unwinder *u, const struct proc *p, const struct procmap *maps, size_t n,
		       struct table **used, size_t *nused, struct budget *b)
{
	struct unwind_proc *v = u->value;

	v->n = 0;
	for (size_t i = 0; i < n; i++) {
		struct unwind_mapping *um;
		struct table *t;
		uint64_t vaddr;

		if (v->n == UNWIND_MAX_MAPPINGS) {
			u->st.mappings_dropped += n - i;
			break;
		}
		um = &v->m[v->n++];
		um->start = maps[i].start;
		um->end = maps[i].end;
		um->bias = 0;
		um->table = UNWIND_NO_TABLE;
		um->nrows = 0;
		t = maps[i].path ? table_for(u, p->pid, &maps[i], b)
		    : p->jit || dumprows_rows(p->dump) ? jit_table(u, p, &maps[i]) : NULL;
		if (!t)
			continue;
		t->last_used = u->sweeps;
		t->used_at = unwinder_now();
		use_table(used, nused, t); /* until the old uses are released, both count */
		if (t->slot == UNWIND_NO_TABLE)
			continue;
		if (t->jit) {
			vaddr = 0; /* its rows' pcs are relative to the mapping's start */
		} else if (elf_segments_vaddr(t->segs, t->nsegs, maps[i].offset, maps[i].exec, &vaddr)) {
			u->st.mappings_unplaced++;
			continue;
		}
		um->bias = maps[i].start - vaddr;
		um->table = t->tag;
		um->nrows = t->nrows | (t->jit ? UNWIND_JIT_ROWS : 0);
	}
}

/* A signature of the entry v (its header and the mappings it holds): the same as the one written last
 * for the process, it is not written again. Never 0 (0: none written). */
static uint64_t value_sig(const struct unwind_proc *v)
{
	const unsigned char *p = (const unsigned char *)v;
	size_t len = offsetof(struct unwind_proc, m) + (v->n < UNWIND_MAX_MAPPINGS ? v->n : UNWIND_MAX_MAPPINGS) * sizeof(v->m[0]);
	uint64_t h = 0x9e3779b97f4a7c15ULL, w;

	_Static_assert(sizeof(struct unwind_mapping) % 8 == 0 && offsetof(struct unwind_proc, m) % 8 == 0,
		       "an entry is whole words");
	for (size_t i = 0; i < len; i += 8) {
		memcpy(&w, p + i, 8);
		h = hash_words((const uint64_t[]){ h, w }, 2);
	}
	return h ? h : 1;
}

int unwinder_add_process(struct unwinder *u, uint32_t pid, uint64_t token, struct budget *b,
			  const struct procmap *snap, size_t nsnap, bool current)
{
	struct procmap *live = NULL;
	uint64_t sig;
	const struct procmap *maps;
	struct table **used;
	struct proc *p;
	size_t n = 0, nused = 0;
	bool gone = false;
	int err;

	if (current && snap && nsnap) {
		u->st.maps_given++;
		err = 0;
		maps = snap;
		n = nsnap;
	} else {
		err = procmaps_read(pid, &live, &n);
		maps = live;
	}
	if (err == -ENOENT && snap && nsnap) {
		maps = snap;
		n = nsnap;
		gone = true;
		u->st.processes_gone++;
		err = 0;
	}
	if (err)
		return err;
	p = find_proc(u, pid);
	if (!p && u->nprocs == u->o.max_procs) {
		procmaps_free(live, n);
		u->st.processes_refused++;
		publish(u);
		return -ENOSPC;
	}
	used = calloc(UNWIND_MAX_MAPPINGS, sizeof(*used));
	if (!used) {
		procmaps_free(live, n);
		return -ENOMEM;
	}
	if (!p) {
		p = &u->procs[u->nprocs++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		u->st.processes++;
	}
	if (token && p->token && token != p->token) { /* another image (an exec): another JIT, if any */
		jitrows_free(p->jit);
		p->jit = NULL;
		p->jit_desc = p->jit_sig = 0;
		p->jit_searched = 0;
		dump_forget(p);
	}
	if (!gone) {
		jit_update(u, p, maps, n);
		dump_update(u, p, maps, n);
	}
	memset(u->value, 0, sizeof(*u->value));
	fill_value(u, p, maps, n, used, &nused, b);
	procmaps_free(live, n);
	release(p);
	drop_unused_jit(u); /* those of the list read before */
	p->used = used;
	p->nused = nused;
	p->written_at = unwinder_now();
	p->gone = gone;
	if (token)
		p->token = token;
	u->value->token = p->token;
	u->value->flags = b->missing && !b->failed ? UNWIND_PROC_PENDING : 0;
	sig = value_sig(u->value);
	if (sig == p->written_sig) { /* a read again that changed nothing (most of a new process's) */
		u->st.entries_unchanged++;
	} else if (bpf_map_update_elem(u->o.procs_fd, &pid, u->value, BPF_ANY)) {
		err = -errno;
		u->st.processes_refused++;
		forget_proc(u, p);
		drop_unused_jit(u);
	} else {
		p->written_sig = sig;
	}
	publish(u);
	return err;
}

int unwinder_add(struct unwinder *u, uint32_t pid, uint64_t token)
{
	struct budget b = { .builds = INT_MAX, .max_size = UINT64_MAX };

	return unwinder_add_process(u, pid, token, &b, NULL, 0, false);
}

int unwinder_add_maps(struct unwinder *u, uint32_t pid, uint64_t token, const struct procmap *maps, size_t n,
		      bool current)
{
	struct budget b = { .builds = INT_MAX, .max_size = UINT64_MAX };

	return unwinder_add_process(u, pid, token, &b, maps, n, current);
}

void unwinder_jit_changed(struct unwinder *u, void (*ask)(struct unwinder *u, uint32_t pid))
{
	for (size_t i = 0; i < u->nprocs; i++) {
		struct proc *p = &u->procs[i];
		uint64_t sig;

		if (p->gone)
			continue;
		if (dump_read_on(u, p)) {
			ask(u, p->pid);
			continue;
		}
		if (!p->jit_desc)
			continue;
		sig = jitlist_signature(jitlist_read_process, (void *)(uintptr_t)p->pid, p->jit_desc);
		if (sig && sig != p->jit_sig)
			ask(u, p->pid);
	}
}

void unwinder_sweep(struct unwinder *u)
{
	double now;

	u->sweeps++;
	for (size_t i = 0; i < u->nprocs;) {
		struct proc *p = &u->procs[i];

		if (kill((pid_t)p->pid, 0) == 0 || errno != ESRCH || (p->gone && unwinder_now() - p->written_at < GONE_GRACE_S)) {
			i++;
			continue;
		}
		bpf_map_delete_elem(u->o.procs_fd, &p->pid);
		forget_proc(u, p);
	}
	drop_unused_jit(u);
	now = unwinder_now();
	for (size_t i = 0; i < u->ntables;) {
		const struct table *t = u->tables[i];

		if (!t->users && now - t->used_at >= u->unused_s) {
			drop_table(u, i);
			u->st.tables_expired++;
		}
		else
			i++;
	}
	publish(u);
}

void unwinder_state_free(struct unwinder *u)
{
	for (size_t i = 0; i < u->nprocs; i++) {
		bpf_map_delete_elem(u->o.procs_fd, &u->procs[i].pid);
		release(&u->procs[i]);
		jitrows_free(u->procs[i].jit);
		dump_forget(&u->procs[i]);
	}
	jitlist_finder_free(u->finder);
	while (u->ntables)
		drop_table(u, u->ntables - 1);
	free(u->tables);
	free(u->slot_used);
	free(u->slot_gen);
	free(u->procs);
	free(u->value);
	free(u->fill_keys);
	pthread_mutex_destroy(&u->mu);
	pthread_cond_destroy(&u->wake);
	free(u);
}
