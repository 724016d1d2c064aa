/* bincache.h - parsed ELF binaries (segments + symbols), keyed by (device, inode), LRU-evicted. */
#ifndef FLAMED_SYMBOLIZE_BINCACHE_H
#define FLAMED_SYMBOLIZE_BINCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/mapped.h"

struct bincache;
struct binary;
struct debugfetch;

#define BINARY_BUILD_ID_MAX 129 /* hex digits of the longest build-id kept, and a NUL */

struct bincache_opts {
	const char *debug_dir; /* NULL: "/usr/lib/debug" */
	unsigned max;          /* binaries kept (> 0) */
	size_t max_bytes;      /* memory their symbol tables may hold; 0: no bound but max */
	bool inlines;          /* also open each binary's DWARF for inlined functions (costs memory) */
	struct debugfetch *fetch; /* NULL, or where the debug file of a binary with no .symtab and none on
				   * disk is asked for: named from .dynsym meanwhile, loaded again once it is there */
};

struct bincache_stats {
	uint64_t cached, evicted, debug_files_found;
	uint64_t symbols_dropped; /* function symbols past ELF_MAX_SYMBOLS in a file, not kept */
	uint64_t bytes; /* memory held by the cached binaries */
	uint64_t over_bound; /* binaries loaded past the byte bound: every cached one was in use this flush */
};

/* Creates an empty cache. Returns 0, -EINVAL (max 0) or -ENOMEM; *out set only on success. */
int bincache_new(const struct bincache_opts *opts, struct bincache **out);

/* Frees everything; NULL is safe. */
void bincache_free(struct bincache *c);

/* Starts a flush: binaries that failed to load may be tried again, and each cached binary is checked
 * (one stat) at its first use in the flush: a changed size or modification time reloads it. A cache over
 * its byte bound (the last flush's stacks needed more: a binary in use by a flush is never evicted for
 * bytes, which would reload it frame after frame) drops the binaries the last flush did not use. */
void bincache_begin_flush(struct bincache *c);

/* The binary mapped as src, loaded on first use: opened through /proc/PID/map_files/START-END, else
 * /proc/PID/root/PATH, else PATH (both only when not deleted, and the inode must match); symbols from
 * its .symtab, else from a separate debug file's .symtab, else from its .dynsym. A binary that cannot
 * be loaded is remembered until the next flush. Returns NULL when it is not loaded (or out of memory).
 * The pointer is valid until the next bincache_get or bincache_free. */
const struct binary *bincache_get(struct bincache *c, const struct bin_source *src);

/* Turns a file offset of b, in a mapping executable or not (exec), into its ELF virtual address
 * (elf_segments_vaddr). Returns 0 or -ENOENT (in no PT_LOAD). */
int binary_vaddr(const struct binary *b, uint64_t file_off, bool exec, uint64_t *vaddr);

/* The function covering ELF virtual address vaddr of b, or NULL. Valid as long as b. */
const char *binary_symbol(const struct binary *b, uint64_t vaddr);

/* The functions inlined at ELF virtual address vaddr of b, outermost first (none when b has no DWARF
 * or bincache_opts.inlines is off): fills names (valid as long as b) and returns how many, at most max. */
int binary_inlines(const struct binary *b, uint64_t vaddr, const char **names, int max);

/* The build-id of b in lowercase hex, "" when it has none. Valid as long as b. */
const char *binary_build_id(const struct binary *b);

/* Copies the counters. */
void bincache_get_stats(const struct bincache *c, struct bincache_stats *out);

#endif
