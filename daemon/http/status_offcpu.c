/* status_offcpu.c - the off-CPU profiler's state (--off-cpu), its counters and its losses as JSON, text
 * and Prometheus metrics. The BPF program's counters (enum profile_stat) are zeros without --off-cpu. */
#include <inttypes.h>

#include "http/counters.h"
#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_bpf.h"
#include "http/status_offcpu.h"

/* What the sched_switch program counted (bpf/offcpu.h) and what it lost, by kind. */
static const struct counter counters[] = {
	STATUS_COUNTER(lost[STAT_OFFCPU_BLOCKS], "blocks", "flamed_offcpu_blocks_total", "counter",
		"Threads switched out blocked (sleeping or in an uninterruptible wait)."),
	STATUS_COUNTER(lost[STAT_OFFCPU_WALKED], "walked", "flamed_offcpu_stack_walks_total", "counter",
		"Blocks whose stacks were walked."),
	STATUS_COUNTER(lost[STAT_OFFCPU_REUSED], "reused", "flamed_offcpu_stacks_reused_total", "counter",
		"Blocks that kept the stacks of the thread's last block (same place, within a second), not walked."),
	STATUS_COUNTER(lost[STAT_OFFCPU_WAKES], "waits", "flamed_offcpu_waits_total", "counter",
		"Waits ended: blocked threads switched in again."),
	STATUS_COUNTER(lost[STAT_OFFCPU_SHORT], "short_waits", "flamed_offcpu_short_waits_total", "counter",
		"Waits ended under --off-cpu-min-us, not counted (also in flamed_offcpu_waits_total)."),
	STATUS_COUNTER(lost[STAT_OFFCPU_ONGOING], "ongoing", "flamed_offcpu_ongoing_waits_total", "counter",
		"Waits still going on at a flush, counted up to it (and on from it later)."),
	STATUS_COUNTER(lost[STAT_OFFCPU_DEFERRED], "deferred", "flamed_offcpu_deferred_total", "counter",
		"Blocks of a process whose unwind tables were not ready: the user stack copied and walked once they were."),
	STATUS_COUNTER_OF(lost[STAT_OFFCPU_NO_STORAGE], "lost", "kind", "no_storage", "flamed_offcpu_lost_total",
		   "Off-CPU losses, by kind: no_storage (blocks not followed: no task storage could be had; their "
		   "waits are not counted), stack_evicted (stacks of blocked threads dropped from the ones kept before "
		   "their waits were counted: the waits are stored without them), counts_full (waits not counted: the "
		   "off-CPU map was full, --max-keys)."),
	STATUS_COUNTER_OF(lost[STAT_OFFCPU_STACK_LOST], "lost", "kind", "stack_evicted", "flamed_offcpu_lost_total", NULL),
	STATUS_COUNTER_OF(lost[STAT_OFFCPU_COUNTS_FULL], "lost", "kind", "counts_full", "flamed_offcpu_lost_total", NULL),
	STATUS_COUNTER(offcpu_keys_stored, "keys_stored", "flamed_offcpu_keys_stored_total", "counter",
		"Off-CPU (pid, tid, second, stacks) keys written to the database."),
};

void status_offcpu_json(FILE *o, const struct daemon_status *s)
{
	fprintf(o, ", \"off_cpu\": {\"enabled\": %s, \"asked\": %s", s->off_cpu ? "true" : "false",
		s->bpf.feature[BPF_FEATURE_OFFCPU].asked ? "true" : "false");
	status_bpf_refused_json(o, s, BPF_FEATURE_OFFCPU);
	fprintf(o, ", \"min_wait_us\": %u, \"max_stacks\": %u", s->off_cpu_min_us, s->off_cpu_max_stacks);
	counters_json(o, counters, COUNTERS_LEN(counters), s);
	fprintf(o, ", \"us_stored\": %" PRIu64 ", \"us_unstored\": %" PRIu64 "}", s->offcpu_us_stored,
		s->offcpu_us_unstored);
}

void status_offcpu_text(FILE *o, const struct daemon_status *s)
{
	fprintf(o, "off_cpu_enabled %d\noff_cpu_min_wait_us %u\noff_cpu_max_stacks %u\n", s->off_cpu ? 1 : 0,
		s->off_cpu_min_us, s->off_cpu_max_stacks);
	counters_text(o, "off_cpu", counters, COUNTERS_LEN(counters), s);
	fprintf(o, "off_cpu_us_stored %" PRIu64 "\noff_cpu_us_unstored %" PRIu64 "\n", s->offcpu_us_stored,
		s->offcpu_us_unstored);
}

/* A counter of microseconds, in seconds. */
static void metric_us(FILE *o, const char *name, const char *help, uint64_t us)
{
	http_metric(o, name, "counter", help);
	fprintf(o, "%s %" PRIu64 ".%06" PRIu64 "\n", name, us / 1000000, us % 1000000);
}

void status_offcpu_metrics(FILE *o, const struct daemon_status *s)
{
	http_metric_u64(o, "flamed_offcpu_enabled", "gauge",
			"1: the time threads spend blocked is counted (--off-cpu).", s->off_cpu);
	http_metric(o, "flamed_offcpu_min_wait_seconds", "gauge", "Shorter waits are not counted (--off-cpu-min-us).");
	fprintf(o, "flamed_offcpu_min_wait_seconds %u.%06u\n", s->off_cpu_min_us / 1000000,
		s->off_cpu_min_us % 1000000);
	counters_metrics(o, counters, COUNTERS_LEN(counters), s);
	metric_us(o, "flamed_offcpu_seconds_total", "Time off CPU written to the database.", s->offcpu_us_stored);
	metric_us(o, "flamed_offcpu_unstored_seconds_total", "Time off CPU drained but lost to a failed flush.",
		  s->offcpu_us_unstored);
}
