/* status_python.h - the Python frame walker's part of /api/v1/status and /metrics. */
#ifndef FLAMED_STATUS_PYTHON_H
#define FLAMED_STATUS_PYTHON_H

#include <stdio.h>

#include "status.h"

/* Writes ', "python": {...}' of the JSON status. */
void status_python_json(FILE *o, const struct daemon_status *s);

/* Writes the "python_* value" lines of the text status. */
void status_python_text(FILE *o, const struct daemon_status *s);

/* Writes the flamed_python_* metrics (Prometheus text). */
void status_python_metrics(FILE *o, const struct daemon_status *s);

#endif
