/* forks.h - who started whom: at every fork of a new process (not a thread) its parent is written to
 * the forks map, by the child's pid, so the daemon can name the parent of a sampled process even when
 * that parent exited before the child was first sampled (and the child was handed to init). The
 * process events (note_process) carry the parent found here, else the task's current parent.
 * Included by profile.bpf.c. */
#ifndef FLAMED_BPF_FORKS_H
#define FLAMED_BPF_FORKS_H

/* Forks remembered, by the child's pid; the oldest go first. A fork storm pushes out forks of long
 * ago, whose processes are mostly sampled (and their parents recorded) or gone by then. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct fork_info);
} forks SEC(".maps");

SEC("tp_btf/sched_process_fork")
int BPF_PROG(process_fork, struct task_struct *parent, struct task_struct *child)
{
	struct fork_info f;
	__u32 pid = child->tgid;

	if (test_refused(REFUSE_PROCESS_FORK) || child->pid != child->tgid)
		return 0; /* a new thread of a process */
	f.start_ns = child->start_time;
	f.ppid = parent->tgid;
	f.pad = 0;
	f.ppid_start_ns = parent->group_leader->start_time;
	bpf_map_update_elem(&forks, &pid, &f, BPF_ANY);
	return 0;
}

/* The parent of task's process (pid, started at start): as its fork recorded it, else its current
 * parent. */
static __always_inline void parent_of(struct task_struct *task, __u32 pid, __u64 start, __u32 *ppid,
				      __u64 *ppid_start)
{
	struct fork_info *f = bpf_map_lookup_elem(&forks, &pid);
	struct task_struct *p;

	if (f && f->start_ns == start) {
		*ppid = f->ppid;
		*ppid_start = f->ppid_start_ns;
		return;
	}
	p = task->group_leader->real_parent;
	*ppid = p ? p->tgid : 0;
	*ppid_start = p ? p->group_leader->start_time : 0;
}

#endif
