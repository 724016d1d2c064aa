/* status_debuginfod.c - debug files asked of debuginfod servers (lib/elf/debugfetch.c): waiting,
 * fetched, missed, failed, what the cache holds; and frames stored unnamed that were named when read
 * (lib/symbolize/latenames.c), as JSON, text and metrics. */
#include <inttypes.h>

#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_debuginfod.h"
#include "render/json.h"

/* Each counter: its JSON and text name, where it is, its metric, type and what it counts. */
#define DEBUGINFOD_COUNTERS(X)                                                                            \
	X(queued, fetch.queued, "flamed_debuginfod_queued", "gauge", "Debug files waiting to be asked for.") \
	X(fetching, fetch.fetching, "flamed_debuginfod_fetching", "gauge", "Debug files being fetched now.")  \
	X(fetched, fetch.fetched, "flamed_debuginfod_fetched_total", "counter",                             \
	  "Debug files fetched from debuginfod servers.")                                                    \
	X(missed, fetch.missed, "flamed_debuginfod_missed_total", "counter",                                \
	  "Debug files the servers answered they do not have (asked again after 10 minutes).")              \
	X(failed, fetch.failed, "flamed_debuginfod_failed_total", "counter",                                \
	  "Debug files not fetched for an error: no server reached, timed out, too big, cut at shutdown.")   \
	X(dropped, fetch.dropped, "flamed_debuginfod_dropped_total", "counter",                             \
	  "Debug files not asked for: the queue or the memory of build-ids was full.")                      \
	X(files, fetch.files, "flamed_debuginfod_cache_files", "gauge", "Debug files in the cache.")          \
	X(bytes, fetch.bytes, "flamed_debuginfod_cache_bytes", "gauge", "Disk the cached debug files take.")  \
	X(evicted, fetch.evicted, "flamed_debuginfod_evicted_total", "counter",                             \
	  "Cached debug files deleted for room (--debuginfod-cache-mb), the least recently used first.")    \
	X(too_big, fetch.too_big, "flamed_debuginfod_too_big_total", "counter",                             \
	  "Fetched debug files larger than the whole cache, deleted.")                                      \
	X(named_at_read, late.named, "flamed_debuginfod_named_at_read_total", "counter",                    \
	  "Frames stored unnamed, named when read from a debug file that came later.")                      \
	X(jit_named_at_read, late.jit_named, "flamed_jit_dump_named_at_read_total", "counter",                \
	  "JIT frames stored unnamed, named when read from the jitdump file their runtime wrote since.")     \
	X(late_files_read, late.loaded, "flamed_debuginfod_late_files_read_total", "counter",               \
	  "Debug files read to name stored frames.")

void status_debuginfod_json(FILE *o, const struct daemon_status *s)
{
	fprintf(o, ", \"debuginfod\": {\"enabled\": %s, \"urls\": ", s->debuginfod.enabled ? "true" : "false");
	json_write_string(o, s->debuginfod.urls ? s->debuginfod.urls : "");
#define JSON(f, field, metric, type, help) fprintf(o, ", \"%s\": %" PRIu64, #f, s->debuginfod.field);
	DEBUGINFOD_COUNTERS(JSON)
#undef JSON
	fputc('}', o);
}

void status_debuginfod_text(FILE *o, const struct daemon_status *s)
{
	fprintf(o, "debuginfod_enabled %d\n", s->debuginfod.enabled);
#define TEXT(f, field, metric, type, help) fprintf(o, "debuginfod_%s %" PRIu64 "\n", #f, s->debuginfod.field);
	DEBUGINFOD_COUNTERS(TEXT)
#undef TEXT
}

void status_debuginfod_metrics(FILE *o, const struct daemon_status *s)
{
	http_metric_u64(o, "flamed_debuginfod_enabled", "gauge", "1 when debug files are fetched (--debuginfod).",
			s->debuginfod.enabled);
#define METRIC(f, field, metric, type, help) http_metric_u64(o, metric, type, help, s->debuginfod.field);
	DEBUGINFOD_COUNTERS(METRIC)
#undef METRIC
}
