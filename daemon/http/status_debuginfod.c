/* status_debuginfod.c - debug files asked of debuginfod servers (lib/elf/debugfetch.c): waiting,
 * fetched, missed, failed, what the cache holds; and frames stored unnamed that were named when read
 * (lib/symbolize/latenames.c), as JSON, text and metrics. */
#include "http/counters.h"
#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_debuginfod.h"
#include "render/json.h"

static const struct counter counters[] = {
	STATUS_COUNTER(debuginfod.fetch.queued, "queued", "flamed_debuginfod_queued", "gauge",
		"Debug files waiting to be asked for."),
	STATUS_COUNTER(debuginfod.fetch.fetching, "fetching", "flamed_debuginfod_fetching", "gauge",
		"Debug files being fetched now."),
	STATUS_COUNTER(debuginfod.fetch.fetched, "fetched", "flamed_debuginfod_fetched_total", "counter",
		"Debug files fetched from debuginfod servers."),
	STATUS_COUNTER(debuginfod.fetch.missed, "missed", "flamed_debuginfod_missed_total", "counter",
		"Debug files the servers answered they do not have (asked again after 10 minutes)."),
	STATUS_COUNTER(debuginfod.fetch.failed, "failed", "flamed_debuginfod_failed_total", "counter",
		"Debug files not fetched for an error: no server reached, timed out, too big, cut at shutdown."),
	STATUS_COUNTER(debuginfod.fetch.dropped, "dropped", "flamed_debuginfod_dropped_total", "counter",
		"Debug files not asked for: the queue or the memory of build-ids was full."),
	STATUS_COUNTER(debuginfod.fetch.files, "files", "flamed_debuginfod_cache_files", "gauge",
		"Debug files in the cache."),
	STATUS_COUNTER(debuginfod.fetch.bytes, "bytes", "flamed_debuginfod_cache_bytes", "gauge",
		"Disk the cached debug files take."),
	STATUS_COUNTER(debuginfod.fetch.evicted, "evicted", "flamed_debuginfod_evicted_total", "counter",
		"Cached debug files deleted for room (--debuginfod-cache-mb), the least recently used first."),
	STATUS_COUNTER(debuginfod.fetch.too_big, "too_big", "flamed_debuginfod_too_big_total", "counter",
		"Fetched debug files larger than the whole cache, deleted."),
	STATUS_COUNTER(debuginfod.late.named, "named_at_read", "flamed_debuginfod_named_at_read_total", "counter",
		"Frames stored unnamed, named when read from a debug file that came later."),
	STATUS_COUNTER(debuginfod.late.jit_named, "jit_named_at_read", "flamed_jit_dump_named_at_read_total", "counter",
		"JIT frames stored unnamed, named when read from the jitdump file their runtime wrote since."),
	STATUS_COUNTER(debuginfod.late.loaded, "late_files_read", "flamed_debuginfod_late_files_read_total", "counter",
		"Debug files read to name stored frames."),
};

void status_debuginfod_json(FILE *o, const struct daemon_status *s)
{
	fprintf(o, ", \"debuginfod\": {\"enabled\": %s, \"urls\": ", s->debuginfod.enabled ? "true" : "false");
	json_write_string(o, s->debuginfod.urls ? s->debuginfod.urls : "");
	counters_json(o, counters, COUNTERS_LEN(counters), s);
	fputc('}', o);
}

void status_debuginfod_text(FILE *o, const struct daemon_status *s)
{
	fprintf(o, "debuginfod_enabled %d\n", s->debuginfod.enabled);
	counters_text(o, "debuginfod", counters, COUNTERS_LEN(counters), s);
}

void status_debuginfod_metrics(FILE *o, const struct daemon_status *s)
{
	http_metric_u64(o, "flamed_debuginfod_enabled", "gauge", "1 when debug files are fetched (--debuginfod).",
			s->debuginfod.enabled);
	counters_metrics(o, counters, COUNTERS_LEN(counters), s);
}
