/* losses.c - what the BPF side lost since the last flush (stacks not read, maps full, events lost), in
 * words, logged once per flush with what to do about it. */
#include <stdint.h>
#include <stdio.h>

#include "losses.h"

static const char *const stat_names[STAT_MAX] = {
	[STAT_KSTACK_ERROR] = "kernel stacks not read",
	[STAT_USTACK_ERROR] = "user stacks not read",
	[STAT_STACK_MAP_FULL] = "stacks map full",
	[STAT_STACK_NOMEM] = "stack entries the kernel could not allocate",
	[STAT_COUNTS_FULL] = "counts map full",
	[STAT_EVENTS_LOST] = "new-process events lost",
	[STAT_OFFCPU_NO_STORAGE] = "off-CPU blocks not followed (no task storage)",
	[STAT_OFFCPU_STACK_LOST] = "off-CPU stacks dropped before their wait was counted",
	[STAT_OFFCPU_COUNTS_FULL] = "off-CPU waits lost (off-CPU map full)",
};

/* What to do about the losses since prev, when an option or a bound explains them; else "". */
static const char *loss_hint(const struct sampler_stats *now, const struct sampler_stats *prev, unsigned offcpu_stacks,
			     char *buf, size_t len)
{
	if (now->stat[STAT_COUNTS_FULL] > prev->stat[STAT_COUNTS_FULL] ||
	    now->stat[STAT_OFFCPU_COUNTS_FULL] > prev->stat[STAT_OFFCPU_COUNTS_FULL])
		return " (raise --max-keys)";
	if (now->stat[STAT_STACK_MAP_FULL] > prev->stat[STAT_STACK_MAP_FULL])
		return " (raise --max-stacks)";
	if (now->stat[STAT_OFFCPU_STACK_LOST] > prev->stat[STAT_OFFCPU_STACK_LOST]) {
		snprintf(buf, len, " (blocked threads had more distinct stacks than the %u kept; their waits are "
			 "stored without them)", offcpu_stacks);
		return buf;
	}
	return "";
}

void losses_log(const struct sampler_stats *now, struct sampler_stats *prev, unsigned offcpu_stacks)
{
	char line[1024], hint[160];
	size_t len = 0;

	for (int i = STAT_KSTACK_ERROR; i < STAT_MAX; i++) {
		uint64_t d = now->stat[i] - prev->stat[i];

		if (d && stat_names[i] && len < sizeof(line))
			len += snprintf(line + len, sizeof(line) - len, "%s%llu %s", len ? ", " : "",
					(unsigned long long)d, stat_names[i]);
	}
	if (len)
		fprintf(stderr, "flamed: this flush lost stacks or samples: %s%s\n", line,
			loss_hint(now, prev, offcpu_stacks, hint, sizeof(hint)));
	*prev = *now;
}
