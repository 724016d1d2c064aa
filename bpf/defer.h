/* defer.h - a CPU sample, or an off-CPU block, taken before its process's unwind tables are ready is not
 * walked by frame pointers and left partial: its registers, its kernel stack and the top of its user
 * stack go to the deferred ring buffer (struct deferred_sample), and the daemon walks it with the same
 * tables once they are built (daemon/deferred.c, lib/unwind/stackwalk.c), as perf --call-graph dwarf
 * walks its copies afterwards. A Python process's Python frames are read at once (they change as it
 * runs), each eval-loop call's apart, for the daemon to put in place. A block's waits are counted (in
 * the offcpu maps) under the id of its record, which the daemon replaces with the walk. Included by
 * profile.bpf.c, after python/pywalk.bpf.h. */
#ifndef FLAMED_BPF_DEFER_H
#define FLAMED_BPF_DEFER_H

const volatile bool defer_new = false; /* set by the daemon: copy such samples instead of walking them */
/* CLOCK_MONOTONIC ns when the daemon loaded the program: a process started before it is not deferred.
 * Its first samples are gone already. Deferring it would only hold its samples back, unstored, while
 * the daemon builds the tables of every process it finds running. */
const volatile __u64 defer_since_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* sized by the daemon (defer_ring_bytes); a full one: frame pointers */
} deferred SEC(".maps");

/* A record being written, one per possible CPU (sized by the daemon): filled here, then sent with only
 * the stack bytes it copied, so the ring holds records of their own sizes (a per-CPU array's values
 * may not be this large). A CPU's programs do not share it at once: the sampler runs in interrupt
 * context, sched_switch with interrupts off. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct deferred_sample);
} defer_records SEC(".maps");

/* Off-CPU blocks deferred so far: each one's record gets the next id (never 0). */
__u64 defer_offcpu_ids = 0;

/* Whether a sample of a process whose mappings p are known waits for the tables of its binaries still
 * to be built: deferred rather than walked in part. */
static __always_inline bool defer_pending(const struct unwind_proc *p)
{
	return defer_new && (p->flags & UNWIND_PROC_PENDING);
}

/* bpf_loop callback: writes the Python frames of one eval-loop call of the sampled thread into the
 * scratch stack, closed by a 0 (the daemon puts them where their eval-loop frame is); before the 0, the
 * address of the entry frame that ended them (3.12+; no PY_FRAME value), for the daemon's shim check. */
static long py_defer_step(__u64 index, void *ctx)
{
	const struct walk_ctx *wc = ctx;
	__u32 zero = 0, n;
	struct stack_trace *st = bpf_map_lookup_elem(&scratch, &zero);
	struct walk *w = bpf_map_lookup_elem(&walks, &zero);

	(void)index;
	if (!st || !w || !wc->py || !w->py_frame || w->n >= PROFILE_MAX_DEPTH - 1)
		return 1;
	w->py_state = PY_EMIT;
	w->py_shim = 0;
	py_step(w, wc->py, st);
	n = w->n;
	if (w->py_state == PY_EVAL && w->py_shim && w->py_shim != w->py_base && n < PROFILE_MAX_DEPTH - 1) {
		st->ips[n] = w->py_shim;
		w->n = ++n;
	}
	if (w->py_state == PY_EVAL && n < PROFILE_MAX_DEPTH) {
		st->ips[n] = 0;
		w->n = n + 1;
	}
	return 0;
}

/* The sampled thread's Python frames (process pid, interpreter py) into out, each eval-loop call's
 * closed by a 0. Returns how many values. */
static __always_inline __u32 py_defer_frames(const struct py_proc *py, __u32 pid, __u32 tid, __u64 *out)
{
	__u32 zero = 0, n;
	struct stack_trace *st = bpf_map_lookup_elem(&scratch, &zero);
	struct walk *w = bpf_map_lookup_elem(&walks, &zero);
	struct walk_ctx wc = { .py = py };

	if (!st || !w)
		return 0;
	w->pid = pid;
	w->n = 0;
	py_walk_start(w);
	w->py_frame = py_current_frame(py, w, tid, bpf_get_current_task_btf()->thread.fsbase, false);
	if (!w->py_frame)
		return 0;
	bpf_loop(2 * PROFILE_MAX_DEPTH, py_defer_step, &wc, 0);
	n = w->n;
	if (n > PROFILE_MAX_DEPTH || bpf_probe_read_kernel(out, sizeof(st->ips), st->ips))
		return 0;
	return n;
}

/* Sends the sample of key (its user registers r; its process as first seen: known) to the daemon to be
 * walked later, with_py (a constant: the Python walker's) its Python frames read now; block: an off-CPU
 * block's. Returns 0 when it did not, else the id the record goes by (1 for a CPU sample, which is then
 * the daemon's to count; a block's waits are counted under it). The kernel stack is read again here
 * (into the record) when key has one. */
static __always_inline __u64 defer_sample(void *ctx, const struct uregs *r, const struct sample_key *key,
					  const struct seen_process *known, const bool with_py, bool block)
{
	__u64 token = known->token, id = 1; /* also when the process was first seen */
	__u32 off = 0, chunk, cpu = bpf_get_smp_processor_id();
	struct deferred_sample *d;
	__u64 addr, size;
	long n;

	if (!defer_new || known->start < defer_since_ns || bpf_ktime_get_ns() - token > DEFER_WINDOW_S * 1000000000ULL)
		return 0;
	d = bpf_map_lookup_elem(&defer_records, &cpu);
	if (!d)
		return 0;
	d->key = *key;
	d->key.kstack = d->key.ustack = 0;
	if (block) {
		id = __sync_fetch_and_add(&defer_offcpu_ids, 1) + 1;
		d->key.ustack = id;
		d->key.flags |= SAMPLE_OFFCPU;
	}
	d->token = token;
	d->ip = r->ip;
	d->sp = r->sp;
	d->bp = r->bp;
	n = key->kstack ? bpf_get_stack(ctx, d->kips, sizeof(d->kips), 0) : 0;
	d->nk = n > 0 ? (__u32)n / 8 : 0;
	/* A page at a time (the first to the end of sp's page), up to the first page that cannot be read:
	 * the stack's top end. */
	for (int i = 0; i < DEFER_STACK_BYTES / DEFER_PAGE + 1; i++) {
		if (off >= DEFER_STACK_BYTES)
			break;
		addr = r->sp + off;
		chunk = DEFER_PAGE - (addr & (DEFER_PAGE - 1));
		if (bpf_probe_read_user(&d->stack[off & (DEFER_STACK_BYTES - 1)], chunk, (void *)addr))
			break;
		off += chunk;
	}
	d->copied = off;
	d->npy = 0;
	if (with_py && python_walk && !test_refused(REFUSE_PYTHON)) {
		const struct py_proc *py = bpf_map_lookup_elem(&py_procs, &key->pid);

		if (py && py->token == token)
			d->npy = py_defer_frames(py, key->pid, key->tid, d->pyips);
	}
	/* Read back from the record, not off itself: the verifier then needs no exact off for the size,
	 * and can prune the copy loop's states as before. */
	size = offsetof(struct deferred_sample, stack) + *(volatile __u32 *)&d->copied;
	if (size > sizeof(*d))
		size = sizeof(*d);
	if (bpf_ringbuf_output(&deferred, d, size, 0)) {
		stat_inc(STAT_DEFER_LOST);
		return 0;
	}
	stat_inc(block ? STAT_OFFCPU_DEFERRED : STAT_DEFERRED);
	return id;
}

#endif
