/* status_lineage.c - who started whom (daemon/lineage.c): processes remembered, where their parents
 * were learnt, records written and processes forgotten at the bound; and how often new processes'
 * mappings were read again; as JSON, text and metrics. */
#include "http/counters.h"
#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_lineage.h"

/* Who started whom (daemon/lineage.c). Where parents were learnt is one labelled metric. */
static const struct counter lineage[] = {
	STATUS_COUNTER(lineage.noted, "noted", "flamed_processes_noted_total", "counter",
		"Processes reported at their first samples."),
	STATUS_COUNTER(lineage.known, "known", "flamed_processes_known", "gauge",
		"Processes whose parent is remembered now."),
	STATUS_COUNTER_LABELLED(lineage.from_forks, "from_forks", "source", "fork", "flamed_processes_parents_total",
		"Parents learnt, by source: fork (the kernel's record of the fork), first_sample (the process's "
		"parent when first sampled), proc (/proc, the fork record gone), unknown (not learnt: gone, and "
		"its fork forgotten)."),
	STATUS_COUNTER_LABELLED(lineage.from_event, "from_event", "source", "first_sample",
		"flamed_processes_parents_total", NULL),
	STATUS_COUNTER_LABELLED(lineage.from_proc, "from_proc", "source", "proc", "flamed_processes_parents_total",
		NULL),
	STATUS_COUNTER_LABELLED(lineage.unknown, "unknown", "source", "unknown", "flamed_processes_parents_total",
		NULL),
	STATUS_COUNTER(lineage.written, "written", "flamed_processes_records_written_total", "counter",
		"Records of a process and its parent written to the database."),
	STATUS_COUNTER(lineage.forgotten, "forgotten", "flamed_processes_forgotten_total", "counter",
		"Processes forgotten at the bound of those remembered (their records are written already)."),
};

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
	fputs(", \"processes\": {", o);
	counters_json_first(o, lineage, COUNTERS_LEN(lineage), s);
	counters_json(o, reading, COUNTERS_LEN(reading), s);
	fputs("}", o);
}

void status_lineage_text(FILE *o, const struct daemon_status *s)
{
	counters_text(o, "processes", lineage, COUNTERS_LEN(lineage), s);
	counters_text(o, "processes", reading, COUNTERS_LEN(reading), s);
}

void status_lineage_metrics(FILE *o, const struct daemon_status *s)
{
	counters_metrics(o, lineage, COUNTERS_LEN(lineage), s);
	counters_metrics(o, reading, COUNTERS_LEN(reading), s);
}
