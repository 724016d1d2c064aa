/* status_bpf.h - the BPF programs' part of /api/v1/status and /metrics: each program the kernel
 * accepted with the verifier's work on it, and each optional feature with why it is off. */
#ifndef FLAMED_STATUS_BPF_H
#define FLAMED_STATUS_BPF_H

#include <stdio.h>

#include "status.h"

/* Writes ', "bpf": {...}' of the JSON status. */
void status_bpf_json(FILE *o, const struct daemon_status *s);

/* Writes the "bpf_* value" and "feature_* value" lines of the text status. */
void status_bpf_text(FILE *o, const struct daemon_status *s);

/* Writes the flamed_bpf_* metrics (Prometheus text). */
void status_bpf_metrics(FILE *o, const struct daemon_status *s);

/* Writes ', "refused": "WHY"' when feature f was asked for and is off (nothing otherwise): for the
 * off_cpu and python objects of the JSON status. */
void status_bpf_refused_json(FILE *o, const struct daemon_status *s, enum bpf_feature f);

#endif
