/* walk.h - the user stack walk of profile.bpf.c: with unwind tables (include/unwind.h) where a process has
 * them and frame pointers elsewhere, Python frames in place of the eval loop (lib/python/pywalk.bpf.h), and
 * a sample of a process whose tables are not ready deferred (defer.h). Included by profile.bpf.c after its
 * maps and stack store. */
#ifndef FLAMED_BPF_WALK_H
#define FLAMED_BPF_WALK_H

/* x86-64 user addresses are below this (canonical lower half); kernel ones above. */
#define USER_TOP 0x800000000000ULL

/* Bytes of the user stack copied at the start of a walk: from the stack pointer to the end of its page
 * (x86-64 pages are 4 KiB, so the copy never reaches an unmapped page). The frames found in it are read
 * from the copy, the rest one by one: one helper call instead of one or two per frame, 8% of the
 * program's time over bench/burn at 99 Hz. */
#define STACK_COPY 4096

/* The user registers a walk starts from: where user code was interrupted, or where it entered the
 * kernel (and then for which system call: off-CPU's blocks are told apart by it). */
struct uregs {
	__u64 ip, sp, bp;
	__u64 syscall; /* orig_ax; 0 where user code was interrupted */
};

/* A user stack walk in progress, shared with walk_step(); and what profile_tick hands the walker
 * program it tail-calls (the sample's key, its generation and user registers), and offcpu_block likewise. */
struct walk {
	struct sample_record rec; /* the CPU sample being walked: its key from profile_tick; sent from here */
	struct uregs r;
	__u32 gen;
	__u32 unsent;     /* the walk's stack was left unstored, for the walker to send (stack_store) */
	__u64 block_where, block_now, block_cgroup; /* an off-CPU block's (offcpu.h): where, when, cgroup */
	__u64 ip, sp, bp; /* registers of the frame being unwound */
	__u32 pid;
	__u32 n;          /* frames written to scratch */
	__u32 key_flags;  /* SAMPLE_* flags of the stack walked, for the caller */
	__u32 done;       /* WALK_* once the walk stopped */
	__u32 used;       /* USED_* ways frames were unwound */
	__u32 unwound;    /* native frames unwound so far (0: ip is the leaf's) */
	__u32 py_state;   /* PY_* */
	__u64 py_frame;   /* the next Python frame to write (0: none) */
	__u64 py_base;    /* 3.15+: the thread's base frame, under its outermost Python frame (0: none) */
	__u32 py_written; /* Python frames written */
	__u8 py_truncated;
	__u8 after_eval;  /* the frame just unwound was an eval-loop call's (a perf trampoline may call it) */
	__u8 fp_ended;    /* the walk ended where a frame pointer chain did: perhaps code without one */
	__u8 after_tramp; /* the frame just unwound was a perf trampoline: its caller is the interpreter's
			   * evaluator that called it, glue not written (a stripped binary cannot name it) */
	/* The eval-loop call whose Python frames were written last (3.12+): where they began (its first
	 * frame, n, py_written) and the entry frame that ended them, on its native frame unless it was
	 * sampled entering or leaving (see shim_check). */
	__u64 py_first, py_shim;
	__u32 py_first_n, py_first_written;
	__u8 shim_check;  /* the frame just unwound was that call's: check where its entry frame lies */
	__u8 py_buf[PY_TSTATE_READ]; /* a thread state or frame read from the process */
	__u64 py_win_at;  /* user address of py_win[0]; 0: nothing read there this walk */
	__u8 py_win[PY_WIN + PY_FRAME_READ]; /* the page of process memory a frame was read from (its
					       * callers' frames are mostly there), and room for the bounds */
	__u64 copy_at;    /* user address of copy[0] */
	__u64 copied;     /* bytes of copy holding the stack (0: none) */
	__u8 copy[STACK_COPY];
};

_Static_assert(sizeof(struct walk) <= 32768, "the kernel's largest per-CPU value is 32 KiB");

enum { WALK_ON = 0, WALK_END, WALK_FAILED, WALK_REFRESH };

/* Where the walk is with Python frames. */
enum {
	PY_NATIVE = 0, /* unwinding native frames */
	PY_EMIT,       /* writing the Python frames of the eval-loop call at ip, in its place */
	PY_EVAL,       /* those written: unwind the eval-loop frame without writing it */
	PY_TAIL,       /* the native walk failed: writing the Python frames left, to the last */
	PY_DONE,
};

/* The walk lives in a map, not on the stack: the verifier then checks walk_step once for any frame
 * count instead of once per distinct count. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk);
} walks SEC(".maps");

/* What walk_step gets from walk_user besides the map. */
struct walk_ctx {
	const struct unwind_proc *proc; /* the process's mappings */
	const struct py_proc *py;       /* its interpreter; NULL: not a Python process */
};
enum { USED_TABLE = 1, USED_FP = 2, USED_UNKNOWN = 4 /* an address in no known mapping */ };

/* The index in p->m of the mapping holding addr, or -1. A global function, as row_find: checked once,
 * and its answer an index the verifier knows nothing of, so the walk after it is checked once, not
 * once for each step of the search it could have ended at. */
__noinline int mapping_find(const struct unwind_proc *p, __u64 addr)
{
	__u32 lo = 0, hi, mid;

	if (!p)
		return -1;
	hi = p->n < UNWIND_MAX_MAPPINGS ? p->n : UNWIND_MAX_MAPPINGS;
	for (int i = 0; i < UNWIND_MAPPING_STEPS; i++) {
		if (lo >= hi)
			break;
		mid = (lo + hi) / 2;
		const struct unwind_mapping *m = &p->m[mid & (UNWIND_MAX_MAPPINGS - 1)];
		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return mid & (UNWIND_MAX_MAPPINGS - 1);
	}
	return -1;
}

/* Finds the row of unwind table `table` (nrows rows) covering ELF address pc and caches it in c.
 * Returns 0, or -1 when the table holds none. */
__noinline int row_find(__u32 table, __u32 nrows, __u32 pc, struct row_cache_slot *c)
{
	__u32 slot = UNWIND_SLOT(table), lo = 0, hi = nrows, mid;
	const struct unwind_row *r;
	void *rows = bpf_map_lookup_elem(&unwind_tables, &slot);

	if (!rows || !c)
		return -1;
	for (int i = 0; i < UNWIND_ROW_STEPS; i++) {
		if (lo + 1 >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		r = bpf_map_lookup_elem(rows, &mid);
		if (!r)
			return -1;
		if (r->pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	r = bpf_map_lookup_elem(rows, &lo);
	if (!r || r->pc > pc)
		return -1;
	c->table = table;
	c->pc = pc;
	c->row = *r;
	return 0;
}

/* Reads size bytes (8 or 16) of the user stack at addr: from the walk's copy when it holds them all,
 * else from user memory. Returns 0 or a negative error. */
static __always_inline long read_stack(struct walk *w, void *dst, __u32 size, __u64 addr)
{
	__u64 off = addr - w->copy_at; /* wraps to a huge value below the copy */

	if (off > STACK_COPY - 16 || off + size > w->copied)
		return bpf_probe_read_user(dst, size, (void *)addr);
	if (size == 16)
		__builtin_memcpy(dst, &w->copy[off], 16);
	else
		__builtin_memcpy(dst, &w->copy[off], 8);
	return 0;
}

/* One frame up with the frame pointer: [bp] is the caller's bp, [bp + 8] the return address. */
static __always_inline long fp_step(struct walk *w)
{
	__u64 frame[2];

	if (unwind_mode == UNWIND_MODE_DWARF) {
		w->done = WALK_FAILED;
		return 1;
	}
	w->used |= USED_FP;
	if (!w->bp || w->bp < w->sp || read_stack(w, frame, sizeof(frame), w->bp)) {
		w->done = WALK_END; /* the chain ends (or was never there) */
		w->fp_ended = 1;
		return 1;
	}
	w->sp = w->bp + 16;
	w->bp = frame[0];
	w->ip = frame[1];
	if (!w->ip)
		w->done = WALK_END;
	return w->done != WALK_ON;
}

/* One frame up with the unwind row r. */
static __always_inline long table_step(struct walk *w, const struct unwind_row *r)
{
	__u8 cfa_kind = UNWIND_CFA_KIND(r->kinds), rbp_kind = UNWIND_RBP_KIND(r->kinds);
	__u64 cfa, ra, bp = w->bp;

	if (cfa_kind == UNWIND_CFA_NONE)
		return fp_step(w);
	if (cfa_kind == UNWIND_CFA_END) {
		w->done = WALK_END;
		return 1;
	}
	w->used |= USED_TABLE;
	if (cfa_kind == UNWIND_CFA_RSP)
		cfa = w->sp + r->cfa_off;
	else if (cfa_kind == UNWIND_CFA_RBP)
		cfa = w->bp + r->cfa_off;
	else if (cfa_kind == UNWIND_CFA_PLT)
		cfa = w->sp + r->cfa_off + ((w->ip & 15) >= (__u64)(__u8)r->rbp_off ? 8 : 0);
	else {
		w->done = WALK_FAILED;
		return 1;
	}
	if (cfa <= w->sp || read_stack(w, &ra, sizeof(ra), cfa - 8)) {
		w->done = WALK_FAILED; /* a stack only grows down; or unreadable */
		return 1;
	}
	if (cfa_kind != UNWIND_CFA_PLT && rbp_kind == UNWIND_RBP_CFA) {
		if (read_stack(w, &bp, sizeof(bp), cfa + (__s64)r->rbp_off * 8))
			bp = 0;
	} else if (rbp_kind == UNWIND_RBP_OTHER) {
		bp = 0;
	}
	w->ip = ra;
	w->sp = cfa;
	w->bp = bp;
	if (!ra)
		w->done = WALK_END;
	return w->done != WALK_ON;
}

#include "python/pywalk.bpf.h"

/* One step of a walk: records the frame at w->ip and unwinds to its caller; with_py (a constant: the
 * native walker is compiled without it), in a Python process, writes an eval-loop call's Python frames
 * in its place (one per call). Returns 1 to stop. */
static __always_inline long walk_step_impl(void *ctx, const bool with_py)
{
	const struct walk_ctx *wc = ctx;
	__u32 zero = 0, n, table, rpc;
	struct stack_trace *st = bpf_map_lookup_elem(&scratch, &zero);
	struct row_cache *cache = bpf_map_lookup_elem(&row_cache, &zero);
	struct walk *w = bpf_map_lookup_elem(&walks, &zero);
	const struct unwind_mapping *m;
	struct row_cache_slot *c;
	bool jit_leaf = false;
	__u32 nrows;
	__u64 pc;
	int i;

	if (!st || !cache || !w || !wc->proc)
		return 1;
	if (with_py && (w->py_state == PY_EMIT || w->py_state == PY_TAIL)) {
		if (!wc->py)
			return 1;
		py_step(w, wc->py, st);
		return w->py_state == PY_DONE;
	}
	if (with_py && w->shim_check)
		shim_check(w);
	n = w->n;
	if ((with_py && w->py_state == PY_DONE) || n >= PROFILE_MAX_DEPTH)
		return 1;
	if (w->ip >= USER_TOP) { /* no user code is there: a frame pointer (or a stack) that lied */
		w->done = WALK_FAILED;
		return native_done(w, wc, 1, with_py);
	}
	pc = w->unwound ? w->ip - 1 : w->ip; /* a return address may be past the end of its call's function */
	i = mapping_find(wc->proc, pc);
	m = i >= 0 ? &wc->proc->m[i & (UNWIND_MAX_MAPPINGS - 1)] : NULL;
	if (with_py && wc->py && w->py_state == PY_NATIVE) {
		if (w->py_frame && py_in_eval(wc->py, pc)) {
			w->py_state = PY_EMIT; /* its Python frames go in its place */
			w->py_first = w->py_frame;
			w->py_first_n = n;
			w->py_first_written = w->py_written;
			w->py_shim = 0;
			return 0;
		}
		if (w->after_eval && wc->py->tramp_cfa &&
		    (!m || m->table == UNWIND_NO_TABLE || (m->nrows & UNWIND_JIT_ROWS))) {
			/* A perf trampoline (anonymous code an eval-loop call returns to; rows from its jitdump
			 * file, if any, not needed): stood for by the Python frames, not written. */
			w->after_eval = 0;
			w->after_tramp = 1;
			w->unwound++;
			return native_done(w, wc, tramp_step(w, wc->py->tramp_cfa, wc->py->tramp_rbp_saved), true);
		}
		/* At the leaf, where no rows are (or its JIT's give none), the instruction tells. */
		if (!w->unwound && wc->py->tramp_cfa && (!m || m->table == UNWIND_NO_TABLE)) {
			long r = leaf_tramp(w, wc);

			if (r >= 0)
				return r;
		}
		jit_leaf = !w->unwound && wc->py->tramp_cfa && m && (m->nrows & UNWIND_JIT_ROWS);
	}
	if (with_py)
		w->after_eval = w->py_state == PY_EVAL;
	if (with_py && w->py_state == PY_EVAL) {
		w->shim_check = w->py_shim != 0;
		w->py_state = PY_NATIVE;
	} else if (with_py && w->after_tramp) {
		w->after_tramp = 0;
	} else {
		st->ips[n] = w->ip;
		w->n = n + 1;
	}
	w->unwound++;
	if (!m)
		w->used |= USED_UNKNOWN; /* ask for the mappings again */
	if (!m || m->table == UNWIND_NO_TABLE || pc - m->bias > 0xffffffffULL)
		return native_done(w, wc, fp_step(w), with_py);
	table = m->table;
	rpc = (__u32)(pc - m->bias);
	c = &cache->s[(rpc * 0x9e3779b1u ^ table) & (ROW_CACHE - 1)];
	nrows = UNWIND_NROWS(m->nrows);
	if (((c->table != table || c->pc != rpc) && row_find(table, nrows, rpc, c)) ||
	    UNWIND_CFA_KIND(c->row.kinds) == UNWIND_CFA_NONE) {
		if (with_py && jit_leaf) { /* a trampoline whose rows its JIT has not written yet? */
			long r;

			w->n = n;
			w->unwound--;
			r = leaf_tramp(w, wc);
			if (r >= 0)
				return r;
			w->n = n + 1;
			w->unwound++;
		}
		return native_done(w, wc, fp_step(w), with_py);
	}
	return native_done(w, wc, table_step(w, &c->row), with_py);
}

/* bpf_loop callbacks: the native walker's step, and the Python walker's. */
static long walk_step_native(__u64 index, void *ctx)
{
	(void)index;
	return walk_step_impl(ctx, false);
}

static long walk_step_python(__u64 index, void *ctx)
{
	(void)index;
	return walk_step_impl(ctx, true);
}

#include "events.h"

/* The registers task (the current one) saved when it entered the kernel. */
static __always_inline void task_uregs(struct task_struct *task, struct uregs *r)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	r->ip = BPF_CORE_READ(regs, ip);
	r->sp = BPF_CORE_READ(regs, sp);
	r->bp = BPF_CORE_READ(regs, bp);
	r->syscall = BPF_CORE_READ(regs, orig_ax);
}

/* Walks the current task's user stack from the registers r with the unwind tables of its process p
 * (and frame pointers where they have none) into generation gen's stacks map (and offcpu_frames, for
 * an off-CPU block); with_py, a Python process's frames in place of its eval loop. Returns its key, or
 * 0 (none, or lost); the SAMPLE_* flags the walk sets are left in the walk's key_flags. */
static __always_inline __u64 walk_user_impl(const struct uregs *r, const struct unwind_proc *p, __u32 gen,
					    __u32 block, const bool with_py)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 zero = 0, pid = id >> 32, tid = (__u32)id, copy, n;
	struct stack_trace *st = bpf_map_lookup_elem(&scratch, &zero);
	struct walk *w = bpf_map_lookup_elem(&walks, &zero);
	struct walk_ctx wc = { .proc = p };
	__u64 h;

	if (!st || !w || !r || !p)
		return 0;
	w->pid = pid;
	w->key_flags = 0;
	w->n = w->done = w->used = w->unwound = 0;
	w->fp_ended = 0;
	if (with_py)
		py_walk_start(w);
	w->ip = r->ip;
	w->sp = r->sp;
	w->bp = r->bp;
	if (!w->ip)
		return 0;
	/* A Python process: its interpreter (read for this image) and the thread's innermost frame. */
	if (with_py && python_walk) {
		if (test_refused(REFUSE_PYTHON))
			return 0;
		wc.py = bpf_map_lookup_elem(&py_procs, &pid);
		if (wc.py && wc.py->token != p->token)
			wc.py = NULL;
		if (wc.py)
			/* A block's walk searches even where none was found lately: a thread that starts
			 * and blocks at once (its thread state not yet its own) keeps that stack for as
			 * long as it waits. */
			w->py_frame = py_current_frame(wc.py, w, tid, bpf_get_current_task_btf()->thread.fsbase, block);
	}
	/* The rest of the stack pointer's page, in one read (frames beyond it are read one by one). */
	copy = STACK_COPY - (w->sp & (STACK_COPY - 1));
	w->copy_at = w->sp;
	w->copied = bpf_probe_read_user(w->copy, copy, (void *)w->sp) ? 0 : copy;
	/* Each step writes at most one frame; eval-loop frames and shims take a step and write none. */
	bpf_loop(3 * PROFILE_MAX_DEPTH, with_py ? walk_step_python : walk_step_native, &wc, 0);
	if (with_py && w->py_written)
		stat_inc(STAT_PY_STACKS);
	if (with_py && w->py_frame && w->py_frame != w->py_base && w->py_state == PY_NATIVE && w->done == WALK_END)
		stat_inc(STAT_PY_UNMATCHED); /* an eval-loop call not recognised, or a thread state that lies */
	n = w->n;
	if (!n || n > PROFILE_MAX_DEPTH)
		return 0;
	if (n < PROFILE_MAX_DEPTH)
		st->ips[n] = 0; /* the end; what follows is an earlier stack's, and nobody reads it */
	if (w->done == WALK_ON) {
		w->key_flags |= SAMPLE_USTACK_TRUNCATED;
		stat_inc(STAT_UNWIND_TRUNCATED);
	} else if (w->done == WALK_FAILED) {
		stat_inc(STAT_UNWIND_FAILED);
	}
	stat_inc((w->used & (USED_TABLE | USED_FP)) == USED_TABLE ? STAT_UNWIND_DWARF :
		 (w->used & USED_TABLE) ? STAT_UNWIND_MIXED : STAT_UNWIND_FP);
	if (w->used & USED_UNKNOWN) {
		w->key_flags |= SAMPLE_WALK_PARTIAL;
		ask_refresh(pid);
	}
	/* A CPU sample taken in user code goes whole through the ring: left unstored, for the walker to send.
	 * Not one with an address in no known mapping: it may yet be deferred, and the deferral reuses the
	 * scratch stack. */
	if (!block && send_walked && !w->rec.key.kstack && !(w->used & USED_UNKNOWN)) {
		w->unsent = 1;
		return stack_hash(n);
	}
	h = stack_store(gen, n, block, 0);
	if (!h)
		w->key_flags |= SAMPLE_USTACK_LOST;
	return h;
}

/* The native walker's walk and the Python walker's: global functions, each checked once by the verifier
 * in the programs that call it, with any arguments. */
__noinline __u64 walk_user_native(const struct uregs *r, const struct unwind_proc *p, __u32 gen, __u32 block)
{
	return walk_user_impl(r, p, gen, block, false);
}

__noinline __u64 walk_user_python(const struct uregs *r, const struct unwind_proc *p, __u32 gen, __u32 block)
{
	return walk_user_impl(r, p, gen, block, true);
}

#include "defer.h"

/* The user stack from r: walked with unwind tables when the process has them (and the mode allows),
 * else with bpf_get_stack(ctx). The current task's, in generation gen (and offcpu_frames with block);
 * with_py (a constant), with a Python process's frames. One taken before the process's tables are ready
 * is deferred (SAMPLE_DEFERRED): a CPU sample's 0 is returned, a block's record id. */
static __always_inline __u64 user_stack(void *ctx, const struct uregs *r, struct task_struct *task, __u32 gen,
					struct sample_key *key, bool block, const bool with_py)
{
	const struct seen_process *known;
	const struct unwind_proc *p;
	struct walk *w;
	__u32 zero = 0;
	__u64 h, id;

	if (unwind_mode != UNWIND_MODE_FP && task->mm) {
		p = bpf_map_lookup_elem(&unwind_procs, &key->pid);
		known = bpf_map_lookup_elem(&seen, &key->pid);
		/* Only tables read for this image: not those of the program it exec'd from, or of a process
		 * that had the pid before. */
		if (p && known && known->token == p->token) {
			if (defer_pending(p) && (id = defer_sample(ctx, r, key, known, with_py, block)))
				goto deferred;
			h = with_py ? walk_user_python(r, p, gen, block) : walk_user_native(r, p, gen, block);
			w = bpf_map_lookup_elem(&walks, &zero);
			if (!w)
				return h;
			/* An address in none of its mappings (a library mapped since they were read): the
			 * mappings are read again; the sample waits for them, not stored short. */
			if ((w->used & USED_UNKNOWN) && (id = defer_sample(ctx, r, key, known, with_py, block)))
				goto deferred;
			key->flags |= w->key_flags;
			return h;
		}
		key->flags |= SAMPLE_WALK_PARTIAL; /* its tables are not built yet (or not all) */
		if (known && (id = defer_sample(ctx, r, key, known, with_py, block)))
			goto deferred;
	}
	return capture(ctx, gen, BPF_F_USER_STACK, SAMPLE_USTACK_LOST, STAT_USTACK_ERROR, key, block);
deferred:
	key->flags |= SAMPLE_DEFERRED;
	return block ? id : 0;
}

#endif
