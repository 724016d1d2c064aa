/* status_deferred.c - samples deferred until their process's unwind tables were ready (daemon/deferred.c):
 * copied, walked with the tables, given up, dropped, waiting, as JSON, text and metrics. */
#include <inttypes.h>

#include "http/counters.h"
#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_deferred.h"

static const struct counter counters[] = {
	STATUS_COUNTER(lost[STAT_DEFER_LOST], "lost", "flamed_deferred_lost_total", "counter",
		"CPU samples not deferred for want of room in the ring buffer (walked by frame pointers)."),
	STATUS_COUNTER(deferred.received, "received", "flamed_deferred_samples_total", "counter",
		"CPU samples taken before their process's unwind tables were ready, copied to be walked later."),
	STATUS_COUNTER(deferred.walked, "walked", "flamed_deferred_walked_total", "counter",
		"Deferred samples walked with their tables."),
	STATUS_COUNTER(deferred.given_up, "given_up", "flamed_deferred_given_up_total", "counter",
		"Deferred samples walked by frame pointers: their tables did not come in time."),
	STATUS_COUNTER(deferred.superseded, "superseded", "flamed_deferred_superseded_total", "counter",
		"Deferred samples taken of an image their process left by exec since: stored without user frames."),
	STATUS_COUNTER(deferred.dropped, "dropped", "flamed_deferred_dropped_total", "counter",
		"Deferred samples not kept: the memory for them was full."),
	STATUS_COUNTER(deferred.short_copies, "short_copies", "flamed_deferred_short_copies_total", "counter",
		"Deferred samples whose walk needed more of the stack than was copied (their outer frames lost)."),
	STATUS_COUNTER(deferred.stored, "stored", "flamed_deferred_stored_total", "counter",
		"Deferred samples handed to a flush."),
	STATUS_COUNTER(deferred.bytes_copied, "bytes_copied", "flamed_deferred_stack_bytes_total", "counter",
		"User stack bytes the deferred samples carried."),
	STATUS_COUNTER(deferred.offcpu_received, "offcpu_received", "flamed_deferred_offcpu_blocks_total", "counter",
		"Off-CPU blocks among the deferred records: their waits are stored with the walk."),
	STATUS_COUNTER(deferred.offcpu_held, "offcpu_held", "flamed_deferred_offcpu_held_total", "counter",
		"Off-CPU waits counted before their block was walked, held for the walk."),
	STATUS_COUNTER(deferred.offcpu_stored, "offcpu_stored", "flamed_deferred_offcpu_stored_total", "counter",
		"Off-CPU waits stored with a deferred block's walk."),
	STATUS_COUNTER(deferred.offcpu_unmatched, "offcpu_unmatched", "flamed_deferred_offcpu_unmatched_total", "counter",
		"Off-CPU waits whose deferred block's record was lost or its walk forgotten: stored without user frames."),
	STATUS_COUNTER(deferred.offcpu_kept, "offcpu_kept", "flamed_deferred_offcpu_walks_kept", "gauge",
		"Deferred blocks' walks kept for the waits counted under them later."),
	STATUS_COUNTER(deferred.waiting, "waiting", "flamed_deferred_waiting", "gauge",
		"Deferred samples waiting for their tables now."),
	STATUS_COUNTER(deferred.waiting_bytes, "waiting_bytes", "flamed_deferred_waiting_bytes", "gauge",
		"Memory the waiting samples take."),
};

void status_deferred_json(FILE *o, const struct daemon_status *s)
{
	fprintf(o, ", \"deferred\": {\"enabled\": %s", s->deferred_on ? "true" : "false");
	counters_json(o, counters, COUNTERS_LEN(counters), s);
	fprintf(o, ", \"wait_seconds\": %.6f, \"wait_max_seconds\": %.6f, \"oldest_seconds\": %.6f}",
		finite_or_zero(s->deferred.wait_seconds), finite_or_zero(s->deferred.wait_max_seconds),
		finite_or_zero(s->deferred.oldest_seconds));
}

void status_deferred_text(FILE *o, const struct daemon_status *s)
{
	fprintf(o, "deferred_enabled %d\n", s->deferred_on);
	counters_text(o, "deferred", counters, COUNTERS_LEN(counters), s);
	fprintf(o, "deferred_wait_seconds %.6f\ndeferred_wait_max_seconds %.6f\ndeferred_oldest_seconds %.6f\n",
		finite_or_zero(s->deferred.wait_seconds), finite_or_zero(s->deferred.wait_max_seconds),
		finite_or_zero(s->deferred.oldest_seconds));
}

void status_deferred_metrics(FILE *o, const struct daemon_status *s)
{
	counters_metrics(o, counters, COUNTERS_LEN(counters), s);
	http_metric(o, "flamed_deferred_wait_seconds_total", "counter",
		    "Time deferred samples waited for their tables, summed over those walked with them.");
	fprintf(o, "flamed_deferred_wait_seconds_total %.6f\n", finite_or_zero(s->deferred.wait_seconds));
	http_metric(o, "flamed_deferred_oldest_wait_seconds", "gauge",
		    "How long the deferred sample waiting longest for its tables has waited (0: none waits).");
	fprintf(o, "flamed_deferred_oldest_wait_seconds %.6f\n", finite_or_zero(s->deferred.oldest_seconds));
}
