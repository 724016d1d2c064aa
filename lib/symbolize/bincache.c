/* bincache.c - loads each mapped ELF binary once (segments, symbols, debug file) and keeps a bounded LRU. */
#include "symbolize/bincache.h"
#include "symbolize/inlines.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/debugfetch.h"
#include "elf/debuginfo.h"
#include "elf/elf_file.h"
#include "elf/mapped.h"
#include "symbolize/elf_symbols.h"
#include "util/lru.h"

#define MAX_BUCKETS (1u << 16)
#define ROOT_LEN BIN_ROOT_LEN

struct binary {
	struct elf_segment segs[ELF_MAX_SEGMENTS];
	size_t nsegs;
	char build_id[BINARY_BUILD_ID_MAX]; /* lowercase hex, "" when it has none */
	struct inlines *inl;     /* its DWARF, for inlined functions; NULL: none or not asked for */
	struct elf_symtab *syms; /* NULL: no function symbol anywhere */
	bool awaiting_debug;     /* named from .dynsym while its debug file is fetched */
};

/* What tells a file's content apart beyond (device, inode): a file written in place, or a new file
 * reusing a freed inode, has another size or modification time. */
struct file_id {
	int64_t size, mtime_sec, mtime_nsec;
};

/* One cached binary, or the memory of a failed load. */
struct bin_entry {
	struct binary bin;
	uint64_t dev, inode;
	struct file_id id;
	uint64_t checked_gen; /* flush in which id was last compared with the file */
	bool failed;
	uint64_t failed_gen;  /* flush of the failure: retried in a later flush */
	uint64_t used_gen;    /* flush in which it was last looked up */
	struct lru_node lru;
	struct bin_entry *hnext;
};

struct bincache {
	char *debug_dir;
	struct debugfetch *fetch; /* NULL: no debuginfod */
	uint64_t arrivals;        /* the fetcher's count when the last flush began */
	struct bin_entry **buckets;
	size_t mask;
	struct lru_node lru; /* most recently used first */
	size_t count, max;
	size_t bytes, max_bytes; /* memory held by the entries; max_bytes 0: no byte bound */
	bool inlines;
	uint64_t gen;
	uint64_t evicted, debug_files_found;
	uint64_t symbols_dropped; /* function symbols past ELF_MAX_SYMBOLS in a file, not kept */
	uint64_t over_bound;      /* loads past max_bytes: every cached binary was in use this flush */
};

int bincache_new(const struct bincache_opts *opts, struct bincache **out)
{
	struct bincache *c;
	size_t nb = 16;

	if (opts->max == 0)
		return -EINVAL;
	while (nb < opts->max && nb < MAX_BUCKETS)
		nb *= 2;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->buckets = calloc(nb, sizeof(*c->buckets));
	c->debug_dir = strdup(opts->debug_dir ? opts->debug_dir : "/usr/lib/debug");
	if (!c->buckets || !c->debug_dir) {
		free(c->buckets);
		free(c->debug_dir);
		free(c);
		return -ENOMEM;
	}
	c->mask = nb - 1;
	c->max = opts->max;
	c->max_bytes = opts->max_bytes;
	c->inlines = opts->inlines;
	c->fetch = opts->fetch;
	lru_init(&c->lru);
	*out = c;
	return 0;
}

static size_t bucket_of(const struct bincache *c, uint64_t dev, uint64_t inode)
{
	uint64_t h = (inode ^ (dev * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return (size_t)(h >> 32) & c->mask;
}

static struct bin_entry *lookup(const struct bincache *c, uint64_t dev, uint64_t inode)
{
	struct bin_entry *e;

	for (e = c->buckets[bucket_of(c, dev, inode)]; e; e = e->hnext) {
		if (e->dev == dev && e->inode == inode)
			return e;
	}
	return NULL;
}

/* Memory e holds. */
static size_t entry_bytes(const struct bin_entry *e)
{
	return sizeof(*e) + elf_symtab_bytes(e->bin.syms) + (e->bin.inl ? inlines_bytes(e->bin.inl) : 0);
}

/* Unlinks e from the hash and the LRU list and frees it. */
static void drop(struct bincache *c, struct bin_entry *e)
{
	struct bin_entry **pp = &c->buckets[bucket_of(c, e->dev, e->inode)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	lru_remove(&e->lru);
	c->bytes -= entry_bytes(e);
	elf_symtab_free(e->bin.syms);
	inlines_free(e->bin.inl);
	free(e);
	c->count--;
}

static void file_id_of(const struct stat *st, struct file_id *id)
{
	id->size = (int64_t)st->st_size;
	id->mtime_sec = (int64_t)st->st_mtim.tv_sec;
	id->mtime_nsec = (int64_t)st->st_mtim.tv_nsec;
}

/* Finds the separate debug file of f: on disk (debuginfo_find), else (fetch: f has no .symtab) fetched by
 * build-id, asked for when it is not there yet (b then awaits it). Its path goes to found. Returns 0 with
 * *dbg set, -ENOENT or -ENOMEM. */
static int find_debug(struct bincache *c, const struct bin_source *src, const char *root, const struct elf_file *f,
		      bool fetch, struct binary *b, char *found, size_t cap, struct elf_file **dbg)
{
	struct debuginfo_query q = { .root = root, .debug_dir = c->debug_dir, .path = src->path, .bin = f,
				     .found = found, .found_len = cap };
	int err = debuginfo_find(&q, dbg);

	if (err != -ENOENT || !fetch || !c->fetch || !b->build_id[0])
		return err;
	err = debugfetch_path(c->fetch, b->build_id, found, cap);
	b->awaiting_debug = err == -EAGAIN || err == -ENOSPC;
	if (err)
		return -ENOENT;
	err = debuginfo_open_matching(found, f, dbg);
	return err == -ENOMEM ? err : err ? -ENOENT : 0;
}

/* Opens the DWARF of the binary for inlined functions: its separate debug file (dbg_path) when there is
 * one, else the binary itself (if it is still there); none is no error. */
static void open_inlines(const struct bin_source *src, const char *root, const char *dbg_path, struct binary *b)
{
	char self[PATH_MAX];

	if (dbg_path && inlines_open(dbg_path, &b->inl) == 0)
		return;
	if (!src->deleted && src->path && snprintf(self, sizeof(self), "%s%s", root, src->path) < (int)sizeof(self))
		inlines_open(self, &b->inl);
}

/* Fills b->syms: the binary's .symtab, else a debug file's .symtab, else .dynsym.
 * Returns 0 (also when no symbol is found) or -ENOMEM. */
static int load_symbols(struct bincache *c, const struct bin_source *src, const char *root,
			const struct elf_file *f, struct binary *b)
{
	char found[PATH_MAX] = "";
	struct elf_file *dbg = NULL;
	int err, derr = -ENOENT;

	err = elf_symtab_load(f, false, &b->syms);
	if (err == -ENOMEM)
		return err;
	if (err || c->inlines) {
		derr = find_debug(c, src, root, f, err != 0, b, found, sizeof(found), &dbg);
		if (derr == -ENOMEM)
			return derr;
	}
	if (c->inlines)
		open_inlines(src, root, derr == 0 ? found : NULL, b);
	if (err && derr == 0) {
		c->debug_files_found++;
		err = elf_symtab_load(dbg, false, &b->syms);
	}
	elf_file_free(dbg);
	if (err == 0 || err == -ENOMEM)
		return err;
	err = elf_symtab_load(f, true, &b->syms);
	return err == -ENOMEM ? err : 0;
}

/* Keeps f's build-id as lowercase hex in b (empty when it has none). */
static void set_build_id(struct binary *b, const struct elf_file *f)
{
	uint8_t id[(BINARY_BUILD_ID_MAX - 1) / 2];
	int n = elf_file_build_id(f, id, sizeof(id));

	b->build_id[0] = '\0';
	for (int i = 0; i < n && i < (int)sizeof(id); i++)
		snprintf(b->build_id + 2 * i, 3, "%02x", id[i]);
}

/* Opens and reads the binary mapped as src into e. Returns 0 or -errno. */
static int load_binary(struct bincache *c, const struct bin_source *src, struct bin_entry *e)
{
	struct binary *b = &e->bin;
	char root[ROOT_LEN];
	struct elf_file *f;
	struct stat st;
	int fd, n, err;

	fd = bin_open_mapped(src, root);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == 0)
		file_id_of(&st, &e->id);
	err = elf_file_from_fd(fd, &f);
	if (err)
		return err;
	n = elf_file_segments(f, b->segs, ELF_MAX_SEGMENTS);
	if (n < 0) {
		err = n;
		goto out;
	}
	b->nsegs = (size_t)n;
	set_build_id(b, f);
	err = load_symbols(c, src, root, f, b);
	if (b->syms)
		c->symbols_dropped += elf_symtab_dropped(b->syms); /* past the bound: counted, not kept */
out:
	elf_file_free(f);
	return err;
}

/* Loads src into a new entry (a failed load gives a failed entry) and inserts it, evicting the least
 * recently used entry when full. NULL: out of memory. */
static struct bin_entry *add_entry(struct bincache *c, const struct bin_source *src)
{
	struct bin_entry *e = calloc(1, sizeof(*e));
	struct lru_node *old;
	size_t bkt;
	int err;

	if (!e)
		return NULL;
	e->dev = src->dev;
	e->inode = src->inode;
	lru_init(&e->lru);
	err = load_binary(c, src, e);
	if (err == -ENOMEM) {
		elf_symtab_free(e->bin.syms);
		free(e);
		return NULL;
	}
	e->failed = err != 0;
	e->failed_gen = c->gen;
	e->checked_gen = c->gen;
	/* Make room, least recently used first; the new entry may stand alone over max_bytes. A binary
	 * looked up in this flush is not evicted for bytes: the stacks of one flush that span more symbols
	 * than max_bytes (PyTorch's libraries: libtorch_cpu's alone is tens of MiB) would otherwise load and
	 * evict the same binaries frame after frame. The cache then holds this flush's binaries, over the
	 * bound (counted), and comes back within it as later flushes use fewer. */
	while ((old = lru_oldest(&c->lru))) {
		struct bin_entry *o = lru_entry(old, struct bin_entry, lru);

		if (c->count < c->max && (!c->max_bytes || c->bytes + entry_bytes(e) <= c->max_bytes))
			break;
		if (c->count < c->max && o->used_gen == c->gen && !o->failed) {
			c->over_bound++;
			break;
		}
		drop(c, o);
		c->evicted++;
	}
	bkt = bucket_of(c, e->dev, e->inode);
	e->hnext = c->buckets[bkt];
	c->buckets[bkt] = e;
	c->count++;
	c->bytes += entry_bytes(e);
	return e;
}

/* Whether cached entry e is stale: a failed load from an earlier flush, or (checked once per flush) a
 * file whose size or modification time changed since it was loaded. */
static bool stale(struct bincache *c, struct bin_entry *e, const struct bin_source *src)
{
	struct file_id now;
	struct stat st;

	if (e->failed)
		return e->failed_gen != c->gen;
	if (e->checked_gen == c->gen)
		return false;
	e->checked_gen = c->gen;
	if (bin_stat_mapped(src, &st) < 0)
		return false; /* the process is gone: keep what was read */
	file_id_of(&st, &now);
	return memcmp(&now, &e->id, sizeof(now)) != 0;
}

const struct binary *bincache_get(struct bincache *c, const struct bin_source *src)
{
	struct bin_entry *e = lookup(c, src->dev, src->inode);

	if (e && stale(c, e, src)) {
		drop(c, e);
		e = NULL;
	}
	if (!e) {
		e = add_entry(c, src);
		if (!e)
			return NULL;
	}
	lru_touch(&c->lru, &e->lru);
	e->used_gen = c->gen;
	return e->failed ? NULL : &e->bin;
}

void bincache_begin_flush(struct bincache *c)
{
	struct lru_node *old, *n;
	uint64_t arrivals = c->fetch ? debugfetch_arrivals(c->fetch) : 0;

	/* Debug files arrived: a binary whose file is there is loaded again at its next use; one the servers
	 * had not awaits no more; one dropped for a full queue is asked for again. */
	for (old = arrivals != c->arrivals ? lru_oldest(&c->lru) : NULL; old; old = n) {
		struct bin_entry *o = lru_entry(old, struct bin_entry, lru);
		char path[PATH_MAX];
		int err;

		n = lru_newer(&c->lru, old);
		if (o->failed || !o->bin.awaiting_debug)
			continue;
		err = debugfetch_path(c->fetch, o->bin.build_id, path, sizeof(path));
		if (err == 0)
			drop(c, o);
		else
			o->bin.awaiting_debug = err == -EAGAIN || err == -ENOSPC;
	}
	c->arrivals = arrivals;
	/* Back within the byte bound: the binaries the last flush did not use go, least recent first. */
	while (c->max_bytes && c->bytes > c->max_bytes && (old = lru_oldest(&c->lru))) {
		struct bin_entry *o = lru_entry(old, struct bin_entry, lru);

		if (o->used_gen == c->gen)
			break;
		drop(c, o);
		c->evicted++;
	}
	c->gen++;
}

int binary_vaddr(const struct binary *b, uint64_t file_off, bool exec, uint64_t *vaddr)
{
	return elf_segments_vaddr(b->segs, b->nsegs, file_off, exec, vaddr);
}

const char *binary_symbol(const struct binary *b, uint64_t vaddr)
{
	return b->syms ? elf_symtab_lookup(b->syms, vaddr) : NULL;
}

int binary_inlines(const struct binary *b, uint64_t vaddr, const char **names, int max)
{
	int n = b->inl ? inlines_at(b->inl, vaddr, names, max) : 0;

	return n < 0 ? 0 : n;
}

const char *binary_build_id(const struct binary *b)
{
	return b->build_id;
}

void bincache_get_stats(const struct bincache *c, struct bincache_stats *out)
{
	out->cached = c->count;
	out->bytes = c->bytes;
	out->evicted = c->evicted;
	out->over_bound = c->over_bound;
	out->debug_files_found = c->debug_files_found;
	out->symbols_dropped = c->symbols_dropped;
}

void bincache_free(struct bincache *c)
{
	struct lru_node *old;

	if (!c)
		return;
	while ((old = lru_oldest(&c->lru)))
		drop(c, lru_entry(old, struct bin_entry, lru));
	free(c->buckets);
	free(c->debug_dir);
	free(c);
}
