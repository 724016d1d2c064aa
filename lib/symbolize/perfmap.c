/* perfmap.c - JIT symbols from perf maps: a bounded parser, sorted tables read as files grow, a per-pid cache. */
#include "symbolize/perfmap.h"
#include "util/procstat.h"
#include "util/textparse.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/pidcache.h"

#define READ_CHUNK 65536
#define LINE_KEPT (PERFMAP_MAX_NAME + 128) /* bytes of a line kept: its numbers, blanks and the longest name */
#define TAIL_LEN 64                        /* bytes before the read offset kept, to notice a rewritten file */
#define FIND_WALK 64                       /* symbols starting below an address looked at for overlaps */
#define COMPACT_MIN (64u << 10)            /* name bytes of replaced symbols tolerated before compaction */
#define IDLE_FLUSHES 6                     /* a process not looked up for this many flushes is dropped */
#define DEFAULT_MAX_PROCESSES 4096

/* ---- the line parser ---- */

/* p past spaces and tabs. */
static const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Parses a hex number with an optional "0x" and the blanks after it (at least one). Returns 0 or -EINVAL. */
static int parse_field(const char **p, uint64_t *v)
{
	const char *s = *p;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (text_parse_uint(&s, 16, 16, v) < 0 || (*s != ' ' && *s != '\t'))
		return -EINVAL;
	*p = skip_blanks(s);
	return 0;
}

int perfmap_parse_line(const char *line, uint64_t *start, uint64_t *size, const char **name, size_t *name_len)
{
	const char *p = skip_blanks(line);
	size_t len;

	if (parse_field(&p, start) < 0 || parse_field(&p, size) < 0)
		return -EINVAL;
	len = strlen(p);
	while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	if (len == 0 || *size == 0 || *start > UINT64_MAX - *size)
		return -EINVAL;
	*name = p;
	*name_len = len;
	return 0;
}

/* len, less an incomplete UTF-8 sequence at the end of s[0, len) (a cut made inside a character). */
static size_t utf8_trim(const char *s, size_t len)
{
	size_t i = len, need;
	unsigned char c;

	while (i > 0 && len - i < 4 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0 || (unsigned char)s[i - 1] < 0xc0)
		return len; /* ASCII, or stray continuation bytes: left as they are */
	c = (unsigned char)s[i - 1];
	need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	return len - (i - 1) < need ? i - 1 : len;
}

/* ---- one table ---- */

/* One symbol. */
struct jit_sym {
	uint64_t start, end;
	uint64_t maxend; /* the largest end of this symbol and every one before it in the table */
	uint64_t seq;    /* the order of its line: the later line wins where ranges overlap */
	size_t name;     /* offset in the name pool */
};

/* A growable array of symbols. */
struct sym_list {
	struct jit_sym *v;
	size_t n, cap;
};

struct perfmap_table {
	struct sym_list syms; /* sorted by start; starts are unique (a later line at the same start replaces) */
	char *pool;           /* NUL-terminated names */
	size_t pool_len, pool_cap;
	size_t pool_dead;     /* bytes of names no symbol refers to any more */
	size_t max;
	uint64_t next_seq;
	uint64_t offset;      /* bytes of the file consumed */
	bool in_long_line;    /* offset is inside an over-long line whose head was skipped: drop up to its newline */
	unsigned char tail[TAIL_LEN];
	size_t tail_len;      /* bytes of tail: the file's bytes just before offset */
};

/* The state of one read: a chunk of the file and the line being assembled. */
struct reader {
	char chunk[READ_CHUNK];
	char line[LINE_KEPT + 1];
	size_t len;    /* bytes in line */
	bool cut;      /* the line was longer than LINE_KEPT */
	bool nul;      /* the line holds a NUL byte */
	bool discard;  /* the rest of a line already given up: skip to its newline */
	struct sym_list batch;
	struct perfmap_stats counts;
	unsigned char tail[TAIL_LEN]; /* the file's bytes before the new offset */
	size_t tail_len;
};

int perfmap_table_new(size_t max_entries, struct perfmap_table **out)
{
	struct perfmap_table *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->max = max_entries ? max_entries : PERFMAP_MAX_ENTRIES;
	*out = t;
	return 0;
}

void perfmap_table_free(struct perfmap_table *t)
{
	if (!t)
		return;
	free(t->syms.v);
	free(t->pool);
	free(t);
}

uint64_t perfmap_table_offset(const struct perfmap_table *t)
{
	return t->offset;
}

size_t perfmap_table_count(const struct perfmap_table *t)
{
	return t->syms.n;
}

/* Appends name (len bytes, then a NUL) to the pool at *off. Returns 0 or -ENOMEM. */
static int pool_add(struct perfmap_table *t, const char *name, size_t len, size_t *off)
{
	size_t cap = t->pool_cap ? t->pool_cap : 65536;
	char *p;

	while (cap - t->pool_len < len + 1)
		cap *= 2;
	if (cap != t->pool_cap) {
		p = realloc(t->pool, cap);
		if (!p)
			return -ENOMEM;
		t->pool = p;
		t->pool_cap = cap;
	}
	memcpy(t->pool + t->pool_len, name, len);
	t->pool[t->pool_len + len] = '\0';
	*off = t->pool_len;
	t->pool_len += len + 1;
	return 0;
}

/* Appends the symbol [start, end) named name to batch b. Returns 0 or -ENOMEM. */
static int push_sym(struct perfmap_table *t, struct sym_list *b, uint64_t start, uint64_t end, const char *name,
		    size_t len)
{
	struct jit_sym *v;
	size_t cap, off;

	if (b->n == b->cap) {
		cap = b->cap ? b->cap * 2 : 256;
		v = realloc(b->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	if (pool_add(t, name, len, &off) < 0)
		return -ENOMEM;
	b->v[b->n++] = (struct jit_sym){ .start = start, .end = end, .seq = t->next_seq++, .name = off };
	return 0;
}

/* Adds the complete line held by r to its batch, or counts why not. Returns 0 or -ENOMEM. */
static int add_line(struct perfmap_table *t, struct reader *r)
{
	uint64_t start, size;
	const char *name;
	size_t len;

	r->line[r->len] = '\0';
	if (r->nul || perfmap_parse_line(r->line, &start, &size, &name, &len) < 0) {
		r->counts.lines_skipped++;
		return 0;
	}
	if (r->cut || len > PERFMAP_MAX_NAME) {
		r->counts.names_truncated++;
		len = utf8_trim(name, len < PERFMAP_MAX_NAME ? len : PERFMAP_MAX_NAME);
	}
	if (t->syms.n + r->batch.n >= t->max) {
		r->counts.entries_dropped++;
		return 0;
	}
	return push_sym(t, &r->batch, start, start + size, name, len);
}

/* Adds [p, e) to the line being assembled, up to LINE_KEPT bytes. */
static void keep(struct reader *r, const char *p, const char *e)
{
	size_t n = (size_t)(e - p), room = LINE_KEPT - r->len;

	if (r->discard)
		return;
	if (memchr(p, '\0', n))
		r->nul = true;
	if (n > room) {
		r->cut = true;
		n = room;
	}
	memcpy(r->line + r->len, p, n);
	r->len += n;
}

/* Ends the line being assembled at its newline. Returns 0 or -ENOMEM. */
static int end_line(struct perfmap_table *t, struct reader *r)
{
	int err = 0;

	if (!r->discard)
		err = add_line(t, r);
	r->len = 0;
	r->cut = r->nul = r->discard = false;
	return err;
}

/* Feeds the n bytes of r->chunk read at file offset pos; *done moves past each complete line.
 * Returns 0 or -ENOMEM. */
static int take_chunk(struct perfmap_table *t, struct reader *r, size_t n, uint64_t pos, uint64_t *done)
{
	const char *p = r->chunk, *end = r->chunk + n, *nl;
	int err;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		keep(r, p, nl ? nl : end);
		if (!nl)
			break;
		*done = pos + (uint64_t)(nl + 1 - r->chunk);
		err = end_line(t, r);
		if (err)
			return err;
		p = nl + 1;
	}
	return 0;
}

/* Orders symbols by start, then by line. */
static int sym_cmp(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return 0;
}

/* Rewrites the pool with only the names symbols refer to; keeps the old one when out of memory. */
static void compact(struct perfmap_table *t)
{
	size_t live = 0, at = 0, len, i;
	char *p;

	for (i = 0; i < t->syms.n; i++)
		live += strlen(t->pool + t->syms.v[i].name) + 1;
	p = malloc(live ? live : 1);
	if (!p)
		return;
	for (i = 0; i < t->syms.n; i++) {
		len = strlen(t->pool + t->syms.v[i].name) + 1;
		memcpy(p + at, t->pool + t->syms.v[i].name, len);
		t->syms.v[i].name = at;
		at += len;
	}
	free(t->pool);
	t->pool = p;
	t->pool_cap = live ? live : 1;
	t->pool_len = at;
	t->pool_dead = 0;
}

/* Merges batch b (in line order) into the sorted table: a later symbol at the same start replaces the
 * earlier one. Returns 0 or -ENOMEM (the table unchanged). */
static int merge(struct perfmap_table *t, struct sym_list *b)
{
	const struct jit_sym *old = t->syms.v, *x;
	size_t i = 0, j = 0, n = 0, cap = t->syms.n + b->n;
	struct jit_sym *v;
	uint64_t maxend = 0;

	if (b->n == 0)
		return 0;
	qsort(b->v, b->n, sizeof(*b->v), sym_cmp);
	v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	while (i < t->syms.n || j < b->n) {
		x = j == b->n || (i < t->syms.n && sym_cmp(&old[i], &b->v[j]) < 0) ? &old[i++] : &b->v[j++];
		if (n > 0 && v[n - 1].start == x->start)
			t->pool_dead += strlen(t->pool + v[--n].name) + 1;
		v[n++] = *x;
	}
	for (i = 0; i < n; i++) {
		maxend = v[i].end > maxend ? v[i].end : maxend;
		v[i].maxend = maxend;
	}
	free(t->syms.v);
	t->syms.v = v;
	t->syms.n = n;
	t->syms.cap = cap;
	if (t->pool_dead > COMPACT_MIN && t->pool_dead > t->pool_len / 2)
		compact(t);
	return 0;
}

/* Reads the TAIL_LEN (or fewer) bytes of fd before off into r->tail. Returns 0 or -errno. */
static int read_tail(struct reader *r, int fd, uint64_t off)
{
	size_t len = off < TAIL_LEN ? (size_t)off : TAIL_LEN;
	ssize_t got;

	do
		got = pread(fd, r->tail, len, (off_t)(off - len));
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	if ((size_t)got != len)
		return -EIO;
	r->tail_len = len;
	return 0;
}

/* Reads from t->offset on, at most PERFMAP_READ_BUDGET bytes, into r; *done: the end of the last complete
 * line. Returns 0 or -errno. */
static int read_lines(struct perfmap_table *t, int fd, struct reader *r, uint64_t *done)
{
	uint64_t pos = t->offset;
	ssize_t got;
	int err;

	r->discard = t->in_long_line;
	while (pos - t->offset < PERFMAP_READ_BUDGET) {
		got = pread(fd, r->chunk, sizeof(r->chunk), (off_t)pos);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		err = take_chunk(t, r, (size_t)got, pos, done);
		if (err)
			return err;
		pos += (uint64_t)got;
	}
	if (r->cut || (r->discard && pos > *done)) {
		*done = pos; /* an unfinished over-long line: give up its head, drop the rest later */
		if (r->cut)
			r->counts.lines_skipped++;
	}
	return 0;
}

int perfmap_table_read(struct perfmap_table *t, int fd, struct perfmap_stats *st)
{
	struct reader *r = calloc(1, sizeof(*r));
	size_t pool_mark = t->pool_len;
	uint64_t done = t->offset;
	bool long_line;
	int err;

	if (!r)
		return -ENOMEM;
	err = read_lines(t, fd, r, &done);
	long_line = r->cut || r->discard;
	if (!err && done != t->offset)
		err = read_tail(r, fd, done);
	if (!err)
		err = merge(t, &r->batch);
	if (err) {
		t->pool_len = pool_mark;
	} else {
		if (done != t->offset) {
			memcpy(t->tail, r->tail, r->tail_len);
			t->tail_len = r->tail_len;
		}
		t->offset = done;
		t->in_long_line = long_line;
		st->lines_skipped += r->counts.lines_skipped;
		st->names_truncated += r->counts.names_truncated;
		st->entries_dropped += r->counts.entries_dropped;
	}
	free(r->batch.v);
	free(r);
	return err;
}

bool perfmap_table_unchanged(const struct perfmap_table *t, int fd)
{
	unsigned char buf[TAIL_LEN];
	ssize_t got;

	if (t->tail_len == 0)
		return true;
	do
		got = pread(fd, buf, t->tail_len, (off_t)(t->offset - t->tail_len));
	while (got < 0 && errno == EINTR);
	return got == (ssize_t)t->tail_len && memcmp(buf, t->tail, t->tail_len) == 0;
}

const char *perfmap_table_find(const struct perfmap_table *t, uint64_t addr)
{
	const struct jit_sym *v = t->syms.v, *best = NULL;
	size_t lo = 0, hi = t->syms.n, mid, steps;

	while (lo < hi) { /* lo: the first symbol starting above addr */
		mid = lo + (hi - lo) / 2;
		if (v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (steps = 0; lo > 0 && steps < FIND_WALK && v[lo - 1].maxend > addr; lo--, steps++) {
		if (addr < v[lo - 1].end && (!best || v[lo - 1].seq > best->seq))
			best = &v[lo - 1];
	}
	return best ? t->pool + best->name : NULL;
}

/* ---- the process a perf map belongs to ---- */

/* What the checks need to know of a process. */
struct proc_ids {
	uint64_t starttime;   /* field 22 of /proc/PID/stat: tells a reused pid */
	uint32_t ruid, euid;
	uint32_t nspid;       /* the pid in its own pid namespace */
};

/* Parses "Uid:" values (real, effective, ...) at p. Returns 0 or -EINVAL. */
static int parse_uids(const char *p, struct proc_ids *id)
{
	uint64_t r, e;

	p = skip_blanks(p);
	if (text_parse_uint(&p, 10, 10, &r) < 0)
		return -EINVAL;
	p = skip_blanks(p);
	if (text_parse_uint(&p, 10, 10, &e) < 0 || r > UINT32_MAX || e > UINT32_MAX)
		return -EINVAL;
	id->ruid = (uint32_t)r;
	id->euid = (uint32_t)e;
	return 0;
}

/* The last of the "NStgid:" values at p into *out (unchanged when there is none). */
static void parse_last_pid(const char *p, uint32_t *out)
{
	uint64_t v;

	for (p = skip_blanks(p); text_parse_uint(&p, 10, 10, &v) == 0; p = skip_blanks(p)) {
		if (v > 0 && v <= UINT32_MAX)
			*out = (uint32_t)v;
	}
}

/* Reads the uids and namespace pid of pid from /proc/PID/status. Returns 0 or -errno. */
static int read_status(uint32_t pid, struct proc_ids *id)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	bool have_uids = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	id->nspid = pid; /* a kernel without NStgid (before 4.1) */
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "Uid:", 4) == 0)
			have_uids = parse_uids(line + 4, id) == 0;
		else if (strncmp(line, "NStgid:", 7) == 0)
			parse_last_pid(line + 7, &id->nspid);
	}
	free(line);
	fclose(f);
	return have_uids ? 0 : -EINVAL;
}

/* Reads what the checks need of pid. Returns 0 or -errno (-ENOENT: gone). */
static int read_ids(uint32_t pid, struct proc_ids *id)
{
	struct procstat ps = { 0 };
	int err = procstat_read(NULL, pid, &ps);

	id->starttime = ps.starttime;
	return err ? err : read_status(pid, id);
}

/* Opens rel under the directory root as if root were "/": with openat2 every component resolves inside
 * root (the process's own /tmp, symlinks included); without it (old kernel, seccomp) a symlink at the end
 * is still refused. Never blocks on a FIFO. Returns an fd or -errno. */
static int open_under(const char *root, const char *rel)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int dirfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC), fd, err;

	if (dirfd < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		fd = openat(dirfd, rel, (int)how.flags);
	err = fd < 0 ? -errno : 0;
	close(dirfd);
	return fd < 0 ? err : fd;
}

/* A perf map may be trusted: a regular file, not writable by others, owned by root or the process. */
static bool trusted(const struct stat *st, const struct proc_ids *id)
{
	return S_ISREG(st->st_mode) && !(st->st_mode & S_IWOTH) &&
	       (st->st_uid == 0 || st->st_uid == id->ruid || st->st_uid == id->euid);
}

/* ---- the cache ---- */

/* One process's perf map. */
struct jitproc {
	struct pidcache_entry e;      /* pid, last use, LRU */
	bool checked;                 /* checked at least once */
	uint64_t checked_gen;         /* flush in which the file was last checked */
	uint64_t starttime;           /* of the process the table was read for */
	struct perfmap_table *t;      /* NULL: no perf map in use */
	uint64_t dev, ino;            /* the file t was read from */
	uint64_t refused[3];          /* dev, inode, ctime of the last file refused: counted once */
	struct proc_ids ids;          /* what the checks knew of the process while it lived */
	bool have_ids, read_after_exit;
};

struct perfmap_cache {
	struct pidcache procs; /* of struct jitproc */
	size_t max_entries, max_total;
	struct perfmap_stats st; /* processes and symbols kept up to date */
};

static void release(struct pidcache_entry *e, void *ctx);

int perfmap_cache_new(const struct perfmap_cache_opts *opts, struct perfmap_cache **out)
{
	const struct perfmap_cache_opts none = { 0 };
	struct perfmap_cache *c;
	int err;

	if (!opts)
		opts = &none;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->max_entries = opts->max_entries ? opts->max_entries : PERFMAP_MAX_ENTRIES;
	c->max_total = opts->max_total ? opts->max_total : PERFMAP_MAX_TOTAL;
	err = pidcache_init(&c->procs, opts->max_processes ? opts->max_processes : DEFAULT_MAX_PROCESSES,
			    sizeof(struct jitproc), release, c);
	if (err) {
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

/* Frees p's table, if any. */
static void forget(struct perfmap_cache *c, struct jitproc *p)
{
	if (!p->t)
		return;
	c->st.symbols -= perfmap_table_count(p->t);
	c->st.processes--;
	perfmap_table_free(p->t);
	p->t = NULL;
}

/* Frees what an entry holds, before the cache frees it. */
static void release(struct pidcache_entry *e, void *ctx)
{
	forget(ctx, (struct jitproc *)e);
}

/* Drops the least recently used processes (never keep) while the symbols held exceed the bound. */
static void trim(struct perfmap_cache *c, const struct jitproc *keep)
{
	struct pidcache_entry *old;

	while (c->st.symbols > c->max_total && (old = pidcache_oldest(&c->procs))) {
		if (old == &keep->e)
			break;
		pidcache_drop(&c->procs, old);
	}
}

/* Counts a refused file once (st NULL: a symlink). */
static void refuse(struct perfmap_cache *c, struct jitproc *p, const struct stat *st)
{
	uint64_t key[3] = { 0, 0, 0 };

	if (st) {
		key[0] = st->st_dev;
		key[1] = st->st_ino;
		key[2] = (uint64_t)st->st_ctim.tv_sec * 1000000000u + (uint64_t)st->st_ctim.tv_nsec;
	} else {
		key[0] = 1; /* no file is on device 1 with inode 0 */
	}
	if (memcmp(key, p->refused, sizeof(key)) == 0)
		return;
	memcpy(p->refused, key, sizeof(key));
	c->st.files_rejected++;
}

/* Opens and checks pid's perf map: in its own /tmp under its namespace pid, then in ours.
 * Returns an fd (*st filled), -ENOENT (none) or -EPERM (refused, counted). */
static int open_checked(struct perfmap_cache *c, struct jitproc *p, const struct proc_ids *id, struct stat *st)
{
	char root[64], rel[64];
	int fd, i, ret = -ENOENT;

	for (i = 0; i < 2; i++) {
		if (i == 0)
			snprintf(root, sizeof(root), "/proc/%" PRIu32 "/root", p->e.pid);
		else
			snprintf(root, sizeof(root), "/");
		snprintf(rel, sizeof(rel), "tmp/perf-%" PRIu32 ".map", i == 0 ? id->nspid : p->e.pid);
		fd = open_under(root, rel);
		if (fd == -ELOOP) {
			refuse(c, p, NULL);
			ret = -EPERM;
		}
		if (fd < 0)
			continue;
		if (fstat(fd, st) == 0 && trusted(st, id))
			return fd;
		refuse(c, p, st);
		ret = -EPERM;
		close(fd);
	}
	return ret;
}

/* Brings p's table up to date with the open, checked file fd: reads what was appended, or the whole
 * file when it is another file or was rewritten. Keeps the old table when that fails. */
static void load(struct perfmap_cache *c, struct jitproc *p, int fd, const struct stat *st)
{
	struct perfmap_table *t = p->t;
	size_t before;

	if (t && p->dev == (uint64_t)st->st_dev && p->ino == (uint64_t)st->st_ino &&
	    (uint64_t)st->st_size >= perfmap_table_offset(t)) {
		if ((uint64_t)st->st_size == perfmap_table_offset(t))
			return;
		if (perfmap_table_unchanged(t, fd)) {
			before = perfmap_table_count(t);
			if (perfmap_table_read(t, fd, &c->st) == 0)
				c->st.symbols += perfmap_table_count(t) - before;
			trim(c, p);
			return;
		}
	}
	if (perfmap_table_new(c->max_entries, &t) < 0)
		return;
	if (perfmap_table_read(t, fd, &c->st) < 0) {
		perfmap_table_free(t);
		return;
	}
	forget(c, p);
	p->t = t;
	p->dev = (uint64_t)st->st_dev;
	p->ino = (uint64_t)st->st_ino;
	c->st.files_loaded++;
	c->st.processes++;
	c->st.symbols += perfmap_table_count(t);
	trim(c, p);
}

/* Checks p's perf map once per flush: the process's identity, the file's owner, what was appended. */
static void check(struct perfmap_cache *c, struct jitproc *p)
{
	struct proc_ids id = { 0 };
	struct stat st;
	int fd;

	p->checked = true;
	p->checked_gen = c->procs.gen;
	if (read_ids(p->e.pid, &id) < 0) {
		/* Gone: what was read stays, and the file (still on disk; runtimes append to it until
		 * they exit) is read once more, checked against the owner the process had. */
		if (!p->have_ids || p->read_after_exit)
			return;
		p->read_after_exit = true;
		id = p->ids;
	} else {
		if (id.starttime != p->starttime)
			forget(c, p); /* another process under the same pid */
		p->starttime = id.starttime;
		p->ids = id;
		p->have_ids = true;
	}
	fd = open_checked(c, p, &id, &st);
	if (fd == -EPERM)
		forget(c, p);
	if (fd < 0)
		return; /* none (a table read before stays: the file was removed), or refused */
	load(c, p, fd, &st);
	close(fd);
}

const char *perfmap_cache_find(struct perfmap_cache *c, uint32_t pid, uint64_t addr)
{
	struct jitproc *p = (struct jitproc *)pidcache_get(&c->procs, pid);

	if (!p)
		return NULL;
	if (!p->checked || p->checked_gen != c->procs.gen)
		check(c, p);
	return p->t ? perfmap_table_find(p->t, addr) : NULL;
}

void perfmap_cache_begin_flush(struct perfmap_cache *c)
{
	pidcache_begin_flush(&c->procs, IDLE_FLUSHES);
}

void perfmap_cache_keep(struct perfmap_cache *c, uint32_t pid)
{
	pidcache_keep(&c->procs, pid);
}

void perfmap_cache_get_stats(const struct perfmap_cache *c, struct perfmap_stats *out)
{
	*out = c->st;
}

void perfmap_cache_free(struct perfmap_cache *c)
{
	if (!c)
		return;
	pidcache_fini(&c->procs);
	free(c);
}
