/* jitdump.h - JIT code names from jitdump files, perf's format for JITs (jit-PID.dump: V8's --perf-prof,
 * CPython's -X perf_jit, the JVM's JVMTI agent, LLVM's perf listener). A runtime maps its file executable
 * so that a profiler finds it among its mappings; so does this, and reads it through that mapping (the
 * process's own mount namespace). The file grows while the process runs: it is read on from where the
 * last read stopped, whole records only. Its contents are outside data: every record is bounded and
 * checked, and what is malformed is counted. */
#ifndef FLAMED_SYMBOLIZE_JITDUMP_H
#define FLAMED_SYMBOLIZE_JITDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/jitdumpfile.h"
#include "elf/procmaps.h"

#define JITDUMP_MAX_SYMBOLS 1000000         /* symbols kept per process */

struct jitdump_stats {
	uint64_t files_read;     /* files read from their start */
	uint64_t files_bad;      /* not a jitdump file (magic, version, header size), or another byte order */
	uint64_t records;        /* records read */
	uint64_t loads;          /* code-load records: symbols */
	uint64_t moves;          /* code-move records */
	uint64_t records_bad;    /* records too short for their kind, or with a name not ended inside */
	uint64_t files_cut;      /* files past JITDUMP_MAX_FILE, or a record whose size runs past it */
	uint64_t symbols_dropped; /* past JITDUMP_MAX_SYMBOLS */
	uint64_t processes;      /* processes with a file held (the cache's) */
};

/* ---- one file ---- */

struct jitdump_table;

int jitdump_table_new(struct jitdump_table **out);

void jitdump_table_free(struct jitdump_table *t);

/* Reads the whole records of fd from where the last read stopped (at most JITDUMP_READ_BUDGET bytes); a
 * record not yet whole is left for the next read. Returns 0, -EINVAL (not a jitdump file: nothing more is
 * read from it), -ENOMEM or -errno of pread; counted in *st. */
int jitdump_table_read(struct jitdump_table *t, int fd, struct jitdump_stats *st);

/* The name of the code that held addr at mono_ns (CLOCK_MONOTONIC, the records' clock; 0, or a file
 * of the CPU's timestamps: the newest code), or NULL. Code freed and its memory reused is told apart by
 * its load records' times. Valid until the next call on t. */
const char *jitdump_table_find(struct jitdump_table *t, uint64_t addr, uint64_t mono_ns);

/* The newest time (mono_ns) at which code was loaded over other code: jitdump_table_find at any time
 * after it names as it does now (0: at any time, or the CPU's timestamps; UINT64_MAX: unknown). */
uint64_t jitdump_table_replaced_at(struct jitdump_table *t);

/* The header's pid and timestamp (what tells this file from another of the same name). Returns 0, or
 * -EAGAIN while the header is not read. */
int jitdump_table_header(const struct jitdump_table *t, uint32_t *pid, uint64_t *stamp);

size_t jitdump_table_count(const struct jitdump_table *t);

/* ---- per process ---- */

struct jitdump_cache;

/* At most max_processes files held (0: 1024). Returns 0 or -ENOMEM. */
int jitdump_cache_new(unsigned max_processes, struct jitdump_cache **out);

void jitdump_cache_free(struct jitdump_cache *c);

/* Starts a flush: each process's file is read on at its next lookup; processes not looked up for 6
 * flushes are dropped. */
void jitdump_cache_begin_flush(struct jitdump_cache *c);

/* Keeps pid's entry, if any, from being dropped as idle at the next flushes' start (its samples wait
 * elsewhere to be named). */
void jitdump_cache_keep(struct jitdump_cache *c, uint32_t pid);

/* The name of pid's JIT code holding addr at mono_ns (see jitdump_table_find), from the jitdump file
 * among maps (pid's executable mappings: one whose file is named jit-N.dump), or NULL. When the process
 * is gone, what was read stays. */
const char *jitdump_cache_find(struct jitdump_cache *c, uint32_t pid, const struct procmap *maps, size_t n,
			       uint64_t addr, uint64_t mono_ns);

/* Whether a jitdump file of pid's has been read (its header at least). */
bool jitdump_cache_has(struct jitdump_cache *c, uint32_t pid);

/* Whether pid's JIT code found at mono_ns may be named otherwise than now (code was loaded over other
 * code after it), with its file read on as jitdump_cache_find does. False for a pid never looked up. */
bool jitdump_cache_by_time(struct jitdump_cache *c, uint32_t pid, const struct procmap *maps, size_t n,
			   uint64_t mono_ns);

/* The jitdump file pid maps, as jitdump_cache_find last read it: its path as the process sees it (copied
 * into path) and its header's timestamp. Returns 0, or -ENOENT (none, or its header not read yet). */
int jitdump_cache_file(struct jitdump_cache *c, uint32_t pid, char *path, size_t cap, uint64_t *stamp);

void jitdump_cache_get_stats(const struct jitdump_cache *c, struct jitdump_stats *out);

#endif
