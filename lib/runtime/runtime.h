/* runtime.h - what the daemon calls a runtime through without knowing which one it is. A runtime is an
 * interpreter or VM (CPython today; the JVM, V8, PHP, Ruby, Perl next) whose frames a BPF walker program
 * of its own writes in place of its eval loop's, reached by tail call only for the processes it runs
 * (enum walker). It is one folder of lib/ with the same parts:
 *   - finding itself in a process: its binaries, its version and layout (from the runtime's own
 *     tables where it publishes them), written into its walker's map for the BPF side;
 *   - its BPF walker (bpf/<name>_walk.h, the program in profile.bpf.c);
 *   - naming the frame values its walker wrote, at ingest (its code objects, methods, scripts);
 *   - its counters, described once (util/counter.h).
 * Each part is an operation below; lib/python/pyruntime.c is the example. daemon/runtimes.c lists the
 * runtimes and calls them. */
#ifndef FLAMED_RUNTIME_RUNTIME_H
#define FLAMED_RUNTIME_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/counter.h"

struct procmap;

/* What a runtime is started with (from the daemon's options). */
struct runtime_config {
	int procs_fd;          /* its walker's map of processes (what the BPF side reads per process) */
	unsigned max_procs;    /* processes tracked at most; more are refused, counted */
	unsigned max_frames;   /* frames its walker writes per stack */
	unsigned max_names;    /* named objects (code objects, methods) cached at most */
	bool lines;            /* find the line each frame runs */
	const char *debug_dir; /* where separate debug files are; NULL: /usr/lib/debug */
};

#define RUNTIME_FILE_MAX 1024 /* bytes of a frame's source file kept at ingest */

/* A frame its walker wrote, named. The strings live until the runtime's next call. */
struct runtime_frame {
	const char *folded; /* as a folded stack holds it ("name (file)"); never NULL */
	const char *file;   /* its source file; "" when not known */
	int first_line;     /* its function's first line; 0 when not known */
	int line;           /* the line it runs; 0 when not known */
};

struct runtime_ops {
	const char *name;     /* "python": its status object, its text lines' prefix */
	size_t stats_size;    /* of what get_stats writes, at most RUNTIME_STATS_MAX */

	/* Starts it. Returns 0 or -errno (logged by the caller); *out set only on success. */
	int (*start)(const struct runtime_config *c, void **out);
	/* Process pid was first sampled under token (its image), or (token 0) its mappings may have
	 * changed: it is looked at, and tracked when it runs this runtime. maps (n): its executable
	 * mappings, read just now by the daemon (one read serves every runtime); NULL: read them. */
	void (*process)(void *rt, uint32_t pid, uint64_t token, const struct procmap *maps, size_t n);
	/* Its walker reported addr of pid (an object first written): read now, while the process lives. */
	void (*reported)(void *rt, uint32_t pid, uint64_t addr);
	/* Work that waits (a process to look at again): runs what is due; the poll timeout (ms) to the
	 * next, -1 for none. */
	int (*retry)(void *rt);
	/* Once per flush, before its samples are named (what it cached checked again), and after they are
	 * stored (exited processes forgotten, once a flush has named their last samples). */
	void (*flush_begin)(void *rt);
	void (*flush_end)(void *rt);

	/* At ingest. The state of pid when it runs this runtime, else NULL (valid until the next call that
	 * changes the runtime's processes). */
	const void *(*find)(void *rt, uint32_t pid);
	/* Whether frame value v (of a process it runs) is one its walker wrote. */
	bool (*owns)(uint64_t v);
	/* Names frame value v of pid (state proc). */
	void (*name_frame)(void *rt, uint32_t pid, const void *proc, uint64_t v, struct runtime_frame *out);
	/* Whether a native frame of module (its path as mapped) is the runtime's own code (proc: find's). */
	bool (*is_own)(const void *proc, const char *module);
	/* Whether native function name of its own code only passes a call on between two of its frames
	 * (call machinery, left out of stacks as py-spy leaves it out). */
	bool (*is_glue)(const char *name);

	/* Its counters: over the BPF program's stat array (enum profile_stat) and over what get_stats
	 * writes. */
	const struct counter *stat_counters;
	size_t n_stat_counters;
	const struct counter *counters;
	size_t n_counters;
	/* A string among the stats (its JSON key and offset), or NULL: the last unsupported version seen. */
	const char *note_key;
	size_t note_off;
	void (*get_stats)(void *rt, void *out);

	/* Frees it and removes its processes from its walker's map; NULL is safe. */
	void (*free)(void *rt);
};

#define RUNTIME_STATS_MAX 512 /* bytes of stats a runtime may have */

#endif
