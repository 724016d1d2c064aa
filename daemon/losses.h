/* losses.h - the BPF side's losses since the last flush, logged in words (losses.c). */
#ifndef FLAMED_LOSSES_H
#define FLAMED_LOSSES_H

#include "sampler.h"

/* Logs, once, the stack-capture failures and off-CPU losses counted since prev (then set to now), with
 * the option that would avoid them; offcpu_stacks: the sampler's bound of blocked threads' stacks. */
void losses_log(const struct sampler_stats *now, struct sampler_stats *prev, unsigned offcpu_stacks);

#endif
