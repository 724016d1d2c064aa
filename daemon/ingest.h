/* ingest.h - one flush's way from drained samples to stored rows: each sample's frames named (the
 * symbolizer, the Python namer), folded root first, and added to the store in one transaction. A
 * stack drained in many keys (threads, seconds) is named once per flush. */
#ifndef FLAMED_INGEST_H
#define FLAMED_INGEST_H

#include <stdint.h>

#include "foldcache.h"
#include "framecache.h"
#include "cgroups.h"
#include "sampler.h"

struct ingest;
struct symbolizer;
struct runtimes;
struct store;

/* What ingest borrows (the caller owns them and frees them after ingest_free()). */
struct ingest_opts {
	struct store *store;
	struct symbolizer *sym;
	struct runtimes *rts;     /* the runtimes whose frames are named (runtimes.h); NULL: none */
	bool cgroups;             /* learn where each sample ran (cgroups.c, owned by the ingest step) */
};

/* What one flush brought. */
struct ingest_counts {
	uint64_t samples;  /* counted in the keys drained */
	uint64_t keys;     /* (pid, tid, second, stacks) keys drained */
	uint64_t rejected; /* keys the store refused as malformed (the rest of the flush is stored) */
	uint64_t offcpu_keys, offcpu_us; /* off-CPU keys drained and the time they hold */
};

/* Creates the ingest step over o's objects. Returns 0, -EINVAL or -ENOMEM; *out set only on success. */
int ingest_new(const struct ingest_opts *o, struct ingest **out);

/* Starts a flush: a store transaction, the symbolizer's and the runtimes' flush, an empty
 * cache of folded stacks. */
void ingest_begin(struct ingest *in);

/* sampler_cb for sampler_drain(): names, folds and stores one drained key (ctx: the ingest). Once
 * the transaction has failed it only counts, so the maps still empty. Returns 0. */
int ingest_sample(const struct sampler_sample *s, void *ctx);

/* Ends the flush: commits, or rolls back when something failed, and copies the flush's counts to
 * out. Returns 0 or the store's -errno (store_errmsg() tells more; the flush's rows are lost). */
int ingest_end(struct ingest *in, struct ingest_counts *out);

/* Copies the counters of the folded stacks' cache and of the named frames' cache. */
void ingest_get_stats(const struct ingest *in, struct foldcache_stats *folds, struct framecache_stats *names);

/* Copies the counters of learning where samples ran (zeros when not learnt). */
void ingest_get_cgroup_stats(const struct ingest *in, struct cgroups_stats *out);

/* Frees the ingest step (not what it borrows); NULL is safe. */
void ingest_free(struct ingest *in);

#endif
