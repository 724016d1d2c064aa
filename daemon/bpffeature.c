/* bpffeature.c - the optional BPF features in words: their names in the status and the metrics, why one
 * asked for is off, the log's lines about them, and the service manager's READY=1 message naming them.
 * Apart from the loader (bpfload.c), which alone needs the BPF object. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bpfload.h"

/* The lines of a refused program's verifier log that the daemon's log shows (the status has more). */
#define LOG_LINES 3

static const char *const names[BPF_FEATURE_MAX] = {
	[BPF_FEATURE_UNWIND] = "unwind_tables",
	[BPF_FEATURE_PYTHON] = "python",
	[BPF_FEATURE_FORKS] = "fork_hook",
	[BPF_FEATURE_OFFCPU] = "off_cpu",
	[BPF_FEATURE_OFFCPU_ONGOING] = "off_cpu_ongoing",
};

/* Each feature as the log says it is off. */
static const char *const words[BPF_FEATURE_MAX] = {
	[BPF_FEATURE_UNWIND] = "walking stacks with unwind tables (frame pointers only)",
	[BPF_FEATURE_PYTHON] = "naming Python frames (--python)",
	[BPF_FEATURE_FORKS] = "the fork hook (parents are read from /proc instead)",
	[BPF_FEATURE_OFFCPU] = "off-CPU time (--off-cpu)",
	[BPF_FEATURE_OFFCPU_ONGOING] = "counting waits still going on at each flush (waits count when they end)",
};

const char *bpfload_feature_name(enum bpf_feature f)
{
	return f < BPF_FEATURE_MAX ? names[f] : "cpu";
}

void bpfload_why(const struct bpf_feature_state *f, char *buf, size_t len)
{
	if (!f->program[0] && f->needs >= 0 && f->needs < BPF_FEATURE_MAX)
		snprintf(buf, len, "it needs %s, which is off", names[f->needs]);
	else
		snprintf(buf, len, "the kernel %s %s: %s", f->attach ? "could not attach" : "refused", f->program,
			 strerror(f->error < 0 ? -f->error : f->error));
}

/* The last n lines of text. */
static const char *last_lines(const char *text, int n)
{
	const char *p = text + strlen(text);

	while (p > text && n > 0)
		if (*--p == '\n' && --n == 0)
			return p + 1;
	return text;
}

void bpffeature_log(const struct bpfload_report *rep)
{
	const struct bpf_feature_state *f = rep->feature;
	char why[160];

	for (int i = 0; i < BPF_FEATURE_MAX; i++) {
		if (!f[i].asked || f[i].on)
			continue;
		bpfload_why(&f[i], why, sizeof(why));
		fprintf(stderr, "flamed: %s is off: %s%s\n", words[i], why, f[i].log[0] ? "; the verifier said:" : "");
		if (f[i].log[0])
			fprintf(stderr, "%s\n", last_lines(f[i].log, LOG_LINES));
	}
}

void bpffeature_log_sampler(const struct bpf_feature_state *cpu, int err)
{
	fprintf(stderr, "flamed: cannot load and attach the BPF profiler: %s%s\n", strerror(-err),
		err == -EPERM || (err == -EACCES && !cpu->program[0]) ? " (run as root, or grant CAP_BPF and CAP_PERFMON)" : "");
	if (cpu->program[0])
		fprintf(stderr, "flamed: the kernel refused the program %s; the verifier said:\n%s\n", cpu->program,
			cpu->log[0] ? last_lines(cpu->log, LOG_LINES) : "(nothing)");
}

void bpffeature_ready(const struct bpfload_report *rep, unsigned cpus, unsigned hz, char *msg, size_t len)
{
	const struct bpf_feature_state *f = rep->feature;
	size_t n = (size_t)snprintf(msg, len, "READY=1\nSTATUS=sampling %u CPUs at %u Hz", cpus, hz);
	bool first = true;
	char why[160];

	for (int i = 0; i < BPF_FEATURE_MAX && n < len; i++) {
		if (!f[i].asked || f[i].on)
			continue;
		n += (size_t)snprintf(msg + n, len - n, "%s%s", first ? "; left out: " : ", ", names[i]);
		first = false;
	}
	for (int i = 0; i < BPF_FEATURE_MAX && n < len; i++) {
		if (!f[i].asked || f[i].on)
			continue;
		bpfload_why(&f[i], why, sizeof(why));
		n += (size_t)snprintf(msg + n, len - n, "\nX_FLAMED_REFUSED=%s: %s", names[i], why);
	}
}
