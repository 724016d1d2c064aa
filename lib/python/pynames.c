/* pynames.c - names Python frames from code objects read out of the process, cached (see pynames.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "util/hash.h"
#include "python/pylines.h"
#include "python/pynames.h"
#include "util/lru.h"

#define SHORT_SLOTS 512   /* shortened file names remembered, direct-mapped by file */
#define PACKAGE_DEPTH 32  /* directories climbed at most while shortening a file name */

/* A code object read once: its strings and line table follow it in the same allocation. */
struct code_entry {
	struct lru_node lru;
	struct code_entry *next;  /* in its bucket */
	uint32_t pid;
	uint64_t token, addr;
	struct py_code_id id;     /* what was there when read */
	uint64_t checked;         /* the flush it was last found still there in (or read and failed) */
	int err;                  /* 0, or why it could not be read: then it holds no strings and is read
				   * again in the next flush, not at each frame of this one */
	int first_line;
	enum py_linetable_kind kind;
	const char *name, *file, *short_file, *folded;
	const uint8_t *lines;
	size_t nlines, bytes;
	char data[];
};

struct short_slot {
	char file[PY_FILE_MAX];
	char short_file[PY_FILE_MAX];
};

struct pynames {
	struct pynames_opts o;
	struct code_entry **buckets;
	size_t nbuckets;          /* a power of two */
	struct lru_node lru;
	size_t count, bytes;
	struct short_slot *shorts; /* SHORT_SLOTS */
	uint64_t flush;            /* flushes begun */
	char short_buf[PY_FILE_MAX];
	struct pynames_stats st;
};

int pynames_new(const struct pynames_opts *opts, struct pynames **out)
{
	struct pynames *n;

	if (!opts->max_codes || !opts->max_bytes)
		return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->o = *opts;
	n->nbuckets = 64;
	while (n->nbuckets < opts->max_codes)
		n->nbuckets *= 2;
	n->buckets = calloc(n->nbuckets, sizeof(*n->buckets));
	n->shorts = calloc(SHORT_SLOTS, sizeof(*n->shorts));
	if (!n->buckets || !n->shorts) {
		pynames_free(n);
		return -ENOMEM;
	}
	lru_init(&n->lru);
	*out = n;
	return 0;
}

/* py_read_fn over process_vm_readv; ctx points at the pid. */
static int read_process(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = (pid_t)*(const uint32_t *)ctx;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (got < 0)
		return errno == ESRCH ? -ESRCH : errno == EPERM ? -EPERM : -EFAULT;
	return (size_t)got == len ? 0 : -EFAULT;
}

static size_t bucket_of(const struct pynames *n, uint32_t pid, uint64_t token, uint64_t addr)
{
	uint64_t k[3] = { pid, token, addr };

	return hash_words(k, 3) & (n->nbuckets - 1);
}

static void unlink_entry(struct pynames *n, struct code_entry *e)
{
	struct code_entry **pp = &n->buckets[bucket_of(n, e->pid, e->token, e->addr)];

	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (*pp)
		*pp = e->next;
	lru_remove(&e->lru);
	n->count--;
	n->bytes -= e->bytes;
	free(e);
}

/* Drops the least recently used entries until one of bytes more fits. */
static void make_room(struct pynames *n, size_t bytes)
{
	struct lru_node *old;

	while ((n->count >= n->o.max_codes || n->bytes + bytes > n->o.max_bytes) && (old = lru_oldest(&n->lru))) {
		unlink_entry(n, lru_entry(old, struct code_entry, lru));
		n->st.evicted++;
	}
}

/* Whether dir (under root) holds an __init__.py: a Python package. */
static bool is_package(const char *root, const char *dir, size_t len)
{
	char path[PY_FILE_MAX + 64];
	struct stat st;

	if ((size_t)snprintf(path, sizeof(path), "%s%.*s/__init__.py", root, (int)len, dir) >= sizeof(path))
		return false;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* file without the directories above its outermost package: "/usr/lib/python3.11/json/decoder.py" ->
 * "json/decoder.py", "/srv/app/prog.py" -> "prog.py". Looked up under the process's root. */
static const char *shorten(struct pynames *n, uint32_t pid, const char *file)
{
	struct short_slot *s = &n->shorts[hash_bytes(HASH_FNV_OFFSET, file, strlen(file)) % SHORT_SLOTS];
	char root[32];
	const char *keep, *p;
	struct stat st;

	if (file[0] != '/')
		return file; /* "<frozen runpy>", "<string>", a relative name */
	if (!strcmp(s->file, file))
		return s->short_file;
	snprintf(root, sizeof(root), "/proc/%u/root", pid);
	if (stat(root, &st))
		root[0] = '\0'; /* gone: its files as the daemon sees them */
	keep = strrchr(file, '/') + 1;
	for (int depth = 0; depth < PACKAGE_DEPTH && keep - 1 > file; depth++) {
		for (p = keep - 2; p > file && *p != '/'; p--)
			;
		if (!is_package(root, file, (size_t)(keep - 1 - file)))
			break;
		keep = p + 1; /* the package's directory is part of the name */
	}
	snprintf(s->file, sizeof(s->file), "%s", file);
	snprintf(s->short_file, sizeof(s->short_file), "%s", keep);
	return s->short_file;
}

/* Files e (its pid, token, addr and bytes set) in its bucket, as the most recently used. */
static void file_entry(struct pynames *n, struct code_entry *e)
{
	size_t b = bucket_of(n, e->pid, e->token, e->addr);

	e->next = n->buckets[b];
	n->buckets[b] = e;
	lru_init(&e->lru);
	lru_touch(&n->lru, &e->lru);
	n->count++;
	n->bytes += e->bytes;
}

/* Reads the code object at addr of pid and caches it. Returns it, or NULL with *err set. */
static struct code_entry *load(struct pynames *n, uint32_t pid, const struct pyproc_info *info, uint64_t addr,
			       int *err)
{
	struct py_code c;
	struct code_entry *e;
	const char *short_file;
	size_t nl, fl, sl, bytes;
	char *folded;

	*err = py_code_read(info->layout, info->code_type, read_process, &pid, addr, &c);
	if (*err)
		return NULL;
	short_file = shorten(n, pid, c.file);
	nl = strlen(c.name) + 1, fl = strlen(c.file) + 1, sl = strlen(short_file) + 1;
	bytes = sizeof(*e) + nl + fl + sl + nl + 2 + sl + c.nlines; /* the strings, "name (short)", lines */
	make_room(n, bytes);
	e = malloc(bytes);
	if (!e) {
		py_code_release(&c);
		*err = -ENOMEM;
		return NULL;
	}
	*e = (struct code_entry){ .pid = pid, .token = info->token, .addr = addr, .id = c.id, .checked = n->flush,
				  .first_line = c.firstlineno, .kind = info->layout->lines, .nlines = c.nlines,
				  .bytes = bytes };
	e->name = memcpy(e->data, c.name, nl);
	e->file = memcpy(e->data + nl, c.file, fl);
	e->short_file = memcpy(e->data + nl + fl, short_file, sl);
	folded = e->data + nl + fl + sl;
	sprintf(folded, "%s (%s)", e->name, e->short_file);
	for (char *p = folded; *p; p++) /* a name or file may hold anything; a folded stack may not */
		if (*p == ';' || (unsigned char)*p < 0x20)
			*p = '?';
	e->folded = folded;
	e->lines = c.nlines ? memcpy(folded + nl + 2 + sl, c.lines, c.nlines) : NULL;
	py_code_release(&c);
	file_entry(n, e);
	return e;
}

/* Remembers, until the next flush, that the code object at addr could not be read (err). */
static void remember_failure(struct pynames *n, uint32_t pid, const struct pyproc_info *info, uint64_t addr, int err)
{
	struct code_entry *e;

	make_room(n, sizeof(*e));
	e = malloc(sizeof(*e));
	if (!e)
		return;
	*e = (struct code_entry){ .pid = pid, .token = info->token, .addr = addr, .checked = n->flush, .err = err,
				  .name = "[unknown]", .file = "", .short_file = "python", .folded = "[unknown] (python)",
				  .bytes = sizeof(*e) };
	file_entry(n, e);
}

static struct code_entry *lookup(struct pynames *n, uint32_t pid, uint64_t token, uint64_t addr)
{
	for (struct code_entry *e = n->buckets[bucket_of(n, pid, token, addr)]; e; e = e->next)
		if (e->pid == pid && e->token == token && e->addr == addr)
			return e;
	return NULL;
}

/* Counts why a code object could not be read. */
static void count_failure(struct pynames *n, int err)
{
	if (err == -ESRCH)
		n->st.gone++;
	else if (err == -EINVAL)
		n->st.invalid++;
	else
		n->st.unreadable++;
}

void pynames_begin_flush(struct pynames *n)
{
	n->flush++;
}

/* Whether the code object cached in e is still the one at its address (checked once a flush). Only
 * another code object found there replaces it: a process that is gone or unreadable keeps what was
 * read, and so does one whose code object was freed (a Python that ends frees its modules' code while
 * its last samples wait to be named; they were taken while that code object was there). */
static bool still_there(struct pynames *n, struct code_entry *e, const struct pyproc_info *info)
{
	struct py_code_id now;
	uint32_t pid = e->pid;
	int rc;

	if (e->checked == n->flush)
		return true;
	e->checked = n->flush;
	rc = py_code_identify(info->layout, info->code_type, read_process, &pid, e->addr, &now);
	if (rc)
		return true; /* gone, unreadable or freed: what was read stands */
	return now.name == e->id.name && now.file == e->id.file && now.lines == e->id.lines &&
	       now.firstlineno == e->id.firstlineno;
}

void pynames_prefetch(struct pynames *n, uint32_t pid, const struct pyproc_info *info, uint64_t addr)
{
	int err;

	if (!info) {
		n->st.untracked++;
		return;
	}
	if (lookup(n, pid, info->token, addr))
		return;
	if (load(n, pid, info, addr, &err)) {
		n->st.prefetched++;
	} else {
		count_failure(n, err);
		remember_failure(n, pid, info, addr, err);
	}
}

int pynames_name(struct pynames *n, uint32_t pid, const struct pyproc_info *info, uint64_t v,
		 struct py_frame_name *out)
{
	uint64_t addr = PY_FRAME_CODE(v);
	unsigned instr = PY_FRAME_INSTR(v);
	struct code_entry *e = NULL;
	int err = -ENOENT, line;

	*out = (struct py_frame_name){ .folded = "[unknown] (python)", .name = "[unknown]", .file = "",
				       .short_file = "python" };
	if (!info) {
		n->st.untracked++;
		return -ENOENT;
	}
	e = lookup(n, pid, info->token, addr);
	if (e && e->err && e->checked != n->flush) { /* failed in an earlier flush: try again */
		unlink_entry(n, e);
		e = NULL;
	} else if (e && !e->err && !still_there(n, e, info)) {
		unlink_entry(n, e);
		n->st.replaced++;
		e = NULL;
	}
	if (e && e->err) {
		count_failure(n, e->err);
		lru_touch(&n->lru, &e->lru);
		return -ENOENT;
	}
	if (e) {
		n->st.hits++;
		lru_touch(&n->lru, &e->lru);
	} else {
		n->st.misses++;
		e = load(n, pid, info, addr, &err);
		if (!e) {
			count_failure(n, err);
			remember_failure(n, pid, info, addr, err);
			return -ENOENT;
		}
	}
	line = !n->o.lines || instr == PY_INSTR_UNKNOWN ? -ENOENT :
	       py_line_of(e->kind, e->lines, e->nlines, e->first_line, instr);
	*out = (struct py_frame_name){ .folded = e->folded, .name = e->name, .file = e->file, .short_file = e->short_file,
				       .first_line = e->first_line, .line = line > 0 ? line : 0 };
	return 0;
}

void pynames_get_stats(const struct pynames *n, struct pynames_stats *out)
{
	*out = n->st;
	out->codes = n->count;
	out->bytes = n->bytes;
}

void pynames_free(struct pynames *n)
{
	struct lru_node *old;

	if (!n)
		return;
	while (n->buckets && (old = lru_oldest(&n->lru)))
		unlink_entry(n, lru_entry(old, struct code_entry, lru));
	free(n->buckets);
	free(n->shorts);
	free(n);
}
