/* status_python.c - the Python frame walker's counters as JSON, text and Prometheus metrics. */
#include <inttypes.h>

#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_bpf.h"
#include "http/status_python.h"
#include "render/json.h"

/* Why Python walks came up short, as counted by the BPF program (enum profile_stat). */
static const struct {
	unsigned stat;
	const char *name, *help;
} walk_errors[] = {
	{ STAT_PY_NO_THREAD, "no_thread_state", "a thread of a Python process whose thread state was not found" },
	{ STAT_PY_READ_FAILED, "read_failed", "a thread state or frame could not be read" },
	{ STAT_PY_UNMATCHED, "unmatched", "Python frames left when the native walk ended (not written)" },
	{ STAT_PY_APPENDED, "native_failed", "the native walk failed; the Python frames left written after it" },
	{ STAT_PY_EVENTS_LOST, "code_events_lost", "code objects first written not reported (named at the flush)" },
};

/* Why Python frames were left unnamed. */
static uint64_t unnamed(const struct daemon_status *s, int i)
{
	const struct pynames_stats *n = &s->pynames;

	return i == 0 ? n->gone : i == 1 ? n->unreadable : i == 2 ? n->invalid : n->untracked;
}
static const char *const unnamed_kinds[] = { "process_gone", "unreadable", "not_code", "untracked" };

/* Why interpreters are not walked: processes by reason, the last one's version, and the interpreters
 * whose _Py_DebugOffsets were refused. */
static void status_python_unsupported_json(FILE *o, const struct daemon_status *s)
{
	const struct pyprocs_stats *p = &s->py;

	fprintf(o, ", \"unsupported_by_reason\": {\"version\": %" PRIu64 ", \"prerelease\": %" PRIu64
		", \"free_threaded\": %" PRIu64 "}, \"unsupported_last\": ",
		p->unsupported_version, p->unsupported_prerelease, p->unsupported_free_threaded);
	json_write_string(o, p->unsupported_last);
	fprintf(o, ", \"debug_offsets_refused\": %" PRIu64, p->debug_offsets_refused);
}

void status_python_json(FILE *o, const struct daemon_status *s)
{
	fprintf(o, ", \"python\": {\"enabled\": %s", s->python ? "true" : "false");
	status_bpf_refused_json(o, s, BPF_FEATURE_PYTHON);
	fprintf(o, ", \"max_frames\": %u, \"stacks\": %" PRIu64 ", \"truncated\": %" PRIu64 ", \"calls_starting_or_ending\": %"
		PRIu64 ", \"trampoline_leaves\": %" PRIu64 ", \"walk_errors\": {", s->python_frames, s->lost[STAT_PY_STACKS],
		s->lost[STAT_PY_TRUNCATED], s->lost[STAT_PY_CALL_EDGE], s->lost[STAT_PY_TRAMP_LEAF]);
	for (size_t i = 0; i < sizeof(walk_errors) / sizeof(walk_errors[0]); i++)
		fprintf(o, "%s\"%s\": %" PRIu64, i ? ", " : "", walk_errors[i].name, s->lost[walk_errors[i].stat]);
	fprintf(o, "}, \"processes\": %" PRIu64 ", \"processes_refused\": %" PRIu64 ", \"interpreters\": %" PRIu64
		", \"unsupported\": %" PRIu64 ", \"inconsistent\": %" PRIu64 ", \"binaries_checked\": %" PRIu64
		", \"cold_by_jumps\": %" PRIu64 ", \"late_libpython\": %" PRIu64 ", \"retries_dropped\": %" PRIu64
		", \"rereads_failed\": %" PRIu64 ", \"code_objects\": %" PRIu64 ", \"code_cache_bytes\": %" PRIu64
		", \"code_hits\": %" PRIu64 ", \"code_misses\": %" PRIu64 ", \"code_prefetched\": %" PRIu64
		", \"code_replaced\": %" PRIu64 ", \"code_evicted\": %" PRIu64 ", \"frames_unnamed\": {", s->py.processes, s->py.processes_refused,
		s->py.interpreters, s->py.unsupported, s->py.inconsistent, s->py.binaries_checked, s->py.cold_by_jumps,
		s->py.late_libpython, s->py.retries_dropped, s->py.rereads_failed, s->pynames.codes, s->pynames.bytes,
		s->pynames.hits, s->pynames.misses, s->pynames.prefetched, s->pynames.replaced, s->pynames.evicted);
	for (int i = 0; i < 4; i++)
		fprintf(o, "%s\"%s\": %" PRIu64, i ? ", " : "", unnamed_kinds[i], unnamed(s, i));
	fputs("}", o);
	status_python_unsupported_json(o, s);
	fputs("}", o);
}

void status_python_text(FILE *o, const struct daemon_status *s)
{
	fprintf(o, "python_enabled %d\npython_stacks %" PRIu64 "\npython_truncated %" PRIu64
		"\npython_calls_starting_or_ending %" PRIu64 "\npython_trampoline_leaves %" PRIu64 "\n", s->python ? 1 : 0,
		s->lost[STAT_PY_STACKS], s->lost[STAT_PY_TRUNCATED], s->lost[STAT_PY_CALL_EDGE], s->lost[STAT_PY_TRAMP_LEAF]);
	for (size_t i = 0; i < sizeof(walk_errors) / sizeof(walk_errors[0]); i++)
		fprintf(o, "python_walk_errors_%s %" PRIu64 "\n", walk_errors[i].name, s->lost[walk_errors[i].stat]);
	fprintf(o, "python_processes %" PRIu64 "\npython_processes_refused %" PRIu64 "\npython_interpreters %" PRIu64
		"\npython_unsupported %" PRIu64 "\npython_code_objects %" PRIu64 "\npython_code_cache_bytes %" PRIu64
		"\npython_code_evicted %" PRIu64 "\n", s->py.processes, s->py.processes_refused, s->py.interpreters,
		s->py.unsupported, s->pynames.codes, s->pynames.bytes, s->pynames.evicted);
	for (int i = 0; i < 4; i++)
		fprintf(o, "python_frames_unnamed_%s %" PRIu64 "\n", unnamed_kinds[i], unnamed(s, i));
}

void status_python_metrics(FILE *o, const struct daemon_status *s)
{
	http_metric_u64(o, "flamed_python_stacks_total", "counter", "User stacks with Python frames in them.",
		   s->lost[STAT_PY_STACKS]);
	http_metric_u64(o, "flamed_python_stacks_truncated_total", "counter",
		   "Python walks cut at --python-frames frames.", s->lost[STAT_PY_TRUNCATED]);
	http_metric_u64(o, "flamed_python_calls_starting_or_ending_total", "counter",
		   "Eval-loop calls sampled before their frames were pushed or after they were popped: the frames read "
		   "for them written at their caller's.", s->lost[STAT_PY_CALL_EDGE]);
	http_metric_u64(o, "flamed_python_trampoline_leaves_total", "counter",
		   "Samples taken in a -X perf trampoline, unwound by its instruction.", s->lost[STAT_PY_TRAMP_LEAF]);
	http_metric(o, "flamed_python_walk_errors_total", "counter", "Python walks that came up short, by reason.");
	for (size_t i = 0; i < sizeof(walk_errors) / sizeof(walk_errors[0]); i++)
		fprintf(o, "flamed_python_walk_errors_total{reason=\"%s\"} %" PRIu64 "\n", walk_errors[i].name,
			s->lost[walk_errors[i].stat]);
	http_metric_u64(o, "flamed_python_processes", "gauge", "Python processes whose frames are walked.",
		   s->py.processes);
	http_metric_u64(o, "flamed_python_processes_refused_total", "counter",
		   "Python processes not walked: --python-processes reached.", s->py.processes_refused);
	http_metric(o, "flamed_python_unsupported_total", "counter",
		    "Processes of an interpreter flamed does not walk, by reason.");
	fprintf(o, "flamed_python_unsupported_total{reason=\"version\"} %" PRIu64 "\n"
		"flamed_python_unsupported_total{reason=\"prerelease\"} %" PRIu64 "\n"
		"flamed_python_unsupported_total{reason=\"free_threaded\"} %" PRIu64 "\n",
		s->py.unsupported_version, s->py.unsupported_prerelease, s->py.unsupported_free_threaded);
	http_metric_u64(o, "flamed_python_debug_offsets_refused_total", "counter",
		   "Interpreters whose _Py_DebugOffsets were missing or lied (not walked).",
		   s->py.debug_offsets_refused);
	http_metric_u64(o, "flamed_python_rereads_failed_total", "counter",
		   "Tracked Python processes whose mappings were read again without their interpreter (kept).",
		   s->py.rereads_failed);
	http_metric_u64(o, "flamed_python_code_objects", "gauge", "Code objects cached (--python-code-cache).",
		   s->pynames.codes);
	http_metric_u64(o, "flamed_python_code_cache_bytes", "gauge", "Memory the cached code objects hold.",
		   s->pynames.bytes);
	http_metric_u64(o, "flamed_python_code_evicted_total", "counter", "Code objects dropped from the cache for room.",
		   s->pynames.evicted);
	http_metric(o, "flamed_python_frames_unnamed_total", "counter", "Python frames left unnamed, by reason.");
	for (int i = 0; i < 4; i++)
		fprintf(o, "flamed_python_frames_unnamed_total{reason=\"%s\"} %" PRIu64 "\n", unnamed_kinds[i],
			unnamed(s, i));
}
