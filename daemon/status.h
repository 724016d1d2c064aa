/* status.h - the daemon's live state, as the HTTP API and /metrics report it. */
#ifndef FLAMED_STATUS_H
#define FLAMED_STATUS_H

#include <stdint.h>
#include <linux/types.h>
#include "profile.h"
#include "bpfload.h"
#include "debugfiles.h"
#include "deferred.h"
#include "framecache.h"
#include "cgroups.h"
#include "lineage.h"
#include "runtimes.h"
#include "symbolize/symbolizer.h"
#include "unwind/unwinder.h"

struct daemon_status {
	const char *version;
	struct debugfiles_status debuginfod; /* debug files fetched, and frames named late */
	int64_t start_time;        /* unix seconds */
	unsigned frequency;        /* Hz */
	unsigned flush_interval;   /* seconds */
	unsigned cpus;             /* CPUs with an attached event */
	uint64_t samples;          /* counted by BPF since start */
	uint64_t lost[STAT_MAX];   /* per enum profile_stat (STAT_IDLE: idle samples left out) */
	uint64_t sent_read, sent_malformed; /* samples read whole from the samples ring; refused (sampler.h) */
	uint64_t sent_ring_bytes;  /* its size; 0: not used */
	uint64_t samples_stored;   /* written to the database */
	uint64_t samples_unstored; /* drained but lost to a failed transaction */
	uint64_t samples_pruned;   /* sample rows deleted by retention */
	uint64_t flushes;
	uint64_t flushes_asked;    /* of which HTTP requests asked for (flush=1, /debug/pprof/profile) */
	int64_t last_flush_time;   /* unix seconds, 0: none yet */
	double last_flush_seconds; /* duration of the last flush */
	double flush_seconds_total;
	uint64_t db_bytes;
	uint64_t stacks_stored;    /* distinct stacks in the database */
	uint64_t sym_user_hits, sym_user_misses, sym_kernel_hits, sym_kernel_misses;
	uint64_t sym_binaries_cached, sym_processes_cached;
	uint64_t sym_cache_bytes, sym_binaries_evicted;
	uint64_t sym_symbols_dropped; /* symbols past the per-binary bound, not kept */
	struct symbolizer_stats symbolizer; /* all of the symbolizer's counters (JIT code's among them) */
	uint64_t fold_hits, fold_misses, fold_full; /* stacks folded once per flush (foldcache.h) */
	struct framecache_stats frames; /* user frames named once per flush (framecache.h) */
	const char *unwind_mode;   /* "fp", "dwarf" or "auto" */
	struct unwinder_stats unwind; /* zeros with --unwind fp */
	bool deferred_on;             /* samples before their process's tables are copied and walked later */
	struct deferred_stats deferred; /* zeros when not */
	/* Each runtime of runtime_kinds: walked or not (CPython: --python on, not --unwind fp), its frames per
	 * stack at most, its counters (runtime_ops.get_stats; zeros when not walked). */
	struct runtime_status {
		bool on;
		unsigned max_frames;
		_Alignas(8) unsigned char stats[RUNTIME_STATS_MAX];
	} runtime[RUNTIMES];
	bool off_cpu;                /* off-CPU time is counted (--off-cpu); its BPF counters are in lost[] */
	unsigned off_cpu_min_us;     /* --off-cpu-min-us: shorter waits are not counted */
	unsigned off_cpu_max_stacks; /* stacks of blocked threads kept until their waits are counted */
	uint64_t offcpu_keys_stored; /* off-CPU keys written to the database */
	uint64_t offcpu_us_stored;   /* microseconds off CPU written to the database */
	uint64_t offcpu_us_unstored; /* drained but lost to a failed transaction */
	struct lineage_stats lineage; /* who started whom (lineage.h) */
	uint64_t rechecks;            /* new processes' mappings read again shortly after their first report */
	uint64_t rechecks_dropped;    /* ... not: more were waiting than the daemon keeps */
	uint64_t rechecks_unchanged;  /* ... that found them as they were */
	uint64_t reports_chained;     /* later reports of a process its rechecks read again, not read then */
	struct cgroups_stats cgroups; /* where samples ran (cgroups.h) */
	struct bpfload_report bpf;    /* the BPF programs loaded, the features left out and why */
};

#endif
