/* pynames.c - names Python frames from code objects read out of the process, cached (see pynames.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "hash.h"
#include "python/pylines.h"
#include "python/pynames.h"
#include "symbolize/lru.h"

#define SHORT_SLOTS 512   /* shortened file names remembered, direct-mapped by file */
#define PACKAGE_DEPTH 32  /* directories climbed at most while shortening a file name */

/* A code object read once: its strings and line table follow it in the same allocation. */
struct code_entry {
	struct lru_node lru;
	struct code_entry *next;  /* in its bucket */
	uint32_t pid;
	uint64_t token, addr;
	int first_line;
	enum py_linetable_kind kind;
	const char *name, *file, *short_file;
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

/* Reads the code object at addr of pid and caches it. Returns it, or NULL with *err set. */
static struct code_entry *load(struct pynames *n, uint32_t pid, const struct pyproc_info *info, uint64_t addr,
			       int *err)
{
	struct py_code c;
	struct code_entry *e;
	const char *short_file;
	size_t nl, fl, sl, bytes;
	size_t b;

	*err = py_code_read(info->layout, info->code_type, read_process, &pid, addr, &c);
	if (*err)
		return NULL;
	short_file = shorten(n, pid, c.file);
	nl = strlen(c.name) + 1, fl = strlen(c.file) + 1, sl = strlen(short_file) + 1;
	bytes = sizeof(*e) + nl + fl + sl + c.nlines;
	make_room(n, bytes);
	e = malloc(bytes);
	if (!e) {
		py_code_release(&c);
		*err = -ENOMEM;
		return NULL;
	}
	*e = (struct code_entry){ .pid = pid, .token = info->token, .addr = addr, .first_line = c.firstlineno,
				  .kind = info->layout->lines, .nlines = c.nlines, .bytes = bytes };
	e->name = memcpy(e->data, c.name, nl);
	e->file = memcpy(e->data + nl, c.file, fl);
	e->short_file = memcpy(e->data + nl + fl, short_file, sl);
	e->lines = c.nlines ? memcpy(e->data + nl + fl + sl, c.lines, c.nlines) : NULL;
	py_code_release(&c);
	b = bucket_of(n, pid, info->token, addr);
	e->next = n->buckets[b];
	n->buckets[b] = e;
	lru_init(&e->lru);
	lru_touch(&n->lru, &e->lru);
	n->count++;
	n->bytes += bytes;
	return e;
}

static struct code_entry *lookup(struct pynames *n, uint32_t pid, uint64_t token, uint64_t addr)
{
	for (struct code_entry *e = n->buckets[bucket_of(n, pid, token, addr)]; e; e = e->next)
		if (e->pid == pid && e->token == token && e->addr == addr)
			return e;
	return NULL;
}

int pynames_name(struct pynames *n, uint32_t pid, const struct pyproc_info *info, uint64_t v,
		 struct py_frame_name *out)
{
	uint64_t addr = PY_FRAME_CODE(v);
	unsigned instr = PY_FRAME_INSTR(v);
	struct code_entry *e = NULL;
	int err = -ENOENT, line;

	*out = (struct py_frame_name){ .name = "[unknown]", .file = "", .short_file = "python" };
	if (!info) {
		n->st.untracked++;
		return -ENOENT;
	}
	e = lookup(n, pid, info->token, addr);
	if (e) {
		n->st.hits++;
		lru_touch(&n->lru, &e->lru);
	} else {
		n->st.misses++;
		e = load(n, pid, info, addr, &err);
		if (!e) {
			if (err == -ESRCH)
				n->st.gone++;
			else if (err == -EINVAL)
				n->st.invalid++;
			else
				n->st.unreadable++;
			return -ENOENT;
		}
	}
	line = instr == PY_INSTR_UNKNOWN ? -ENOENT : py_line_of(e->kind, e->lines, e->nlines, e->first_line, instr);
	*out = (struct py_frame_name){ .name = e->name, .file = e->file, .short_file = e->short_file,
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
