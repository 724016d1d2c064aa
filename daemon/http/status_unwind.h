/* status_unwind.h - the unwinder's part of /api/v1/status and /metrics: user stacks walked by how, the
 * unwind tables and the processes given them (unwinder.h), with its disk cache's and JIT code's parts. */
#ifndef FLAMED_STATUS_UNWIND_H
#define FLAMED_STATUS_UNWIND_H

#include <stdio.h>

#include "status.h"

/* Writes ', "unwind": {...}' of the JSON status. */
void status_unwind_json(FILE *o, const struct daemon_status *s);

/* Writes the "unwind_* value" lines of the text status. */
void status_unwind_text(FILE *o, const struct daemon_status *s);

/* Writes the flamed_unwind_* metrics (Prometheus text). */
void status_unwind_metrics(FILE *o, const struct daemon_status *s);

#endif
