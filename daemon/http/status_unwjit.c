/* status_unwjit.c - unwind rows of JIT code registered with the GDB JIT interface or described by a
 * jitdump file's unwinding information (lib/unwind/jitrows.c, dumprows.c, read by lib/unwind/unwinder.c):
 * objects read, refused, tables loaded, as JSON, text and metrics. */
#include <inttypes.h>

#include "http/counters.h"
#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_unwjit.h"

/* What the unwinder read of JIT code (unwinder.h). The jitdump files it read no further, a sum of two
 * counters, are written by hand after these. */
static const struct counter counters[] = {
	STATUS_COUNTER(unwind.jit.objects, "objects", "flamed_unwind_jit_objects_total", "counter",
		"JIT objects whose .eh_frame gave unwind rows."),
	STATUS_COUNTER(unwind.jit.objects_without, "objects_without", "flamed_unwind_jit_objects_without_total",
		"counter", "JIT objects with no .eh_frame, or none giving rows (walked with frame pointers)."),
	STATUS_COUNTER(unwind.jit.objects_bad, "objects_bad", "flamed_unwind_jit_objects_bad_total", "counter",
		"JIT objects refused: malformed, their .eh_frame unreadable or corrupt, spread over 4 GiB, or past "
		"4096 in one process."),
	STATUS_COUNTER(unwind.jit.objects_replaced, "objects_replaced", "flamed_unwind_jit_objects_replaced_total",
		"counter", "JIT objects' rows dropped for code a jitdump file loaded later at their address."),
	STATUS_COUNTER(unwind.jit.objects_fp, "objects_fp", "flamed_unwind_jit_objects_fp_total", "counter",
		"Code a jitdump file gave unwinding information for that keeps a frame pointer: walked by it."),
	STATUS_COUNTER(unwind.jit.objects_kept, "objects_kept", "flamed_unwind_jit_objects_kept_total", "counter",
		"JIT objects of a GDB JIT list read again whose rows were kept, not built again."),
	STATUS_COUNTER(unwind.jit.rows, "rows", "flamed_unwind_jit_rows_total", "counter",
		"Unwind rows read from JIT objects."),
	STATUS_COUNTER(unwind.jit_tables, "tables", "flamed_unwind_jit_tables", "gauge",
		"Unwind tables of JIT code loaded: one per mapping of anonymous memory holding JIT objects."),
	STATUS_COUNTER(unwind.jit.list.lists_read, "lists_read", "flamed_unwind_jit_lists_read_total", "counter",
		"GDB JIT interface lists read for unwind rows (a process's first, or changed since)."),
	STATUS_COUNTER(unwind.jit.list.objects_too_big, "objects_too_big", "flamed_unwind_jit_objects_too_big_total",
		"counter", "JIT objects not read for unwind rows: over 16 MiB, or past 128 MiB in one list."),
	STATUS_COUNTER(unwind.jit.list.lists_cut, "lists_cut", "flamed_unwind_jit_lists_cut_total", "counter",
		"JIT object lists cut while read for unwind rows: past 65,536 entries, or looping."),
	STATUS_COUNTER(unwind.jit.list.reads_failed, "reads_failed", "flamed_unwind_jit_reads_failed_total", "counter",
		"GDB JIT descriptors, entries or objects unreadable while read for unwind rows."),
	STATUS_COUNTER(unwind.jitdump.file.files_read, "dump_files_read", "flamed_unwind_jit_dump_files_read_total",
		"counter", "jitdump files read for their unwinding information, from their start."),
	STATUS_COUNTER(unwind.jitdump.records, "dump_unwind_records", "flamed_unwind_jit_dump_unwind_records_total",
		"counter", "Unwinding-information records read from jitdump files."),
	STATUS_COUNTER(unwind.jitdump.bad, "dump_unwind_bad", "flamed_unwind_jit_dump_unwind_bad_total", "counter",
		"Unwinding-information records refused: malformed, or past 64 KiB."),
};

/* jitdump files not read further for unwinding information: not one, or a record without a size. */
static uint64_t dump_files_bad(const struct daemon_status *s)
{
	return s->unwind.jitdump.file.files_bad + s->unwind.jitdump.file.records_bad;
}

void status_unwjit_json(FILE *o, const struct daemon_status *s)
{
	fputs(", \"jit\": {", o);
	counters_json_first(o, counters, COUNTERS_LEN(counters), s);
	fprintf(o, ", \"dump_files_bad\": %" PRIu64 "}", dump_files_bad(s));
}

void status_unwjit_text(FILE *o, const struct daemon_status *s)
{
	counters_text(o, "unwind_jit", counters, COUNTERS_LEN(counters), s);
	fprintf(o, "unwind_jit_dump_files_bad %" PRIu64 "\n", dump_files_bad(s));
}

void status_unwjit_metrics(FILE *o, const struct daemon_status *s)
{
	counters_metrics(o, counters, COUNTERS_LEN(counters), s);
	http_metric_u64(o, "flamed_unwind_jit_dump_files_bad_total", "counter",
			"jitdump files not read further for unwinding information: not one, or a record without a "
			"size.", dump_files_bad(s));
}
