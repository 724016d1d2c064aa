/* mapped.h - the file a process maps, opened or stat'ed from outside it (its mount namespace
 * included): what the symbolizer, the unwinder and the Python tracker read binaries through. */
#ifndef FLAMED_ELF_MAPPED_H
#define FLAMED_ELF_MAPPED_H

#include <stdbool.h>
#include <stdint.h>

struct procmap;
struct stat;

/* Where a binary is mapped: how to open it and its cache key. */
struct bin_source {
	uint32_t pid;
	uint64_t start, end;   /* the mapping, for /proc/PID/map_files/START-END */
	uint64_t dev, inode;   /* the key, from the maps line */
	const char *path;      /* as the process sees it, without " (deleted)" */
	bool deleted;          /* the path no longer names the mapped file */
};

/* The source of the file pid maps as m (a line of its maps: elf/procmaps.h). */
struct bin_source bin_source_of(uint32_t pid, const struct procmap *m);

#define BIN_ROOT_LEN 64 /* room for the root bin_open_mapped returns */

/* Opens the file mapped as src: /proc/PID/map_files/START-END, else /proc/PID/root/PATH, else PATH (both
 * only when not deleted, and the inode must match). root (BIN_ROOT_LEN bytes) gets the prefix under
 * which the process's other files are read ("/proc/PID/root", or "" when only the plain path worked).
 * Returns the descriptor (O_CLOEXEC) or -errno. */
int bin_open_mapped(const struct bin_source *src, char *root);

/* A file as mappings name it (device and inode) and when it was last opened and found to be the file a
 * cache holds: a mapping naming it again within a trust window is taken for it without opening it (a
 * short-lived process maps the files the ones before it did). Zeroed: never seen. */
struct bin_seen {
	uint64_t dev, inode;
	double at; /* CLOCK_MONOTONIC seconds */
};

/* Notes that src names the file s stands for, opened and checked at now. */
void bin_seen_note(struct bin_seen *s, const struct bin_source *src, double now);

/* Whether src names the file of s, checked less than trust_s before now. */
bool bin_seen_is(const struct bin_seen *s, const struct bin_source *src, double now, double trust_s);

/* Stats the file mapped as src: /proc/PID/map_files/START-END, else its path (under /proc/PID/root, then
 * as is) when that still names the same inode. Returns 0 or -ENOENT. */
int bin_stat_mapped(const struct bin_source *src, struct stat *st);

#endif
