/* status_debuginfod.h - debug files fetched from debuginfod, and frames named when read, in
 * /api/v1/status and /metrics (daemon/debugfiles.h). */
#ifndef FLAMED_STATUS_DEBUGINFOD_H
#define FLAMED_STATUS_DEBUGINFOD_H

#include <stdio.h>

#include "status.h"

/* Writes ', "debuginfod": {...}' of the JSON status. */
void status_debuginfod_json(FILE *o, const struct daemon_status *s);

/* Writes the "debuginfod_* value" lines of the text status. */
void status_debuginfod_text(FILE *o, const struct daemon_status *s);

/* Writes the flamed_debuginfod_* metrics (Prometheus text). */
void status_debuginfod_metrics(FILE *o, const struct daemon_status *s);

#endif
