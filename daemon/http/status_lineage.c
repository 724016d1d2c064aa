/* status_lineage.c - who started whom (daemon/lineage.c): processes remembered, where their parents
 * were learnt, records written and processes forgotten at the bound; and how often new processes'
 * mappings were read again; as JSON, text and metrics. */
#include <inttypes.h>

#include "http/counters.h"
#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_lineage.h"

/* Each counter: its JSON and text name, its metric and what it counts. */
#define LINEAGE_COUNTERS(X)                                                                              \
	X(noted, "flamed_processes_noted_total", "counter", "Processes reported at their first samples.")   \
	X(known, "flamed_processes_known", "gauge", "Processes whose parent is remembered now.")             \
	X(from_forks, "flamed_processes_parents_total{source=\"fork\"}", "counter", NULL)                   \
	X(from_event, "flamed_processes_parents_total{source=\"first_sample\"}", "counter", NULL)           \
	X(from_proc, "flamed_processes_parents_total{source=\"proc\"}", "counter", NULL)                    \
	X(unknown, "flamed_processes_parents_total{source=\"unknown\"}", "counter", NULL)                   \
	X(written, "flamed_processes_records_written_total", "counter",                                      \
	  "Records of a process and its parent written to the database.")                                    \
	X(forgotten, "flamed_processes_forgotten_total", "counter",                                         \
	  "Processes forgotten at the bound of those remembered (their records are written already).")

/* The daemon's reading of new processes' mappings (daemon/main.c). */
static const struct counter reading[] = {
	STATUS_COUNTER(rechecks, "rechecked", "flamed_processes_rechecked_total", "counter",
		"New processes' mappings read again shortly after their first report (the dynamic loader may not "
		"have mapped their libraries then)."),
	STATUS_COUNTER(rechecks_unchanged, "rechecks_unchanged", "flamed_processes_rechecks_unchanged_total", "counter",
		"Such reads that found the mappings as they were since the read before."),
	STATUS_COUNTER(rechecks_dropped, "rechecks_dropped", "flamed_processes_rechecks_dropped_total", "counter",
		"Such reads left out: more new processes were waiting for one than the daemon keeps."),
	STATUS_COUNTER(reports_chained, "reports_chained", "flamed_processes_reports_chained_total", "counter",
		"Later reports of a new process not read then: its reads again are queued already."),
};

void status_lineage_json(FILE *o, const struct daemon_status *s)
{
	const char *sep = "";

	fputs(", \"processes\": {", o);
#define JSON(f, metric, type, help) fprintf(o, "%s\"%s\": %" PRIu64, sep, #f, s->lineage.f), sep = ", ";
	LINEAGE_COUNTERS(JSON)
#undef JSON
	counters_json(o, reading, COUNTERS_LEN(reading), s);
	fputs("}", o);
}

void status_lineage_text(FILE *o, const struct daemon_status *s)
{
#define TEXT(f, metric, type, help) fprintf(o, "processes_%s %" PRIu64 "\n", #f, s->lineage.f);
	LINEAGE_COUNTERS(TEXT)
#undef TEXT
	counters_text(o, "processes", reading, COUNTERS_LEN(reading), s);
}

void status_lineage_metrics(FILE *o, const struct daemon_status *s)
{
	http_metric(o, "flamed_processes_parents_total", "counter",
		    "Parents learnt, by source: fork (the kernel's record of the fork), first_sample (the process's "
		    "parent when first sampled), proc (/proc, the fork record gone), unknown (not learnt: gone, and "
		    "its fork forgotten).");
#define METRIC(f, metric, type, help)                  \
	if (help)                                      \
		http_metric(o, metric, type, help);    \
	fprintf(o, "%s %" PRIu64 "\n", metric, s->lineage.f);
	LINEAGE_COUNTERS(METRIC)
#undef METRIC
	counters_metrics(o, reading, COUNTERS_LEN(reading), s);
}
