/* events.h - the events ring buffer's process events: a process's first samples (note_process, with its
 * parent from forks.h) and the asks to read its mappings again (ask_refresh). Included by profile.bpf.c. */
#ifndef FLAMED_BPF_EVENTS_H
#define FLAMED_BPF_EVENTS_H

#include "forks.h"

/* Asks the daemon to read pid's mappings again, at most once per REFRESH_GAP_NS. */
static __always_inline void ask_refresh(__u32 pid)
{
	struct seen_process *known = bpf_map_lookup_elem(&seen, &pid);
	struct process_event *e;
	__u64 now = bpf_ktime_get_ns();

	if (!known || now - known->refresh_ns < REFRESH_GAP_NS)
		return;
	known->refresh_ns = now;
	e = event_new(&events, pid, PROCESS_MAPPINGS, known->token, STAT_EVENTS_LOST);
	if (!e)
		return;
	e->start_ns = known->start;
	bpf_ringbuf_submit(e, 0);
	stat_inc(STAT_UNWIND_REFRESH);
}

/* Reports a process's first samples (pid and start time) through the events ring buffer. */
static __always_inline void note_process(struct task_struct *task, __u32 pid)
{
	__u64 start = task->group_leader->start_time, now = bpf_ktime_get_ns();
	struct seen_process *known = bpf_map_lookup_elem(&seen, &pid), fresh = { .start = start };
	struct process_event *e;
	__u64 token = now; /* a new entry's */

	if (known && known->start == start) {
		if (known->reports >= REPORTS || now - known->last_ns < (REPORT_GAP_NS << (known->reports - 1)))
			return;
		known->reports++;
		known->last_ns = now;
		token = known->token;
	} else {
		fresh.last_ns = now;
		fresh.token = token;
		fresh.reports = 1;
		bpf_map_update_elem(&seen, &pid, &fresh, BPF_ANY);
	}
	e = event_new(&events, pid, PROCESS_NEW, token, STAT_EVENTS_LOST);
	if (!e)
		return;
	e->start_ns = start;
	parent_of(task, pid, start, &e->ppid, &e->ppid_start_ns);
	bpf_ringbuf_submit(e, 0);
}

#endif
