/* ingest.c - a drained sample becomes a stored row: user frames named (native by the symbolizer, a
 * runtime's by the runtime (runtimes.h: CPython's code objects), its call machinery between them left
 * out), kernel frames after them, folded root first into one line and its frames, then added to the
 * store. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "framecache.h"
#include "ingest.h"
#include "store/store.h"
#include "runtimes.h"
#include "symbolize/symbolizer.h"

/* A frame's name at most: room for the mangled names of C++ templates (ATen's kernels run to 500 bytes
 * and more), which are demangled whole or not at all. */
#define FRAME_NAME_MAX 1024
#define FOLDED_MAX (2 * PROFILE_MAX_DEPTH * (FRAME_NAME_MAX + 5) + 64)
#define MAX_FRAMES (2 * PROFILE_MAX_DEPTH + 2)
/* Stacks folded once per flush and reused for their other keys (threads, seconds): an arena of 4 MiB,
 * about 700 Python stacks 40 frames deep or 8192 small native ones. */
#define FOLDCACHE_STACKS 8192
#define FOLDCACHE_BYTES (4u << 20)
/* User frames named once per flush and reused for the other stacks they are in: 16384 frames in 2 MiB,
 * enough for the callers of every Python stack a flush of a busy host drains. */
#define FRAMECACHE_FRAMES 16384
#define FRAMECACHE_BYTES (2u << 20)

/* One frame of the stack being folded: its text in the folded line and where its code lives. */
struct frame_slot {
	char name[FRAME_NAME_MAX + 8];
	char module[sizeof(((struct frame_origin *)0)->module)];
	char build_id[sizeof(((struct frame_origin *)0)->build_id)];
	char file[RUNTIME_FILE_MAX]; /* a runtime frame's */
};

/* One user frame of the sample being folded, before it is pushed. */
struct user_frame {
	int kind;                  /* enum frame_kind, or USER_FRAME_RUNTIME */
	bool drop;                 /* a runtime's call machinery between its frames: left out */
	char name[FRAME_NAME_MAX]; /* as folded, without a suffix */
	struct frame_origin origin;
	char file[RUNTIME_FILE_MAX];    /* a runtime frame's source: its file, first line and line run */
	int start_line, line;
};
#define USER_FRAME_RUNTIME 100

/* The runtime that runs the process of the sample being folded (ops NULL: none). */
struct sample_runtime {
	const struct runtime_ops *ops;
	void *rt;
	const void *proc; /* its state of the process; NULL when the runtime does not track it (gone) */
};

/* One flush's step from raw samples to stored rows, and its room to fold the deepest stack. */
struct ingest {
	struct symbolizer *sym;
	struct runtimes *rts;      /* NULL: no runtime's frames are named */
	struct cgroups *cgroups;   /* NULL: where samples ran is not learnt */
	struct foldcache *folds;   /* this flush's stacks folded so far, by raw stack */
	struct framecache *names;  /* this flush's user frames named so far */
	bool by_time;              /* the stack being folded is named as of its second (not cached) */
	struct user_frame user[PROFILE_MAX_DEPTH];
	struct store *store;
	char folded[FOLDED_MAX];
	struct frame_slot slots[MAX_FRAMES];
	struct store_frame frames[MAX_FRAMES];
	unsigned nframes;
	uint64_t samples, keys, rejected;
	uint64_t offcpu_keys, offcpu_us; /* off-CPU keys drained this flush, and their time */
	int64_t unix_to_mono;      /* CLOCK_MONOTONIC - CLOCK_REALTIME (ns) at this flush's start */
	int store_err;
};

/* The clock's time now, in ns. */
static int64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* When sample s was taken, as CLOCK_MONOTONIC ns: the middle of its unix second (it is known to the
 * second), or 0 where that would come before the clock's start. */
static uint64_t sample_mono(const struct ingest *f, const struct sampler_sample *s)
{
	int64_t mono = s->unix_sec * 1000000000LL + 500000000LL + f->unix_to_mono;

	return mono > 0 ? (uint64_t)mono : 0;
}

/* Copies a kernel comm into dst as a printable name ("?" for control characters, "[unknown]" if empty). */
static void clean_comm(char *dst, const char *src)
{
	size_t i;

	for (i = 0; i < PROFILE_COMM_LEN - 1 && src[i]; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
	dst[i] = '\0';
	if (!i)
		strcpy(dst, "[unknown]");
}

/* Appends ";name" (or "name" first) to the folded stack and records the frame; does nothing when
 * the stack is full. origin NULL: no binary known; src: the Python frame it is (NULL: none). */
static void push_frame(struct ingest *f, size_t *len, const char *name, const char *suffix,
		       const struct frame_origin *origin, const struct user_frame *src)
{
	struct frame_slot *slot = &f->slots[f->nframes];
	size_t name_len = strlen(name), suffix_len = strlen(suffix), sep = *len ? 1 : 0;
	char *at = f->folded + *len;

	if (f->nframes == MAX_FRAMES)
		return;
	if (sep + name_len + suffix_len >= sizeof(f->folded) - *len)
		return; /* the folded line is full */
	if (sep)
		*at++ = ';';
	memcpy(at, name, name_len);
	memcpy(at + name_len, suffix, suffix_len + 1);
	*len += sep + name_len + suffix_len;
	frame_copy_str(slot->name, sizeof(slot->name), at);
	frame_copy_str(slot->module, sizeof(slot->module), origin ? origin->module : "");
	frame_copy_str(slot->build_id, sizeof(slot->build_id), origin ? origin->build_id : "");
	frame_copy_str(slot->file, sizeof(slot->file), src ? src->file : "");
	f->frames[f->nframes] = (struct store_frame){
		.name = slot->name,
		.module = slot->module,
		.build_id = slot->build_id,
		.file = slot->file,
		.start_line = src ? src->start_line : 0,
		.line = src ? src->line : 0,
	};
	f->nframes++;
}

/* The runtime whose walker wrote frame value v of a process that r says runs one (else: of a process it
 * no longer tracks, which it names as unknown, counted). */
static struct sample_runtime frame_runtime(const struct ingest *f, const struct sample_runtime *r, uint64_t v)
{
	if (r->ops)
		return r->ops->owns(v) ? *r : (struct sample_runtime){ 0 };
	for (unsigned i = 0; f->rts && i < RUNTIMES; i++)
		if (f->rts->rt[i] && runtime_kinds[i].ops->owns(v))
			return (struct sample_runtime){ .ops = runtime_kinds[i].ops, .rt = f->rts->rt[i] };
	return (struct sample_runtime){ 0 };
}

/* Names user frame i (leaf first) of sample s into f->user[i]: a runtime's frame by the runtime (r: the
 * process's), a native one from the ELF symbols of its binary. */
static void name_user_frame_now(struct ingest *f, const struct sampler_sample *s, unsigned i,
				const struct sample_runtime *r)
{
	struct user_frame *u = &f->user[i];
	struct sample_runtime fr = { 0 };
	struct runtime_frame rf;

	u->file[0] = '\0';
	u->start_line = u->line = 0;
	if (!(s->key->flags & SAMPLE_USTACK_FP)) /* frame pointers read no runtime's frame */
		fr = frame_runtime(f, r, s->uips[i]);
	if (!fr.ops) {
		u->kind = symbolizer_user_frame(f->sym, s->key->pid, s->uips[i], i > 0, u->name, sizeof(u->name),
						&u->origin);
		return;
	}
	fr.ops->name_frame(fr.rt, s->key->pid, fr.proc, s->uips[i], &rf);
	u->kind = USER_FRAME_RUNTIME;
	frame_copy_str(u->name, sizeof(u->name), rf.folded);
	frame_copy_str(u->file, sizeof(u->file), rf.file);
	u->start_line = rf.first_line;
	u->line = rf.line;
	u->origin.ninlined = 0;
	u->origin.module[0] = u->origin.build_id[0] = '\0';
}

/* Names user frame i of sample s, as name_user_frame_now does, once per flush for each process, value
 * and way it was reached: a flush names a frame as its first sample did (the symbolizer's and runtimes'
 * caches are read again only between flushes), except JIT code named as of the sample's second. */
static void name_user_frame(struct ingest *f, const struct sampler_sample *s, unsigned i,
			    const struct sample_runtime *r)
{
	struct frame_key k = { .pid = s->key->pid, .how = (i > 0) | (s->key->flags & SAMPLE_USTACK_FP ? 2 : 0),
			       .value = s->uips[i] };
	struct user_frame *u = &f->user[i];
	const struct named_frame *hit = f->by_time ? NULL : framecache_get(f->names, &k);
	struct named_frame kept;

	u->drop = false;
	if (!hit) {
		name_user_frame_now(f, s, i, r);
		if (f->by_time)
			return;
		kept = (struct named_frame){ .kind = u->kind, .name = u->name, .module = u->origin.module,
					     .build_id = u->origin.build_id, .file = u->file,
					     .start_line = u->start_line, .line = u->line,
					     .ninlined = u->origin.ninlined };
		for (int j = 0; j < u->origin.ninlined && j < SYMBOLIZER_MAX_INLINED; j++)
			kept.inlined[j] = u->origin.inlined[j];
		framecache_put(f->names, &k, &kept); /* full: named again next time, counted */
		return;
	}
	u->kind = hit->kind;
	frame_copy_str(u->name, sizeof(u->name), hit->name);
	frame_copy_str(u->origin.module, sizeof(u->origin.module), hit->module);
	frame_copy_str(u->origin.build_id, sizeof(u->origin.build_id), hit->build_id);
	frame_copy_str(u->file, sizeof(u->file), hit->file);
	u->start_line = hit->start_line;
	u->line = hit->line;
	u->origin.ninlined = hit->ninlined;
	for (int j = 0; j < hit->ninlined; j++)
		frame_copy_str(u->origin.inlined[j], sizeof(u->origin.inlined[j]), hit->inlined[j]);
}

/* Whether user frame u is the runtime's (r) own native code. */
static bool in_runtime(const struct user_frame *u, const struct sample_runtime *r)
{
	return u->kind != USER_FRAME_RUNTIME && r->ops->is_own(r->proc, u->origin.module);
}

/* Marks the frame no symbol names that passes a call on to the runtime frame at index p (leaf first): an
 * unnamed frame of the runtime's code right outside p, called by one its symbols name as glue. A
 * stripped interpreter names its exported entry points of a call (_PyFunction_Vectorcall) but not the
 * static function they pass it through to the eval loop (_PyEval_Vector). One frame only: a run of
 * unnamed frames may be real work in C (a builtin's loop, list_sort calling a key function), kept. (-X
 * perf's evaluator, which calls the trampoline, the BPF program leaves out itself.) */
static void drop_unnamed_glue(struct ingest *f, unsigned p, unsigned n, const struct sample_runtime *r)
{
	if (p + 2 < n && in_runtime(&f->user[p + 1], r) && f->user[p + 1].kind == FRAME_UNKNOWN &&
	    in_runtime(&f->user[p + 2], r) && r->ops->is_glue(f->user[p + 2].name))
		f->user[p + 1].drop = true;
}

/* Marks the runtime's glue for leaving out: its call machinery between two of its frames, and between
 * the innermost one and the native function it calls. Glue is what the runtime's symbols (.dynsym, or
 * .symtab and a debug file where there) name as call machinery (runtime_ops.is_glue), and the unnamed
 * frames between such a frame and the runtime frame it calls (drop_unnamed_glue). */
static void drop_glue(struct ingest *f, unsigned n, const struct sample_runtime *r)
{
	unsigned inner = n, outer = n; /* the innermost and outermost runtime frames */

	for (unsigned i = 0; i < n; i++) {
		if (f->user[i].kind != USER_FRAME_RUNTIME)
			continue;
		if (inner == n)
			inner = i;
		outer = i;
	}
	if (inner == n || !r->ops || !r->proc)
		return;
	for (unsigned i = 0; i < outer; i++) {
		struct user_frame *u = &f->user[i];

		if (u->kind == USER_FRAME_RUNTIME)
			drop_unnamed_glue(f, i, outer, r);
		else if (in_runtime(u, r) && r->ops->is_glue(u->name))
			u->drop = true;
	}
}

/* How many of an off-CPU stack's leaf kernel frames are the tracing that took it, not the wait: the
 * BPF program (no kernel symbol), bpf_trace_run*, the tracepoint's __traceiter_ or __bpf_trace_ stub.
 * The stack then ends in the scheduler (__schedule), as the wait left it. */
static unsigned tracing_frames(struct ingest *f, const struct sampler_sample *s)
{
	static const char *const prefixes[] = { "bpf_", "__bpf_", "__traceiter_", "trace_", "[unknown]" };
	char name[FRAME_NAME_MAX];
	unsigned i;

	for (i = 0; i < s->nk; i++) {
		bool tracing = false;

		symbolizer_kernel(f->sym, s->kips[i], name, sizeof(name));
		for (size_t j = 0; j < sizeof(prefixes) / sizeof(prefixes[0]) && !tracing; j++)
			tracing = !strncmp(name, prefixes[j], strlen(prefixes[j]));
		if (!tracing)
			break;
	}
	return i < s->nk ? i : 0; /* all of them: keep the stack as it is rather than none */
}

/* Builds the folded stack of one sample, root first: user frames, then kernel frames marked _[k]
 * (an off-CPU sample's without the tracing at its leaf). */
static void fold(struct ingest *f, const struct sampler_sample *s)
{
	static const struct frame_origin kernel = { .module = "[kernel]" };
	struct sample_runtime r = { 0 };
	char name[FRAME_NAME_MAX];
	int ri = f->rts ? runtimes_find(f->rts, s->key->pid, &r.proc) : -1;
	size_t len = 0;

	if (ri >= 0) {
		r.ops = runtime_kinds[ri].ops;
		r.rt = f->rts->rt[ri];
	}
	f->nframes = 0;
	f->folded[0] = '\0';
	if (s->nu && (s->key->flags & SAMPLE_USTACK_TRUNCATED)) /* its outermost frames were cut */
		push_frame(f, &len, "[truncated]", "", NULL, NULL);
	if (s->nu) {
		unsigned nu = s->nu < PROFILE_MAX_DEPTH ? s->nu : PROFILE_MAX_DEPTH;

		for (unsigned i = 0; i < nu; i++)
			name_user_frame(f, s, i, &r);
		drop_glue(f, nu, &r);
		for (unsigned i = nu; i-- > 0;) {
			const struct user_frame *u = &f->user[i];

			if (u->drop)
				continue;
			push_frame(f, &len, u->name, u->kind == FRAME_JIT ? "_[j]" : "", &u->origin,
				   u->kind == USER_FRAME_RUNTIME ? u : NULL);
			for (int j = 0; j < u->origin.ninlined; j++) /* inlined into it: called from it */
				push_frame(f, &len, u->origin.inlined[j], "_[i]", &u->origin, NULL);
		}
	} else if (s->key->flags & SAMPLE_USTACK_LOST) {
		push_frame(f, &len, "[unknown]", "", NULL, NULL);
	}
	if (s->nk) {
		unsigned skip = s->key->flags & SAMPLE_OFFCPU ? tracing_frames(f, s) : 0;

		for (unsigned i = s->nk; i-- > skip;) {
			symbolizer_kernel(f->sym, s->kips[i], name, sizeof(name));
			push_frame(f, &len, name, "_[k]", &kernel, NULL);
		}
	} else if (s->key->flags & SAMPLE_KSTACK_LOST) {
		push_frame(f, &len, "[unknown]", "_[k]", &kernel, NULL);
	}
	if (!len)
		push_frame(f, &len, "[unknown]", "", NULL, NULL);
}

int ingest_sample(const struct sampler_sample *s, void *ctx)
{
	struct ingest *f = ctx;
	char comm[PROFILE_COMM_LEN + 16], thread[PROFILE_COMM_LEN + 16];
	uint64_t mono;
	int err;

	struct fold_key k = { .pid = s->key->pid, .flags = s->key->flags, .ustack = s->key->ustack,
			      .kstack = s->key->kstack };
	const struct folded *done;
	struct folded fresh;

	bool offcpu = s->key->flags & SAMPLE_OFFCPU;

	if (offcpu) {
		f->offcpu_keys++;
		f->offcpu_us += s->count;
	} else {
		f->keys++;
		f->samples += s->count;
	}
	if (f->store_err)
		return 0; /* the transaction failed; keep draining so the maps empty */
	/* JIT code from a jitdump file is named as it was in the sample's second: where code was loaded over
	 * other code since, the process's stacks are folded per second (+1: 0 is "not by time"). */
	mono = sample_mono(f, s);
	if (s->nu && symbolizer_names_by_time(f->sym, s->key->pid, mono))
		k.sec = s->key->boot_sec + 1;
	f->by_time = k.sec != 0;
	done = foldcache_get(f->folds, &k); /* the same stack in another thread (or second) */
	if (!done) {
		symbolizer_set_time(f->sym, mono);
		fold(f, s);
		fresh = (struct folded){ .text = f->folded, .frames = f->frames, .nframes = f->nframes };
		if (foldcache_put(f->folds, &k, &fresh, &done))
			done = &fresh; /* not kept: stored without an id kept for the next keys */
	}
	clean_comm(comm, s->key->pcomm);
	clean_comm(thread, s->key->comm);
	struct store_sample row = {
		.ts = s->unix_sec,
		.pid = s->key->pid,
		.tid = s->key->tid,
		.comm = comm,
		.thread = thread,
		.folded = done->text,
		.count = s->count,
		.frames = done->frames,
		.nframes = done->nframes,
		.kind = offcpu ? STORE_OFFCPU : STORE_CPU,
		.cgroup = f->cgroups ? cgroups_path(f->cgroups, s->key->pid, s->key->cgroup) : NULL,
		.stack_id = done->stack_id,
	};
	err = store_add(f->store, &row);
	if (err == -EINVAL) {
		f->rejected++;
		return 0;
	}
	if (err)
		f->store_err = err;
	return 0;
}

int ingest_new(const struct ingest_opts *o, struct ingest **out)
{
	struct ingest *in;
	int err;

	if (!o || !o->store || !o->sym)
		return -EINVAL;
	in = calloc(1, sizeof(*in)); /* large: the frames and folded text of the deepest stack */
	if (!in)
		return -ENOMEM;
	err = foldcache_new(FOLDCACHE_STACKS, FOLDCACHE_BYTES, &in->folds) ?:
	      framecache_new(FRAMECACHE_FRAMES, FRAMECACHE_BYTES, &in->names);
	if (!err && o->cgroups)
		err = cgroups_new(NULL, &in->cgroups);
	if (err) {
		foldcache_free(in->folds);
		framecache_free(in->names);
		free(in);
		return err;
	}
	in->store = o->store;
	in->sym = o->sym;
	in->rts = o->rts;
	*out = in;
	return 0;
}

void ingest_begin(struct ingest *in)
{
	in->samples = in->keys = in->rejected = in->offcpu_keys = in->offcpu_us = 0;
	in->store_err = store_begin(in->store);
	symbolizer_begin_flush(in->sym);
	in->unix_to_mono = clock_ns(CLOCK_MONOTONIC) - clock_ns(CLOCK_REALTIME);
	foldcache_reset(in->folds);
	framecache_reset(in->names);
	if (in->rts)
		runtimes_flush_begin(in->rts);
}

int ingest_end(struct ingest *in, struct ingest_counts *out)
{
	if (!in->store_err)
		in->store_err = store_commit(in->store);
	if (in->store_err)
		store_rollback(in->store);
	*out = (struct ingest_counts){ .samples = in->samples, .keys = in->keys, .rejected = in->rejected,
				       .offcpu_keys = in->offcpu_keys, .offcpu_us = in->offcpu_us };
	return in->store_err;
}

void ingest_get_stats(const struct ingest *in, struct foldcache_stats *folds, struct framecache_stats *names)
{
	foldcache_get_stats(in->folds, folds);
	framecache_get_stats(in->names, names);
}

void ingest_get_cgroup_stats(const struct ingest *in, struct cgroups_stats *out)
{
	if (in->cgroups)
		cgroups_get_stats(in->cgroups, out);
	else
		*out = (struct cgroups_stats){ 0 };
}

void ingest_free(struct ingest *in)
{
	if (!in)
		return;
	foldcache_free(in->folds);
	framecache_free(in->names);
	cgroups_free(in->cgroups);
	free(in);
}
