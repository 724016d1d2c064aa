/* status_unwind.c - the unwinder's counters (unwinder.h) described once and written as JSON, text and
 * metrics; the disk cache's and JIT code's parts come from status_unwcache.c and status_unwjit.c. */

#include "http/counters.h"
#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_unwcache.h"
#include "http/status_unwind.h"
#include "http/status_unwjit.h"
#include "render/json.h"

#define SAMPLES(stat, kind, help)                                                                         \
	STATUS_COUNTER_OF(lost[stat], "samples", "kind", kind, "flamed_unwind_samples_total", help)

static const struct counter counters[] = {
	SAMPLES(STAT_UNWIND_FP, "fp", "User stacks walked, by how (truncated and failed also count in one of fp, "
		"dwarf and mixed)."),
	SAMPLES(STAT_UNWIND_DWARF, "dwarf", NULL),
	SAMPLES(STAT_UNWIND_MIXED, "mixed", NULL),
	SAMPLES(STAT_UNWIND_TRUNCATED, "truncated", NULL),
	SAMPLES(STAT_UNWIND_FAILED, "failed", NULL),
	STATUS_COUNTER(lost[STAT_UNWIND_REFRESH], "refresh_requests", "flamed_unwind_refresh_requests_total", "counter",
		"Mappings read again: a stack met an address in none of its process's known mappings."),
	STATUS_COUNTER(unwind.tables, "tables", "flamed_unwind_tables", "gauge", "Binaries with unwind tables loaded."),
	STATUS_COUNTER(unwind.table_bytes, "table_bytes", "flamed_unwind_table_bytes", "gauge",
		"Kernel memory the unwind tables' rows take."),
	STATUS_COUNTER(unwind.table_rows, "table_rows", "flamed_unwind_table_rows", "gauge",
		"Rows of the unwind tables loaded."),
	STATUS_COUNTER(unwind.tables_built, "tables_built", "flamed_unwind_tables_built_total", "counter",
		"Unwind tables loaded: built, or read from the disk cache."),
	STATUS_COUNTER(unwind.tables_evicted, "tables_evicted", "flamed_unwind_tables_evicted_total", "counter",
		"Unused unwind tables dropped to stay within --unwind-tables-mb."),
	STATUS_COUNTER(unwind.tables_expired, "tables_expired", "flamed_unwind_tables_expired_total", "counter",
		"Unwind tables dropped after no process used them for 10 minutes."),
	STATUS_COUNTER(unwind.tables_refused, "tables_refused", "flamed_unwind_tables_refused_total", "counter",
		"Unwind tables not loaded for want of room."),
	STATUS_COUNTER(unwind.binaries_without, "binaries_without_cfi", "flamed_unwind_binaries_without_cfi_total",
		"counter", "Binaries without usable call frame information (walked with frame pointers)."),
	STATUS_COUNTER(unwind.processes, "processes", "flamed_unwind_processes", "gauge", "Processes with unwind tables."),
	STATUS_COUNTER(unwind.processes_refused, "processes_refused", "flamed_unwind_processes_refused_total", "counter",
		"Processes not given unwind tables: --unwind-processes reached."),
	STATUS_COUNTER(unwind.processes_gone, "processes_gone", "flamed_unwind_processes_gone_total", "counter",
		"Processes given unwind tables from their mappings read at their first sample, gone before."),
	STATUS_COUNTER(unwind.maps_given, "maps_given", "flamed_unwind_maps_given_total", "counter",
		"Unwind requests done with the mappings the daemon had just read for them (no read of their own)."),
	STATUS_COUNTER(unwind.entries_unchanged, "entries_unchanged", "flamed_unwind_entries_unchanged_total", "counter",
		"Requests whose process's entry (mappings and tables) came out as written last: not written again."),
	STATUS_COUNTER(unwind.binaries_known, "binaries_known", "flamed_unwind_binaries_known_total", "counter",
		"Mappings taken for a binary checked lately (same device and inode), without opening it again."),
	STATUS_COUNTER(unwind.mappings_dropped, "mappings_dropped", "flamed_unwind_mappings_dropped_total", "counter",
		"Mappings past the 256 a process is given tables for (walked with frame pointers)."),
	STATUS_COUNTER(unwind.mappings_unplaced, "mappings_unplaced", "flamed_unwind_mappings_unplaced_total", "counter",
		"Mappings at a file offset no segment of their binary holds (walked with frame pointers)."),
	STATUS_COUNTER(unwind.prologue_functions, "prologue_functions", "flamed_unwind_prologue_functions_total",
		"counter", "Functions without call frame information given unwind rows from their prologues (assembly "
		"kernels)."),
	STATUS_COUNTER(unwind.requests_dropped, "requests_dropped", "flamed_unwind_requests_dropped_total", "counter",
		"Requests for a process's tables not queued: the unwinder's queue was full."),
	STATUS_COUNTER(unwind.requests_pending, "requests_pending", "flamed_unwind_requests_pending", "gauge",
		"Requests for a process's tables waiting for the unwinder's thread now."),
};

void status_unwind_json(FILE *o, const struct daemon_status *s)
{
	fputs(", \"unwind\": {\"mode\": ", o);
	json_write_string(o, s->unwind_mode ? s->unwind_mode : "");
	counters_json(o, counters, COUNTERS_LEN(counters), s);
	fprintf(o, ", \"build_seconds\": %.6f", finite_or_zero(s->unwind.build_seconds));
	status_unwcache_json(o, s);
	status_unwjit_json(o, s);
	fputc('}', o);
}

void status_unwind_text(FILE *o, const struct daemon_status *s)
{
	fprintf(o, "unwind_mode %s\n", s->unwind_mode ? s->unwind_mode : "");
	counters_text(o, "unwind", counters, COUNTERS_LEN(counters), s);
	fprintf(o, "unwind_build_seconds %.6f\n", finite_or_zero(s->unwind.build_seconds));
	status_unwcache_text(o, s);
	status_unwjit_text(o, s);
}

void status_unwind_metrics(FILE *o, const struct daemon_status *s)
{
	counters_metrics(o, counters, COUNTERS_LEN(counters), s);
	http_metric(o, "flamed_unwind_build_seconds_total", "counter",
		    "Time spent building (or reading from the disk cache) and loading unwind tables.");
	fprintf(o, "flamed_unwind_build_seconds_total %.6f\n", finite_or_zero(s->unwind.build_seconds));
	status_unwcache_metrics(o, s);
	status_unwjit_metrics(o, s);
}
