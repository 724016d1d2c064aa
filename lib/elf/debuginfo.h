/* debuginfo.h - finds the separate debug file of a binary, as gdb does (build-id, then .gnu_debuglink). */
#ifndef FLAMED_SYMBOLIZE_DEBUGINFO_H
#define FLAMED_SYMBOLIZE_DEBUGINFO_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;

/* Where to look for the debug file of one binary. */
struct debuginfo_query {
	const char *root;       /* prefix of every path opened: "" or "/proc/PID/root" */
	const char *debug_dir;  /* "/usr/lib/debug", as the process sees it */
	const char *path;       /* the binary's absolute path as the process sees it (NULL: unknown) */
	const struct elf_file *bin;
	char *found;            /* NULL, or where the path (root included) of the file found is copied */
	size_t found_len;
};

/* Opens the first valid candidate of:
 *   DEBUG_DIR/.build-id/xx/rest.debug            (its build-id must equal the binary's)
 *   DIR/NAME, DIR/.debug/NAME, DEBUG_DIR/DIR/NAME (NAME, CRC from .gnu_debuglink; DIR the binary's dir)
 * A debuglink candidate must have the CRC32 recorded in the binary, and when both files have a
 * build-id they must be equal. Each path is tried under q->root, then (none found there: the process
 * may have exited, or have no debug files of its own) under the daemon's root.
 * Returns 0 with *out set (free with elf_file_free), -ENOENT (none) or -ENOMEM. */
int debuginfo_find(const struct debuginfo_query *q, struct elf_file **out);

/* Opens path (a debug file fetched by build-id) when its build-id equals bin's.
 * Returns 0 with *out set (free with elf_file_free), -ENOENT (no build-id, or another), -ENOMEM or the
 * -errno of opening or reading it. */
int debuginfo_open_matching(const char *path, const struct elf_file *bin, struct elf_file **out);

/* The CRC32 (zlib, as .gnu_debuglink uses) of the whole file open on fd, read with pread.
 * Returns 0 or -errno. */
int debuginfo_crc32(int fd, uint32_t *crc);

#endif
