/* status_cgroups.h - where samples ran (daemon/cgroups.c) in the status and the metrics. */
#ifndef FLAMED_STATUS_CGROUPS_H
#define FLAMED_STATUS_CGROUPS_H

#include <stdio.h>

#include "status.h"

/* Writes ', "cgroups": {...}' of the JSON status. */
void status_cgroups_json(FILE *o, const struct daemon_status *s);

/* Writes the "cgroups_* value" lines of the text status. */
void status_cgroups_text(FILE *o, const struct daemon_status *s);

/* Writes the flamed_cgroups_* metrics (Prometheus text). */
void status_cgroups_metrics(FILE *o, const struct daemon_status *s);

#endif
