/* status_jit.h - JIT code named (perf maps, the GDB JIT interface) in /api/v1/status and /metrics. */
#ifndef FLAMED_STATUS_JIT_H
#define FLAMED_STATUS_JIT_H

#include <stdio.h>

#include "status.h"

/* Writes ', "jit": {...}' of the JSON status. */
void status_jit_json(FILE *o, const struct daemon_status *s);

/* Writes the "jit_* value" lines of the text status. */
void status_jit_text(FILE *o, const struct daemon_status *s);

/* Writes the flamed_jit_* metrics (Prometheus text). */
void status_jit_metrics(FILE *o, const struct daemon_status *s);

#endif
