/* counter.h - a counter described once: its name, metric, type and help, and where its value is in the
 * stats struct (or the BPF program's stat array) a table of them describes. The module that counts it
 * holds the table; daemon/http/counters.c writes any table into the JSON status, the text status and
 * /metrics, so the three cannot drift apart. */
#ifndef FLAMED_UTIL_COUNTER_H
#define FLAMED_UTIL_COUNTER_H

#include <stddef.h>
#include <stdint.h>

/* One uint64_t counter. Members of a group (consecutive entries with the same group) are one JSON object
 * ("group": {"name": v, ...}), text lines "PREFIX_group_name v" and one labelled metric
 * (metric{label="name"} v, with the help of the group's first member); a counter outside a group is
 * "name": v, "PREFIX_name v" and a metric of its own. */
struct counter {
	const char *name;   /* JSON key; text name after PREFIX_; in a group, the label's value */
	const char *group;  /* NULL, or the group it belongs to */
	const char *metric; /* Prometheus name (a group's members share it) */
	const char *type;   /* "counter" or "gauge" */
	const char *label;  /* a group's label name ("reason", "kind"); NULL outside a group */
	const char *help;   /* in a group, only its first member's is written */
	size_t off;         /* of the value, in bytes from the start of what the table describes */
};

/* A counter at member field of struct type st. */
#define COUNTER(st, field, name, metric, type, help) { name, NULL, metric, type, NULL, help, offsetof(st, field) }
/* A member of group, its label's value name, at member field of st. */
#define COUNTER_OF(st, field, group, label, name, metric, help)                                              \
	{ name, group, metric, "counter", label, help, offsetof(st, field) }
/* A counter of the BPF program's stat array (uint64_t[STAT_MAX], enum profile_stat), at index stat. */
#define COUNTER_STAT(stat, name, metric, type, help) { name, NULL, metric, type, NULL, help, (stat) * sizeof(uint64_t) }
#define COUNTER_STAT_OF(stat, group, label, name, metric, help)                                              \
	{ name, group, metric, "counter", label, help, (stat) * sizeof(uint64_t) }

#define COUNTERS_LEN(t) (sizeof(t) / sizeof((t)[0]))

#endif
