/* pywalk.bpf.h - CPython's BPF walker, the Python part of profile.bpf.c's user stack walk
 * (include/python.h): finds the sampled thread's thread state, writes the Python frames of each eval-loop
 * call in its place (given back to the caller's when the call was sampled starting or ending), steps over
 * -X perf trampolines and writes the frames left after a walk that failed. Part of the runtime's folder
 * (pyprocs.c writes the py_procs entries it reads); included by bpf/walk.h after struct walk, struct
 * walk_ctx and table_step, BPF code only; every read of the process is bounded and checked. */
#ifndef FLAMED_PYTHON_PYWALK_BPF_H
#define FLAMED_PYTHON_PYWALK_BPF_H

/* Threads of a Python process walked to find the sampled one's thread state, at most. */
#define PY_MAX_THREADS 256
/* A thread with no thread state found is looked for again after this long (it may get one). */
#define PY_RETRY_NS 100000000ULL

/* Each Python process's interpreter, by pid; written by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024); /* sized by the daemon before load */
	__type(key, __u32);
	__type(value, struct py_proc);
} py_procs SEC(".maps");

/* Code objects first written (PROCESS_PY_CODE), apart from the events of processes, which they would
 * crowd out at a process's start (its imports run hundreds of code objects). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} py_events SEC(".maps");

/* Code objects written lately, per CPU, direct-mapped by (pid, address): a code object not among them
 * is reported (PROCESS_PY_CODE) so the daemon names it while its process lives. 16 KiB per CPU. */
#define PY_SEEN_SLOTS 2048
struct py_seen {
	__u64 tag[PY_SEEN_SLOTS];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_seen);
} py_seen SEC(".maps");

/* Each thread's thread state, by tid, as last found. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* sized by the daemon before load */
	__type(key, __u32);
	__type(value, struct py_thread);
} py_threads SEC(".maps");

/* Sets the Python part of a walk to its start: no Python frame known, nothing read. */
static __always_inline void py_walk_start(struct walk *w)
{
	w->py_state = PY_NATIVE;
	w->py_frame = w->py_base = w->py_win_at = w->py_shim = 0;
	w->py_written = 0;
	w->py_truncated = w->after_eval = w->after_tramp = w->shim_check = 0;
}

static __always_inline __u64 py_load64(const __u8 *buf, __u32 size, __u32 off)
{
	__u64 v;

	if (off > size - 8)
		return 0;
	__builtin_memcpy(&v, buf + off, 8);
	return v;
}

static __always_inline __u32 py_load32(const __u8 *buf, __u32 size, __u32 off)
{
	__u32 v;

	if (off > size - 4)
		return 0;
	__builtin_memcpy(&v, buf + off, 4);
	return v;
}

static __always_inline __u8 py_load8(const __u8 *buf, __u32 size, __u32 off)
{
	if (off > size - 1)
		return 0;
	return buf[off];
}

/* True when pc is in the eval loop (either of its parts). */
static __always_inline bool py_in_eval(const struct py_proc *py, __u64 pc)
{
	return (pc >= py->eval_start[0] && pc < py->eval_end[0]) ||
	       (pc >= py->eval_start[1] && pc < py->eval_end[1]);
}

/* bpf_loop callback state of a thread-list walk. */
struct py_find {
	__u64 tstate;  /* the one being looked at; 0: end of the list */
	__u64 fsbase;  /* the sampled thread's thread pointer */
	__u64 found;
	const struct py_offsets *off;
	struct walk *w;
};

/* Reads the thread state at t into w->py_buf. Returns 0 or a negative error. */
static __always_inline long py_read_tstate(struct walk *w, __u64 t)
{
	return bpf_probe_read_user(w->py_buf, PY_TSTATE_READ, (void *)t);
}

static long py_find_step(__u64 index, void *ctx)
{
	struct py_find *f = ctx;
	struct walk *w = f->w;

	(void)index;
	if (!f->tstate || py_read_tstate(w, f->tstate))
		return 1;
	if (py_load64(w->py_buf, PY_TSTATE_READ, f->off->tstate_thread_id) == f->fsbase) {
		f->found = f->tstate;
		return 1;
	}
	f->tstate = py_load64(w->py_buf, PY_TSTATE_READ, f->off->tstate_next);
	return 0;
}

/* The thread state of the thread whose thread pointer is fsbase: the interpreter's list of thread
 * states walked (thread_id is pthread_self(), which is the thread pointer). 0: none found. */
static __always_inline __u64 py_find_tstate(const struct py_proc *py, struct walk *w, __u64 fsbase)
{
	struct py_find f = { .fsbase = fsbase, .off = &py->off, .w = w };
	__u64 interp = 0;

	if (bpf_probe_read_user(&interp, sizeof(interp), (void *)(py->runtime + py->off.runtime_interp_head)) ||
	    !interp ||
	    bpf_probe_read_user(&f.tstate, sizeof(f.tstate), (void *)(interp + py->off.interp_tstate_head)))
		return 0;
	bpf_loop(PY_MAX_THREADS, py_find_step, &f, 0);
	return f.found;
}

/* The innermost Python frame of the current thread (tid, thread pointer fsbase) of a Python process,
 * from its thread state (cached by tid, checked at each use); 0 when it has none or runs no Python.
 * A thread none was found for is searched again after PY_RETRY_NS, or at once with search_now. */
static __always_inline __u64 py_current_frame(const struct py_proc *py, struct walk *w, __u32 tid, __u64 fsbase,
					      bool search_now)
{
	const struct py_offsets *o = &py->off;
	struct py_thread *t = bpf_map_lookup_elem(&py_threads, &tid), fresh = { .token = py->token };
	__u64 tstate = 0, frame = 0, now = bpf_ktime_get_ns();

	if (t && t->token == py->token) {
		if (t->tstate && !py_read_tstate(w, t->tstate) &&
		    py_load64(w->py_buf, PY_TSTATE_READ, o->tstate_thread_id) == fsbase)
			tstate = t->tstate;
		else if (!t->tstate && now - t->checked_ns < PY_RETRY_NS && !search_now)
			return 0; /* none found lately */
	}
	if (!tstate) {
		tstate = py_find_tstate(py, w, fsbase); /* leaves its thread state in w->py_buf */
		fresh.tstate = tstate;
		fresh.checked_ns = now;
		bpf_map_update_elem(&py_threads, &tid, &fresh, BPF_ANY);
		if (!tstate) {
			stat_inc(STAT_PY_NO_THREAD);
			return 0;
		}
	}
	frame = py_load64(w->py_buf, PY_TSTATE_READ, o->tstate_frame);
	if (o->tstate_base_frame != PY_NO_OFFSET)
		w->py_base = py_load64(w->py_buf, PY_TSTATE_READ, o->tstate_base_frame);
	if (frame && o->cframe_frame != PY_NO_OFFSET &&
	    bpf_probe_read_user(&frame, sizeof(frame), (void *)(frame + o->cframe_frame))) {
		stat_inc(STAT_PY_READ_FAILED);
		return 0;
	}
	return frame;
}

/* Reports the code object code of process pid unless this CPU wrote it lately. */
static __always_inline void py_note_code(const struct py_proc *py, __u32 pid, __u64 code)
{
	__u64 tag = code ^ ((__u64)pid * 0x9e3779b97f4a7c15ULL);
	__u32 zero = 0, i = (__u32)((tag >> 3) ^ (tag >> 29)) & (PY_SEEN_SLOTS - 1);
	struct py_seen *seen = bpf_map_lookup_elem(&py_seen, &zero);
	struct process_event *e;

	if (!seen || seen->tag[i] == tag)
		return;
	seen->tag[i] = tag;
	/* Lost: named at the flush instead, if the process still lives. */
	e = event_new(&py_events, pid, PROCESS_PY_CODE, py->token, STAT_PY_EVENTS_LOST);
	if (!e)
		return;
	e->addr = code;
	bpf_ringbuf_submit(e, 0);
}

/* The instruction a frame (read into buf) runs, in code units; PY_INSTR_UNKNOWN when out of range. */
static __always_inline __u32 py_instr(const struct py_offsets *o, const __u8 *buf, __u64 code)
{
	__u64 at, first;
	__s32 lasti;

	if (o->walk == PY_WALK_OBJECTS) {
		lasti = (__s32)py_load32(buf, PY_FRAME_READ, o->frame_instr);
		if (lasti < 0)
			return PY_INSTR_UNKNOWN;
		if (o->lasti_bytes)
			lasti /= 2;
		return lasti < PY_INSTR_UNKNOWN ? (__u32)lasti : PY_INSTR_UNKNOWN;
	}
	at = py_load64(buf, PY_FRAME_READ, o->frame_instr);
	first = code + o->code_first_instr;
	if (at < first || (at - first) / 2 >= PY_INSTR_UNKNOWN)
		return PY_INSTR_UNKNOWN;
	return (__u32)((at - first) / 2);
}

/* The PY_FRAME_READ bytes of the frame at frame: from the page read for an earlier frame of this walk
 * when it lies there, else from a read of the page it lies in (3.11+: the frames of its callers were
 * pushed before it on the thread's data stack, below it, most in the same page), else from a read of
 * its own (a frame across a page's end, 3.8 to 3.10's frame objects). Only the frame's own page is
 * read: the data stack's chunk may begin in it, and a read touching an unmapped page fails whole, at a
 * fault's cost. NULL: unreadable. */
static __always_inline const __u8 *py_frame_bytes(struct walk *w, const struct py_offsets *o, __u64 frame)
{
	__u64 at = w->py_win_at, page = frame & ~(__u64)(PY_WIN - 1);

	if (at && frame >= at && frame - at <= PY_WIN - PY_FRAME_READ)
		return w->py_win + ((frame - at) & (PY_WIN - 1));
	if (o->walk != PY_WALK_OBJECTS && frame - page <= PY_WIN - PY_FRAME_READ && page != at &&
	    !bpf_probe_read_user(w->py_win, PY_WIN, (void *)page)) {
		w->py_win_at = page;
		return w->py_win + ((frame - page) & (PY_WIN - 1));
	}
	if (bpf_probe_read_user(w->py_buf, PY_FRAME_READ, (void *)frame))
		return 0;
	return w->py_buf;
}

/* One step of writing the Python frames of the eval-loop call at w->ip: writes the next frame, or ends
 * the call's frames (w->py_state to PY_EVAL: the native frame is unwound next, not written). */
static __always_inline void py_step(struct walk *w, const struct py_proc *py, struct stack_trace *st)
{
	const struct py_offsets *o = &py->off;
	const __u8 *f;
	__u64 code, back;
	__u32 n = w->n;
	bool last = false;

	if (!w->py_frame || n >= PROFILE_MAX_DEPTH || w->py_written >= py->max_frames) {
		if (w->py_frame && !w->py_truncated) { /* frames left: the stack or --python-frames is full */
			w->py_truncated = 1;
			stat_inc(STAT_PY_TRUNCATED);
		}
		w->py_state = w->py_state == PY_TAIL ? PY_DONE : PY_EVAL;
		return;
	}
	f = py_frame_bytes(w, o, w->py_frame);
	if (!f) {
		stat_inc(STAT_PY_READ_FAILED);
		w->py_frame = 0;
		w->py_state = w->py_state == PY_TAIL ? PY_DONE : PY_EVAL;
		return;
	}
	code = py_load64(f, PY_FRAME_READ, o->frame_code);
	back = py_load64(f, PY_FRAME_READ, o->frame_back);
	if (back == w->py_frame)
		back = 0; /* a frame that is its own caller: a lie; stop there */
	if (o->walk == PY_WALK_SHIM && py_load8(f, PY_FRAME_READ, o->frame_owner) >= o->owner_cstack) {
		/* The shim or entry frame under an eval-loop call's first frame (3.15: or the thread's base
		 * frame): it ends the call's frames. */
		w->py_shim = w->py_frame;
		w->py_frame = back;
		if (w->py_state != PY_TAIL)
			w->py_state = PY_EVAL;
		return;
	}
	if (o->walk == PY_WALK_OBJECTS ||
	    (o->walk == PY_WALK_ENTRY && py_load8(f, PY_FRAME_READ, o->frame_entry)))
		last = true;
	/* 3.14+ tag f_executable (a _PyStackRef) in its low two bits; 3 marks a tagged int, no object:
	 * nothing to write for it. */
	if ((code & 3) != 3 && (code & ~3ULL)) {
		code &= ~3ULL;
		st->ips[n] = PY_FRAME(code, py_instr(o, f, code));
		w->n = n + 1;
		py_note_code(py, w->pid, code);
		w->py_written++;
	}
	w->py_frame = back;
	if (last && w->py_state != PY_TAIL)
		w->py_state = PY_EVAL;
}

/* One frame up through a -X perf trampoline: it keeps no unwind table (anonymous code), so its layout
 * says where the return address is: CFA = rsp + cfa, and rbp saved at CFA - 16 when rbp_saved. */
static __always_inline long tramp_step(struct walk *w, __u32 cfa_off, bool rbp_saved)
{
	__u64 cfa = w->sp + cfa_off, ra, bp = w->bp;

	if (read_stack(w, &ra, sizeof(ra), cfa - 8) || (rbp_saved && read_stack(w, &bp, sizeof(bp), cfa - 16))) {
		w->done = WALK_FAILED;
		return 1;
	}
	w->ip = ra;
	w->sp = cfa;
	w->bp = bp;
	if (!ra)
		w->done = WALK_END;
	return w->done != WALK_ON;
}

/* Where the CFA of a sample's leaf is when it lies in a perf trampoline: the instruction at ip tells
 * which of the template's (pyelf.c's decode_trampoline) it is about to run. Returns rsp's offset to it
 * and sets *rbp_saved, or 0: no instruction of the template (other anonymous code). */
static __always_inline __u32 tramp_leaf_cfa(const struct walk *w, const struct py_proc *py, bool *rbp_saved)
{
	__u8 c[4] = {};

	*rbp_saved = false;
	if (bpf_probe_read_user(c, 1, (void *)w->ip))
		return 0;
	if (c[0] == 0xc3) /* ret: whatever the template saved is restored */
		return 8;
	if (bpf_probe_read_user(c, sizeof(c), (void *)w->ip))
		return 0;
	if (c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa) /* endbr64 */
		return 8;
	if (c[0] == 0xff && c[1] == 0xd1) { /* call *%rcx */
		*rbp_saved = py->tramp_rbp_saved;
		return 16;
	}
	if (py->tramp_rbp_saved) {
		if (c[0] == 0x55) /* push %rbp */
			return 8;
		*rbp_saved = true;
		if ((c[0] == 0x48 && c[1] == 0x89 && c[2] == 0xe5) || c[0] == 0x5d) /* mov %rsp,%rbp; pop %rbp */
			return 16;
		return 0;
	}
	if (c[0] == 0x48 && c[1] == 0x83 && c[3] == 0x08 && c[2] == 0xec) /* sub $8,%rsp */
		return 8;
	if (c[0] == 0x48 && c[1] == 0x83 && c[3] == 0x08 && c[2] == 0xc4) /* add $8,%rsp */
		return 16;
	return 0;
}

/* After a native step that stopped the walk (stop 1): when it failed, or ended in code without unwind
 * information (the vDSO, JIT code) whose frame pointer led nowhere, with Python frames (not 3.15's base
 * frame) still to write, they are written after what was walked (their native callers are lost). */
static __always_inline long native_done(struct walk *w, const struct walk_ctx *wc, long stop, const bool with_py)
{
	if (with_py && stop && (w->done == WALK_FAILED || w->fp_ended) && w->py_frame && w->py_frame != w->py_base && wc->py) {
		w->py_state = PY_TAIL;
		stat_inc(STAT_PY_APPENDED);
		return 0;
	}
	return stop;
}

/* Run once the eval-loop call whose Python frames were just written is unwound (w->sp its CFA). 3.12+
 * push a shim "entry frame" on the call's own C stack frame when it starts and pop it before it
 * returns, so it lies below the CFA. One found above it is a caller's: the call was sampled in its
 * prologue or epilogue, with the thread's current frame still (or again) its caller's. The frames
 * written are then the caller's: taken back, to be written in the caller's eval-loop frame. */
static __always_inline void shim_check(struct walk *w)
{
	w->shim_check = 0;
	if (w->py_shim < w->sp || w->py_shim - w->sp >= PY_SHIM_REACH || w->py_shim == w->py_base ||
	    w->py_first_n > w->n)
		return;
	w->n = w->py_first_n;
	w->py_written = w->py_first_written;
	w->py_frame = w->py_first;
	w->py_shim = 0;
	stat_inc(STAT_PY_CALL_EDGE);
}

/* At a sample's leaf in anonymous code of a Python process: a perf trampoline, when the instruction
 * there is one of its template's; then stepped over (not written). Returns walk_step's answer, or -1
 * when it is other code. */
static __always_inline long leaf_tramp(struct walk *w, const struct walk_ctx *wc)
{
	bool rbp_saved;
	__u32 cfa_off = tramp_leaf_cfa(w, wc->py, &rbp_saved);

	if (!cfa_off)
		return -1;
	stat_inc(STAT_PY_TRAMP_LEAF);
	w->after_eval = 0;
	w->after_tramp = 1;
	w->unwound++;
	return native_done(w, wc, tramp_step(w, cfa_off, rbp_saved), true);
}

#endif
