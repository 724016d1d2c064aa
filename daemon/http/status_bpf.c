/* status_bpf.c - the BPF programs as the status and the metrics show them: each program loaded with the
 * instructions the verifier processed for it (against the kernel's bound), and each optional feature,
 * asked for or not, on or off, and when off though asked, the program the kernel refused and why. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "http/counters.h"
#include "http/http_impl.h"
#include "http/metric.h"
#include "http/status_bpf.h"
#include "render/json.h"

/* The walker programs by enum walker, as the status and the metrics name them. */
static const char *const walker_names[WALKER_MAX] = {
	[WALKER_NATIVE] = "native",
	[WALKER_PYTHON] = "python",
};

/* CPU samples sent whole through the samples ring (include/profile.h, struct sample_record): a sample
 * taken in user code and walked costs a copy of its frames instead of two hash map updates. */
static const struct counter sent_counters[] = {
	STATUS_COUNTER(lost[STAT_SENT], "samples", "flamed_bpf_sent_samples_total", "counter",
		"CPU samples taken in user code sent whole through the samples ring, not counted in the maps."),
	STATUS_COUNTER(lost[STAT_SEND_FULL], "ring_full", "flamed_bpf_sent_ring_full_total", "counter",
		"CPU samples not sent: the samples ring was full (stored in the maps instead)."),
	STATUS_COUNTER(sent_read, "read", "flamed_bpf_sent_read_total", "counter",
		"Samples read from the samples ring by the drains."),
	STATUS_COUNTER(sent_malformed, "malformed", "flamed_bpf_sent_malformed_total", "counter",
		"Records of the samples ring refused: shorter than the frames they claim."),
	STATUS_COUNTER(sent_ring_bytes, "ring_bytes", "flamed_bpf_sent_ring_bytes", "gauge",
		"The samples ring's size (0: not used, with --unwind fp)."),
};

/* The kernel's error as its symbol ("E2BIG"), or its number when it has none. */
static const char *error_name(int err, char *buf, size_t len)
{
	const char *name = strerrorname_np(err < 0 ? -err : err);

	if (name)
		return name;
	snprintf(buf, len, "%d", err < 0 ? -err : err);
	return buf;
}

/* One feature's object: {"asked": .., "on": .., and when refused "program", "error", "errno", "attach",
 * "log"}. */
static void feature_json(FILE *o, const struct bpf_feature_state *f)
{
	char num[16];

	fprintf(o, "{\"asked\": %s, \"on\": %s", f->asked ? "true" : "false", f->on ? "true" : "false");
	if (f->program[0]) {
		fputs(", \"program\": ", o);
		json_write_string(o, f->program);
		fputs(", \"error\": ", o);
		json_write_string(o, strerror(f->error < 0 ? -f->error : f->error));
		fputs(", \"errno\": ", o);
		json_write_string(o, error_name(f->error, num, sizeof(num)));
		fprintf(o, ", \"attach\": %s, \"log\": ", f->attach ? "true" : "false");
		json_write_string(o, f->log);
	}
	fputc('}', o);
}

void status_bpf_json(FILE *o, const struct daemon_status *s)
{
	const struct bpfload_report *r = &s->bpf;

	fprintf(o, ", \"bpf\": {\"verified_insns_limit\": %u, \"loads\": %u, \"preallocated_maps\": %s, \"programs\": [",
		BPFLOAD_INSNS_LIMIT, r->loads, r->preallocated ? "true" : "false");
	for (unsigned i = 0; i < r->nprogs; i++) {
		fputs(i ? ", {\"name\": " : "{\"name\": ", o);
		json_write_string(o, r->prog[i].name);
		fprintf(o, ", \"verified_insns\": %u, \"insns\": %u}", r->prog[i].verified_insns, r->prog[i].insns);
	}
	/* CPU samples each walker program was handed (a process runs only the walker it needs). */
	fputs("], \"walkers\": {", o);
	for (int w = 0; w < WALKER_MAX; w++)
		fprintf(o, "%s\"%s\": %" PRIu64, w ? ", " : "", walker_names[w], s->lost[STAT_WALKER + w]);
	fprintf(o, ", \"missing\": %" PRIu64 ", \"off_cpu\": {", s->lost[STAT_WALKER_MISSING]);
	for (int w = 0; w < WALKER_MAX; w++) /* off-CPU blocks each walker walked, likewise */
		fprintf(o, "%s\"%s\": %" PRIu64, w ? ", " : "", walker_names[w], s->lost[STAT_OFFCPU_WALKER + w]);
	fprintf(o, ", \"missing\": %" PRIu64 "}}, \"sent\": {\"enabled\": %s", s->lost[STAT_OFFCPU_WALKER_MISSING],
		s->sent_ring_bytes ? "true" : "false");
	counters_json(o, sent_counters, COUNTERS_LEN(sent_counters), s);
	fputs("}, \"features\": {", o);
	for (int f = 0; f < BPF_FEATURE_MAX; f++) {
		fprintf(o, "%s\"%s\": ", f ? ", " : "", bpfload_feature_name(f));
		feature_json(o, &r->feature[f]);
	}
	fputs("}}", o);
}

void status_bpf_refused_json(FILE *o, const struct daemon_status *s, enum bpf_feature f)
{
	const struct bpf_feature_state *st = &s->bpf.feature[f];
	char why[160];

	if (!st->asked || st->on)
		return;
	bpfload_why(st, why, sizeof(why));
	fputs(", \"refused\": ", o);
	json_write_string(o, why);
}

void status_bpf_text(FILE *o, const struct daemon_status *s)
{
	const struct bpfload_report *r = &s->bpf;
	char why[160];

	for (unsigned i = 0; i < r->nprogs; i++)
		fprintf(o, "bpf_verified_insns_%s %u\n", r->prog[i].name, r->prog[i].verified_insns);
	for (int w = 0; w < WALKER_MAX; w++)
		fprintf(o, "bpf_walker_%s_samples %" PRIu64 "\n", walker_names[w], s->lost[STAT_WALKER + w]);
	fprintf(o, "bpf_walker_missing %" PRIu64 "\n", s->lost[STAT_WALKER_MISSING]);
	for (int w = 0; w < WALKER_MAX; w++)
		fprintf(o, "bpf_walker_%s_offcpu_blocks %" PRIu64 "\n", walker_names[w], s->lost[STAT_OFFCPU_WALKER + w]);
	fprintf(o, "bpf_walker_offcpu_missing %" PRIu64 "\n", s->lost[STAT_OFFCPU_WALKER_MISSING]);
	counters_text(o, "bpf_sent", sent_counters, COUNTERS_LEN(sent_counters), s);
	for (int f = 0; f < BPF_FEATURE_MAX; f++) {
		const struct bpf_feature_state *st = &r->feature[f];

		fprintf(o, "feature_%s %s\n", bpfload_feature_name(f), st->on ? "on" : st->asked ? "refused" : "off");
		if (st->asked && !st->on) {
			bpfload_why(st, why, sizeof(why));
			fprintf(o, "feature_%s_refused %s\n", bpfload_feature_name(f), why);
		}
	}
}

void status_bpf_metrics(FILE *o, const struct daemon_status *s)
{
	const struct bpfload_report *r = &s->bpf;
	char num[16];

	http_metric(o, "flamed_bpf_verified_instructions", "gauge",
		    "Instructions the kernel's verifier processed to accept each BPF program; it refuses a program "
		    "past flamed_bpf_verified_instructions_limit.");
	for (unsigned i = 0; i < r->nprogs; i++)
		fprintf(o, "flamed_bpf_verified_instructions{program=\"%s\"} %u\n", r->prog[i].name,
			r->prog[i].verified_insns);
	http_metric(o, "flamed_bpf_walker_samples_total", "counter",
		    "CPU samples whose user stack each walker program was handed: a process runs only the walker "
		    "it needs (native: unwind tables and frame pointers; python: with CPython's frames).");
	for (int w = 0; w < WALKER_MAX; w++)
		fprintf(o, "flamed_bpf_walker_samples_total{walker=\"%s\"} %" PRIu64 "\n", walker_names[w],
			s->lost[STAT_WALKER + w]);
	http_metric_u64(o, "flamed_bpf_walker_missing_total", "counter",
			"CPU samples whose walker program could not be called (read by frame pointers instead).",
			s->lost[STAT_WALKER_MISSING]);
	http_metric(o, "flamed_bpf_walker_offcpu_blocks_total", "counter",
		    "Off-CPU blocks whose user stack each walker program was handed (with --off-cpu), as for CPU "
		    "samples: a thread runs only the walker its process needs.");
	for (int w = 0; w < WALKER_MAX; w++)
		fprintf(o, "flamed_bpf_walker_offcpu_blocks_total{walker=\"%s\"} %" PRIu64 "\n", walker_names[w],
			s->lost[STAT_OFFCPU_WALKER + w]);
	http_metric_u64(o, "flamed_bpf_walker_offcpu_missing_total", "counter",
			"Off-CPU blocks whose walker program could not be called (read by frame pointers instead).",
			s->lost[STAT_OFFCPU_WALKER_MISSING]);
	counters_metrics(o, sent_counters, COUNTERS_LEN(sent_counters), s);
	http_metric_u64(o, "flamed_bpf_verified_instructions_limit", "gauge",
			"The most instructions the kernel's verifier processes for one program.", BPFLOAD_INSNS_LIMIT);
	http_metric(o, "flamed_bpf_feature_enabled", "gauge",
		    "1: the optional feature runs; 0: it does not (not asked for, or its program refused: see "
		    "flamed_bpf_feature_refused).");
	for (int f = 0; f < BPF_FEATURE_MAX; f++)
		fprintf(o, "flamed_bpf_feature_enabled{feature=\"%s\"} %d\n", bpfload_feature_name(f),
			r->feature[f].on ? 1 : 0);
	http_metric(o, "flamed_bpf_feature_refused", "gauge",
		    "1 for each feature asked for and left out: the program the kernel refused (or could not "
		    "attach) and its error.");
	for (int f = 0; f < BPF_FEATURE_MAX; f++) {
		const struct bpf_feature_state *st = &r->feature[f];

		if (st->asked && !st->on)
			fprintf(o, "flamed_bpf_feature_refused{feature=\"%s\",program=\"%s\",error=\"%s\"} 1\n",
				bpfload_feature_name(f), st->program, error_name(st->error, num, sizeof(num)));
	}
}
