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

void counters_json(FILE *o, const struct counter *t, size_t n, const void *base)
{
	for (size_t i = 0; i < n; i++) {
		bool first = group_starts(t, i);

		if (t[i].group && first)
			fprintf(o, ", \"%s\": {", t[i].group);
		fprintf(o, "%s\"%s\": %" PRIu64, t[i].group && first ? "" : ", ", t[i].name, value(&t[i], base));
		if (t[i].group && group_ends(t, n, i))
			fputc('}', o);
	}
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
		if (!t[i].group) {
			http_metric_u64(o, t[i].metric, t[i].type, t[i].help, value(&t[i], base));
			continue;
		}
		if (group_starts(t, i))
			http_metric(o, t[i].metric, t[i].type, t[i].help);
		fprintf(o, "%s{%s=\"%s\"} %" PRIu64 "\n", t[i].metric, t[i].label, t[i].name, value(&t[i], base));
	}
}
