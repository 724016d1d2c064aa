/* mapped.c - opens or stats the file a process maps, from outside the process: through
 * /proc/PID/map_files, else its path under the process's root, else its plain path. */
#include "elf/mapped.h"
#include "elf/procmaps.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/elf_file.h"

int bin_stat_mapped(const struct bin_source *src, struct stat *st)
{
	char path[PATH_MAX + BIN_ROOT_LEN];
	int n;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, src->pid, src->start,
		 src->end);
	if (stat(path, st) == 0)
		return 0;
	if (src->deleted || !src->path || src->path[0] != '/')
		return -ENOENT;
	n = snprintf(path, sizeof(path), "/proc/%" PRIu32 "/root%s", src->pid, src->path);
	if (n > 0 && (size_t)n < sizeof(path) && stat(path, st) == 0 && (uint64_t)st->st_ino == src->inode)
		return 0;
	if (stat(src->path, st) == 0 && (uint64_t)st->st_ino == src->inode)
		return 0;
	return -ENOENT;
}

/* Opens path when it is a regular file with the expected inode. Returns the fd or -errno. */
static int open_inode(const char *path, uint64_t inode)
{
	struct stat st;
	int fd = elf_file_open_fd(path);

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_ino != inode) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

struct bin_source bin_source_of(uint32_t pid, const struct procmap *m)
{
	return (struct bin_source){ .pid = pid, .start = m->start, .end = m->end,
				    .dev = (uint64_t)m->dev_major << 32 | m->dev_minor, .inode = m->inode,
				    .path = m->path, .deleted = m->deleted };
}

void bin_seen_note(struct bin_seen *s, const struct bin_source *src, double now)
{
	*s = (struct bin_seen){ .dev = src->dev, .inode = src->inode, .at = now };
}

bool bin_seen_is(const struct bin_seen *s, const struct bin_source *src, double now, double trust_s)
{
	return src->inode && s->inode == src->inode && s->dev == src->dev && now - s->at < trust_s;
}

int bin_open_mapped(const struct bin_source *src, char *root)
{
	char path[PATH_MAX + BIN_ROOT_LEN];
	int fd, n;

	snprintf(root, BIN_ROOT_LEN, "/proc/%" PRIu32 "/root", src->pid);
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, src->pid, src->start,
		 src->end);
	fd = elf_file_open_fd(path);
	if (fd >= 0 || src->deleted || !src->path || src->path[0] != '/')
		return fd;
	n = snprintf(path, sizeof(path), "%s%s", root, src->path);
	if (n > 0 && (size_t)n < sizeof(path)) {
		fd = open_inode(path, src->inode);
		if (fd >= 0)
			return fd;
	}
	root[0] = '\0';
	return open_inode(src->path, src->inode);
}
