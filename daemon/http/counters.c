/* counters.c - counters described once, written as JSON, text and Prometheus metrics (see counters.h). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "http/counters.h"
#include "http/metric.h"

static uint64_t value(const struct counter *c, const void *base)
{
	uint64_t v;

	memcpy(&v, (const char *)base + c->off, sizeof(v));
	return v;
}

/* Whether t[i] begins a group (or stands alone), and whether it ends one. */
static bool group_starts(const struct counter *t, size_t i)
{
	return !t[i].group || !i || !t[i - 1].group || strcmp(t[i - 1].group, t[i].group);
}

static bool group_ends(const struct counter *t, size_t n, size_t i)
{
	return !t[i].group || i + 1 == n || !t[i + 1].group || strcmp(t[i + 1].group, t[i].group);
}

/* Whether t[i], labelled, begins its labelled metric. */
static bool metric_starts(const struct counter *t, size_t i)
{
	return !i || !t[i - 1].label || strcmp(t[i - 1].metric, t[i].metric);
}

/* Writes the counters as counters_json does, sep before the first. */
static void json(FILE *o, const char *sep, const struct counter *t, size_t n, const void *base)
{
	for (size_t i = 0; i < n; i++) {
		const char *before = i ? ", " : sep;

		if (t[i].group && group_starts(t, i)) {
			fprintf(o, "%s\"%s\": {", before, t[i].group);
			before = "";
		}
		fprintf(o, "%s\"%s\": %" PRIu64, before, t[i].name, value(&t[i], base));
		if (t[i].group && group_ends(t, n, i))
			fputc('}', o);
	}
}

void counters_json(FILE *o, const struct counter *t, size_t n, const void *base)
{
	json(o, ", ", t, n, base);
}

void counters_json_first(FILE *o, const struct counter *t, size_t n, const void *base)
{
	json(o, "", t, n, base);
}

void counters_text(FILE *o, const char *prefix, const struct counter *t, size_t n, const void *base)
{
	for (size_t i = 0; i < n; i++)
		fprintf(o, "%s_%s%s%s %" PRIu64 "\n", prefix, t[i].group ? t[i].group : "", t[i].group ? "_" : "",
			t[i].name, value(&t[i], base));
}

void counters_metrics(FILE *o, const struct counter *t, size_t n, const void *base)
{
	for (size_t i = 0; i < n; i++) {
		if (!t[i].label) {
			http_metric_u64(o, t[i].metric, t[i].type, t[i].help, value(&t[i], base));
			continue;
		}
		if (metric_starts(t, i) && t[i].help)
			http_metric(o, t[i].metric, t[i].type, t[i].help);
		fprintf(o, "%s{%s=\"%s\"} %" PRIu64 "\n", t[i].metric, t[i].label,
			t[i].label_value ? t[i].label_value : t[i].name, value(&t[i], base));
	}
}
