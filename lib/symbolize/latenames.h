/* latenames.h - names frames stored unnamed ("module+0xADDR") when they are read, from the debug file of
 * their module's build-id that came since (under the debug directory, or fetched from debuginfod), or, for
 * JIT code, from the jitdump file its runtime wrote (it buffers its records: they come late). */
#ifndef FLAMED_SYMBOLIZE_LATENAMES_H
#define FLAMED_SYMBOLIZE_LATENAMES_H

#include <stddef.h>
#include <stdint.h>

struct debugfetch;
struct latenames;

struct latenames_opts {
	const char *debug_dir;    /* NULL: "/usr/lib/debug" (DIR/.build-id/xx/rest.debug) */
	struct debugfetch *fetch; /* NULL, or where a debug file not on disk is asked for */
	const char *cache_dir;    /* NULL, or where debug files fetched earlier are (DIR/BUILD-ID/debuginfo),
				   * looked at without asking */
	unsigned max_files;       /* debug files' symbol tables kept (LRU; 0: 16) */
	size_t max_bytes;         /* memory they may hold (0: 256 MiB); one larger than this is not kept */
};

struct latenames_stats {
	uint64_t named;   /* frames named when read */
	uint64_t loaded;  /* debug files read */
	uint64_t evicted; /* symbol tables dropped for the bounds */
	uint64_t jit_named; /* of the frames named: JIT code named from jitdump files */
};

/* Returns 0, -EINVAL or -ENOMEM; *out set only on success. */
int latenames_new(const struct latenames_opts *opts, struct latenames **out);

/* Frees everything; NULL is safe. */
void latenames_free(struct latenames *l);

/* Names ELF virtual address addr of the binary at module whose build-id is build_id (lowercase hex) into
 * buf (cap bytes, NUL-terminated), from a debug file whose build-id is the same. A module named
 * jit-PID.dump is a jitdump file: addr is named from its code loads ("_[j]" added), read from module's
 * path when its header's timestamp is build_id. Returns 0, or -ENOENT when no such file is there (yet:
 * it is asked for, and looked for again once files arrive or after a minute; a jitdump file is read on
 * as it grows) or nothing in it covers addr. Thread-safe: a struct store_namer's name. */
int latenames_name(void *l, const char *module, const char *build_id, uint64_t addr, char *buf, size_t cap);

/* Copies the counters. */
void latenames_get_stats(struct latenames *l, struct latenames_stats *out);

#endif
