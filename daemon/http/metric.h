/* metric.h - Prometheus text lines for /metrics, written by status.c and each status_*.c. */
#ifndef FLAMED_HTTP_METRIC_H
#define FLAMED_HTTP_METRIC_H

#include <stdint.h>
#include <stdio.h>

/* Writes a metric's HELP and TYPE lines (Prometheus text). */
void http_metric(FILE *o, const char *name, const char *type, const char *help);

/* Writes a metric's HELP and TYPE lines and its one value. */
void http_metric_u64(FILE *o, const char *name, const char *type, const char *help, uint64_t v);

/* d, or 0 where it is not finite (NaN or infinite): what the status and metrics write for a duration. */
double finite_or_zero(double d);

#endif
