/* counters.h - tables of counters described once (util/counter.h) written as the JSON status, the text
 * status and Prometheus metrics. What is not a plain uint64_t (a setting, a string, a duration) the
 * status_*.c files write themselves. */
#ifndef FLAMED_HTTP_COUNTERS_H
#define FLAMED_HTTP_COUNTERS_H

#include <stddef.h>
#include <stdio.h>

#include "status.h"
#include "util/counter.h"

/* A counter (a member of group) at field of struct daemon_status. */
#define STATUS_COUNTER(field, name, metric, type, help) COUNTER(struct daemon_status, field, name, metric, type, help)
#define STATUS_COUNTER_OF(field, group, label, name, metric, help)                                           \
	COUNTER_OF(struct daemon_status, field, group, label, name, metric, help)
#define STATUS_COUNTER_LABELLED(field, name, label, value, metric, help)                                     \
	COUNTER_LABELLED(struct daemon_status, field, name, label, value, metric, help)

/* Writes ', "name": v' (and ', "group": {...}') for each of the n counters of t, their values read from
 * base (what t describes). */
void counters_json(FILE *o, const struct counter *t, size_t n, const void *base);

/* Writes them as counters_json does, the first without its ', ': they begin the object the caller opened. */
void counters_json_first(FILE *o, const struct counter *t, size_t n, const void *base);

/* Writes "prefix_name v" lines (prefix_group_name for a group's members). */
void counters_text(FILE *o, const char *prefix, const struct counter *t, size_t n, const void *base);

/* Writes each metric with its HELP and TYPE lines (once per labelled metric) and its values. */
void counters_metrics(FILE *o, const struct counter *t, size_t n, const void *base);

#endif
