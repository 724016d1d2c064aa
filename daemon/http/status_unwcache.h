/* status_unwcache.h - the unwind tables' disk cache in /api/v1/status and /metrics (tablecache.h). */
#ifndef FLAMED_STATUS_UNWCACHE_H
#define FLAMED_STATUS_UNWCACHE_H

#include <stdio.h>

#include "status.h"

/* Writes ', "cache": {...}' inside the JSON status's "unwind" object. */
void status_unwcache_json(FILE *o, const struct daemon_status *s);

/* Writes the "unwind_cache_* value" lines of the text status. */
void status_unwcache_text(FILE *o, const struct daemon_status *s);

/* Writes the flamed_unwind_cache_* metrics (Prometheus text). */
void status_unwcache_metrics(FILE *o, const struct daemon_status *s);

#endif
