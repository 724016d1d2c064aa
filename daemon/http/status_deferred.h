/* status_deferred.h - the deferred samples' part of /api/v1/status and /metrics: samples taken before
 * their process's unwind tables were ready, copied by the BPF program and walked later (deferred.h). */
#ifndef FLAMED_STATUS_DEFERRED_H
#define FLAMED_STATUS_DEFERRED_H

#include <stdio.h>

#include "status.h"

/* Writes ', "deferred": {...}' of the JSON status. */
void status_deferred_json(FILE *o, const struct daemon_status *s);

/* Writes the "deferred_* value" lines of the text status. */
void status_deferred_text(FILE *o, const struct daemon_status *s);

/* Writes the flamed_deferred_* metrics (Prometheus text). */
void status_deferred_metrics(FILE *o, const struct daemon_status *s);

#endif
