/* status_offcpu.h - the off-CPU profiler's part of /api/v1/status and /metrics. */
#ifndef FLAMED_STATUS_OFFCPU_H
#define FLAMED_STATUS_OFFCPU_H

#include <stdio.h>

#include "status.h"

/* Writes ', "off_cpu": {...}' of the JSON status. */
void status_offcpu_json(FILE *o, const struct daemon_status *s);

/* Writes the "off_cpu_* value" lines of the text status. */
void status_offcpu_text(FILE *o, const struct daemon_status *s);

/* Writes the flamed_offcpu_* metrics (Prometheus text). */
void status_offcpu_metrics(FILE *o, const struct daemon_status *s);

#endif
