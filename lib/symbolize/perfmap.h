/* perfmap.h - JIT symbols from perf maps (/tmp/perf-PID.map): owner-checked, re-read as runtimes append, bounded. */
#ifndef FLAMED_SYMBOLIZE_PERFMAP_H
#define FLAMED_SYMBOLIZE_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PERFMAP_MAX_ENTRIES 1000000  /* symbols kept per process; later lines are dropped (counted) */
#define PERFMAP_MAX_TOTAL 4000000    /* symbols kept over all processes; least recently used tables go first */
#define PERFMAP_MAX_NAME 1024        /* bytes of a name kept; longer names are cut (counted) */
#define PERFMAP_READ_BUDGET (128u << 20) /* bytes parsed per file per read; the rest waits for the next one */

/* Counters. A table adds to the first three; the cache reports all of them. */
struct perfmap_stats {
	uint64_t lines_skipped;   /* malformed lines (bad number, no name, size 0, a NUL byte) */
	uint64_t names_truncated; /* names cut to PERFMAP_MAX_NAME */
	uint64_t entries_dropped; /* lines past a table's entry limit */
	uint64_t files_loaded;    /* perf maps read from their start (first time, rewritten, pid reused) */
	uint64_t files_rejected;  /* perf maps ignored: another user's, writable by others, not a regular file */
	uint64_t processes;       /* processes with a perf-map table held */
	uint64_t symbols;         /* symbols held over all tables */
};

/* Parses one perf-map line "START SIZE NAME" (NUL-terminated; a trailing newline is allowed): START and
 * SIZE in hex with an optional "0x", fields separated by runs of spaces or tabs, NAME the rest of the line
 * (spaces included) without trailing white space. On success *name points into line and is *name_len
 * bytes long (not NUL-terminated there). Returns 0 or -EINVAL (malformed: bad or over-long number, no
 * name, SIZE 0, START + SIZE past 2^64). */
int perfmap_parse_line(const char *line, uint64_t *start, uint64_t *size, const char **name, size_t *name_len);

/* ---- one perf map ---- */

struct perfmap_table;

/* Creates an empty table of at most max_entries symbols (0: PERFMAP_MAX_ENTRIES).
 * Returns 0 or -ENOMEM; *out set only on success. */
int perfmap_table_new(size_t max_entries, struct perfmap_table **out);

/* Frees the table; NULL is safe. */
void perfmap_table_free(struct perfmap_table *t);

/* Parses the complete lines of fd (a regular file, read with pread) from where the previous call stopped,
 * at most PERFMAP_READ_BUDGET bytes; an unfinished last line (no newline yet) is left for the next call.
 * Malformed lines are skipped, long names cut, lines past the limit dropped, each counted in *st.
 * Returns 0 or -errno (-ENOMEM, -EIO, ...), the table unchanged then. */
int perfmap_table_read(struct perfmap_table *t, int fd, struct perfmap_stats *st);

/* Bytes of the file consumed so far (complete lines). */
uint64_t perfmap_table_offset(const struct perfmap_table *t);

/* True when fd still holds, just before perfmap_table_offset(), the bytes read there: false means the
 * file was rewritten (truncated and written again) and must be read from its start in a new table. */
bool perfmap_table_unchanged(const struct perfmap_table *t, int fd);

/* The raw name (NUL-terminated) of the symbol holding addr, or NULL. Where ranges overlap the line read
 * last wins (a runtime reusing freed code memory). Valid until the next read or free of t. */
const char *perfmap_table_find(const struct perfmap_table *t, uint64_t addr);

/* Symbols held. */
size_t perfmap_table_count(const struct perfmap_table *t);

/* ---- per process ---- */

/* A cache of perf-map tables keyed by pid. Not thread-safe. */
struct perfmap_cache;

struct perfmap_cache_opts {
	unsigned max_processes; /* tables kept (LRU); 0: 4096 */
	size_t max_entries;     /* symbols per process; 0: PERFMAP_MAX_ENTRIES */
	size_t max_total;       /* symbols over all processes; 0: PERFMAP_MAX_TOTAL */
};

/* Creates an empty cache; opts may be NULL. Returns 0 or -ENOMEM; *out set only on success. */
int perfmap_cache_new(const struct perfmap_cache_opts *opts, struct perfmap_cache **out);

/* Frees everything; NULL is safe. */
void perfmap_cache_free(struct perfmap_cache *c);

/* Starts a flush: each process's perf map is checked again at its next lookup (re-read from where it
 * stopped when it grew, from its start when it was replaced or the pid reused), and processes not looked
 * up for 6 flushes are dropped. */
void perfmap_cache_begin_flush(struct perfmap_cache *c);

/* Keeps pid's entry, if any, from being dropped as idle at the next flushes' start (its samples wait
 * elsewhere to be named). */
void perfmap_cache_keep(struct perfmap_cache *c, uint32_t pid);

/* The raw name of pid's JIT symbol holding addr, or NULL. The first lookup of pid in a flush opens its
 * perf map: /proc/PID/root/tmp/perf-NSPID.map (NSPID: pid in its own pid namespace, the last NStgid of
 * /proc/PID/status), else /tmp/perf-PID.map. The file is used only when it is a regular file, not
 * writable by others, owned by root or by the process's real or effective uid; another is ignored and
 * counted, and a table read before from it is dropped. When the process is gone, what was read stays.
 * The string is valid until the next call on c. */
const char *perfmap_cache_find(struct perfmap_cache *c, uint32_t pid, uint64_t addr);

/* Copies the counters. */
void perfmap_cache_get_stats(const struct perfmap_cache *c, struct perfmap_stats *out);

#endif
