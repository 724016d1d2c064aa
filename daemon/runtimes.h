/* runtimes.h - the runtimes flamed walks (runtime/runtime.h: CPython today), each started when its BPF
 * walker loaded, and called by the daemon and the ingest without knowing which one it is. A new runtime
 * adds its folder under lib/ and one line to runtime_kinds (runtimes.c). */
#ifndef FLAMED_RUNTIMES_H
#define FLAMED_RUNTIMES_H

#include <stdint.h>

#include "bpfload.h"
#include "runtime/runtime.h"

#define RUNTIMES 1 /* entries of runtime_kinds */

/* A runtime flamed knows: its operations, and the BPF feature (its walker program) it needs. */
struct runtime_kind {
	const struct runtime_ops *ops;
	enum bpf_feature feature;
};

extern const struct runtime_kind runtime_kinds[RUNTIMES];

/* The runtimes started (NULL: not: its feature off, or it failed to start). */
struct runtimes {
	void *rt[RUNTIMES];
};

/* Starts runtime i with c; logs and returns -errno when it cannot. */
int runtimes_start(struct runtimes *r, unsigned i, const struct runtime_config *c);

/* Process pid first sampled under token, or (token 0) its mappings may have changed: each runtime looks,
 * at maps (n: its mappings read just now) or, NULL, at a read of its own. */
void runtimes_process(struct runtimes *r, uint32_t pid, uint64_t token, const struct procmap *maps, size_t n);

/* A walker reported addr of pid: handed to the runtime that runs pid. */
void runtimes_reported(struct runtimes *r, uint32_t pid, uint64_t addr);

/* Runs what is due; the poll timeout (ms) to the next, -1 for none. */
int runtimes_retry(struct runtimes *r);

void runtimes_flush_begin(struct runtimes *r);
void runtimes_flush_end(struct runtimes *r);

/* The runtime that runs pid (its index; *proc its state), or -1. */
int runtimes_find(const struct runtimes *r, uint32_t pid, const void **proc);

/* Copies runtime i's counters into out (RUNTIME_STATS_MAX bytes; zeros when it is not started). */
void runtimes_get_stats(const struct runtimes *r, unsigned i, void *out);

/* Frees every started runtime. */
void runtimes_free(struct runtimes *r);

#endif
