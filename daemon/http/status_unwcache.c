/* status_unwcache.c - the unwind tables kept on disk between restarts (lib/unwind/tablecache.c): read,
 * missed, written, deleted, and what the cache holds, as JSON, text and metrics. */
#include <inttypes.h>

#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_unwcache.h"

/* Each counter: its JSON and text name, its metric and what it counts. */
#define UNWCACHE_COUNTERS(X)                                                                                 \
	X(hits, "flamed_unwind_cache_hits_total", "counter", "Unwind tables read from the disk cache.")          \
	X(misses, "flamed_unwind_cache_misses_total", "counter",                                              \
	  "Unwind tables looked for in the disk cache and built: not there.")                                \
	X(stored, "flamed_unwind_cache_stored_total", "counter", "Unwind tables written to the disk cache.")     \
	X(evicted, "flamed_unwind_cache_evicted_total", "counter",                                            \
	  "Cached unwind tables deleted for room, the least recently used first.")                             \
	X(bad, "flamed_unwind_cache_bad_total", "counter",                                                    \
	  "Cached unwind tables deleted unread: short, malformed, another build's or a wrong checksum.")       \
	X(stale, "flamed_unwind_cache_stale_total", "counter",                                                \
	  "Cached unwind tables deleted unread: written by another version of flamed.")                       \
	X(refused, "flamed_unwind_cache_refused_total", "counter",                                            \
	  "Unwind tables not cached: bigger than --unwind-cache-mb, or the write failed.")                    \
	X(files, "flamed_unwind_cache_files", "gauge", "Unwind tables in the disk cache.")                      \
	X(bytes, "flamed_unwind_cache_bytes", "gauge", "Disk the cached unwind tables take.")                   \
	X(max_bytes, "flamed_unwind_cache_max_bytes", "gauge", "The disk cache's bound (--unwind-cache-mb).")

void status_unwcache_json(FILE *o, const struct daemon_status *s)
{
	fprintf(o, ", \"cache\": {\"enabled\": %s", s->unwind.cache.max_bytes ? "true" : "false");
#define JSON(f, metric, type, help) fprintf(o, ", \"%s\": %" PRIu64, #f, s->unwind.cache.f);
	UNWCACHE_COUNTERS(JSON)
#undef JSON
	fputc('}', o);
}

void status_unwcache_text(FILE *o, const struct daemon_status *s)
{
#define TEXT(f, metric, type, help) fprintf(o, "unwind_cache_%s %" PRIu64 "\n", #f, s->unwind.cache.f);
	UNWCACHE_COUNTERS(TEXT)
#undef TEXT
}

void status_unwcache_metrics(FILE *o, const struct daemon_status *s)
{
#define METRIC(f, metric, type, help) http_metric_u64(o, metric, type, help, s->unwind.cache.f);
	UNWCACHE_COUNTERS(METRIC)
#undef METRIC
}
