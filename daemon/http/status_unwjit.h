/* status_unwjit.h - unwind rows of JIT code (lib/unwind/jitrows.h) in /api/v1/status and /metrics. */
#ifndef FLAMED_STATUS_UNWJIT_H
#define FLAMED_STATUS_UNWJIT_H

#include <stdio.h>

#include "status.h"

/* Writes ', "jit": {...}' inside the JSON status's "unwind" object. */
void status_unwjit_json(FILE *o, const struct daemon_status *s);

/* Writes the "unwind_jit_* value" lines of the text status. */
void status_unwjit_text(FILE *o, const struct daemon_status *s);

/* Writes the flamed_unwind_jit_* metrics (Prometheus text). */
void status_unwjit_metrics(FILE *o, const struct daemon_status *s);

#endif
