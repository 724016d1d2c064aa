/* status_unwjit.c - unwind rows of JIT code registered with the GDB JIT interface or described by a
 * jitdump file's unwinding information (lib/unwind/jitrows.c, dumprows.c, read by lib/unwind/unwinder.c):
 * objects read, refused, tables loaded, as JSON, text and metrics. */
#include <inttypes.h>

#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_unwjit.h"

/* Each counter: its JSON and text name, its value, its metric, its type and what it counts. */
#define UNWJIT_COUNTERS(X)                                                                                    \
	X(objects, s->unwind.jit.objects, "flamed_unwind_jit_objects_total", "counter",                        \
	  "JIT objects whose .eh_frame gave unwind rows.")                                                      \
	X(objects_without, s->unwind.jit.objects_without, "flamed_unwind_jit_objects_without_total", "counter", \
	  "JIT objects with no .eh_frame, or none giving rows (walked with frame pointers).")                   \
	X(objects_bad, s->unwind.jit.objects_bad, "flamed_unwind_jit_objects_bad_total", "counter",             \
	  "JIT objects refused: malformed, their .eh_frame unreadable or corrupt, spread over 4 GiB, or past "   \
	  "4096 in one process.")                                                                               \
	X(objects_replaced, s->unwind.jit.objects_replaced, "flamed_unwind_jit_objects_replaced_total",         \
	  "counter", "JIT objects' rows dropped for code a jitdump file loaded later at their address.")       \
	X(objects_fp, s->unwind.jit.objects_fp, "flamed_unwind_jit_objects_fp_total", "counter",                \
	  "Code a jitdump file gave unwinding information for that keeps a frame pointer: walked by it.")      \
	X(objects_kept, s->unwind.jit.objects_kept, "flamed_unwind_jit_objects_kept_total", "counter",          \
	  "JIT objects of a GDB JIT list read again whose rows were kept, not built again.")                    \
	X(rows, s->unwind.jit.rows, "flamed_unwind_jit_rows_total", "counter", "Unwind rows read from JIT objects.") \
	X(tables, s->unwind.jit_tables, "flamed_unwind_jit_tables", "gauge",                                   \
	  "Unwind tables of JIT code loaded: one per mapping of anonymous memory holding JIT objects.")          \
	X(lists_read, s->unwind.jit.list.lists_read, "flamed_unwind_jit_lists_read_total", "counter",          \
	  "GDB JIT interface lists read for unwind rows (a process's first, or changed since).")               \
	X(objects_too_big, s->unwind.jit.list.objects_too_big, "flamed_unwind_jit_objects_too_big_total",       \
	  "counter", "JIT objects not read for unwind rows: over 16 MiB, or past 128 MiB in one list.")          \
	X(lists_cut, s->unwind.jit.list.lists_cut, "flamed_unwind_jit_lists_cut_total", "counter",             \
	  "JIT object lists cut while read for unwind rows: past 65,536 entries, or looping.")                 \
	X(reads_failed, s->unwind.jit.list.reads_failed, "flamed_unwind_jit_reads_failed_total", "counter",    \
	  "GDB JIT descriptors, entries or objects unreadable while read for unwind rows.")                    \
	X(dump_files_read, s->unwind.jitdump.file.files_read, "flamed_unwind_jit_dump_files_read_total",        \
	  "counter", "jitdump files read for their unwinding information, from their start.")                 \
	X(dump_unwind_records, s->unwind.jitdump.records, "flamed_unwind_jit_dump_unwind_records_total",        \
	  "counter", "Unwinding-information records read from jitdump files.")                               \
	X(dump_unwind_bad, s->unwind.jitdump.bad, "flamed_unwind_jit_dump_unwind_bad_total", "counter",         \
	  "Unwinding-information records refused: malformed, or past 64 KiB.")                                 \
	X(dump_files_bad, s->unwind.jitdump.file.files_bad + s->unwind.jitdump.file.records_bad,                \
	  "flamed_unwind_jit_dump_files_bad_total", "counter",                                                 \
	  "jitdump files not read further for unwinding information: not one, or a record without a size.")

void status_unwjit_json(FILE *o, const struct daemon_status *s)
{
	int n = 0;

	fputs(", \"jit\": {", o);
#define JSON(f, v, metric, type, help) fprintf(o, "%s\"%s\": %" PRIu64, n++ ? ", " : "", #f, (uint64_t)(v));
	UNWJIT_COUNTERS(JSON)
#undef JSON
	fputc('}', o);
}

void status_unwjit_text(FILE *o, const struct daemon_status *s)
{
#define TEXT(f, v, metric, type, help) fprintf(o, "unwind_jit_%s %" PRIu64 "\n", #f, (uint64_t)(v));
	UNWJIT_COUNTERS(TEXT)
#undef TEXT
}

void status_unwjit_metrics(FILE *o, const struct daemon_status *s)
{
#define METRIC(f, v, metric, type, help) http_metric_u64(o, metric, type, help, (uint64_t)(v));
	UNWJIT_COUNTERS(METRIC)
#undef METRIC
}
