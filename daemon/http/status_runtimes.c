/* status_runtimes.c - each runtime's state and counters (runtime_ops: described once by the runtime) as
 * JSON, text and Prometheus metrics: whether it is walked (and why not), its frames per stack, what its
 * BPF walker counted and what it counted itself. */
#include <string.h>

#include "http/counters.h"
#include "http/http_impl.h"
#include "http/status_bpf.h"
#include "http/status_runtimes.h"
#include "render/json.h"

/* The runtime's string among its stats (NUL-terminated within them), or "". */
static const char *note(const struct runtime_ops *ops, const struct runtime_status *r)
{
	const char *at = (const char *)r->stats + ops->note_off;

	if (ops->note_off >= sizeof(r->stats) || !memchr(at, '\0', sizeof(r->stats) - ops->note_off))
		return "";
	return at;
}

void status_runtimes_json(FILE *o, const struct daemon_status *s)
{
	for (unsigned i = 0; i < RUNTIMES; i++) {
		const struct runtime_ops *ops = runtime_kinds[i].ops;
		const struct runtime_status *r = &s->runtime[i];

		fprintf(o, ", \"%s\": {\"enabled\": %s", ops->name, r->on ? "true" : "false");
		status_bpf_refused_json(o, s, runtime_kinds[i].feature);
		fprintf(o, ", \"max_frames\": %u", r->max_frames);
		counters_json(o, ops->stat_counters, ops->n_stat_counters, s->lost);
		counters_json(o, ops->counters, ops->n_counters, r->stats);
		if (ops->note_key) {
			fprintf(o, ", \"%s\": ", ops->note_key);
			json_write_string(o, note(ops, r));
		}
		fputc('}', o);
	}
}

void status_runtimes_text(FILE *o, const struct daemon_status *s)
{
	for (unsigned i = 0; i < RUNTIMES; i++) {
		const struct runtime_ops *ops = runtime_kinds[i].ops;
		const struct runtime_status *r = &s->runtime[i];

		fprintf(o, "%s_enabled %d\n", ops->name, r->on ? 1 : 0);
		counters_text(o, ops->name, ops->stat_counters, ops->n_stat_counters, s->lost);
		counters_text(o, ops->name, ops->counters, ops->n_counters, r->stats);
	}
}

void status_runtimes_metrics(FILE *o, const struct daemon_status *s)
{
	for (unsigned i = 0; i < RUNTIMES; i++) {
		const struct runtime_ops *ops = runtime_kinds[i].ops;

		counters_metrics(o, ops->stat_counters, ops->n_stat_counters, s->lost);
		counters_metrics(o, ops->counters, ops->n_counters, s->runtime[i].stats);
	}
}
