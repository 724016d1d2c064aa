/* test_runtimes.c - every runtime flamed lists (daemon/runtimes.c) implements the whole of
 * runtime/runtime.h, and its counters are described so that one renderer can write them: each with a
 * name, a Prometheus name that no other counter has (a group's members share theirs, and carry a label),
 * a type and help, inside what it describes; then the renderer's JSON, text and metrics of a table with a
 * group, and of one with labelled counters outside a group, over values it knows. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "http/counters.h"
#include "profile.h"
#include "runtimes.h"

/* Whether name is a Prometheus metric name flamed's (flamed_[a-z0-9_]+). */
static bool metric_name(const char *name)
{
	if (!name || strncmp(name, "flamed_", 7) || !name[7])
		return false;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
			return false;
	return true;
}

/* Checks table t (n counters over size bytes) of runtime rt; names: the metrics seen so far (*nnames). */
static void check_table(const char *rt, const char *what, const struct counter *t, size_t n, size_t size,
			const char **names, size_t *nnames)
{
	bool ok = true;

	for (size_t i = 0; i < n; i++) {
		const struct counter *c = &t[i];
		bool first = !c->group || !i || !t[i - 1].group || strcmp(t[i - 1].group, c->group);
		bool seen = false;

		if (!c->name || !*c->name || !metric_name(c->metric) || !c->type ||
		    (strcmp(c->type, "counter") && strcmp(c->type, "gauge")) || c->off + sizeof(uint64_t) > size ||
		    c->off % sizeof(uint64_t) || (first && (!c->help || !*c->help)) || (c->group && !c->label) ||
		    (!first && strcmp(t[i - 1].metric, c->metric))) {
			printf("# %s %s: counter %zu (%s) is not described whole\n", rt, what, i, c->name ? c->name : "?");
			ok = false;
		}
		if (!first)
			continue;
		for (size_t j = 0; j < *nnames; j++)
			seen |= !strcmp(names[j], c->metric);
		if (seen) {
			printf("# %s %s: metric %s described twice\n", rt, what, c->metric);
			ok = false;
		}
		names[(*nnames)++] = c->metric;
	}
	CHECK(ok && n > 0, "%s: its %s counters (%zu) are described whole, each metric once", rt, what, n);
}

static void test_kinds(void)
{
	const char *names[1024];
	size_t nnames = 0;

	for (unsigned i = 0; i < RUNTIMES; i++) {
		const struct runtime_ops *o = runtime_kinds[i].ops;

		CHECK(o && o->name && o->start && o->process && o->reported && o->retry && o->flush_begin &&
		      o->flush_end && o->find && o->owns && o->name_frame && o->is_own && o->is_glue && o->get_stats &&
		      o->free, "%s: every operation of runtime.h is there", o ? o->name : "?");
		CHECK(o->stats_size > 0 && o->stats_size <= RUNTIME_STATS_MAX, "%s: its stats (%zu bytes) fit RUNTIME_STATS_MAX",
		      o->name, o->stats_size);
		CHECK(!o->note_key || o->note_off < o->stats_size, "%s: its note is inside its stats", o->name);
		check_table(o->name, "BPF", o->stat_counters, o->n_stat_counters, STAT_MAX * sizeof(uint64_t), names,
			    &nnames);
		check_table(o->name, "own", o->counters, o->n_counters, o->stats_size, names, &nnames);
		CHECK(runtime_kinds[i].feature < BPF_FEATURE_MAX, "%s: its walker's BPF feature is one bpfload knows",
		      o->name);
	}
}

/* What the renderer writes for a table of two counters and a group of two, over known values. */
struct sample_stats {
	uint64_t a, b, g1, g2;
};

static const struct counter sample[] = {
	COUNTER(struct sample_stats, a, "alpha", "flamed_test_alpha_total", "counter", "Alphas."),
	COUNTER_OF(struct sample_stats, g1, "lost", "kind", "one", "flamed_test_lost_total", "Losses, by kind."),
	COUNTER_OF(struct sample_stats, g2, "lost", "kind", "two", "flamed_test_lost_total", NULL),
	COUNTER(struct sample_stats, b, "beta", "flamed_test_beta", "gauge", "Betas now."),
};

/* Two counters standing alone in the JSON and the text, one labelled metric in the metrics; and one more. */
static const struct counter labelled[] = {
	COUNTER_LABELLED(struct sample_stats, g1, "by_one", "source", "one", "flamed_test_learnt_total",
			 "Learnt, by source."),
	COUNTER_LABELLED(struct sample_stats, g2, "by_two", "source", "two", "flamed_test_learnt_total", NULL),
	COUNTER(struct sample_stats, a, "alpha", "flamed_test_alpha_total", "counter", "Alphas."),
};

static char *render_table(void (*fn)(FILE *, const struct counter *, size_t, const void *), const struct counter *t,
			  size_t n, const struct sample_stats *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *o = open_memstream(&buf, &len);

	if (!o)
		return NULL;
	fn(o, t, n, v);
	fclose(o);
	return buf;
}

static char *render(void (*fn)(FILE *, const struct counter *, size_t, const void *), const struct sample_stats *v)
{
	return render_table(fn, sample, COUNTERS_LEN(sample), v);
}

static void text_fn(FILE *o, const struct counter *t, size_t n, const void *base)
{
	counters_text(o, "test", t, n, base);
}

static void test_renderer(void)
{
	struct sample_stats v = { .a = 1, .b = 2, .g1 = 3, .g2 = 4 };
	char *json = render(counters_json, &v), *text = render(text_fn, &v), *metrics = render(counters_metrics, &v);

	CHECK(json && !strcmp(json, ", \"alpha\": 1, \"lost\": {\"one\": 3, \"two\": 4}, \"beta\": 2"),
	      "JSON: counters by name, a group as an object (%s)", json ? json : "none");
	CHECK(text && !strcmp(text, "test_alpha 1\ntest_lost_one 3\ntest_lost_two 4\ntest_beta 2\n"),
	      "text: prefix_name, prefix_group_name");
	CHECK(metrics && !strcmp(metrics, "# HELP flamed_test_alpha_total Alphas.\n# TYPE flamed_test_alpha_total counter\n"
				  "flamed_test_alpha_total 1\n"
				  "# HELP flamed_test_lost_total Losses, by kind.\n# TYPE flamed_test_lost_total counter\n"
				  "flamed_test_lost_total{kind=\"one\"} 3\nflamed_test_lost_total{kind=\"two\"} 4\n"
				  "# HELP flamed_test_beta Betas now.\n# TYPE flamed_test_beta gauge\nflamed_test_beta 2\n"),
	      "metrics: HELP and TYPE once per metric, a group's members labelled");
	free(json);
	free(text);
	free(metrics);
}

static void test_labelled(void)
{
	struct sample_stats v = { .a = 1, .b = 2, .g1 = 3, .g2 = 4 };
	size_t n = COUNTERS_LEN(labelled);
	char *json = render_table(counters_json_first, labelled, n, &v), *text = render_table(text_fn, labelled, n, &v);
	char *metrics = render_table(counters_metrics, labelled, n, &v);
	char *helpless = render_table(counters_metrics, labelled + 1, 1, &v);

	CHECK(json && !strcmp(json, "\"by_one\": 3, \"by_two\": 4, \"alpha\": 1"),
	      "JSON: labelled counters by name, the first without its comma (%s)", json ? json : "none");
	CHECK(text && !strcmp(text, "test_by_one 3\ntest_by_two 4\ntest_alpha 1\n"), "text: labelled counters by name");
	CHECK(metrics && !strcmp(metrics, "# HELP flamed_test_learnt_total Learnt, by source.\n"
				  "# TYPE flamed_test_learnt_total counter\n"
				  "flamed_test_learnt_total{source=\"one\"} 3\nflamed_test_learnt_total{source=\"two\"} 4\n"
				  "# HELP flamed_test_alpha_total Alphas.\n# TYPE flamed_test_alpha_total counter\n"
				  "flamed_test_alpha_total 1\n"),
	      "metrics: labelled counters as one metric, their labels' values their own");
	CHECK(helpless && !strcmp(helpless, "flamed_test_learnt_total{source=\"two\"} 4\n"),
	      "metrics: a labelled metric begun without help has no HELP and TYPE lines");
	free(json);
	free(text);
	free(metrics);
	free(helpless);
}

int main(void)
{
	test_kinds();
	test_renderer();
	test_labelled();
	return CHECK_EXIT();
}
