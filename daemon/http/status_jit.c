/* status_jit.c - frames of JIT code named from perf maps (lib/symbolize/perfmap.c), jitdump files
 * (lib/symbolize/jitdump.c) and the objects JITs register with the GDB JIT interface
 * (lib/symbolize/gdbjit.c): what was read, held, refused. */
#include <inttypes.h>

#include "http/counters.h"
#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_jit.h"

/* Perf maps read (/tmp/perf-PID.map), their lines and the symbols held. */
static const struct counter perfmap[] = {
	STATUS_COUNTER(symbolizer.perfmap_files_loaded, "files_loaded", "flamed_jit_perfmap_files_loaded_total",
		"counter", "Perf maps (/tmp/perf-PID.map) read from their start."),
	STATUS_COUNTER(symbolizer.perfmap_files_rejected, "files_rejected", "flamed_jit_perfmap_files_rejected_total",
		"counter", "Perf maps ignored: not the process's user's, writable by others, not a regular file."),
	STATUS_COUNTER(symbolizer.perfmap_lines_skipped, "lines_skipped", "flamed_jit_perfmap_lines_skipped_total",
		"counter", "Malformed perf-map lines."),
	STATUS_COUNTER(symbolizer.perfmap_names_truncated, "names_truncated",
		"flamed_jit_perfmap_names_truncated_total", "counter", "Perf-map names cut to 1024 bytes."),
	STATUS_COUNTER(symbolizer.perfmap_entries_dropped, "entries_dropped",
		"flamed_jit_perfmap_entries_dropped_total", "counter",
		"Perf-map lines past 1,000,000 symbols in one process."),
	STATUS_COUNTER(symbolizer.perfmap_symbols, "symbols", "flamed_jit_perfmap_symbols", "gauge",
		"Perf-map symbols held."),
};

/* The GDB JIT interface's lists read and the objects JITs registered with it. */
static const struct counter gdbjit[] = {
	STATUS_COUNTER(symbolizer.gdbjit.lists_read, "lists_read", "flamed_jit_gdb_lists_read_total", "counter",
		"GDB JIT interface lists read (a process's first, or changed since)."),
	STATUS_COUNTER(symbolizer.gdbjit.objects, "objects", "flamed_jit_gdb_objects_total", "counter",
		"In-memory JIT objects (ELF images) parsed."),
	STATUS_COUNTER(symbolizer.gdbjit.symbols, "symbols", "flamed_jit_gdb_symbols_total", "counter",
		"Function symbols taken from JIT objects."),
	STATUS_COUNTER(symbolizer.gdbjit.objects_bad, "objects_bad", "flamed_jit_gdb_objects_bad_total", "counter",
		"JIT objects refused: not ELF, malformed, or without a symbol table."),
	STATUS_COUNTER(symbolizer.gdbjit.objects_too_big, "objects_too_big", "flamed_jit_gdb_objects_too_big_total",
		"counter", "JIT objects not read: over 16 MiB, or past 128 MiB in one list."),
	STATUS_COUNTER(symbolizer.gdbjit.lists_cut, "lists_cut", "flamed_jit_gdb_lists_cut_total", "counter",
		"JIT object lists cut: past 65,536 entries, or looping."),
	STATUS_COUNTER(symbolizer.gdbjit.reads_failed, "reads_failed", "flamed_jit_gdb_reads_failed_total", "counter",
		"GDB JIT descriptors, entries or objects that could not be read from their process."),
	STATUS_COUNTER(symbolizer.gdbjit.descriptors_bad, "descriptors_bad", "flamed_jit_gdb_descriptors_bad_total",
		"counter", "GDB JIT descriptors of a version other than 1."),
	STATUS_COUNTER(symbolizer.gdbjit.symbols_dropped, "symbols_dropped", "flamed_jit_gdb_symbols_dropped_total",
		"counter", "JIT symbols past 1,000,000 in one process, or past 64 MiB of names."),
	STATUS_COUNTER(symbolizer.gdbjit.processes, "processes", "flamed_jit_gdb_processes", "gauge",
		"Processes whose JIT objects are held."),
};

/* The jitdump files (jit-PID.dump) read and their records. */
static const struct counter jitdump[] = {
	STATUS_COUNTER(symbolizer.jitdump.files_read, "files_read", "flamed_jit_dump_files_read_total", "counter",
		"jitdump files (jit-PID.dump) read from their start."),
	STATUS_COUNTER(symbolizer.jitdump.files_bad, "files_bad", "flamed_jit_dump_files_bad_total", "counter",
		"Files named jit-PID.dump that are not jitdump files (or of another byte order)."),
	STATUS_COUNTER(symbolizer.jitdump.records, "records", "flamed_jit_dump_records_total", "counter",
		"jitdump records read."),
	STATUS_COUNTER(symbolizer.jitdump.loads, "loads", "flamed_jit_dump_loads_total", "counter",
		"jitdump code-load records: JIT symbols."),
	STATUS_COUNTER(symbolizer.jitdump.moves, "moves", "flamed_jit_dump_moves_total", "counter",
		"jitdump code-move records."),
	STATUS_COUNTER(symbolizer.jitdump.records_bad, "records_bad", "flamed_jit_dump_records_bad_total", "counter",
		"jitdump records too short for their kind, or whose name does not end inside them."),
	STATUS_COUNTER(symbolizer.jitdump.files_cut, "files_cut", "flamed_jit_dump_files_cut_total", "counter",
		"jitdump files read no further than 512 MiB."),
	STATUS_COUNTER(symbolizer.jitdump.symbols_dropped, "symbols_dropped", "flamed_jit_dump_symbols_dropped_total",
		"counter", "jitdump symbols past 1,000,000 in one process, or past 64 MiB of names."),
	STATUS_COUNTER(symbolizer.jitdump.processes, "processes", "flamed_jit_dump_processes", "gauge",
		"Processes whose jitdump file is held."),
};

/* The frames each source named (and perf maps' share, what the others did not) are written by hand: the JSON
 * puts each inside its source's object, the text and the metrics all of them first, and the text has no
 * frames left late. */
void status_jit_json(FILE *o, const struct daemon_status *s)
{
	const struct symbolizer_stats *y = &s->symbolizer;

	fprintf(o, ", \"jit\": {\"named\": %" PRIu64 ", \"perf_map\": {\"named\": %" PRIu64, y->jit_hits,
		y->jit_hits - y->gdbjit_hits - y->jitdump_hits);
	counters_json(o, perfmap, COUNTERS_LEN(perfmap), s);
	fprintf(o, "}, \"jitdump\": {\"named\": %" PRIu64 ", \"left_late\": %" PRIu64, y->jitdump_hits,
		y->jitdump_late);
	counters_json(o, jitdump, COUNTERS_LEN(jitdump), s);
	fprintf(o, "}, \"gdb_jit\": {\"named\": %" PRIu64, y->gdbjit_hits);
	counters_json(o, gdbjit, COUNTERS_LEN(gdbjit), s);
	fputs("}}", o);
}

void status_jit_text(FILE *o, const struct daemon_status *s)
{
	const struct symbolizer_stats *y = &s->symbolizer;

	fprintf(o, "jit_named %" PRIu64 "\njit_gdb_named %" PRIu64 "\njit_dump_named %" PRIu64 "\n", y->jit_hits,
		y->gdbjit_hits, y->jitdump_hits);
	counters_text(o, "jit_dump", jitdump, COUNTERS_LEN(jitdump), s);
	counters_text(o, "jit_perfmap", perfmap, COUNTERS_LEN(perfmap), s);
	counters_text(o, "jit_gdb", gdbjit, COUNTERS_LEN(gdbjit), s);
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
	counters_metrics(o, jitdump, COUNTERS_LEN(jitdump), s);
	counters_metrics(o, perfmap, COUNTERS_LEN(perfmap), s);
	counters_metrics(o, gdbjit, COUNTERS_LEN(gdbjit), s);
}
