/* status_cgroups.c - where samples ran (daemon/cgroups.c): the cgroup2 mount read, cgroups learnt by id
 * and from /proc, those that could not be told, paths cut, and the bound, as JSON, text and metrics. */
#include <inttypes.h>

#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_cgroups.h"
#include "render/json.h"

/* Each counter: its JSON and text name, its metric and what it counts. */
#define CGROUP_COUNTERS(X)                                                                               \
	X(by_id, "flamed_cgroups_learnt_total{source=\"id\"}", "counter", NULL)                             \
	X(by_proc, "flamed_cgroups_learnt_total{source=\"proc\"}", "counter", NULL)                         \
	X(unknown, "flamed_cgroups_unknown_total", "counter",                                               \
	  "Processes whose cgroup could not be told (the cgroup removed and the process gone).")             \
	X(cut, "flamed_cgroups_paths_cut_total", "counter",                                                 \
	  "Cgroup paths cut to 511 bytes or cleaned of control characters.")                                 \
	X(forgotten, "flamed_cgroups_forgotten_total", "counter",                                           \
	  "Times the cgroups remembered reached their bound and were forgotten.")                            \
	X(known, "flamed_cgroups_known", "gauge", "Cgroups remembered now.")

void status_cgroups_json(FILE *o, const struct daemon_status *s)
{
	fputs(", \"cgroups\": {\"mount\": ", o);
	json_write_string(o, s->cgroups.mount);
#define JSON(f, metric, type, help) fprintf(o, ", \"%s\": %" PRIu64, #f, s->cgroups.f);
	CGROUP_COUNTERS(JSON)
#undef JSON
	fputs("}", o);
}

void status_cgroups_text(FILE *o, const struct daemon_status *s)
{
	fprintf(o, "cgroups_mount %s\n", s->cgroups.mount[0] ? s->cgroups.mount : "none");
#define TEXT(f, metric, type, help) fprintf(o, "cgroups_%s %" PRIu64 "\n", #f, s->cgroups.f);
	CGROUP_COUNTERS(TEXT)
#undef TEXT
}

void status_cgroups_metrics(FILE *o, const struct daemon_status *s)
{
	http_metric(o, "flamed_cgroups_learnt_total", "counter",
		    "Cgroups learnt, by source: id (opened by the kernel's id on the cgroup2 file system), proc "
		    "(/proc/PID/cgroup).");
#define METRIC(f, metric, type, help)                  \
	if (help)                                      \
		http_metric(o, metric, type, help);    \
	fprintf(o, "%s %" PRIu64 "\n", metric, s->cgroups.f);
	CGROUP_COUNTERS(METRIC)
#undef METRIC
}
