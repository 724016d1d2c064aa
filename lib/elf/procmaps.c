/* procmaps.c - parses /proc/PID/maps lines and keeps the executable mappings. */
#include "elf/procmaps.h"
#include "util/hash.h"
#include "util/textparse.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/types.h>

#define DELETED_SUFFIX " (deleted)"

/* A growable array of mappings being read. */
struct map_list {
	struct procmap *v;
	size_t n, cap;
};

/* Consumes the character c at *p. Returns 0 or -EINVAL. */
static int expect(const char **p, char c)
{
	if (**p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

/* Parses "rwxp": four characters, then a space. */
static int parse_perms(const char **p, bool *exec)
{
	const char *s = *p;

	if ((s[0] != 'r' && s[0] != '-') || (s[1] != 'w' && s[1] != '-') || (s[2] != 'x' && s[2] != '-') ||
	    (s[3] != 'p' && s[3] != 's') || s[4] != ' ')
		return -EINVAL;
	*exec = s[2] == 'x';
	*p = s + 5;
	return 0;
}

/* Cuts the newline and a " (deleted)" suffix off path; an empty path becomes NULL. */
static void finish_path(char *path, struct procmap *out)
{
	size_t len = strlen(path), sl = strlen(DELETED_SUFFIX);

	if (len > 0 && path[len - 1] == '\n')
		path[--len] = '\0';
	out->deleted = len > sl && strcmp(path + len - sl, DELETED_SUFFIX) == 0;
	if (out->deleted)
		path[len - sl] = '\0';
	out->path = path[0] ? path : NULL;
}

int procmaps_parse_line(char *line, struct procmap *out)
{
	const char *p = line;
	uint64_t maj, min;

	memset(out, 0, sizeof(*out));
	if (text_parse_uint(&p, 16, 16, &out->start) || expect(&p, '-') || text_parse_uint(&p, 16, 16, &out->end) ||
	    expect(&p, ' ') || parse_perms(&p, &out->exec) || text_parse_uint(&p, 16, 16, &out->offset) ||
	    expect(&p, ' ') || text_parse_uint(&p, 16, 8, &maj) || expect(&p, ':') || text_parse_uint(&p, 16, 8, &min) ||
	    expect(&p, ' ') || text_parse_uint(&p, 10, 20, &out->inode))
		return -EINVAL;
	if (out->start >= out->end || maj > UINT32_MAX || min > UINT32_MAX)
		return -EINVAL;
	if (*p != '\0' && *p != '\n' && *p != ' ')
		return -EINVAL;
	while (*p == ' ')
		p++;
	out->dev_major = (uint32_t)maj;
	out->dev_minor = (uint32_t)min;
	finish_path(line + (p - line), out);
	return 0;
}

/* Appends a copy of m (its path duplicated). Returns 0 or -ENOMEM. */
static int list_push(struct map_list *l, const struct procmap *m)
{
	struct procmap *v;
	size_t cap;

	if (l->n == l->cap) {
		cap = l->cap ? l->cap * 2 : 64;
		v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = *m;
	if (m->path) {
		l->v[l->n].path = strdup(m->path);
		if (!l->v[l->n].path)
			return -ENOMEM;
	}
	l->n++;
	return 0;
}

static int map_cmp(const void *a, const void *b)
{
	const struct procmap *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/* Reads every line of fp into l, keeping executable mappings. Returns 0 or -errno. */
static int read_lines(FILE *fp, struct map_list *l)
{
	char *line = NULL;
	size_t cap = 0;
	struct procmap m;
	ssize_t len;
	int err = 0;

	while ((len = getline(&line, &cap, fp)) >= 0) {
		if (len > PROCMAPS_MAX_LINE || procmaps_parse_line(line, &m) < 0 || !m.exec)
			continue;
		if (l->n >= PROCMAPS_MAX)
			break;
		err = list_push(l, &m);
		if (err)
			break;
	}
	if (!err && ferror(fp))
		err = -EIO;
	free(line);
	return err;
}

/* The PROCMAP_QUERY ioctl of /proc/PID/maps (Linux 6.11, include/uapi/linux/fs.h), declared here for
 * the older headers flamed builds with: the kernel finds the next mapping with the flags asked for and
 * formats nothing else. */
struct maps_query {
	__u64 size, query_flags, query_addr;
	__u64 vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	__u32 dev_major, dev_minor;
	__u32 vma_name_size, build_id_size;
	__u64 vma_name_addr, build_id_addr;
};
_Static_assert(sizeof(struct maps_query) == 104, "the kernel's struct procmap_query");
#define MAPS_QUERY _IOWR('f', 17, struct maps_query)
#define MAPS_QUERY_EXECUTABLE 0x04u
#define MAPS_QUERY_COVERING_OR_NEXT 0x10u

/* Reads the executable mappings of the maps file fd with PROCMAP_QUERY, one call each: the other
 * mappings (most of a process's) are not written out as text and parsed. A name longer than PATH_MAX
 * is skipped, as an over-long line is. Returns 0, -ENOTTY where the kernel (or the file) has no such
 * call, or -errno. */
static int query_exec(int fd, struct map_list *l)
{
	char name[PATH_MAX];
	struct maps_query q;
	struct procmap m;
	uint64_t at = 0;
	int err;

	for (;;) {
		q = (struct maps_query){ .size = sizeof(q), .query_flags = MAPS_QUERY_EXECUTABLE | MAPS_QUERY_COVERING_OR_NEXT,
					 .query_addr = at, .vma_name_addr = (uintptr_t)name, .vma_name_size = sizeof(name) };
		if (ioctl(fd, MAPS_QUERY, &q) < 0 && errno == ENAMETOOLONG) { /* its range alone, to skip it */
			q.vma_name_addr = 0;
			q.vma_name_size = 0;
			if (ioctl(fd, MAPS_QUERY, &q) == 0)
				q.vma_name_size = UINT32_MAX;
		}
		if (q.vma_end == 0) /* not filled: the call failed. ENOENT: no mapping at or above at; ESRCH:
				     * the process exited since the open (the text would read as empty) */
			return errno == ENOENT || errno == ESRCH ? 0 : -errno;
		if (q.vma_start >= q.vma_end || q.vma_end <= at)
			return -EINVAL; /* never from a kernel; a guard against a loop */
		at = q.vma_end;
		if (q.vma_name_size == UINT32_MAX || q.vma_name_size > sizeof(name))
			continue;
		name[q.vma_name_size ? q.vma_name_size - 1 : 0] = '\0';
		m = (struct procmap){ .start = q.vma_start, .end = q.vma_end, .offset = q.vma_offset,
				      .dev_major = q.dev_major, .dev_minor = q.dev_minor, .inode = q.inode, .exec = true };
		finish_path(name, &m);
		if (l->n >= PROCMAPS_MAX)
			return 0;
		err = list_push(l, &m);
		if (err)
			return err;
	}
}

int procmaps_read_fd(int fd, struct procmap **out, size_t *n)
{
	struct map_list l = { 0 };
	FILE *fp;
	int err, dfd;

	err = query_exec(fd, &l);
	if (err == -ENOTTY || err == -EINVAL) { /* older kernel, or not a procfs file: its text, from its start */
		procmaps_free(l.v, l.n);
		l = (struct map_list){ 0 };
		if (lseek(fd, 0, SEEK_SET) < 0)
			return -errno;
		dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (dfd < 0)
			return -errno;
		fp = fdopen(dfd, "re");
		if (!fp) {
			err = -errno;
			close(dfd);
			return err;
		}
		err = read_lines(fp, &l);
		fclose(fp);
	}
	if (err) {
		procmaps_free(l.v, l.n);
		return err;
	}
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), map_cmp);
	*out = l.v;
	*n = l.n;
	return 0;
}

/* procmaps_read_fd on fd (or its -errno, returned), then closed. */
static int read_and_close(int fd, struct procmap **out, size_t *n)
{
	int err;

	if (fd < 0)
		return fd;
	err = procmaps_read_fd(fd, out, n);
	close(fd);
	return err;
}

int procmaps_read_file(const char *path, struct procmap **out, size_t *n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	return read_and_close(fd < 0 ? -errno : fd, out, n);
}

int procmaps_open(uint32_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int procmaps_read(uint32_t pid, struct procmap **out, size_t *n)
{
	return read_and_close(procmaps_open(pid), out, n);
}

uint64_t procmaps_sig(const struct procmap *maps, size_t n)
{
	uint64_t h = hash_words((const uint64_t[]){ n }, 1);

	for (size_t i = 0; i < n; i++) {
		const struct procmap *m = &maps[i];
		uint64_t w[6] = { h, m->start, m->end, m->offset, m->inode,
				  (uint64_t)m->dev_major << 32 ^ m->dev_minor ^ (uint64_t)m->exec << 62 ^ (uint64_t)m->deleted << 63 };

		h = hash_words(w, 6);
		h = hash_bytes(h, m->path ? m->path : "", m->path ? strlen(m->path) + 1 : 0);
	}
	return h ? h : 1;
}

int procmaps_copy(const struct procmap *maps, size_t n, struct procmap **out)
{
	struct procmap *c;

	*out = NULL;
	if (!n)
		return 0;
	c = calloc(n, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		c[i] = maps[i];
		if (maps[i].path && !(c[i].path = strdup(maps[i].path))) {
			procmaps_free(c, i);
			return -ENOMEM;
		}
	}
	*out = c;
	return 0;
}

void procmaps_free(struct procmap *maps, size_t n)
{
	size_t i;

	if (!maps)
		return;
	for (i = 0; i < n; i++)
		free(maps[i].path);
	free(maps);
}
