/* status.c - the daemon's live state as /api/v1/status JSON and as /metrics in Prometheus' text
 * format. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http/counters.h"
#include "http/http_impl.h"
#include "http/metric.h"
#include "render/json.h"
#include "http/status_bpf.h"
#include "http/status_deferred.h"
#include "http/status_unwind.h"
#include "http/status_debuginfod.h"
#include "http/status_jit.h"
#include "http/status_cgroups.h"
#include "http/status_lineage.h"
#include "http/status_offcpu.h"
#include "http/status_runtimes.h"

/* The names of enum profile_stat's loss counters; NULL: not a loss. */
static const char *const lost_kinds[STAT_MAX] = {
	[STAT_KSTACK_ERROR] = "kernel_stack_error",
	[STAT_USTACK_ERROR] = "user_stack_error",
	[STAT_STACK_MAP_FULL] = "stack_map_full",
	[STAT_STACK_NOMEM] = "stack_alloc_failed",
	[STAT_COUNTS_FULL] = "counts_full",
};

/* How the symbolizer read processes' mappings (symbolize/proccache.h). */
static const struct counter maps_counters[] = {
	STATUS_COUNTER(symbolizer.maps_reads.opens, "maps_opens", "flamed_symbolizer_maps_opens_total", "counter",
		"/proc/PID/maps files opened to read a process's mappings."),
	STATUS_COUNTER(symbolizer.maps_reads.fd_reads, "maps_fd_reads", "flamed_symbolizer_maps_fd_reads_total", "counter",
		"Reads of a new process's mappings by the maps file its first read left open, not opened again."),
	STATUS_COUNTER(symbolizer.maps_reads.fds_full, "maps_fds_full", "flamed_symbolizer_maps_fds_full_total", "counter",
		"Maps files not left open: 64 were."),
	STATUS_COUNTER(symbolizer.maps_reads.fds_held, "maps_fds_held", "flamed_symbolizer_maps_fds_held", "gauge",
		"Maps files held open now, for a new process's reads in its first quarter second."),
};

/* The ingest's cache of user frames named this flush (daemon/framecache.c). */
static const struct counter frame_cache_counters[] = {
	STATUS_COUNTER_OF(frames.hits, "frame_cache", "result", "hits", "flamed_frame_cache_total",
		"User frames of drained stacks named already this flush (hits), named (misses), or named and not "
		"kept: the cache was full (full)."),
	STATUS_COUNTER_OF(frames.misses, "frame_cache", "result", "misses", "flamed_frame_cache_total", NULL),
	STATUS_COUNTER_OF(frames.full, "frame_cache", "result", "full", "flamed_frame_cache_total", NULL),
};

/* Status as "name value" lines, one per field. */
static void status_text(FILE *o, const struct daemon_status *s, int64_t now)
{
	fprintf(o, "version %s\nuptime_seconds %" PRId64 "\nfrequency %u\nflush_interval %u\ncpus %u\n"
		"samples %" PRIu64 "\n", s->version ? s->version : "", s->start_time ? now - s->start_time : 0,
		s->frequency, s->flush_interval, s->cpus, s->samples);
	for (unsigned i = 0; i < STAT_MAX; i++)
		if (lost_kinds[i])
			fprintf(o, "samples_lost_%s %" PRIu64 "\n", lost_kinds[i], s->lost[i]);
	fprintf(o, "samples_pruned %" PRIu64 "\nflushes_asked %" PRIu64 "\n", s->samples_pruned, s->flushes_asked);
	fprintf(o, "idle_excluded %" PRIu64 "\nsamples_stored %" PRIu64 "\nsamples_unstored %" PRIu64 "\nflushes %"
		PRIu64 "\nlast_flush_time %" PRId64 "\nlast_flush_seconds %.6f\ndb_bytes %" PRIu64 "\nstacks_stored %"
		PRIu64 "\nsymbolized_user %" PRIu64 " hits %" PRIu64 " misses\nsymbolized_kernel %" PRIu64 " hits %"
		PRIu64 " misses\nbinaries_cached %" PRIu64 "\nprocesses_cached %" PRIu64 "\nsymbol_cache_bytes %"
		PRIu64 "\nbinaries_evicted %" PRIu64 "\nbinaries_over_bound %" PRIu64 "\nsymbols_dropped %" PRIu64 "\n",
		s->lost[STAT_IDLE], s->samples_stored, s->samples_unstored, s->flushes, s->last_flush_time,
		finite_or_zero(s->last_flush_seconds), s->db_bytes, s->stacks_stored, s->sym_user_hits,
		s->sym_user_misses, s->sym_kernel_hits, s->sym_kernel_misses, s->sym_binaries_cached,
		s->sym_processes_cached, s->sym_cache_bytes, s->sym_binaries_evicted, s->symbolizer.binaries_over_bound,
		s->sym_symbols_dropped);
	counters_text(o, "symbolizer", maps_counters, COUNTERS_LEN(maps_counters), s);
	counters_text(o, "ingest", frame_cache_counters, COUNTERS_LEN(frame_cache_counters), s);
	status_unwind_text(o, s);
}

void http_handle_status(struct http *h, struct request *rq)
{
	struct daemon_status s;
	FILE *o = rq->out;
	int n = 0, table;

	if (http_arg_table(rq, &table) < 0)
		return;
	http_read_status(h, &s);
	if (table) {
		rq->type = "text/plain; charset=utf-8";
		status_text(o, &s, rq->now);
		status_runtimes_text(o, &s);
		status_offcpu_text(o, &s);
		status_lineage_text(o, &s);
		status_cgroups_text(o, &s);
		status_deferred_text(o, &s);
		status_jit_text(o, &s);
		status_debuginfod_text(o, &s);
		status_bpf_text(o, &s);
		return;
	}
	rq->type = "application/json";
	fputs("{\"version\": ", o);
	json_write_string(o, s.version);
	fprintf(o, ", \"uptime_seconds\": %" PRId64 ", \"start_time\": %" PRId64 ", \"frequency\": %u, "
		"\"flush_interval\": %u, \"cpus\": %u, \"samples\": %" PRIu64 ", \"samples_lost\": {",
		s.start_time ? rq->now - s.start_time : 0, s.start_time, s.frequency, s.flush_interval, s.cpus,
		s.samples);
	for (unsigned i = 0; i < STAT_MAX; i++)
		if (lost_kinds[i])
			fprintf(o, "%s\"%s\": %" PRIu64, n++ ? ", " : "", lost_kinds[i], s.lost[i]);
	fprintf(o, "}, \"idle_excluded\": %" PRIu64 ", \"samples_stored\": %" PRIu64 ", \"samples_unstored\": %"
		PRIu64 ", \"flushes\": %" PRIu64 ", \"last_flush_time\": %" PRId64 ", \"last_flush_seconds\": %.6f"
		", \"db_bytes\": %" PRIu64 ", \"stacks_stored\": %" PRIu64 ", ", s.lost[STAT_IDLE],
		s.samples_stored, s.samples_unstored, s.flushes, s.last_flush_time,
		finite_or_zero(s.last_flush_seconds), s.db_bytes, s.stacks_stored);
	fprintf(o, "\"samples_pruned\": %" PRIu64 ", \"flushes_asked\": %" PRIu64 ", ", s.samples_pruned, s.flushes_asked);
	fprintf(o, "\"symbolizer\": {\"user_hits\": %" PRIu64 ", \"user_misses\": %" PRIu64 ", \"kernel_hits\": %"
		PRIu64 ", \"kernel_misses\": %" PRIu64 ", \"binaries_cached\": %" PRIu64 ", \"processes_cached\": %"
		PRIu64 ", \"symbol_cache_bytes\": %" PRIu64 ", \"binaries_evicted\": %" PRIu64
		", \"binaries_over_bound\": %" PRIu64 ", \"symbols_dropped\": %" PRIu64, s.sym_user_hits,
		s.sym_user_misses, s.sym_kernel_hits, s.sym_kernel_misses, s.sym_binaries_cached, s.sym_processes_cached,
		s.sym_cache_bytes, s.sym_binaries_evicted, s.symbolizer.binaries_over_bound, s.sym_symbols_dropped);
	counters_json(o, maps_counters, COUNTERS_LEN(maps_counters), &s);
	fputc('}', o);
	fprintf(o, ", \"fold_cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64 ", \"full\": %" PRIu64 "}",
		s.fold_hits, s.fold_misses, s.fold_full);
	counters_json(o, frame_cache_counters, COUNTERS_LEN(frame_cache_counters), &s);
	status_unwind_json(o, &s);
	status_runtimes_json(o, &s);
	status_offcpu_json(o, &s);
	status_lineage_json(o, &s);
	status_cgroups_json(o, &s);
	status_deferred_json(o, &s);
	status_jit_json(o, &s);
	status_debuginfod_json(o, &s);
	status_bpf_json(o, &s);
	fputs("}\n", o);
}

static void metric_double(FILE *o, const char *name, const char *type, const char *help, double v)
{
	http_metric(o, name, type, help);
	fprintf(o, "%s %.9g\n", name, finite_or_zero(v));
}

/* A label value: backslash, quote and newline escaped. */
static void label_value(FILE *o, const char *s)
{
	for (; *s; s++)
		if (*s == '\\' || *s == '"')
			fprintf(o, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", o);
		else
			fputc(*s, o);
}

static void metrics_samples(FILE *o, const struct daemon_status *s)
{
	http_metric_u64(o, "flamed_samples_total", "counter", "CPU samples counted by BPF.", s->samples);
	http_metric(o, "flamed_samples_lost_total", "counter", "Samples or stacks lost, by kind.");
	for (unsigned i = 0; i < STAT_MAX; i++)
		if (lost_kinds[i])
			fprintf(o, "flamed_samples_lost_total{kind=\"%s\"} %" PRIu64 "\n", lost_kinds[i], s->lost[i]);
	http_metric_u64(o, "flamed_samples_idle_excluded_total", "counter", "Idle samples (pid 0) left out.",
		   s->lost[STAT_IDLE]);
	http_metric_u64(o, "flamed_samples_stored_total", "counter", "Samples written to the database.",
		   s->samples_stored);
	http_metric_u64(o, "flamed_samples_unstored_total", "counter", "Samples drained but lost to a failed flush.",
		   s->samples_unstored);
	http_metric_u64(o, "flamed_flushes_total", "counter", "Flushes of samples into the database.", s->flushes);
	http_metric_u64(o, "flamed_flushes_asked_total", "counter",
			"Flushes API requests asked for (flush=1, /debug/pprof/profile), at most 4 a second.",
			s->flushes_asked);
	metric_double(o, "flamed_flush_seconds_total", "counter", "Time spent flushing.", s->flush_seconds_total);
	metric_double(o, "flamed_last_flush_seconds", "gauge", "Duration of the last flush.",
		      s->last_flush_seconds);
	http_metric_u64(o, "flamed_last_flush_timestamp_seconds", "gauge", "Unix time of the last flush (0: none).",
		   (uint64_t)(s->last_flush_time > 0 ? s->last_flush_time : 0));
}

static void metrics_symbolizer(FILE *o, const struct daemon_status *s)
{
	http_metric(o, "flamed_symbolize_hits_total", "counter",
		    "Frames named, by kind (a user frame once per flush for its process and address: its other "
		    "stacks reuse the name, flamed_frame_cache_total).");
	fprintf(o, "flamed_symbolize_hits_total{kind=\"user\"} %" PRIu64 "\n", s->sym_user_hits);
	fprintf(o, "flamed_symbolize_hits_total{kind=\"kernel\"} %" PRIu64 "\n", s->sym_kernel_hits);
	http_metric(o, "flamed_symbolize_misses_total", "counter", "Frames left unnamed, by kind (counted as hits are).");
	fprintf(o, "flamed_symbolize_misses_total{kind=\"user\"} %" PRIu64 "\n", s->sym_user_misses);
	fprintf(o, "flamed_symbolize_misses_total{kind=\"kernel\"} %" PRIu64 "\n", s->sym_kernel_misses);
	http_metric_u64(o, "flamed_symbolizer_binaries_cached", "gauge", "Binaries in the symbolizer's cache.",
		   s->sym_binaries_cached);
	http_metric_u64(o, "flamed_symbolizer_processes_cached", "gauge", "Processes in the symbolizer's cache.",
		   s->sym_processes_cached);
	http_metric_u64(o, "flamed_samples_pruned_total", "counter",
		   "Sample rows deleted by --retention and --max-db-size.", s->samples_pruned);
	http_metric_u64(o, "flamed_symbolizer_cache_bytes", "gauge", "Memory held by cached symbol tables.",
		   s->sym_cache_bytes);
	http_metric_u64(o, "flamed_symbolizer_binaries_evicted_total", "counter",
		   "Binaries dropped from the symbolizer's cache to stay within --symbol-cache-mb.",
		   s->sym_binaries_evicted);
	http_metric_u64(o, "flamed_symbolizer_binaries_over_bound_total", "counter",
		   "Binaries loaded past --symbol-cache-mb: every cached one was in use by the same flush's stacks.",
		   s->symbolizer.binaries_over_bound);
	http_metric_u64(o, "flamed_symbolizer_symbols_dropped_total", "counter",
		   "Function symbols not kept: a binary had more than the bound (4 Mi) of them.",
		   s->sym_symbols_dropped);
	counters_metrics(o, maps_counters, COUNTERS_LEN(maps_counters), s);
	http_metric(o, "flamed_fold_cache_total", "counter",
	       "Drained keys whose stacks were folded already this flush (hit), folded (miss), or folded and not "
	       "kept: the cache was full (full).");
	fprintf(o, "flamed_fold_cache_total{result=\"hit\"} %" PRIu64 "\nflamed_fold_cache_total{result=\"miss\"} %"
		PRIu64 "\nflamed_fold_cache_total{result=\"full\"} %" PRIu64 "\n", s->fold_hits, s->fold_misses,
		s->fold_full);
	counters_metrics(o, frame_cache_counters, COUNTERS_LEN(frame_cache_counters), s);
}

static void metrics_http(struct http *h, FILE *o)
{
	http_metric(o, "flamed_http_requests_total", "counter", "HTTP requests answered, by status code.");
	for (unsigned c = 0; c < CODES; c++) {
		uint64_t n = atomic_load_explicit(&h->responses[c], memory_order_relaxed);

		if (n)
			fprintf(o, "flamed_http_requests_total{code=\"%u\"} %" PRIu64 "\n", c, n);
	}
	http_metric_u64(o, "flamed_http_responses_too_large_total", "counter",
		   "Responses refused (500) for passing 256 MiB.",
		   atomic_load_explicit(&h->too_large, memory_order_relaxed));
	http_metric_u64(o, "flamed_http_queries_max", "gauge",
			"Queries answered at once (each with the database open); more wait their turn.", QUERIES_MAX);
	http_metric_u64(o, "flamed_http_queries_waited_total", "counter",
			"Queries that waited for their turn: flamed_http_queries_max were being answered.",
			atomic_load_explicit(&h->queries_waited, memory_order_relaxed));
}

void http_handle_metrics(struct http *h, struct request *rq)
{
	struct daemon_status s;
	FILE *o = rq->out;

	http_read_status(h, &s);
	rq->type = "text/plain; version=0.0.4; charset=utf-8";
	http_metric(o, "flamed_build_info", "gauge", "Always 1; the version in a label.");
	fputs("flamed_build_info{version=\"", o);
	label_value(o, s.version);
	fputs("\"} 1\n", o);
	http_metric_u64(o, "flamed_start_time_seconds", "gauge", "Unix time flamed started.",
		   (uint64_t)(s.start_time > 0 ? s.start_time : 0));
	http_metric_u64(o, "flamed_frequency_hertz", "gauge", "Sampling frequency per CPU.", s.frequency);
	http_metric_u64(o, "flamed_cpus", "gauge", "CPUs being sampled.", s.cpus);
	metrics_samples(o, &s);
	metrics_symbolizer(o, &s);
	status_unwind_metrics(o, &s);
	status_runtimes_metrics(o, &s);
	status_offcpu_metrics(o, &s);
	status_bpf_metrics(o, &s);
	status_lineage_metrics(o, &s);
	status_cgroups_metrics(o, &s);
	status_deferred_metrics(o, &s);
	status_jit_metrics(o, &s);
	status_debuginfod_metrics(o, &s);
	http_metric_u64(o, "flamed_database_bytes", "gauge", "Size of the database.", s.db_bytes);
	http_metric_u64(o, "flamed_stacks_stored", "gauge", "Distinct stacks in the database.", s.stacks_stored);
	metrics_http(h, o);
}
