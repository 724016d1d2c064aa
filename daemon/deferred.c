/* deferred.c - deferred samples kept, walked once their tables are ready, handed to the flush (see
 * deferred.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "deferred.h"
#include "python.h"
#include "symbolize/symbolizer.h"
#include "unwind.h"
#include "unwind/stackwalk.h"
#include "unwind/unwinder.h"

#define POLL_MS 20       /* while samples wait, how often unwind_procs is looked at */
#define POLL_SLOW_MS 200 /* ... once each has waited POLL_FAST_S (tables of big binaries come slowly) */
#define POLL_FAST_S 1.0
#define ROW_CACHE 4096 /* rows found lately, direct-mapped by (table, pc): a process's samples share frames */
/* Off-CPU blocks deferred lately, direct-mapped by id (the BPF program's ids come in order): a slot
 * holds a record still waiting, or its walk for the waits counted under it later (a thread that
 * blocks again alike within a second, a wait counted at each flush while it lasts). */
#define BLOCK_SLOTS 1024
#define BLOCK_KEEP_S 120.0 /* a walk no wait was counted under for this long is forgotten */

/* An off-CPU wait counted under a block whose record still waits: stored with the record's walk. */
struct held {
	struct held *next;
	struct sample_key key;
	uint64_t count; /* microseconds */
};

/* A sample waiting for its tables: the record's head, then nk kernel frames and copied stack bytes. */
struct waiting {
	struct waiting *next;
	uint64_t id;       /* an off-CPU block's (key.ustack of its record); 0: a CPU sample's */
	struct held *held; /* the block's waits counted meanwhile */
	double taken;   /* when it was read (CLOCK_MONOTONIC seconds) */
	size_t bytes;   /* what it takes, counted against max_bytes */
	struct sample_key key;
	uint64_t token;
	struct stackwalk_regs regs;
	uint32_t nk, npy, copied;
	uint8_t data[];  /* __u64 kips[nk], __u64 pyips[npy], then the stack copy */
};

/* A walked sample (or an off-CPU wait, count microseconds): its key, then nk kernel frames and nu user
 * frames. */
struct walked {
	struct walked *next;
	size_t bytes;
	struct sample_key key;
	uint64_t count;
	unsigned nk, nu;
	__u64 ips[];
};

/* An off-CPU block deferred: its record while it waits, then its walk (key: the walk's flags and
 * stack hashes; count unused) for the waits counted under its id. */
struct block {
	uint64_t id; /* 0: empty */
	struct waiting *w;
	struct walked *walk;
	double used; /* when a wait was last counted under it (or it was walked) */
};

/* An inner map of unwind_tables, opened for the table (slot and generation, unwind_mapping.table) it held:
 * the unwinder loads another binary into a slot under another generation. */
struct inner {
	uint32_t table;
	int fd;
};

struct row_slot {
	uint32_t table, pc; /* table 0: empty (a table's generation is at least 1) */
	struct unwind_row row;
};

struct deferred {
	struct deferred_opts o;
	struct waiting *wait_head, **wait_tail;
	struct walked *done_head, **done_tail;
	size_t bytes;
	struct inner *inner; /* max_tables */
	struct row_slot *rows; /* ROW_CACHE */
	struct unwind_proc *proc, *bare; /* a process's mappings as read; none (frame pointers) */
	struct block *blocks; /* BLOCK_SLOTS */
	struct deferred_stats st;
};

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int deferred_new(const struct deferred_opts *o, struct deferred **out)
{
	struct deferred *d;

	if (!o->max_tables || !o->max_bytes || o->max_wait_s < 0)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->o = *o;
	d->wait_tail = &d->wait_head;
	d->done_tail = &d->done_head;
	d->inner = calloc(o->max_tables, sizeof(*d->inner));
	d->rows = calloc(ROW_CACHE, sizeof(*d->rows));
	d->proc = calloc(1, sizeof(*d->proc));
	d->bare = calloc(1, sizeof(*d->bare));
	d->blocks = calloc(BLOCK_SLOTS, sizeof(*d->blocks));
	if (!d->inner || !d->rows || !d->proc || !d->bare || !d->blocks) {
		deferred_free(d);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < o->max_tables; i++)
		d->inner[i].fd = -1;
	*out = d;
	return 0;
}

/* Empties slot b: a walk kept is freed; a record still waiting keeps its waits, stored with its walk, but
 * waits counted under it later find no walk (counted as unmatched). */
static void block_forget(struct deferred *d, struct block *b)
{
	if (b->walk) {
		d->bytes -= b->walk->bytes;
		d->st.offcpu_kept--;
		free(b->walk);
	}
	*b = (struct block){ 0 };
}

void deferred_add(const struct deferred_sample *s, size_t size, void *ctx)
{
	struct deferred *d = ctx;
	size_t nk, npy, copied, bytes;
	struct waiting *w;

	if (size < offsetof(struct deferred_sample, stack)) { /* a record ends after the stack it copied */
		d->st.dropped++;
		return;
	}
	nk = s->nk < PROFILE_MAX_DEPTH ? s->nk : PROFILE_MAX_DEPTH;
	npy = s->npy < PROFILE_MAX_DEPTH ? s->npy : PROFILE_MAX_DEPTH;
	copied = size - offsetof(struct deferred_sample, stack); /* what the record holds of the stack */
	if (copied > sizeof(s->stack))
		copied = sizeof(s->stack);
	if (s->copied < copied)
		copied = s->copied;
	bytes = sizeof(*w) + (nk + npy) * sizeof(__u64) + copied;
	if (d->bytes + bytes > d->o.max_bytes || !(w = malloc(bytes))) {
		d->st.dropped++;
		return;
	}
	w->next = NULL;
	w->id = s->key.flags & SAMPLE_OFFCPU ? s->key.ustack : 0;
	w->held = NULL;
	w->taken = mono_now();
	w->bytes = bytes;
	w->key = s->key;
	w->token = s->token;
	w->regs = (struct stackwalk_regs){ .ip = s->ip, .sp = s->sp, .bp = s->bp };
	w->nk = (uint32_t)nk;
	w->npy = (uint32_t)npy;
	w->copied = (uint32_t)copied;
	memcpy(w->data, s->kips, nk * sizeof(__u64));
	memcpy(w->data + nk * sizeof(__u64), s->pyips, npy * sizeof(__u64));
	memcpy(w->data + (nk + npy) * sizeof(__u64), s->stack, copied);
	*d->wait_tail = w;
	d->wait_tail = &w->next;
	d->bytes += bytes;
	d->st.received++;
	d->st.bytes_copied += copied;
	d->st.waiting++;
	d->st.waiting_bytes += bytes;
	if (w->id) {
		d->st.offcpu_received++;
		block_forget(d, &d->blocks[w->id % BLOCK_SLOTS]);
		d->blocks[w->id % BLOCK_SLOTS] = (struct block){ .id = w->id, .w = w, .used = w->taken };
	}
}

/* The inner map of table (slot and generation), opened once per generation of its slot. -1: none. */
static int inner_fd(struct deferred *d, uint32_t table)
{
	uint32_t slot = UNWIND_SLOT(table);
	struct inner *in;
	__u32 id;

	if (slot >= d->o.max_tables)
		return -1;
	in = &d->inner[slot];
	if (in->fd >= 0 && in->table == table)
		return in->fd;
	if (in->fd >= 0)
		close(in->fd);
	in->fd = -1;
	if (bpf_map_lookup_elem(d->o.tables_fd, &slot, &id) == 0)
		in->fd = bpf_map_get_fd_by_id(id);
	in->table = table;
	return in->fd;
}

/* stackwalk_row_fn over unwind_tables: the last row whose pc is <= pc, as the BPF side searches. */
static int map_row(void *ctx, uint32_t table, uint32_t nrows, uint32_t pc, struct unwind_row *row)
{
	struct deferred *d = ctx;
	struct row_slot *c = &d->rows[(pc * 0x9e3779b1u ^ table) & (ROW_CACHE - 1)];
	int fd;
	__u32 lo = 0, hi = nrows, mid;

	if (c->table == table && c->pc == pc) {
		*row = c->row;
		return 0;
	}
	fd = inner_fd(d, table);
	if (fd < 0 || !nrows)
		return -1;
	while (lo + 1 < hi) {
		mid = lo + (hi - lo) / 2;
		if (bpf_map_lookup_elem(fd, &mid, row))
			return -1;
		if (row->pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (bpf_map_lookup_elem(fd, &lo, row) || row->pc > pc)
		return -1;
	*c = (struct row_slot){ .table = table, .pc = pc, .row = *row };
	return 0;
}

enum walk_result { WALKED, WAIT, NO_MEMORY };

/* A stand-in for the BPF program's hash of a stack (sample_key.kstack, .ustack), never 0: the flush folds
 * each distinct (pid, flags, ustack, kstack) once, so samples with other frames must not share it. */
static uint64_t frames_hash(const void *frames, size_t n)
{
	const uint64_t *ips = frames;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= ips[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/* Walks w over p's mappings (bare: by frame pointers) into a walked sample, *out; p NULL: the image w
 * was taken of is gone (the process exec'd since), and the sample keeps its kernel frames alone. With
 * may_wait, a walk that met an address in none of p's mappings is not kept (WAIT): the mappings were
 * read before the dynamic loader (or a dlopen) mapped that library, and are read again. */
static enum walk_result walk(struct deferred *d, const struct waiting *w, const struct unwind_proc *p,
			     bool fp_only, bool may_wait, struct walked **outp)
{
	uint64_t ips[PROFILE_MAX_DEPTH], pyips[PROFILE_MAX_DEPTH];
	struct stackwalk_copy c = { .at = w->regs.sp, .bytes = w->data + (w->nk + w->npy) * sizeof(__u64),
				    .len = w->copied };
	struct stackwalk_py py = { .frames = pyips, .n = w->npy };
	struct stackwalk_result res;
	struct py_proc pp;
	struct walked *out;
	size_t bytes;

	/* Python frames go in place of the eval loop's frames of the interpreter read for this image. */
	memcpy(pyips, w->data + w->nk * sizeof(__u64), w->npy * sizeof(__u64));
	if (w->npy && d->o.py_fd >= 0 && bpf_map_lookup_elem(d->o.py_fd, &w->key.pid, &pp) == 0 && pp.token == w->token) {
		memcpy(py.eval_start, pp.eval_start, sizeof(py.eval_start));
		memcpy(py.eval_end, pp.eval_end, sizeof(py.eval_end));
		py.tramp_cfa = pp.tramp_cfa;
		py.tramp_rbp_saved = pp.tramp_rbp_saved;
	}
	if (p)
		stackwalk(p, map_row, d, &w->regs, &c, w->npy ? &py : NULL, d->o.no_fp && !fp_only, ips,
			  PROFILE_MAX_DEPTH, &res);
	else
		res = (struct stackwalk_result){ .n = 0 };
	if (res.unknown && may_wait)
		return WAIT;
	bytes = sizeof(*out) + (w->nk + res.n) * sizeof(__u64);
	out = malloc(bytes);
	if (!out)
		return NO_MEMORY;
	out->next = NULL;
	out->bytes = bytes;
	out->key = w->key;
	out->count = 1;
	if (res.end == STACKWALK_TRUNCATED)
		out->key.flags |= SAMPLE_USTACK_TRUNCATED;
	if (fp_only && !res.py_written)
		out->key.flags |= SAMPLE_USTACK_FP; /* which says: no Python frame in it */
	if (!res.n)
		out->key.flags |= SAMPLE_USTACK_LOST;
	out->nk = w->nk;
	out->nu = (unsigned)res.n;
	memcpy(out->ips, w->data, w->nk * sizeof(__u64));
	memcpy(out->ips + w->nk, ips, res.n * sizeof(__u64));
	out->key.kstack = w->nk ? frames_hash(out->ips, w->nk) : 0;
	out->key.ustack = res.n ? frames_hash(ips, res.n) : 0;
	d->bytes += bytes;
	d->st.short_copies += res.end == STACKWALK_SHORT;
	*outp = out;
	return WALKED;
}

static void done_add(struct deferred *d, struct walked *out)
{
	out->next = NULL;
	*d->done_tail = out;
	d->done_tail = &out->next;
	d->st.ready++;
}

/* Makes key (an off-CPU wait's: who, when) carry a block's walk: its stacks and what it says of them. */
static void key_with_walk(struct sample_key *key, const struct walked *walk)
{
	key->flags = (key->flags & ~(SAMPLE_DEFERRED | SAMPLE_KSTACK_LOST | SAMPLE_USTACK_LOST)) | walk->key.flags;
	key->kstack = walk->key.kstack;
	key->ustack = walk->key.ustack;
}

/* Frees the waits held for w's walk (counted dropped: they are lost with it). */
static void held_drop(struct deferred *d, struct waiting *w)
{
	for (struct held *h = w->held, *next; h; h = next) {
		next = h->next;
		d->bytes -= sizeof(*h);
		d->st.dropped++;
		free(h);
	}
	w->held = NULL;
}

/* An off-CPU wait (key, count microseconds) with the frames of a block's walk, to the done list. */
static void wait_done(struct deferred *d, const struct sample_key *key, uint64_t count, const struct walked *walk)
{
	size_t bytes = sizeof(*walk) + (walk->nk + walk->nu) * sizeof(__u64);
	struct walked *out = malloc(bytes);

	if (!out) {
		d->st.dropped++;
		return;
	}
	memcpy(out, walk, bytes);
	out->bytes = bytes;
	out->key = *key;
	key_with_walk(&out->key, walk);
	out->count = count;
	d->bytes += bytes;
	d->st.offcpu_stored++;
	done_add(d, out);
}

/* A block's record w was walked (walk): the waits counted under it meanwhile go with its frames, and the
 * walk is kept in its slot for those counted later. */
static void block_walked(struct deferred *d, struct waiting *w, struct walked *walk, double now)
{
	struct block *b = &d->blocks[w->id % BLOCK_SLOTS];

	walk->key.flags &= SAMPLE_USTACK_TRUNCATED | SAMPLE_USTACK_FP | SAMPLE_USTACK_LOST | SAMPLE_KSTACK_LOST;
	if (!walk->nk)
		walk->key.flags |= SAMPLE_KSTACK_LOST;
	for (struct held *h = w->held, *next; h; h = next) {
		next = h->next;
		wait_done(d, &h->key, h->count, walk);
		d->bytes -= sizeof(*h);
		free(h);
	}
	w->held = NULL;
	if (b->id != w->id) { /* its slot went to a later block */
		d->bytes -= walk->bytes;
		free(walk);
		return;
	}
	b->w = NULL;
	b->walk = walk;
	b->used = now;
	d->st.offcpu_kept++;
}

/* A block's record w could not be walked (memory): the waits counted under it are lost with it. */
static void block_lost(struct deferred *d, struct waiting *w)
{
	struct block *b = &d->blocks[w->id % BLOCK_SLOTS];

	held_drop(d, w);
	if (w->id && b->id == w->id)
		*b = (struct block){ 0 };
}

int deferred_offcpu(struct deferred *d, const struct sampler_sample *s, sampler_cb cb, void *ctx)
{
	struct block *b = &d->blocks[s->key->ustack % BLOCK_SLOTS];
	struct sample_key key = *s->key;
	struct sampler_sample out = *s;
	struct held *h;

	if (b->id == s->key->ustack && b->walk) {
		b->used = mono_now();
		key_with_walk(&key, b->walk);
		out = (struct sampler_sample){ .key = &key, .unix_sec = s->unix_sec, .kips = b->walk->ips,
					       .nk = b->walk->nk, .uips = b->walk->ips + b->walk->nk,
					       .nu = b->walk->nu, .count = s->count };
		d->st.offcpu_stored++;
		return cb(&out, ctx);
	}
	if (b->id == s->key->ustack && b->w && d->bytes + sizeof(*h) <= d->o.max_bytes &&
	    (h = malloc(sizeof(*h)))) {
		h->key = key;
		h->count = s->count;
		h->next = b->w->held;
		b->w->held = h;
		d->bytes += sizeof(*h);
		d->st.offcpu_held++;
		return 0;
	}
	/* Its record was lost (memory), or its walk forgotten: the wait is stored without user frames. */
	d->st.offcpu_unmatched++;
	key.flags = (key.flags & ~SAMPLE_DEFERRED) | SAMPLE_USTACK_LOST;
	key.ustack = 0;
	out.key = &key;
	out.uips = NULL;
	out.nu = 0;
	return cb(&out, ctx);
}

int deferred_poll(struct deferred *d, bool all)
{
	struct waiting **pp = &d->wait_head, *w;
	double now = mono_now();
	uint32_t looked = 0;
	bool have = false, read = false, gone = false, fast = false, ready, older;
	int pend = -1; /* whether the unwinder has a request for looked: -1 not asked yet */

	while ((w = *pp)) {
		bool late = all || now - w->taken > d->o.max_wait_s, found;
		struct walked *out = NULL;
		enum walk_result r;

		if (!have || looked != w->key.pid) {
			looked = w->key.pid;
			have = true;
			read = bpf_map_lookup_elem(d->o.procs_fd, &looked, d->proc) == 0;
			pend = -1;
			/* An exited process gets no more tables than it has: the unwinder reads a live one's maps. */
			gone = kill((pid_t)looked, 0) && errno == ESRCH;
		}
		/* Its tables: read for this image, and all built. */
		found = read && d->proc->token == w->token;
		ready = found && !(d->proc->flags & UNWIND_PROC_PENDING);
		/* Tables of a later image (tokens are the times entries were made): the process exec'd after
		 * this was taken (a shell's child before it runs the program), and its mappings are gone. */
		older = read && d->proc->token > w->token;
		/* Gone before the unwinder wrote its entry: it writes one from the mappings read at its first
		 * sample, still to come. */
		if (gone && !found && !older && !late && d->o.unwinder && pend < 0)
			pend = unwinder_pending(d->o.unwinder, looked); /* once per process and poll */
		if (gone && !found && !older && !late && pend > 0) {
			pp = &w->next;
			continue;
		}
		/* Past its wait: with the tables there are, frame pointers elsewhere. */
		if (older)
			r = walk(d, w, NULL, false, false, &out);
		else
			r = ready || late || gone ? walk(d, w, found ? d->proc : d->bare, !found,
							 ready && !late && !gone, &out)
						  : WAIT;
		if (r == WAIT) {
			fast |= now - w->taken < POLL_FAST_S;
			pp = &w->next;
			continue;
		}
		if (r == NO_MEMORY) {
			d->st.dropped++;
			block_lost(d, w);
		} else if (older) {
			d->st.superseded++;
		} else if (ready) {
			d->st.walked++;
			d->st.wait_seconds += now - w->taken;
			if (now - w->taken > d->st.wait_max_seconds)
				d->st.wait_max_seconds = now - w->taken;
		} else {
			d->st.given_up++;
		}
		if (r == WALKED && w->id)
			block_walked(d, w, out, now);
		else if (r == WALKED)
			done_add(d, out);
		*pp = w->next;
		d->bytes -= w->bytes;
		d->st.waiting--;
		d->st.waiting_bytes -= w->bytes;
		free(w);
	}
	d->wait_tail = pp;
	return !d->wait_head ? -1 : fast ? POLL_MS : POLL_SLOW_MS;
}

uint64_t deferred_emit(struct deferred *d, const struct unix_clock *clock, sampler_cb cb, void *ctx)
{
	struct walked *w, *next;
	double now = mono_now();
	uint64_t n = 0;

	for (w = d->done_head; w; w = next) {
		struct sampler_sample s = {
			.key = &w->key,
			.unix_sec = unix_clock_sec(clock, w->key.boot_sec),
			.kips = w->ips,
			.nk = w->nk,
			.uips = w->ips + w->nk,
			.nu = w->nu,
			.count = w->count,
		};

		next = w->next;
		cb(&s, ctx);
		d->bytes -= w->bytes;
		n += !(w->key.flags & SAMPLE_OFFCPU);
		free(w);
	}
	d->done_head = NULL;
	d->done_tail = &d->done_head;
	d->st.ready = 0;
	d->st.stored += n;
	/* The walks of blocks no wait was counted under lately. */
	for (unsigned i = 0; i < BLOCK_SLOTS; i++)
		if (d->blocks[i].walk && now - d->blocks[i].used > BLOCK_KEEP_S)
			block_forget(d, &d->blocks[i]);
	return n;
}

void deferred_keep_names(const struct deferred *d, struct symbolizer *sym)
{
	uint32_t last = 0;

	for (const struct waiting *w = d->wait_head; w; w = w->next)
		if (w->key.pid != last)
			symbolizer_keep(sym, last = w->key.pid);
}

void deferred_get_stats(const struct deferred *d, struct deferred_stats *out)
{
	*out = d->st;
	/* Records join at the tail: the head has waited longest. */
	out->oldest_seconds = d->wait_head ? mono_now() - d->wait_head->taken : 0;
}

void deferred_free(struct deferred *d)
{
	if (!d)
		return;
	for (struct waiting *w = d->wait_head, *next; w; w = next) {
		next = w->next;
		held_drop(d, w);
		free(w);
	}
	for (unsigned i = 0; d->blocks && i < BLOCK_SLOTS; i++)
		free(d->blocks[i].walk);
	for (struct walked *w = d->done_head, *next; w; w = next) {
		next = w->next;
		free(w);
	}
	for (unsigned i = 0; d->inner && i < d->o.max_tables; i++)
		if (d->inner[i].fd >= 0)
			close(d->inner[i].fd);
	free(d->inner);
	free(d->rows);
	free(d->proc);
	free(d->bare);
	free(d->blocks);
	free(d);
}
