/* status_cgroups.c - where samples ran (daemon/cgroups.c): the cgroup2 mount read, cgroups learnt by id
 * and from /proc, those that could not be told, paths cut, and the bound, as JSON, text and metrics. */
#include "http/counters.h"
#include "http/http_impl.h"
#include "http/status_cgroups.h"
#include "render/json.h"

static const struct counter counters[] = {
	STATUS_COUNTER_LABELLED(cgroups.by_id, "by_id", "source", "id", "flamed_cgroups_learnt_total",
		"Cgroups learnt, by source: id (opened by the kernel's id on the cgroup2 file system), proc "
		"(/proc/PID/cgroup)."),
	STATUS_COUNTER_LABELLED(cgroups.by_proc, "by_proc", "source", "proc", "flamed_cgroups_learnt_total", NULL),
	STATUS_COUNTER(cgroups.unknown, "unknown", "flamed_cgroups_unknown_total", "counter",
		"Processes whose cgroup could not be told (the cgroup removed and the process gone)."),
	STATUS_COUNTER(cgroups.cut, "cut", "flamed_cgroups_paths_cut_total", "counter",
		"Cgroup paths cut to 511 bytes or cleaned of control characters."),
	STATUS_COUNTER(cgroups.forgotten, "forgotten", "flamed_cgroups_forgotten_total", "counter",
		"Times the cgroups remembered reached their bound and were forgotten."),
	STATUS_COUNTER(cgroups.known, "known", "flamed_cgroups_known", "gauge", "Cgroups remembered now."),
};

void status_cgroups_json(FILE *o, const struct daemon_status *s)
{
	fputs(", \"cgroups\": {\"mount\": ", o);
	json_write_string(o, s->cgroups.mount);
	counters_json(o, counters, COUNTERS_LEN(counters), s);
	fputs("}", o);
}

void status_cgroups_text(FILE *o, const struct daemon_status *s)
{
	fprintf(o, "cgroups_mount %s\n", s->cgroups.mount[0] ? s->cgroups.mount : "none");
	counters_text(o, "cgroups", counters, COUNTERS_LEN(counters), s);
}

void status_cgroups_metrics(FILE *o, const struct daemon_status *s)
{
	counters_metrics(o, counters, COUNTERS_LEN(counters), s);
}
