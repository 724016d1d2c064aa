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
 * "name": v, "PREFIX_name v" and a metric of its own, unless it has a label: then it is one of a labelled
 * metric as a group's members are (consecutive entries with a label and the same metric), its label's
 * value label_value. A labelled metric whose first entry has no help has its HELP and TYPE lines written
 * by the caller. */
struct counter {
	const char *name;   /* JSON key; text name after PREFIX_; in a group, the label's value */
	const char *group;  /* NULL, or the group it belongs to */
	const char *metric; /* Prometheus name (a group's members share it) */
	const char *type;   /* "counter" or "gauge" */
	const char *label;  /* a labelled metric's label name ("reason", "kind"); NULL for a metric of its own */
	const char *help;   /* in a labelled metric, only its first entry's is written */
	size_t off;         /* of the value, in bytes from the start of what the table describes */
	const char *label_value; /* the label's value, where it is not name; NULL: name */
};

/* A counter at member field of struct type st. */
#define COUNTER(st, field, name, metric, type, help)                                                         \
	{ name, NULL, metric, type, NULL, help, offsetof(st, field), NULL }
/* A member of group, its label's value name, at member field of st. */
#define COUNTER_OF(st, field, group, label, name, metric, help)                                              \
	{ name, group, metric, "counter", label, help, offsetof(st, field), NULL }
/* A counter at member field of st, outside a group, that is metric{label="value"} in the metrics. */
#define COUNTER_LABELLED(st, field, name, label, value, metric, help)                                        \
	{ name, NULL, metric, "counter", label, help, offsetof(st, field), value }
/* A counter of the BPF program's stat array (uint64_t[STAT_MAX], enum profile_stat), at index stat. */
#define COUNTER_STAT(stat, name, metric, type, help)                                                         \
	{ name, NULL, metric, type, NULL, help, (stat) * sizeof(uint64_t), NULL }
#define COUNTER_STAT_OF(stat, group, label, name, metric, help)                                              \
	{ name, group, metric, "counter", label, help, (stat) * sizeof(uint64_t), NULL }

#define COUNTERS_LEN(t) (sizeof(t) / sizeof((t)[0]))

#endif
