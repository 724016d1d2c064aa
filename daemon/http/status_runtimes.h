/* status_runtimes.h - each runtime's part of /api/v1/status and /metrics (CPython's "python"). */
#ifndef FLAMED_STATUS_RUNTIMES_H
#define FLAMED_STATUS_RUNTIMES_H

#include <stdio.h>

#include "status.h"

/* Writes ', "NAME": {...}' of the JSON status for each runtime. */
void status_runtimes_json(FILE *o, const struct daemon_status *s);

/* Writes the "NAME_* value" lines of the text status. */
void status_runtimes_text(FILE *o, const struct daemon_status *s);

/* Writes each runtime's metrics (Prometheus text). */
void status_runtimes_metrics(FILE *o, const struct daemon_status *s);

#endif
