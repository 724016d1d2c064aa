/* status_unwcache.c - the unwind tables kept on disk between restarts (lib/unwind/tablecache.c): read,
 * missed, written, deleted, and what the cache holds, as JSON, text and metrics. */
#include "http/counters.h"
#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_unwcache.h"

static const struct counter counters[] = {
	STATUS_COUNTER(unwind.cache.hits, "hits", "flamed_unwind_cache_hits_total", "counter",
		"Unwind tables read from the disk cache."),
	STATUS_COUNTER(unwind.cache.misses, "misses", "flamed_unwind_cache_misses_total", "counter",
		"Unwind tables looked for in the disk cache and built: not there."),
	STATUS_COUNTER(unwind.cache.stored, "stored", "flamed_unwind_cache_stored_total", "counter",
		"Unwind tables written to the disk cache."),
	STATUS_COUNTER(unwind.cache.evicted, "evicted", "flamed_unwind_cache_evicted_total", "counter",
		"Cached unwind tables deleted for room, the least recently used first."),
	STATUS_COUNTER(unwind.cache.bad, "bad", "flamed_unwind_cache_bad_total", "counter",
		"Cached unwind tables deleted unread: short, malformed, another build's or a wrong checksum."),
	STATUS_COUNTER(unwind.cache.stale, "stale", "flamed_unwind_cache_stale_total", "counter",
		"Cached unwind tables deleted unread: written by another version of flamed."),
	STATUS_COUNTER(unwind.cache.refused, "refused", "flamed_unwind_cache_refused_total", "counter",
		"Unwind tables not cached: bigger than --unwind-cache-mb, or the write failed."),
	STATUS_COUNTER(unwind.cache.files, "files", "flamed_unwind_cache_files", "gauge",
		"Unwind tables in the disk cache."),
	STATUS_COUNTER(unwind.cache.bytes, "bytes", "flamed_unwind_cache_bytes", "gauge",
		"Disk the cached unwind tables take."),
	STATUS_COUNTER(unwind.cache.max_bytes, "max_bytes", "flamed_unwind_cache_max_bytes", "gauge",
		"The disk cache's bound (--unwind-cache-mb)."),
};

void status_unwcache_json(FILE *o, const struct daemon_status *s)
{
	fprintf(o, ", \"cache\": {\"enabled\": %s", s->unwind.cache.max_bytes ? "true" : "false");
	counters_json(o, counters, COUNTERS_LEN(counters), s);
	fputc('}', o);
}

void status_unwcache_text(FILE *o, const struct daemon_status *s)
{
	counters_text(o, "unwind_cache", counters, COUNTERS_LEN(counters), s);
}

void status_unwcache_metrics(FILE *o, const struct daemon_status *s)
{
	counters_metrics(o, counters, COUNTERS_LEN(counters), s);
}
