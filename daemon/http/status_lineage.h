/* status_lineage.h - the process tree's part of /api/v1/status and /metrics: how parents were learnt. */
#ifndef FLAMED_STATUS_LINEAGE_H
#define FLAMED_STATUS_LINEAGE_H

#include <stdio.h>

#include "status.h"

/* Writes ', "processes": {...}' of the JSON status. */
void status_lineage_json(FILE *o, const struct daemon_status *s);

/* Writes the "processes_* value" lines of the text status. */
void status_lineage_text(FILE *o, const struct daemon_status *s);

/* Writes the flamed_processes_* metrics (Prometheus text). */
void status_lineage_metrics(FILE *o, const struct daemon_status *s);

#endif
