/* jitdump.c - JIT code names from jitdump files (see jitdump.h), read through elf/jitdumpfile.h: the
 * names of CODE_LOAD records, and CODE_MOVE records' code named as it was where it was. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/jitdumpfile.h"
#include "elf/mapped.h"
#include "symbolize/jitdump.h"
#include "symbolize/jitsyms.h"
#include "util/pidcache.h"

#define NAME_BYTES (64u << 20)
#define IDLE_FLUSHES 6
#define DEFAULT_PROCESSES 1024

struct jitdump_table {
	struct jitsyms *syms;
	struct jitdump_file f;
	struct jitdump_stats *st; /* of the read going on */
};

int jitdump_table_new(struct jitdump_table **out)
{
	struct jitdump_table *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t || jitsyms_new(JITDUMP_MAX_SYMBOLS, NAME_BYTES, &t->syms)) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void jitdump_table_free(struct jitdump_table *t)
{
	if (!t)
		return;
	jitsyms_free(t->syms);
	jitdump_file_reset(&t->f);
	free(t);
}

/* Adds the code a CODE_LOAD record names: its body is body bytes long, of which the first have (its
 * fields and at most JITSYMS_MAX_NAME bytes of name) are at b. */
static int add_load(struct jitdump_table *t, uint64_t stamp, const unsigned char *b, uint64_t have, uint64_t body,
		    struct jitdump_stats *st)
{
	uint64_t code_addr, code_size, name_end, avail;
	const unsigned char *name = b + JITDUMP_LOAD_FIXED, *nul;
	size_t len;
	int r;

	if (body < JITDUMP_LOAD_FIXED + 1 || have < JITDUMP_LOAD_FIXED) {
		st->records_bad++;
		return 0;
	}
	code_addr = jitdump_u64(b + 16);
	code_size = jitdump_u64(b + 24);
	/* The name ends (NUL) before the code bytes, which end the record. */
	if (code_size > body - JITDUMP_LOAD_FIXED - 1) {
		st->records_bad++;
		return 0;
	}
	name_end = body - code_size;
	avail = (name_end < have ? name_end : have) - JITDUMP_LOAD_FIXED;
	nul = memchr(name, '\0', avail);
	if (nul)
		len = (size_t)(nul - name);
	else if (name_end > have)
		len = (size_t)avail; /* longer than a name is kept: cut */
	else {
		st->records_bad++;
		return 0;
	}
	r = jitsyms_add_at(t->syms, code_addr, code_size, stamp, (const char *)name, len);
	if (r < 0)
		return r;
	if (r)
		st->symbols_dropped++;
	else
		st->loads++;
	return 0;
}

/* Names the code a CODE_MOVE record moved (at stamp) as it was named where it was then. */
static int add_move(struct jitdump_table *t, uint64_t stamp, const unsigned char *b, uint64_t len,
		    struct jitdump_stats *st)
{
	const char *name;
	int r;

	if (len < JITDUMP_MOVE_FIXED) {
		st->records_bad++;
		return 0;
	}
	st->moves++;
	name = jitsyms_find_before(t->syms, jitdump_u64(b + 16), stamp);
	if (!name)
		return 0;
	r = jitsyms_add_at(t->syms, jitdump_u64(b + 24), jitdump_u64(b + 32), stamp, name, strlen(name));
	if (r > 0)
		st->symbols_dropped++;
	return r < 0 ? r : 0;
}

/* jitdump_peek_fn: CODE_LOAD's fields and name (not its code), CODE_MOVE's fields. */
static uint64_t peek(uint32_t id, uint64_t body)
{
	(void)body;
	return id == JITDUMP_LOAD ? JITDUMP_LOAD_FIXED + JITSYMS_MAX_NAME : id == JITDUMP_MOVE ? JITDUMP_MOVE_FIXED : 0;
}

/* jitdump_record_fn */
static int record(void *ctx, uint32_t id, uint64_t stamp, const unsigned char *b, uint64_t have, uint64_t body)
{
	struct jitdump_table *t = ctx;

	if (id == JITDUMP_LOAD)
		return add_load(t, stamp, b, have, body, t->st);
	if (id == JITDUMP_MOVE)
		return add_move(t, stamp, b, have, t->st);
	return 0;
}

int jitdump_table_read(struct jitdump_table *t, int fd, struct jitdump_stats *st)
{
	struct jitdump_file_stats fs = { 0 };
	int err;

	t->st = st;
	err = jitdump_file_read(&t->f, fd, peek, record, t, &fs);
	st->files_read += fs.files_read;
	st->files_bad += fs.files_bad;
	st->records += fs.records;
	st->records_bad += fs.records_bad;
	st->files_cut += fs.files_cut;
	return err;
}

const char *jitdump_table_find(struct jitdump_table *t, uint64_t addr, uint64_t mono_ns)
{
	if (!t)
		return NULL;
	if (t->f.flags & JITDUMP_FLAGS_ARCH_TIMESTAMP)
		mono_ns = 0; /* the CPU's counter: no time of ours compares with it */
	return jitsyms_find_before(t->syms, addr, mono_ns);
}

uint64_t jitdump_table_replaced_at(struct jitdump_table *t)
{
	if (!t || t->f.flags & JITDUMP_FLAGS_ARCH_TIMESTAMP)
		return 0; /* looked up without times */
	return jitsyms_replaced_at(t->syms);
}

int jitdump_table_header(const struct jitdump_table *t, uint32_t *pid, uint64_t *stamp)
{
	if (!t || !t->f.offset)
		return -EAGAIN;
	*pid = t->f.pid;
	*stamp = t->f.stamp;
	return 0;
}

size_t jitdump_table_count(const struct jitdump_table *t)
{
	return t ? jitsyms_count(t->syms) : 0;
}

/* ---- per process ---- */

struct dumpproc {
	struct pidcache_entry e; /* first */
	uint64_t dev, inode;     /* of the file read into t */
	char *path;              /* its path, as the process sees it */
	uint64_t read_gen;
	bool read;
	struct jitdump_table *t;
};

struct jitdump_cache {
	struct pidcache procs;
	struct jitdump_stats st;
};

static void release(struct pidcache_entry *e, void *ctx)
{
	(void)ctx;
	jitdump_table_free(((struct dumpproc *)e)->t);
	free(((struct dumpproc *)e)->path);
}

int jitdump_cache_new(unsigned max_processes, struct jitdump_cache **out)
{
	struct jitdump_cache *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c || pidcache_init(&c->procs, max_processes ? max_processes : DEFAULT_PROCESSES, sizeof(struct dumpproc),
				release, NULL)) {
		free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

void jitdump_cache_free(struct jitdump_cache *c)
{
	if (!c)
		return;
	pidcache_fini(&c->procs);
	free(c);
}

void jitdump_cache_begin_flush(struct jitdump_cache *c)
{
	pidcache_begin_flush(&c->procs, IDLE_FLUSHES);
}

void jitdump_cache_keep(struct jitdump_cache *c, uint32_t pid)
{
	pidcache_keep(&c->procs, pid);
}

/* Reads on the jitdump file open on fd (path: as the process sees it) into p; closes fd. */
static void read_fd(struct jitdump_cache *c, struct dumpproc *p, int fd, const char *path)
{
	struct stat sb;

	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return;
	}
	if (p->t && (p->dev != (uint64_t)sb.st_dev || p->inode != (uint64_t)sb.st_ino)) {
		jitdump_table_free(p->t); /* another file: the pid reused, or the runtime started anew */
		p->t = NULL;
	}
	if (!p->t && !jitdump_table_new(&p->t)) {
		p->dev = (uint64_t)sb.st_dev;
		p->inode = (uint64_t)sb.st_ino;
		free(p->path);
		p->path = strdup(path);
	}
	if (p->t)
		jitdump_table_read(p->t, fd, &c->st);
	close(fd);
}

/* Reads on pid's jitdump file (mapped at m) into p. */
static void read_on(struct jitdump_cache *c, struct dumpproc *p, uint32_t pid, const struct procmap *m)
{
	struct bin_source src = bin_source_of(pid, m);
	char root[BIN_ROOT_LEN];
	int fd = bin_open_mapped(&src, root);

	if (fd >= 0) /* else gone: what was read stays */
		read_fd(c, p, fd, m->path);
}

/* A process whose mappings were read before it mapped its jitdump file, and that is gone since (its
 * samples named late, after it exited: deferred, or a busy host): the file where CPython writes it,
 * /tmp/jit-PID.dump (V8 writes it in its working directory: not found so), when its header names pid. */
static void read_default(struct jitdump_cache *c, struct dumpproc *p, uint32_t pid)
{
	char path[64];
	uint64_t stamp;
	uint32_t hpid;
	int fd;

	snprintf(path, sizeof(path), "/tmp/jit-%u.dump", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return;
	read_fd(c, p, fd, path);
	if (p->t && jitdump_table_header(p->t, &hpid, &stamp) == 0 && hpid != pid) {
		jitdump_table_free(p->t); /* another process's */
		p->t = NULL;
		free(p->path);
		p->path = NULL;
	}
}

/* Reads on p's file (pid's, among maps), once a flush. */
static void read_once(struct jitdump_cache *c, struct dumpproc *p, uint32_t pid, const struct procmap *maps,
		      size_t n)
{
	size_t i;

	if (p->read && p->read_gen == c->procs.gen)
		return;
	p->read = true;
	p->read_gen = c->procs.gen;
	for (i = 0; i < n; i++)
		if (maps[i].path && maps[i].path[0] == '/' && jitdump_path(maps[i].path)) {
			read_on(c, p, pid, &maps[i]);
			break;
		}
	if (i == n && !p->t && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		read_default(c, p, pid);
}

const char *jitdump_cache_find(struct jitdump_cache *c, uint32_t pid, const struct procmap *maps, size_t n,
			       uint64_t addr, uint64_t mono_ns)
{
	struct dumpproc *p = (struct dumpproc *)pidcache_get(&c->procs, pid);

	if (!p)
		return NULL;
	read_once(c, p, pid, maps, n);
	return jitdump_table_find(p->t, addr, mono_ns);
}

bool jitdump_cache_by_time(struct jitdump_cache *c, uint32_t pid, const struct procmap *maps, size_t n,
			   uint64_t mono_ns)
{
	struct dumpproc *p = (struct dumpproc *)pidcache_find(&c->procs, pid);

	if (!p)
		return false;
	read_once(c, p, pid, maps, n);
	return jitdump_table_replaced_at(p->t) > mono_ns;
}

bool jitdump_cache_has(struct jitdump_cache *c, uint32_t pid)
{
	const struct dumpproc *p = (const struct dumpproc *)pidcache_find(&c->procs, pid);
	uint64_t stamp;
	uint32_t hpid;

	return p && jitdump_table_header(p->t, &hpid, &stamp) == 0;
}

int jitdump_cache_file(struct jitdump_cache *c, uint32_t pid, char *path, size_t cap, uint64_t *stamp)
{
	struct dumpproc *p = (struct dumpproc *)pidcache_find(&c->procs, pid);
	uint32_t hpid;

	if (!p || !p->path || jitdump_table_header(p->t, &hpid, stamp) < 0 ||
	    (size_t)snprintf(path, cap, "%s", p->path) >= cap)
		return -ENOENT;
	return 0;
}

void jitdump_cache_get_stats(const struct jitdump_cache *c, struct jitdump_stats *out)
{
	*out = c->st;
	out->processes = c->procs.count;
}
