/* stackwalk.c - walks a copied user stack with the BPF walk's unwind rules (see stackwalk.h). */
#include <string.h>

#include "unwind/stackwalk.h"
#include "python.h"

struct walk {
	uint64_t ip, sp, bp;
	const struct stackwalk_copy *c;
	bool no_fp;
	bool fp_ended; /* a frame pointer chain ended (its code had no table: JIT, the vDSO) */
	const struct stackwalk_py *py;
	size_t py_at;  /* the next of py's frames */
	/* The eval-loop call whose frames were written last: where they began in py and in the output, and
	 * the entry frame that ended them (0: none). */
	size_t first_at, first_n, first_written;
	uint64_t shim;
	bool after_eval;  /* the frame just unwound was an eval-loop call whose frames were written */
	bool after_tramp; /* the frame just unwound was a perf trampoline: its caller, glue, not written */
	struct stackwalk_result *out;
};

/* Reads the 8 bytes at addr from the copy. Returns false when the copy does not hold them all. */
static bool read_u64(const struct walk *w, uint64_t addr, uint64_t *v)
{
	uint64_t off = addr - w->c->at; /* wraps to a huge value below the copy */

	if (addr < w->c->at || off > w->c->len || w->c->len - off < sizeof(*v))
		return false;
	memcpy(v, w->c->bytes + off, sizeof(*v));
	return true;
}

/* A step stops the walk with why, or goes on. */
static bool stop(struct walk *w, enum stackwalk_end why)
{
	w->out->end = why;
	return false;
}

/* One frame up with the frame pointer: [bp] is the caller's bp, [bp + 8] the return address. Returns
 * whether the walk goes on. */
static bool fp_step(struct walk *w)
{
	uint64_t bp, ra;

	if (w->no_fp)
		return stop(w, STACKWALK_FAILED);
	w->out->used_fp = true;
	if (!w->bp || w->bp < w->sp) {
		w->fp_ended = true;
		return stop(w, STACKWALK_END); /* the chain ends (or was never there) */
	}
	if (!read_u64(w, w->bp, &bp) || !read_u64(w, w->bp + 8, &ra))
		return stop(w, STACKWALK_SHORT); /* bp >= sp >= the copy's start: past its end */
	w->sp = w->bp + 16;
	w->bp = bp;
	w->ip = ra;
	return ra ? true : stop(w, STACKWALK_END);
}

/* One frame up with the row r. Returns whether the walk goes on. */
static bool table_step(struct walk *w, const struct unwind_row *r)
{
	uint8_t cfa_kind = UNWIND_CFA_KIND(r->kinds), rbp_kind = UNWIND_RBP_KIND(r->kinds);
	uint64_t cfa, ra, bp = w->bp;

	if (cfa_kind == UNWIND_CFA_NONE)
		return fp_step(w);
	if (cfa_kind == UNWIND_CFA_END)
		return stop(w, STACKWALK_END);
	w->out->used_table = true;
	if (cfa_kind == UNWIND_CFA_RSP)
		cfa = w->sp + r->cfa_off;
	else if (cfa_kind == UNWIND_CFA_RBP)
		cfa = w->bp + r->cfa_off;
	else if (cfa_kind == UNWIND_CFA_PLT)
		cfa = w->sp + r->cfa_off + ((w->ip & 15) >= (uint64_t)(uint8_t)r->rbp_off ? 8 : 0);
	else
		return stop(w, STACKWALK_FAILED);
	if (cfa <= w->sp)
		return stop(w, STACKWALK_FAILED); /* a stack only grows down */
	if (!read_u64(w, cfa - 8, &ra))
		return stop(w, STACKWALK_SHORT);
	if (cfa_kind != UNWIND_CFA_PLT && rbp_kind == UNWIND_RBP_CFA) {
		if (!read_u64(w, cfa + (int64_t)r->rbp_off * 8, &bp))
			bp = 0;
	} else if (rbp_kind == UNWIND_RBP_OTHER) {
		bp = 0;
	}
	w->ip = ra;
	w->sp = cfa;
	w->bp = bp;
	return ra ? true : stop(w, STACKWALK_END);
}

/* The mapping of p holding addr, or NULL. */
static const struct unwind_mapping *mapping_find(const struct unwind_proc *p, uint64_t addr)
{
	uint32_t lo = 0, hi = p->n < UNWIND_MAX_MAPPINGS ? p->n : UNWIND_MAX_MAPPINGS;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (addr < p->m[mid].start)
			hi = mid;
		else if (addr >= p->m[mid].end)
			lo = mid + 1;
		else
			return &p->m[mid];
	}
	return NULL;
}

/* Whether Python frames are left to write. */
static bool py_left(const struct walk *w)
{
	for (size_t i = w->py_at; w->py && i < w->py->n; i++)
		if (PY_IS_FRAME(w->py->frames[i]))
			return true;
	return false;
}

static bool py_in_eval(const struct stackwalk_py *py, uint64_t pc)
{
	return (pc >= py->eval_start[0] && pc < py->eval_end[0]) || (pc >= py->eval_start[1] && pc < py->eval_end[1]);
}

/* Writes Python frames into ips (at most max in all): the next eval-loop call's (to its end mark, its
 * entry frame's address left in w->shim), or with all every one left. */
static void py_write(struct walk *w, bool all, uint64_t *ips, size_t max)
{
	w->first_at = w->py_at;
	w->first_n = w->out->n;
	w->first_written = w->out->py_written;
	w->shim = 0;
	while (w->py_at < w->py->n) {
		uint64_t f = w->py->frames[w->py_at++];

		if (f == STACKWALK_PY_END) {
			if (all)
				continue;
			return;
		}
		if (!PY_IS_FRAME(f)) {
			w->shim = f;
			continue;
		}
		if (w->out->n < max) {
			ips[w->out->n++] = f;
			w->out->py_written++;
		}
	}
}

/* Once the eval-loop call whose frames were written last is unwound (w->sp its CFA): frames whose entry
 * frame lies above it are its caller's (see bpf/profile.bpf.c's shim_check), taken back. */
static void shim_check(struct walk *w)
{
	if (w->shim < w->sp || w->shim - w->sp >= PY_SHIM_REACH)
		return;
	w->out->n = w->first_n;
	w->out->py_written = w->first_written;
	w->py_at = w->first_at;
	w->shim = 0;
	w->out->py_moved++;
}

/* One frame up through a perf trampoline, by its layout. Returns whether the walk goes on. */
static bool tramp_step(struct walk *w)
{
	uint64_t cfa = w->sp + w->py->tramp_cfa, ra, bp = w->bp;

	if (!read_u64(w, cfa - 8, &ra) || (w->py->tramp_rbp_saved && !read_u64(w, cfa - 16, &bp)))
		return stop(w, STACKWALK_SHORT);
	w->ip = ra;
	w->sp = cfa;
	w->bp = bp;
	return ra ? true : stop(w, STACKWALK_END);
}

void stackwalk(const struct unwind_proc *p, stackwalk_row_fn row, void *ctx, const struct stackwalk_regs *r,
	       const struct stackwalk_copy *c, const struct stackwalk_py *py, bool no_fp, uint64_t *ips, size_t max,
	       struct stackwalk_result *out)
{
	struct walk w = { .ip = r->ip, .sp = r->sp, .bp = r->bp, .c = c, .no_fp = no_fp, .py = py, .out = out };
	size_t steps = 0;

	memset(out, 0, sizeof(*out));
	out->end = STACKWALK_TRUNCATED;
	if (!w.ip) {
		out->end = STACKWALK_END;
		return;
	}
	while (out->n < max) {
		const struct unwind_mapping *m;
		struct unwind_row rw;
		uint64_t pc;
		bool on;

		if (w.ip >= STACKWALK_USER_TOP) { /* no user code is there: a frame pointer (or a stack) that lied */
			out->end = STACKWALK_FAILED;
			break;
		}
		/* A return address may be past the end of its call's function. */
		pc = steps++ ? w.ip - 1 : w.ip;
		m = mapping_find(p, pc);
		if (w.after_eval)
			shim_check(&w);
		if (w.after_eval && py->tramp_cfa && (!m || m->table == UNWIND_NO_TABLE || (m->nrows & UNWIND_JIT_ROWS))) {
			w.after_eval = false; /* a perf trampoline: stood for by the Python frames, not written */
			w.after_tramp = true;
			if (!tramp_step(&w))
				break;
			continue;
		}
		w.after_eval = false;
		if (py_left(&w) && py_in_eval(py, pc)) {
			py_write(&w, false, ips, max); /* its Python frames in its place */
			w.after_eval = true;
		} else if (w.after_tramp) {
			w.after_tramp = false;
		} else {
			ips[out->n++] = w.ip;
		}
		if (!m)
			out->unknown = true;
		if (!m || m->table == UNWIND_NO_TABLE || pc - m->bias > 0xffffffffULL ||
		    row(ctx, m->table, UNWIND_NROWS(m->nrows), (uint32_t)(pc - m->bias), &rw))
			on = fp_step(&w);
		else
			on = table_step(&w, &rw);
		if (!on)
			break;
	}
	/* Stopped early with Python frames left: they go after what was walked (their callers are lost). */
	if ((out->end == STACKWALK_FAILED || out->end == STACKWALK_SHORT || w.fp_ended) && py_left(&w)) {
		py_write(&w, true, ips, max);
		out->py_appended = true;
	}
}
