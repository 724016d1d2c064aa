/* status_jit.c - frames of JIT code named from perf maps (lib/symbolize/perfmap.c), jitdump files
 * (lib/symbolize/jitdump.c) and the objects JITs register with the GDB JIT interface
 * (lib/symbolize/gdbjit.c): what was read, held, refused. */
#include <inttypes.h>

#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_jit.h"

/* Each counter: its place (perf map or GDB JIT), its JSON name, its metric, its type and what it counts. */
#define PERFMAP_COUNTERS(X)                                                                                 \
	X(perfmap_files_loaded, files_loaded, "flamed_jit_perfmap_files_loaded_total", "counter",            \
	  "Perf maps (/tmp/perf-PID.map) read from their start.")                                             \
	X(perfmap_files_rejected, files_rejected, "flamed_jit_perfmap_files_rejected_total", "counter",      \
	  "Perf maps ignored: not the process's user's, writable by others, not a regular file.")            \
	X(perfmap_lines_skipped, lines_skipped, "flamed_jit_perfmap_lines_skipped_total", "counter",         \
	  "Malformed perf-map lines.")                                                                        \
	X(perfmap_names_truncated, names_truncated, "flamed_jit_perfmap_names_truncated_total", "counter",   \
	  "Perf-map names cut to 1024 bytes.")                                                                \
	X(perfmap_entries_dropped, entries_dropped, "flamed_jit_perfmap_entries_dropped_total", "counter",   \
	  "Perf-map lines past 1,000,000 symbols in one process.")                                            \
	X(perfmap_symbols, symbols, "flamed_jit_perfmap_symbols", "gauge", "Perf-map symbols held.")

#define GDBJIT_COUNTERS(X)                                                                                  \
	X(lists_read, "flamed_jit_gdb_lists_read_total", "counter",                                         \
	  "GDB JIT interface lists read (a process's first, or changed since).")                             \
	X(objects, "flamed_jit_gdb_objects_total", "counter", "In-memory JIT objects (ELF images) parsed.")   \
	X(symbols, "flamed_jit_gdb_symbols_total", "counter", "Function symbols taken from JIT objects.")      \
	X(objects_bad, "flamed_jit_gdb_objects_bad_total", "counter",                                        \
	  "JIT objects refused: not ELF, malformed, or without a symbol table.")                             \
	X(objects_too_big, "flamed_jit_gdb_objects_too_big_total", "counter",                                \
	  "JIT objects not read: over 16 MiB, or past 128 MiB in one list.")                                  \
	X(lists_cut, "flamed_jit_gdb_lists_cut_total", "counter", "JIT object lists cut: past 65,536 entries, or looping.")  \
	X(reads_failed, "flamed_jit_gdb_reads_failed_total", "counter",                                      \
	  "GDB JIT descriptors, entries or objects that could not be read from their process.")              \
	X(descriptors_bad, "flamed_jit_gdb_descriptors_bad_total", "counter",                                \
	  "GDB JIT descriptors of a version other than 1.")                                                   \
	X(symbols_dropped, "flamed_jit_gdb_symbols_dropped_total", "counter",                                \
	  "JIT symbols past 1,000,000 in one process, or past 64 MiB of names.")                              \
	X(processes, "flamed_jit_gdb_processes", "gauge", "Processes whose JIT objects are held.")

#define JITDUMP_COUNTERS(X)                                                                                 \
	X(files_read, "flamed_jit_dump_files_read_total", "counter", "jitdump files (jit-PID.dump) read from their start.") \
	X(files_bad, "flamed_jit_dump_files_bad_total", "counter",                                          \
	  "Files named jit-PID.dump that are not jitdump files (or of another byte order).")                  \
	X(records, "flamed_jit_dump_records_total", "counter", "jitdump records read.")                     \
	X(loads, "flamed_jit_dump_loads_total", "counter", "jitdump code-load records: JIT symbols.")        \
	X(moves, "flamed_jit_dump_moves_total", "counter", "jitdump code-move records.")                    \
	X(records_bad, "flamed_jit_dump_records_bad_total", "counter",                                      \
	  "jitdump records too short for their kind, or whose name does not end inside them.")               \
	X(files_cut, "flamed_jit_dump_files_cut_total", "counter", "jitdump files read no further than 512 MiB.") \
	X(symbols_dropped, "flamed_jit_dump_symbols_dropped_total", "counter",                              \
	  "jitdump symbols past 1,000,000 in one process, or past 64 MiB of names.")                         \
	X(processes, "flamed_jit_dump_processes", "gauge", "Processes whose jitdump file is held.")

void status_jit_json(FILE *o, const struct daemon_status *s)
{
	const struct symbolizer_stats *y = &s->symbolizer;

	fprintf(o, ", \"jit\": {\"named\": %" PRIu64 ", \"perf_map\": {\"named\": %" PRIu64, y->jit_hits,
		y->jit_hits - y->gdbjit_hits - y->jitdump_hits);
#define JSON(f, name, metric, type, help) fprintf(o, ", \"%s\": %" PRIu64, #name, y->f);
	PERFMAP_COUNTERS(JSON)
#undef JSON
	fprintf(o, "}, \"jitdump\": {\"named\": %" PRIu64 ", \"left_late\": %" PRIu64, y->jitdump_hits,
		y->jitdump_late);
#define JSON(f, metric, type, help) fprintf(o, ", \"%s\": %" PRIu64, #f, y->jitdump.f);
	JITDUMP_COUNTERS(JSON)
#undef JSON
	fprintf(o, "}, \"gdb_jit\": {\"named\": %" PRIu64, y->gdbjit_hits);
#define JSON(f, metric, type, help) fprintf(o, ", \"%s\": %" PRIu64, #f, y->gdbjit.f);
	GDBJIT_COUNTERS(JSON)
#undef JSON
	fputs("}}", o);
}

void status_jit_text(FILE *o, const struct daemon_status *s)
{
	const struct symbolizer_stats *y = &s->symbolizer;

	fprintf(o, "jit_named %" PRIu64 "\njit_gdb_named %" PRIu64 "\njit_dump_named %" PRIu64 "\n", y->jit_hits,
		y->gdbjit_hits, y->jitdump_hits);
#define TEXT(f, metric, type, help) fprintf(o, "jit_dump_%s %" PRIu64 "\n", #f, y->jitdump.f);
	JITDUMP_COUNTERS(TEXT)
#undef TEXT
#define TEXT(f, name, metric, type, help) fprintf(o, "jit_%s %" PRIu64 "\n", #f, y->f);
	PERFMAP_COUNTERS(TEXT)
#undef TEXT
#define TEXT(f, metric, type, help) fprintf(o, "jit_gdb_%s %" PRIu64 "\n", #f, y->gdbjit.f);
	GDBJIT_COUNTERS(TEXT)
#undef TEXT
}

void status_jit_metrics(FILE *o, const struct daemon_status *s)
{
	const struct symbolizer_stats *y = &s->symbolizer;

	http_metric_u64(o, "flamed_jit_frames_named_total", "counter",
			"Frames of JIT code named, from perf maps or the GDB JIT interface.", y->jit_hits);
	http_metric_u64(o, "flamed_jit_gdb_frames_named_total", "counter",
			"Frames of JIT code named from objects registered with the GDB JIT interface.", y->gdbjit_hits);
	http_metric_u64(o, "flamed_jit_dump_frames_named_total", "counter",
			"Frames of JIT code named from jitdump files.", y->jitdump_hits);
	http_metric_u64(o, "flamed_jit_dump_frames_late_total", "counter",
			"Frames of JIT code stored as jit-PID.dump+0xADDR, their record not written yet: named when read.",
			y->jitdump_late);
#define METRIC(f, metric, type, help) http_metric_u64(o, metric, type, help, y->jitdump.f);
	JITDUMP_COUNTERS(METRIC)
#undef METRIC
#define METRIC(f, name, metric, type, help) http_metric_u64(o, metric, type, help, y->f);
	PERFMAP_COUNTERS(METRIC)
#undef METRIC
#define METRIC(f, metric, type, help) http_metric_u64(o, metric, type, help, y->gdbjit.f);
	GDBJIT_COUNTERS(METRIC)
#undef METRIC
}
