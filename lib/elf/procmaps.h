/* procmaps.h - reads the executable mappings of a process from /proc/PID/maps. */
#ifndef FLAMED_SYMBOLIZE_PROCMAPS_H
#define FLAMED_SYMBOLIZE_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROCMAPS_MAX 65536      /* executable mappings kept per process; more are ignored */
#define PROCMAPS_MAX_LINE 8192  /* longer lines are skipped (a path is at most PATH_MAX) */

/* One mapping: [start, end) maps the file at offset, or nothing (path NULL: anonymous). */
struct procmap {
	uint64_t start, end, offset;
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	bool exec;     /* perms has 'x' */
	bool deleted;  /* the path ended in " (deleted)", which is removed from path */
	char *path;    /* NULL, "/file", or "[vdso]"-style; no trailing newline */
};

/* Parses one line "start-end perms offset major:minor inode [path]" of /proc/PID/maps in place:
 * line is modified (newline and " (deleted)" cut off) and out->path points into it.
 * Returns 0 or -EINVAL (malformed: bad numbers, start >= end, missing fields). */
int procmaps_parse_line(char *line, struct procmap *out);

/* Reads the executable mappings of a maps-format file, sorted by start, paths copied; malformed and
 * over-long lines are skipped. Returns 0 or -errno (-ENOENT: no such file, e.g. the process is gone);
 * on success *out (NULL when *n is 0) must be freed with procmaps_free. */
int procmaps_read_file(const char *path, struct procmap **out, size_t *n);

/* procmaps_read_file on /proc/PID/maps. */
int procmaps_read(uint32_t pid, struct procmap **out, size_t *n);

/* Opens /proc/PID/maps (close-on-exec): an fd that procmaps_read_fd reads as often as wanted, each time
 * the process's mappings as they are then, for as long as the program image it was opened on lives (the
 * kernel holds that image's address space: after an execve or the process's end a read fails, or finds
 * nothing). Returns the fd or -errno (-ENOENT: no such process). */
int procmaps_open(uint32_t pid);

/* procmaps_read_file on an open maps-format file (from its start): PROCMAP_QUERY where the kernel and
 * the file have it, else its text. The fd stays open. */
int procmaps_read_fd(int fd, struct procmap **out, size_t *n);

/* A copy of maps[0..n) (paths copied) into *out (NULL when n is 0), freed with procmaps_free.
 * Returns 0 or -ENOMEM. */
int procmaps_copy(const struct procmap *maps, size_t n, struct procmap **out);

/* A signature of maps[0..n) (ranges, offsets, files, paths): the same for the same mappings; never 0. */
uint64_t procmaps_sig(const struct procmap *maps, size_t n);

/* Frees an array returned by procmaps_read* or procmaps_copy; NULL is safe. */
void procmaps_free(struct procmap *maps, size_t n);

#endif
