/* tablecache.h - unwind tables kept on disk by build-id, so that a restarted flamed loads a big library's
 * rows (libLLVM: 950,000, half a second to build; libtorch: seconds) instead of building them again.
 * One file per build-id in a directory of its own, bounded in bytes: the least recently used go first.
 * A file is outside data (a disk, another program, an older flamed may have written it): its size,
 * rows, order and checksum are checked before use, and a bad one is deleted and counted. */
#ifndef FLAMED_UNWIND_TABLECACHE_H
#define FLAMED_UNWIND_TABLECACHE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "unwind.h"

struct tablecache;

struct tablecache_stats {
	uint64_t hits;    /* tables read from the cache */
	uint64_t misses;  /* tables looked for and not there (then built) */
	uint64_t stored;  /* tables written */
	uint64_t evicted; /* files deleted for room, the least recently used first */
	uint64_t bad;     /* files deleted unused: short, malformed, another build's, checksum wrong */
	uint64_t stale;   /* files deleted unused: written by another format of rows (another flamed) */
	uint64_t refused; /* tables not written: bigger than the whole bound, or writing failed */
	uint64_t files;   /* files in the cache now */
	uint64_t bytes;   /* their size */
	uint64_t max_bytes;
};

/* Opens (creating it, mode 0700) the cache in dir, holding at most max_bytes. Returns 0, -EINVAL,
 * -ENOMEM or the error of mkdir/open. */
int tablecache_open(const char *dir, uint64_t max_bytes, struct tablecache **out);

/* The rows of build-id id (len bytes) into *rows (malloc'd, sorted by pc) and *n. Returns 0, -ENOENT (not
 * cached; counted a miss), or another -errno (a bad file: deleted, counted). */
int tablecache_get(struct tablecache *c, const uint8_t *id, int len, struct unwind_row **rows, size_t *n);

/* Writes the n rows of build-id id, then deletes the least recently used files until the cache is within
 * its bound. Returns 0 or -errno (counted refused). */
int tablecache_put(struct tablecache *c, const uint8_t *id, int len, const struct unwind_row *rows, size_t n);

void tablecache_get_stats(const struct tablecache *c, struct tablecache_stats *out);

/* Frees c (the files stay); NULL is safe. */
void tablecache_free(struct tablecache *c);

#endif
