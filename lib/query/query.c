/* query.c - runs the user-facing queries against the store and renders them in the format asked. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "query/query.h"
#include "query/services.h"
#include "render/folded.h"
#include "render/json.h"
#include "render/pprof.h"
#include "render/svg.h"
#include "render/top.h"
#include "render/tree.h"
#include "render/unit.h"

#define DEFAULT_FREQUENCY 19
#define PROC_NAME_MAX 256 /* bytes of a process name (the store's bound) */

/* What a filter's values count: CPU samples, or microseconds (off CPU, wall clock). */
static enum unit kind_unit(const struct store_filter *f)
{
	return f && f->kind != STORE_CPU ? UNIT_MICROS : UNIT_SAMPLES;
}

static const struct {
	const char *name;
	const char *content_type;
} formats[] = {
	[QUERY_FOLDED] = { "folded", "text/plain; charset=utf-8" },
	[QUERY_JSON] = { "json", "application/json" },
	[QUERY_SVG] = { "svg", "image/svg+xml" },
	[QUERY_PPROF] = { "pprof", "application/octet-stream" },
	[QUERY_TOP] = { "top", "text/plain; charset=utf-8" },
};

int query_parse_format(const char *s, enum query_format *out)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (s && !strcmp(s, formats[i].name)) {
			*out = (enum query_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *const kind_names[] = { [STORE_CPU] = "cpu", [STORE_OFFCPU] = "offcpu", [STORE_WALL] = "wall" };

int query_parse_kind(const char *s, enum store_kind *out)
{
	for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++) {
		if (s && !strcmp(s, kind_names[i])) {
			*out = (enum store_kind)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *query_kind_name(enum store_kind k)
{
	return (unsigned)k < sizeof(kind_names) / sizeof(kind_names[0]) ? kind_names[k] : "?";
}

int64_t query_cpu_period_us(unsigned hz)
{
	int64_t us = hz ? (2000000 / hz + 1) / 2 : 1000000;

	return us < 1 ? 1 : us;
}

const char *query_format_name(enum query_format f)
{
	return (unsigned)f < sizeof(formats) / sizeof(formats[0]) ? formats[f].name : "?";
}

const char *query_content_type(enum query_format f)
{
	return (unsigned)f < sizeof(formats) / sizeof(formats[0]) ? formats[f].content_type : "text/plain";
}

/* Callbacks of store_query_stacks. */

static int stack_to_folded(const char *comm, const char *folded, uint64_t count, void *ctx)
{
	return render_folded_line(ctx, comm, folded, count);
}

struct to_tree {
	struct tree *tree;
	enum tree_side side;
};

static int stack_to_tree(const char *comm, const char *folded, uint64_t count, void *ctx)
{
	struct to_tree *t = ctx;

	return tree_add(t->tree, comm, folded, count, t->side);
}

static int stack_to_top(const char *comm, const char *folded, uint64_t count, void *ctx)
{
	(void)comm;
	return top_add(ctx, folded, count);
}

/* A stack with its frames into the tree: its Python frames' nodes keep their sources. Stacks stored
 * without frames go in by their text. */
static int frames_to_tree(uint32_t pid, const char *comm, const char *folded, const struct store_frame *frames,
			  unsigned nframes, uint64_t count, void *ctx)
{
	struct tree_frame tf[1024];
	struct to_tree *t = ctx;

	(void)pid;
	if (!frames || !nframes || nframes > sizeof(tf) / sizeof(tf[0]))
		return tree_add(t->tree, comm, folded, count, t->side);
	for (unsigned i = 0; i < nframes; i++)
		tf[i] = (struct tree_frame){ .name = frames[i].name, .file = frames[i].file,
					     .start_line = frames[i].start_line, .line = frames[i].line };
	return tree_add_frames(t->tree, comm, tf, nframes, count, t->side);
}

/* A stack into top by line: its Python frames named "QUALNAME (FILE:LINE)", a line run a function of
 * its own. */
static int frames_to_top(uint32_t pid, const char *comm, const char *folded, const struct store_frame *frames,
			 unsigned nframes, uint64_t count, void *ctx)
{
	char text[16384];
	size_t len = 0;

	(void)pid, (void)comm;
	if (!frames || !nframes)
		return top_add(ctx, folded, count);
	for (unsigned i = 0; i < nframes && len < sizeof(text); i++) {
		const char *name = frames[i].name, *open = strrchr(name, '(');
		size_t nlen = strlen(name);
		int n;

		if (frames[i].file && frames[i].file[0] && frames[i].line && open && name[nlen - 1] == ')')
			n = snprintf(text + len, sizeof(text) - len, "%s%.*s:%d)", i ? ";" : "", (int)(nlen - 1), name,
				     frames[i].line);
		else
			n = snprintf(text + len, sizeof(text) - len, "%s%s", i ? ";" : "", name);
		if (n < 0)
			return -EIO;
		len += (size_t)n;
	}
	return len < sizeof(text) ? top_add(ctx, text, count) : top_add(ctx, folded, count);
}

/* A family's stacks (f->children) name their processes: each its name and pid as its root frame
 * ("python3 [1234]"), so the processes of a pool stay apart; merged (f->merge), every stack under one
 * root, the asked process's name. */
struct named {
	store_stack_cb stack_cb;   /* one of the two */
	store_frames_cb frames_cb;
	void *ctx;
	const char *root;          /* merged: the one root frame */
	uint32_t ctx_pid;          /* merged: the asked process */
	char buf[PROC_NAME_MAX];
	char name[PROC_NAME_MAX + 16];
};

/* The root frame of a stack of process pid named comm. */
static const char *root_frame(struct named *n, uint32_t pid, const char *comm)
{
	if (n->root)
		return n->root;
	snprintf(n->name, sizeof(n->name), "%s [%u]", comm[0] ? comm : "[unknown]", pid);
	return n->name;
}

static int named_stack(const char *comm, const char *folded, uint64_t count, void *ctx)
{
	struct named *n = ctx;

	return n->stack_cb(root_frame(n, 0, comm), folded, count, n->ctx);
}

static int named_frames(uint32_t pid, const char *comm, const char *folded, const struct store_frame *frames,
			unsigned nframes, uint64_t count, void *ctx)
{
	struct named *n = ctx;
	const char *root = root_frame(n, pid, comm);

	return n->frames_cb ? n->frames_cb(pid, root, folded, frames, nframes, count, n->ctx) :
			      n->stack_cb(root, folded, count, n->ctx);
}

/* The name of f's process (the asked pid's latest in the window; else the family's busiest). */
static int find_root(const struct store_process *p, void *ctx)
{
	struct named *n = ctx;

	if (!n->buf[0] || p->pid == n->ctx_pid)
		snprintf(n->buf, sizeof(n->buf), "%s", p->comm[0] ? p->comm : "[unknown]");
	return 0;
}

/* Runs a stacks query of f with either callback, naming a family's processes as struct named says. */
static int each_stack(struct store *st, const struct store_filter *f, store_stack_cb stack_cb,
		      store_frames_cb frames_cb, void *ctx)
{
	struct named n = { .stack_cb = stack_cb, .frames_cb = frames_cb, .ctx = ctx };
	int err;

	if (!f || !f->children || f->pid < 0)
		return frames_cb ? store_query_stacks_frames(st, f, frames_cb, ctx) : store_query_stacks(st, f, stack_cb, ctx);
	if (f->merge) {
		n.ctx_pid = (uint32_t)f->pid;
		err = store_query_processes(st, f, find_root, &n);
		if (err)
			return err;
		n.root = n.buf[0] ? n.buf : "[unknown]";
		if (!frames_cb)
			return store_query_stacks(st, f, named_stack, &n);
	}
	return store_query_stacks_frames(st, f, named_frames, &n);
}

/* What a tree is built from: stacks; stacks with their frames, whose nodes then carry their Python
 * frames' files and lines run; stacks under their process's service. */
enum tree_from { FROM_STACKS, FROM_FRAMES, FROM_SERVICES };

/* Builds the tree of f (and of base on TREE_BASE when base is not NULL; from FROM_STACKS then). */
static int build_tree(struct store *st, const struct store_filter *f, const struct store_filter *base,
		      bool reverse, enum tree_from from, struct tree **out)
{
	struct tree_opts o = { .reverse = reverse };
	struct to_tree ctx = { .side = TREE_NEW };
	int err = tree_new(&o, &ctx.tree);

	if (err)
		return err;
	if (from == FROM_SERVICES)
		err = services_each_stack(st, f, stack_to_tree, &ctx);
	else
		err = from == FROM_FRAMES ? each_stack(st, f, NULL, frames_to_tree, &ctx)
					  : each_stack(st, f, stack_to_tree, NULL, &ctx);
	if (!err && base) {
		ctx.side = TREE_BASE;
		err = each_stack(st, base, stack_to_tree, NULL, &ctx);
	}
	if (err) {
		tree_free(ctx.tree);
		return err;
	}
	tree_finish(ctx.tree);
	*out = ctx.tree;
	return 0;
}

static int build_top(struct store *st, const struct store_filter *f, bool by_line, struct top **out)
{
	int err = top_new(0, out);

	if (err)
		return err;
	err = by_line ? each_stack(st, f, NULL, frames_to_top, *out) : each_stack(st, f, stack_to_top, NULL, *out);
	if (err) {
		top_free(*out);
		*out = NULL;
	}
	return err;
}

static int write_graph(FILE *out, const struct tree *t, enum query_format fmt, const struct query_graph *g,
		       bool diff, enum unit unit)
{
	struct svg_opts so = { .diff = diff, .minwidth = -1, .unit = unit };

	if (fmt == QUERY_JSON)
		return render_json_tree(out, t, diff, unit);
	if (g) {
		so.title = g->title;
		so.width = g->width;
		so.minwidth = g->minwidth;
		so.reverse = g->reverse;
	}
	return render_svg(out, t, &so);
}

/* pprof: the stacks with their frames, copied out of the store's callbacks. */
struct pprof_collect {
	struct pprof_stack *stacks;
	size_t n, cap;
};

/* Copies one stack into a single allocation: frames (leaf first), then their strings. */
static int copy_stack(struct pprof_stack *dst, uint32_t pid, const char *comm, const char *folded,
		      const struct store_frame *frames, unsigned nframes, uint64_t count)
{
	struct store_frame split[1024];
	char *folded_copy = NULL;
	size_t bytes = strlen(comm) + 1;
	char *p;

	if (!nframes) { /* stored without frames: names only */
		folded_copy = strdup(folded);
		if (!folded_copy)
			return -ENOMEM;
		for (char *save = NULL, *tok = strtok_r(folded_copy, ";", &save); tok && nframes < 1024;
		     tok = strtok_r(NULL, ";", &save))
			split[nframes++] = (struct store_frame){ .name = tok, .module = "", .build_id = "" };
		frames = split;
	}
	for (unsigned i = 0; i < nframes; i++)
		bytes += strlen(frames[i].name) + strlen(frames[i].module ? frames[i].module : "") +
			 strlen(frames[i].build_id ? frames[i].build_id : "") + strlen(frames[i].file ? frames[i].file : "") +
			 strlen(frames[i].system_name ? frames[i].system_name : "") + 5;
	struct pprof_frame *pf = malloc(nframes * sizeof(*pf) + bytes);
	if (!pf) {
		free(folded_copy);
		return -ENOMEM;
	}
	p = (char *)(pf + nframes);
	for (unsigned i = 0; i < nframes; i++) {
		const struct store_frame *fr = &frames[nframes - 1 - i]; /* root first -> leaf first */

		pf[i].name = p;
		p = stpcpy(p, fr->name) + 1;
		pf[i].module = p;
		p = stpcpy(p, fr->module ? fr->module : "") + 1;
		pf[i].build_id = p;
		p = stpcpy(p, fr->build_id ? fr->build_id : "") + 1;
		pf[i].file = p;
		p = stpcpy(p, fr->file ? fr->file : "") + 1;
		pf[i].system_name = p;
		p = stpcpy(p, fr->system_name ? fr->system_name : "") + 1;
		pf[i].start_line = fr->start_line;
		pf[i].line = fr->line;
	}
	*dst = (struct pprof_stack){ .frames = pf, .nframes = nframes, .count = count, .comm = p, .pid = pid };
	strcpy(p, comm);
	free(folded_copy);
	return 0;
}

static int stack_to_pprof(uint32_t pid, const char *comm, const char *folded, const struct store_frame *frames,
			  unsigned nframes, uint64_t count, void *ctx)
{
	struct pprof_collect *c = ctx;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct pprof_stack *s = realloc(c->stacks, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		c->stacks = s;
		c->cap = cap;
	}
	int err = copy_stack(&c->stacks[c->n], pid, comm, folded, frames, nframes, count);
	if (!err)
		c->n++;
	return err;
}

/* Seconds as pprof's int64_t nanoseconds, saturated: instants outside 1678..2262 do not fit. */
static int64_t to_ns(int64_t seconds)
{
	int64_t ns;

	if (__builtin_mul_overflow(seconds, INT64_C(1000000000), &ns))
		return seconds < 0 ? INT64_MIN : INT64_MAX;
	return ns;
}

static int write_pprof(struct store *st, const struct store_filter *f, const struct query_graph *g, FILE *out)
{
	struct pprof_collect c = { 0 };
	unsigned freq = g && g->frequency ? g->frequency : DEFAULT_FREQUENCY;
	int64_t span;
	struct pprof_info info = {
		.time_unix_ns = to_ns(f->from),
		.duration_ns = __builtin_sub_overflow(f->to, f->from, &span) ? INT64_MAX : to_ns(span),
		.period_ns = 1000000000LL / freq,
	};

	if (f->kind != STORE_CPU) { /* microseconds: the values are times, one microsecond their grain */
		info.time_type = f->kind == STORE_OFFCPU ? "off_cpu" : "wall";
		info.period_ns = 1000;
	}
	struct services_map *m = NULL;
	int err = each_stack(st, f, NULL, stack_to_pprof, &c);

	err = err ?: services_map_load(st, f, &m); /* where each process ran: its labels */
	for (size_t i = 0; !err && i < c.n; i++) {
		struct services_of s = services_map_get(m, (uint32_t)c.stacks[i].pid);

		c.stacks[i].unit = s.unit;
		c.stacks[i].container = s.container;
		c.stacks[i].cgroup = s.cgroup;
	}
	if (!err)
		err = render_pprof(out, c.stacks, c.n, &info);
	services_map_free(m);
	for (size_t i = 0; i < c.n; i++)
		free((void *)c.stacks[i].frames);
	free(c.stacks);
	return err;
}

int query_profile(struct store *st, const struct store_filter *f, enum query_format fmt,
		  const struct query_graph *g, unsigned limit, FILE *out)
{
	struct tree *t = NULL;
	int err;

	switch (fmt) {
	case QUERY_FOLDED:
		if (g && g->by_service)
			return services_each_stack(st, f, stack_to_folded, out);
		return each_stack(st, f, stack_to_folded, NULL, out);
	case QUERY_JSON:
		err = build_tree(st, f, NULL, g && g->reverse, g && g->by_service ? FROM_SERVICES : FROM_FRAMES, &t);
		if (!err)
			err = write_graph(out, t, fmt, g, false, kind_unit(f));
		tree_free(t);
		return err;
	case QUERY_SVG:
		err = build_tree(st, f, NULL, g && g->reverse, g && g->by_service ? FROM_SERVICES : FROM_STACKS, &t);
		if (!err)
			err = write_graph(out, t, fmt, g, false, kind_unit(f));
		tree_free(t);
		return err;
	case QUERY_TOP:
		return query_top_text(st, f, limit, false, g && g->lines, out);
	case QUERY_PPROF:
		return write_pprof(st, f, g, out);
	}
	return -EINVAL;
}

int query_top_text(struct store *st, const struct store_filter *f, unsigned limit, bool tty, bool by_line,
		   FILE *out)
{
	struct top *top = NULL;
	int err = build_top(st, f, by_line, &top);

	if (!err)
		err = render_top_text(out, top, limit, tty, kind_unit(f));
	top_free(top);
	return err;
}

int query_top_json(struct store *st, const struct store_filter *f, unsigned limit, bool by_line, FILE *out)
{
	struct top *top = NULL;
	int err = build_top(st, f, by_line, &top);

	if (!err)
		err = render_top_json(out, top, limit, kind_unit(f));
	top_free(top);
	return err;
}

/* Writes a process name as a folded stack's first frame, as render/folded.c writes profiles: ';' would
 * split it (':'), a line break end the line ('?'), and an empty name is "[unknown]". */
static int put_comm(FILE *out, const char *comm)
{
	if (!comm[0])
		return fputs("[unknown]", out) == EOF ? -EIO : 0;
	for (; *comm; comm++) {
		int ch = *comm == ';' ? ':' : (*comm == '\n' || *comm == '\r') ? '?' : (unsigned char)*comm;

		if (putc(ch, out) == EOF)
			return -EIO;
	}
	return 0;
}

/* Writes one "comm;stack BASE NEW" line, base scaled to the new window's total. */
static int diff_line(const struct store_diff_row *r, void *ctx)
{
	FILE *out = ctx;
	double scale = r->base_total ? (double)r->now_total / (double)r->base_total : 0;

	if (put_comm(out, r->comm) < 0 ||
	    fprintf(out, ";%s %llu %llu\n", r->folded, (unsigned long long)llround(scale * (double)r->base),
		    (unsigned long long)r->now) < 0)
		return -EIO;
	return 0;
}

int query_diff(struct store *st, const struct store_filter *base, const struct store_filter *now,
	       enum query_format fmt, const struct query_graph *g, FILE *out)
{
	struct tree *t = NULL;
	int err;

	if (fmt != QUERY_FOLDED && fmt != QUERY_JSON && fmt != QUERY_SVG)
		return -EINVAL;
	/* Folded: per (process, stack) counts are all it takes; no tree, so nothing is cut at its node
	 * limit. */
	if (fmt == QUERY_FOLDED) {
		err = store_query_diff(st, base, now, diff_line, out);
		return err ? err : ferror(out) ? -EIO : 0;
	}
	err = build_tree(st, now, base, g && g->reverse, FROM_STACKS, &t);
	if (!err)
		err = write_graph(out, t, fmt, g, true, kind_unit(now));
	tree_free(t);
	return err;
}

/* Processes: collected first, to know the total for shares. */
struct proc_list {
	struct store_process *p;
	size_t n, cap;
	uint64_t total;
};

static int collect_process(const struct store_process *p, void *ctx)
{
	struct proc_list *l = ctx;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct store_process *np = realloc(l->p, cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		l->p = np;
		l->cap = cap;
	}
	l->p[l->n] = *p;
	l->p[l->n].comm = strdup(p->comm);
	l->p[l->n].cgroup = strdup(p->cgroup ? p->cgroup : "");
	if (!l->p[l->n].comm || !l->p[l->n].cgroup) {
		free((char *)l->p[l->n].comm);
		free((char *)l->p[l->n].cgroup);
		return -ENOMEM;
	}
	l->total += p->samples;
	l->n++;
	return 0;
}

static void format_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%" PRId64, t);
}

static void write_processes(FILE *out, const struct proc_list *l, bool json, bool tty, enum unit unit)
{
	char first[32], last[32], amount[UNIT_BUF], service[64];

	if (json)
		fprintf(out, "{\"unit\":\"%s\",\"total\":%llu,\"processes\":[", unit_name(unit),
			(unsigned long long)l->total);
	else if (tty)
		fprintf(out, "%8s  %-16s %12s %7s  %-20s  %-20s  %s\n", "PID", "COMM", unit == UNIT_MICROS ? "TIME" : "SAMPLES",
			"SHARE", "FIRST SEEN", "LAST SEEN", "SERVICE");
	for (size_t i = 0; i < l->n; i++) {
		const struct store_process *p = &l->p[i];
		double share = l->total ? 100.0 * p->samples / l->total : 0;

		if (json) {
			fprintf(out, "%s{\"pid\":%u,\"comm\":", i ? "," : "", p->pid);
			json_write_string(out, p->comm);
			fprintf(out, ",\"samples\":%llu,\"share\":%.4f,\"first_seen\":%" PRId64 ",\"last_seen\":%" PRId64
				",\"ppid\":%u,\"parent\":%u", (unsigned long long)p->samples, share / 100, p->first_seen,
				p->last_seen, p->ppid, p->parent);
			services_json_fields(out, p->cgroup);
			fputc('}', out);
		} else if (tty) {
			format_time(p->first_seen, first, sizeof(first));
			format_time(p->last_seen, last, sizeof(last));
			if (unit == UNIT_MICROS)
				unit_amount(amount, p->samples, unit);
			else
				snprintf(amount, sizeof(amount), "%llu", (unsigned long long)p->samples);
			fprintf(out, "%8u  %-16s %12s %6.2f%%  %-20s  %-20s  %s\n", p->pid, p->comm, amount, share, first, last,
				services_short(p->cgroup, service, sizeof(service)));
		} else {
			fprintf(out, "%u\t%s\t%llu\t%" PRId64 "\t%" PRId64 "\n", p->pid, p->comm,
				(unsigned long long)p->samples, p->first_seen, p->last_seen);
		}
	}
	if (json)
		fputs("]}\n", out);
}

int query_processes(struct store *st, const struct store_filter *f, bool json, bool tty, FILE *out)
{
	struct proc_list l = { 0 };
	int err = store_query_processes(st, f, collect_process, &l);

	if (!err) {
		write_processes(out, &l, json, tty, kind_unit(f));
		err = ferror(out) ? -EIO : 0;
	}
	for (size_t i = 0; i < l.n; i++) {
		free((char *)l.p[i].comm);
		free((char *)l.p[i].cgroup);
	}
	free(l.p);
	return err;
}

struct list_ctx {
	FILE *out;
	size_t n;
	bool per_thread;
};

static int write_thread(const struct store_thread *t, void *ctx)
{
	struct list_ctx *c = ctx;

	fprintf(c->out, "%s{\"tid\":%u,\"name\":", c->n++ ? "," : "", t->tid);
	json_write_string(c->out, t->name);
	fprintf(c->out, ",\"samples\":%llu}", (unsigned long long)t->samples);
	return 0;
}

int query_threads(struct store *st, const struct store_filter *f, FILE *out)
{
	struct list_ctx c = { .out = out };
	int err;

	fprintf(out, "{\"pid\":%lld,\"unit\":\"%s\",\"threads\":[", (long long)f->pid, unit_name(kind_unit(f)));
	err = store_query_threads(st, f, write_thread, &c);
	fputs("]}\n", out);
	return err ? err : ferror(out) ? -EIO : 0;
}

static int write_point(const struct store_point *p, void *ctx)
{
	struct list_ctx *c = ctx;

	fprintf(c->out, "%s{\"t\":%" PRId64 ",", c->n++ ? "," : "", p->ts);
	if (c->per_thread)
		fprintf(c->out, "\"pid\":%u,\"tid\":%u,", p->pid, p->tid);
	fprintf(c->out, "\"count\":%llu}", (unsigned long long)p->count);
	return 0;
}

int query_timeline(struct store *st, const struct store_filter *f, int64_t step, bool per_thread, FILE *out)
{
	struct list_ctx c = { .out = out, .per_thread = per_thread };
	int err;

	fprintf(out, "{\"from\":%" PRId64 ",\"to\":%" PRId64 ",\"step\":%" PRId64 ",\"unit\":\"%s\",\"points\":[",
		f->from, f->to, step, unit_name(kind_unit(f)));
	err = store_query_timeline(st, f, step, per_thread, write_point, &c);
	fputs("]}\n", out);
	return err ? err : ferror(out) ? -EIO : 0;
}
