/* gen_history.c - fills a flamed database with a generated history of a busy host (services, short jobs, tens of thousands of stacks), written through the store API as flamed writes it. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "store/store.h"
#include "query/window.h"

#define FRAMES_MAX 96        /* frames of one generated stack */
#define NAME_LEN 160         /* longest generated frame name */
#define COMM_LEN 16          /* as the kernel's comm, NUL included */
#define THREADS_MAX 64
#define BRANCHES 3           /* callees per function in a program's call tree */
#define PRUNE_EVERY 60       /* seconds between retention passes, as flamed */
#define PRUNE_ROUNDS_MAX 100000
#define JOB_GAP_MEAN 180.0   /* seconds between short jobs starting, on average */
#define PID_FIRST 300
#define PROCS_MAX 1000000

enum style {
	STYLE_C,      /* snake_case functions, libc frames */
	STYLE_CXX,    /* mangled C++ (_ZN...), libc frames */
	STYLE_GO,     /* pkg.(*Type).Method */
	STYLE_JAVA,   /* JIT frames from a perf map (_[j]) under a mangled C++ VM */
	STYLE_KERNEL, /* kernel threads: kernel frames only */
};

/* One kind of process. Services run all day at demand x the time of day; jobs start now and then and
 * run at their demand until they end. */
struct tmpl {
	const char *comm;     /* may hold one %u: the instance number */
	const char *path;     /* the binary its frames come from */
	enum style style;
	unsigned instances;   /* services: processes; 0: a job */
	double demand;        /* CPUs one process uses (services: at the daily peak) */
	unsigned threads;
	unsigned functions;   /* distinct functions of the binary */
	unsigned stacks;      /* distinct stacks it shows */
	double job_weight;    /* jobs: how often it is the one started */
	double job_seconds;   /* jobs: mean run time */
};

static const struct tmpl tmpls[] = {
	{ "java", "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so", STYLE_JAVA, 2, 0.30, 48, 1500, 9000, 0, 0 },
	{ "postgres", "/usr/lib/postgresql/15/bin/postgres", STYLE_C, 16, 0.035, 1, 1500, 5000, 0, 0 },
	{ "nginx", "/usr/sbin/nginx", STYLE_C, 4, 0.03, 1, 400, 800, 0, 0 },
	{ "node", "/usr/bin/node", STYLE_CXX, 3, 0.06, 11, 2000, 4000, 0, 0 },
	{ "python3", "/usr/bin/python3.11", STYLE_C, 6, 0.025, 4, 1500, 3000, 0, 0 },
	{ "redis-server", "/usr/bin/redis-server", STYLE_C, 1, 0.04, 5, 400, 600, 0, 0 },
	{ "envoy", "/usr/local/bin/envoy", STYLE_CXX, 2, 0.05, 8, 2500, 4000, 0, 0 },
	{ "dockerd", "/usr/sbin/dockerd", STYLE_GO, 1, 0.02, 30, 1500, 2000, 0, 0 },
	{ "containerd", "/usr/bin/containerd", STYLE_GO, 1, 0.015, 20, 1200, 1500, 0, 0 },
	{ "node_exporter", "/usr/bin/prometheus-node-exporter", STYLE_GO, 1, 0.01, 8, 600, 800, 0, 0 },
	{ "systemd", "/usr/lib/systemd/systemd", STYLE_C, 1, 0.003, 1, 300, 200, 0, 0 },
	{ "systemd-journal", "/usr/lib/systemd/systemd-journald", STYLE_C, 1, 0.004, 1, 200, 150, 0, 0 },
	{ "sshd", "/usr/sbin/sshd", STYLE_C, 2, 0.002, 1, 150, 100, 0, 0 },
	{ "rsyslogd", "/usr/sbin/rsyslogd", STYLE_C, 1, 0.002, 4, 150, 100, 0, 0 },
	{ "cron", "/usr/sbin/cron", STYLE_C, 1, 0.0005, 1, 40, 30, 0, 0 },
	{ "kworker/u4:%u", "[kernel]", STYLE_KERNEL, 8, 0.004, 1, 0, 800, 0, 0 },
	{ "ksoftirqd/%u", "[kernel]", STYLE_KERNEL, 2, 0.005, 1, 0, 300, 0, 0 },
	{ "jbd2/vda-8", "[kernel]", STYLE_KERNEL, 1, 0.002, 1, 0, 100, 0, 0 },
	{ "cc1", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", STYLE_C, 0, 1.0, 1, 4000, 6000, 10, 8 },
	{ "make", "/usr/bin/make", STYLE_C, 0, 0.05, 1, 200, 300, 2, 120 },
	{ "ld", "/usr/bin/x86_64-linux-gnu-ld.bfd", STYLE_C, 0, 1.0, 1, 800, 1500, 1, 10 },
	{ "python3", "/usr/bin/python3.11", STYLE_C, 0, 0.8, 2, 1500, 2500, 4, 40 },
	{ "gzip", "/usr/bin/gzip", STYLE_C, 0, 1.0, 1, 60, 80, 1, 60 },
	{ "tar", "/usr/bin/tar", STYLE_C, 0, 0.3, 1, 150, 200, 1, 60 },
	{ "git", "/usr/bin/git", STYLE_C, 0, 0.7, 1, 800, 1200, 2, 5 },
	{ "sh", "/usr/bin/dash", STYLE_C, 0, 0.1, 1, 60, 80, 6, 2 },
};
#define NTMPLS (sizeof(tmpls) / sizeof(tmpls[0]))

static const char *const words[] = {
	"read", "write", "parse", "alloc", "free", "hash", "lookup", "insert", "update", "scan", "sort",
	"merge", "encode", "decode", "send", "recv", "poll", "wait", "lock", "unlock", "flush", "commit",
	"fetch", "render", "compile", "emit", "load", "store", "copy", "match", "split", "join", "build",
	"check", "open", "close", "map", "reduce", "filter", "queue", "push", "pop", "init", "handle",
	"dispatch", "process", "compute", "resolve", "visit", "walk", "format", "index", "page", "buffer",
	"cache", "table", "tree", "node", "list", "string", "frame", "request", "response", "header",
	"body", "token", "symbol", "block", "segment", "tuple", "row", "column", "plan", "exec", "query",
	"event", "timer", "signal", "socket", "file", "path", "json", "http", "tls", "crypto", "regex",
	"heap", "pool", "arena", "slab", "thread", "task", "worker", "batch", "stream", "chunk",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const char *const kernel_names[] = {
	"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "x64_sys_call", "__x64_sys_read", "ksys_read",
	"vfs_read", "__x64_sys_write", "ksys_write", "vfs_write", "new_sync_write", "ext4_file_write_iter",
	"ext4_buffered_write_iter", "generic_perform_write", "__x64_sys_epoll_wait", "do_epoll_wait",
	"ep_poll", "schedule_hrtimeout_range", "schedule", "__schedule", "finish_task_switch.isra.0",
	"__x64_sys_futex", "do_futex", "futex_wait", "futex_wake", "__x64_sys_sendto", "__sys_sendto",
	"tcp_sendmsg", "tcp_sendmsg_locked", "tcp_push", "__tcp_transmit_skb", "ip_queue_xmit",
	"ip_finish_output2", "__dev_queue_xmit", "__x64_sys_recvfrom", "tcp_recvmsg", "tcp_recvmsg_locked",
	"skb_copy_datagram_iter", "copy_user_enhanced_fast_string", "asm_exc_page_fault", "exc_page_fault",
	"do_user_addr_fault", "handle_mm_fault", "__handle_mm_fault", "do_anonymous_page", "clear_page_erms",
	"asm_sysvec_apic_timer_interrupt", "sysvec_apic_timer_interrupt", "__sysvec_apic_timer_interrupt",
	"hrtimer_interrupt", "__hrtimer_run_queues", "tick_sched_timer", "update_process_times",
	"scheduler_tick", "task_tick_fair", "irq_exit_rcu", "__do_softirq", "net_rx_action",
	"__napi_poll", "virtnet_poll", "napi_complete_done", "netif_receive_skb_list_internal",
	"ip_list_rcv", "tcp_v4_rcv", "tcp_rcv_established", "worker_thread", "process_one_work",
	"blk_mq_run_work_fn", "blk_mq_sched_dispatch_requests", "ext4_writepages", "jbd2_journal_commit_transaction",
	"submit_bio_noacct", "virtqueue_add_split", "rcu_core", "rcu_do_batch", "kmem_cache_free",
	"kfree", "__slab_free", "run_ksoftirqd", "smpboot_thread_fn", "mutex_lock", "_raw_spin_lock",
	"native_queued_spin_lock_slowpath", "memcpy_orig", "filemap_read", "filemap_get_pages",
};
#define NKERNEL (sizeof(kernel_names) / sizeof(kernel_names[0]))

static const char *const libc_names[] = {
	"__memmove_avx_unaligned_erms", "__memset_avx2_unaligned_erms", "malloc", "_int_malloc", "free",
	"_int_free", "__strlen_avx2", "__memcmp_avx2_movbe", "__strchr_avx2", "pthread_mutex_lock",
	"__lll_lock_wait", "pthread_cond_wait", "__futex_abstimed_wait_common", "read", "write",
	"__libc_recv", "__libc_send", "epoll_wait", "__poll", "qsort_r", "msort_with_tmp.part.0", "realloc",
	"_IO_file_xsputn", "__vfprintf_internal", "__strtol_l_internal", "clock_gettime",
	"clone3", "start_thread", "__libc_start_call_main",
};
#define NLIBC (sizeof(libc_names) / sizeof(libc_names[0]))

#define LIBC_PATH "/usr/lib/x86_64-linux-gnu/libc.so.6"

struct rng {
	uint64_t s;
};

/* A generated stack: its folded text and its frames (pointing into the pools). */
struct stack {
	char *folded;
	struct store_frame *frames;
	unsigned nframes;
};

/* Frames one binary contributes, named and attributed as flamed names them. */
struct pool {
	struct store_frame *f;
	unsigned n;
};

struct program {
	const struct tmpl *t;
	char build_id[41];
	uint64_t root;       /* the root of its call tree */
	struct pool fns;     /* the binary's functions */
	struct pool jit;     /* STYLE_JAVA: JIT-compiled methods */
	struct stack *stacks;
	double *cdf;         /* Zipf over stacks: the first is the hottest */
	unsigned nstacks;
};

struct proc {
	uint32_t pid;
	unsigned prog;
	unsigned nthreads;
	int64_t start, end;   /* [start, end) */
	char comm[COMM_LEN];
	char (*threads)[COMM_LEN];
	uint64_t kept;        /* samples in the kept window */
};

struct gen_opts {
	const char *db;
	int64_t end, duration, retention;
	unsigned frequency, cpus, flush_interval;
	uint64_t seed;
};

/* What is common to all programs: libc and kernel frames. */
struct common {
	char libc_build_id[41];
	struct pool libc, kernel;
};

struct gen {
	struct gen_opts o;
	struct rng rng;
	struct common c;
	struct program progs[NTMPLS];
	struct proc *procs;
	size_t nprocs, cap_procs;
	size_t nservices;     /* procs[0..nservices) run all day; the jobs follow, by start time */
	uint64_t *keys;       /* one second's samples: (procs index, thread, stack) packed */
	unsigned *alive;      /* indexes of running procs */
	double *cum;          /* cumulative demand of alive */
	struct store *st;
	uint64_t samples, kept, rows, prunes;
	uint64_t timed_prunes;      /* passes of the generation (the final drain left out) */
	uint64_t raw_folded;        /* raw rows the passes folded into rollups */
	double prune_ms, prune_max_ms; /* time in the timed passes */
};

/* A string being built into a fixed buffer; too long is an error, not a truncation. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool overflow;
};

static uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rng_unit(struct rng *r)
{
	return (rng_next(r) >> 11) * 0x1.0p-53;
}

static unsigned rng_below(struct rng *r, unsigned n)
{
	unsigned v = (unsigned)(rng_unit(r) * n);

	return v < n ? v : n - 1;
}

static const char *word(struct rng *r)
{
	return words[rng_below(r, NWORDS)];
}

static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->cap - b->len) {
		b->overflow = true;
		return;
	}
	b->len += (size_t)n;
}

/* "Word" capitalised, into b. */
static void sb_camel(struct sbuf *b, const char *w)
{
	sb_add(b, "%c%s", w[0] - 'a' + 'A', w + 1);
}

static void name_c(struct rng *r, struct sbuf *b)
{
	unsigned n = 2 + rng_below(r, 2);

	for (unsigned i = 0; i < n; i++)
		sb_add(b, "%s%s", i ? "_" : "", word(r));
}

/* _ZN<len>Class<len>methodE<args>, as g++ mangles Class::method(args). */
static void name_cxx(struct rng *r, struct sbuf *b)
{
	static const char *const args[] = { "v", "Pv", "RKS_", "iPKc", "mm", "RKNS_6StringE" };
	char cls[48], fn[48];
	const char *w1 = word(r), *w2 = word(r);

	if (snprintf(cls, sizeof(cls), "%c%s%c%s", w1[0] - 'a' + 'A', w1 + 1, w2[0] - 'a' + 'A', w2 + 1) < 0 ||
	    snprintf(fn, sizeof(fn), "%s_%s", word(r), word(r)) < 0) {
		b->overflow = true;
		return;
	}
	sb_add(b, "_ZN%zu%s%zu%sE%s", strlen(cls), cls, strlen(fn), fn, args[rng_below(r, sizeof(args) / sizeof(args[0]))]);
}

static void name_go(struct rng *r, struct sbuf *b)
{
	if (rng_below(r, 2))
		sb_add(b, "github.com/%s/%s/%s.", word(r), word(r), word(r));
	else
		sb_add(b, "%s/%s.", word(r), word(r));
	sb_add(b, "(*");
	sb_camel(b, word(r));
	sb_camel(b, word(r));
	sb_add(b, ").");
	sb_camel(b, word(r));
	sb_camel(b, word(r));
}

/* A method as a Java perf map names it ("Lpkg/Class;::method"), with ';' made ':' and the JIT suffix,
 * as flamed stores it. */
static void name_java(struct rng *r, struct sbuf *b)
{
	sb_add(b, "Lcom/example/%s/%s/", word(r), word(r));
	sb_camel(b, word(r));
	sb_camel(b, word(r));
	sb_add(b, ":::%s", word(r));
	sb_camel(b, word(r));
	sb_add(b, "_[j]");
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p) {
		perror("gen_history: strdup");
		exit(1);
	}
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		perror("gen_history: calloc");
		exit(1);
	}
	return p;
}

static void random_build_id(struct rng *r, char out[41])
{
	for (int i = 0; i < 40; i++)
		out[i] = "0123456789abcdef"[rng_below(r, 16)];
	out[40] = '\0';
}

/* A pool of n frames of module path (build_id) named by namer. */
static void pool_generate(struct rng *r, struct pool *p, unsigned n, void (*namer)(struct rng *, struct sbuf *),
			  const char *module, const char *build_id)
{
	char buf[NAME_LEN];

	p->f = xcalloc(n, sizeof(*p->f));
	p->n = n;
	for (unsigned i = 0; i < n; i++) {
		struct sbuf b = { .p = buf, .cap = sizeof(buf) };

		namer(r, &b);
		p->f[i] = (struct store_frame){ .name = xstrdup(b.overflow ? "[unknown]" : buf),
						.module = module, .build_id = build_id };
	}
}

/* A pool of the given names, with suffix, of module path. */
static void pool_fixed(struct pool *p, const char *const *names, unsigned n, const char *suffix,
		       const char *module, const char *build_id)
{
	char buf[NAME_LEN];

	p->f = xcalloc(n, sizeof(*p->f));
	p->n = n;
	for (unsigned i = 0; i < n; i++) {
		if (snprintf(buf, sizeof(buf), "%s%s", names[i], suffix) >= (int)sizeof(buf)) {
			fprintf(stderr, "gen_history: frame name too long: %s\n", names[i]);
			exit(1);
		}
		p->f[i] = (struct store_frame){ .name = xstrdup(buf), .module = module, .build_id = build_id };
	}
}

/* The frames of one stack while it is built. */
struct frames {
	struct store_frame f[FRAMES_MAX];
	unsigned n;
};

static void push(struct frames *fs, const struct store_frame *f)
{
	if (fs->n < FRAMES_MAX)
		fs->f[fs->n++] = *f;
}

/* depth frames of pool walked down a call tree of BRANCHES callees per function, from node *h: stacks
 * of one program share their callers as real ones do. */
static void push_walk(struct rng *r, struct frames *fs, const struct pool *p, uint64_t *h, unsigned depth)
{
	for (unsigned i = 0; i < depth; i++) {
		*h = (*h ^ (rng_below(r, BRANCHES) + 1)) * 0x100000001b3ULL;
		*h ^= *h >> 29;
		push(fs, &p->f[*h % p->n]);
	}
}

/* Pushes the frame of p named name (kernel frames: name plus "_[k]"). */
static void push_name(struct frames *fs, const struct pool *p, const char *name)
{
	size_t len = strlen(name);

	for (unsigned i = 0; i < p->n; i++)
		if (!strncmp(p->f[i].name, name, len) && (!p->f[i].name[len] || !strcmp(p->f[i].name + len, "_[k]"))) {
			push(fs, &p->f[i]);
			return;
		}
}

/* The roots flamed sees: the start of the main thread or of another thread. */
static void push_roots(struct rng *r, const struct common *c, const struct program *pg, struct frames *fs)
{
	const struct store_frame start = { .name = "_start", .module = pg->t->path, .build_id = pg->build_id };
	const struct store_frame main_fn = { .name = "main", .module = pg->t->path, .build_id = pg->build_id };

	if (pg->t->threads > 1 && rng_below(r, 2)) {
		push_name(fs, &c->libc, "clone3");
		push_name(fs, &c->libc, "start_thread");
		return;
	}
	push(fs, &start);
	push_name(fs, &c->libc, "__libc_start_call_main");
	push(fs, &main_fn);
}

/* A syscall, a page fault or an interrupt: kernel frames at the leaf. */
static void push_kernel_tail(struct rng *r, const struct common *c, struct frames *fs, uint64_t h)
{
	push_name(fs, &c->kernel, rng_below(r, 4) ? "entry_SYSCALL_64_after_hwframe" : "asm_sysvec_apic_timer_interrupt");
	push_walk(r, fs, &c->kernel, &h, 2 + rng_below(r, 9));
}

/* One stack of program pg: roots, a walk of its functions (and for Java, JIT methods), maybe libc and
 * kernel frames at the leaf. */
static void build_stack(struct rng *r, const struct common *c, const struct program *pg, struct frames *fs)
{
	uint64_t h = pg->root;
	double u = rng_unit(r);

	fs->n = 0;
	if (pg->t->style == STYLE_KERNEL) {
		push_name(fs, &c->kernel, "worker_thread");
		push_walk(r, fs, &c->kernel, &h, 2 + rng_below(r, 11));
		return;
	}
	push_roots(r, c, pg, fs);
	if (pg->t->style == STYLE_JAVA && u < 0.75) {
		push_walk(r, fs, &pg->fns, &h, 3 + rng_below(r, 4));
		push_walk(r, fs, &pg->jit, &h, 5 + rng_below(r, 36));
		push_walk(r, fs, &pg->fns, &h, rng_below(r, 4));
	} else {
		push_walk(r, fs, &pg->fns, &h, 2 + rng_below(r, pg->t->style == STYLE_C ? 23 : 29));
	}
	if (pg->t->style != STYLE_GO && rng_below(r, 100) < 15)
		push_walk(r, fs, &c->libc, &h, 1 + rng_below(r, 3));
	if (rng_below(r, 100) < 25)
		push_kernel_tail(r, c, fs, h);
}

/* Joins the frames into the folded text and keeps a copy of both. */
static void keep_stack(const struct frames *fs, struct stack *out)
{
	size_t len = 0, pos = 0;

	for (unsigned i = 0; i < fs->n; i++)
		len += strlen(fs->f[i].name) + 1;
	out->folded = xcalloc(len, 1);
	for (unsigned i = 0; i < fs->n; i++) {
		size_t n = strlen(fs->f[i].name);

		if (i)
			out->folded[pos++] = ';';
		memcpy(out->folded + pos, fs->f[i].name, n);
		pos += n;
	}
	out->frames = xcalloc(fs->n, sizeof(*out->frames));
	memcpy(out->frames, fs->f, fs->n * sizeof(*out->frames));
	out->nframes = fs->n;
}

static void program_stacks(struct rng *r, const struct common *c, struct program *pg)
{
	struct frames fs;
	double sum = 0;

	pg->nstacks = pg->t->stacks;
	pg->stacks = xcalloc(pg->nstacks, sizeof(*pg->stacks));
	pg->cdf = xcalloc(pg->nstacks, sizeof(*pg->cdf));
	for (unsigned i = 0; i < pg->nstacks; i++) {
		build_stack(r, c, pg, &fs);
		keep_stack(&fs, &pg->stacks[i]);
		sum += 1.0 / (i + 1);
		pg->cdf[i] = sum;
	}
	for (unsigned i = 0; i < pg->nstacks; i++)
		pg->cdf[i] /= sum;
}

static void program_init(struct rng *r, const struct common *c, const struct tmpl *t, struct program *pg)
{
	static void (*const namers[])(struct rng *, struct sbuf *) = {
		[STYLE_C] = name_c, [STYLE_CXX] = name_cxx, [STYLE_GO] = name_go, [STYLE_JAVA] = name_cxx,
	};

	pg->t = t;
	pg->root = rng_next(r);
	random_build_id(r, pg->build_id);
	if (t->style != STYLE_KERNEL)
		pool_generate(r, &pg->fns, t->functions, namers[t->style], t->path, pg->build_id);
	if (t->style == STYLE_JAVA)
		pool_generate(r, &pg->jit, t->functions * 4, name_java, "[jit]", "");
	program_stacks(r, c, pg);
}

static void common_init(struct rng *r, struct common *c)
{
	random_build_id(r, c->libc_build_id);
	pool_fixed(&c->libc, libc_names, NLIBC, "", LIBC_PATH, c->libc_build_id);
	pool_fixed(&c->kernel, kernel_names, NKERNEL, "_[k]", "[kernel]", "");
}

static struct proc *proc_new(struct gen *g, unsigned prog, unsigned instance, int64_t start, int64_t end)
{
	const struct tmpl *t = &tmpls[prog];
	struct proc *p;

	if (g->nprocs == g->cap_procs) {
		size_t cap = g->cap_procs ? 2 * g->cap_procs : 256;
		struct proc *n = cap <= PROCS_MAX ? realloc(g->procs, cap * sizeof(*n)) : NULL;

		if (!n) {
			fprintf(stderr, "gen_history: too many processes\n");
			exit(1);
		}
		g->procs = n;
		g->cap_procs = cap;
	}
	p = &g->procs[g->nprocs];
	*p = (struct proc){ .pid = PID_FIRST, .prog = prog, .nthreads = t->threads, .start = start, .end = end };
	if (g->nprocs)
		p->pid = g->procs[g->nprocs - 1].pid + g->procs[g->nprocs - 1].nthreads + 1 + rng_below(&g->rng, 40);
	g->nprocs++;
	if (snprintf(p->comm, sizeof(p->comm), t->comm, instance) < 0)
		strcpy(p->comm, "[unknown]");
	p->threads = xcalloc(p->nthreads, sizeof(*p->threads));
	for (unsigned i = 0; i < p->nthreads; i++)
		if (snprintf(p->threads[i], COMM_LEN, i ? "%.9s-w%u" : "%s", p->comm, i) < 0)
			strcpy(p->threads[i], "[unknown]");
	return p;
}

/* Services first (all the time), then jobs by start time. */
static void procs_init(struct gen *g, int64_t begin, int64_t stop)
{
	double total = 0, t = (double)begin;

	for (unsigned i = 0; i < NTMPLS; i++) {
		for (unsigned k = 0; k < tmpls[i].instances; k++)
			proc_new(g, i, k, begin, stop);
		total += tmpls[i].job_weight;
	}
	g->nservices = g->nprocs;
	for (;;) {
		double pick, run;
		unsigned i = 0;

		t += -log(1 - rng_unit(&g->rng)) * JOB_GAP_MEAN;
		if (t >= stop)
			break;
		pick = rng_unit(&g->rng) * total;
		while (i + 1 < NTMPLS && (pick -= tmpls[i].job_weight) >= 0)
			i++;
		run = 1 - log(1 - rng_unit(&g->rng)) * tmpls[i].job_seconds;
		proc_new(g, i, 0, (int64_t)t, (int64_t)(t + run));
	}
}

/* Share of the daily peak a service runs at, by the hour: 0.4 at 03:00 UTC, 1.0 at 15:00. */
static double diurnal(int64_t ts)
{
	double h = (double)(ts % 86400) / 3600.0;

	return 0.4 + 0.3 * (1 - cos(2 * M_PI * (h - 3) / 24));
}

/* Fills g->alive and g->cum with the procs running at ts; returns their total demand in CPUs.
 * *first_job: the first job that may still run (jobs are ordered by start, not by end). */
static double running(struct gen *g, int64_t ts, size_t *first_job, size_t *n)
{
	double sum = 0, day = diurnal(ts);

	*n = 0;
	while (*first_job < g->nprocs && g->procs[*first_job].end <= ts)
		(*first_job)++;
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct proc *p;

		if (i == g->nservices)
			i = *first_job;
		if (i >= g->nprocs || g->procs[i].start > ts)
			break;
		p = &g->procs[i];
		if (p->end <= ts)
			continue;
		sum += tmpls[p->prog].demand * (i < g->nservices ? day : 1.0) * (0.5 + rng_unit(&g->rng));
		g->alive[*n] = (unsigned)i;
		g->cum[(*n)++] = sum;
	}
	return sum;
}

static unsigned pick_alive(const struct gen *g, size_t n, double x)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->cum[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (unsigned)lo;
}

static unsigned pick_stack(const struct program *pg, double x)
{
	unsigned lo = 0, hi = pg->nstacks - 1;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (pg->cdf[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Draws one second's samples, packed as (proc 32 bits, thread 8, stack 24), sorted. Returns how many. */
static unsigned draw_second(struct gen *g, int64_t ts, size_t *first_job)
{
	size_t n;
	double demand = running(g, ts, first_job, &n);
	double capacity = (double)g->o.cpus * g->o.frequency;
	double want = capacity * (demand < g->o.cpus ? demand / g->o.cpus : 1.0);
	unsigned count = (unsigned)want + (rng_unit(&g->rng) < want - (unsigned)want);

	if (!n)
		return 0;
	for (unsigned i = 0; i < count; i++) {
		unsigned a = g->alive[pick_alive(g, n, rng_unit(&g->rng) * demand)];
		const struct proc *p = &g->procs[a];
		unsigned th = (unsigned)exp(rng_unit(&g->rng) * log(p->nthreads + 1.0)) - 1;
		unsigned sk = pick_stack(&g->progs[p->prog], rng_unit(&g->rng));

		th = th < p->nthreads ? th : p->nthreads - 1;
		g->keys[i] = (uint64_t)a << 32 | (uint64_t)th << 24 | sk;
	}
	qsort(g->keys, count, sizeof(*g->keys), cmp_u64);
	return count;
}

static int add_row(struct gen *g, int64_t ts, uint64_t key, uint64_t count)
{
	struct proc *p = &g->procs[key >> 32];
	const struct stack *s = &g->progs[p->prog].stacks[key & 0xffffff];
	unsigned th = (key >> 24) & 0xff;
	struct store_sample row = {
		.ts = ts, .pid = p->pid, .tid = p->pid + th, .comm = p->comm, .thread = p->threads[th],
		.folded = s->folded, .count = count, .frames = s->frames, .nframes = s->nframes,
	};
	int err = store_add(g->st, &row);

	if (err) {
		fprintf(stderr, "gen_history: cannot store a sample: %s\n", store_errmsg(g->st));
		return err;
	}
	g->rows++;
	g->samples += count;
	if (ts >= g->o.end - g->o.retention || !g->o.retention) {
		g->kept += count;
		p->kept += count;
	}
	return 0;
}

/* Generates and adds the samples of second ts. */
static int add_second(struct gen *g, int64_t ts, size_t *first_job)
{
	unsigned n = draw_second(g, ts, first_job);

	for (unsigned i = 0; i < n;) {
		unsigned j = i + 1;
		int err;

		while (j < n && g->keys[j] == g->keys[i])
			j++;
		err = add_row(g, ts, g->keys[i], j - i);
		if (err)
			return err;
		i = j;
	}
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#ifdef HAVE_STORE_PRUNE
/* Applies retention and folds rollups as flamed does: everything before now - retention goes. With all
 * set, repeats until nothing is left to delete or fold (those passes are not timed). */
static int apply_retention(struct gen *g, int64_t now, bool all)
{
	struct store_prune_result r;

	for (int i = 0; i < PRUNE_ROUNDS_MAX; i++) {
		double t0 = now_ms(), ms;
		int err = store_prune(g->st, now - g->o.retention, 0, &r);

		if (err) {
			fprintf(stderr, "gen_history: cannot apply retention: %s\n", store_errmsg(g->st));
			return err;
		}
		ms = now_ms() - t0;
		g->prunes++;
		g->raw_folded += r.raw_folded;
		if (!all) {
			g->timed_prunes++;
			g->prune_ms += ms;
			g->prune_max_ms = ms > g->prune_max_ms ? ms : g->prune_max_ms;
		}
		if (!all || (!r.samples_deleted && !r.rows_expired && !r.raw_folded))
			return 0;
	}
	return 0;
}
#else
static int apply_retention(struct gen *g, int64_t now, bool all)
{
	(void)g, (void)now, (void)all;
	return 0;
}
#endif

/* One flush: the samples of [ts, ts + n) in one transaction. */
static int flush(struct gen *g, int64_t ts, int64_t n, size_t *first_job)
{
	int err = store_begin(g->st);

	for (int64_t i = 0; !err && i < n; i++)
		err = add_second(g, ts + i, first_job);
	if (err) {
		store_rollback(g->st);
		return err;
	}
	err = store_commit(g->st);
	if (err)
		fprintf(stderr, "gen_history: cannot commit: %s\n", store_errmsg(g->st));
	return err;
}

static int generate(struct gen *g, int64_t begin, int64_t stop)
{
	int64_t last_prune = begin;
	size_t first_job = g->nservices;
	int err = 0;

	for (int64_t ts = begin; !err && ts < stop; ts += g->o.flush_interval) {
		int64_t n = stop - ts < g->o.flush_interval ? stop - ts : g->o.flush_interval;

		err = flush(g, ts, n, &first_job);
		if (!err && g->o.retention && ts + n - last_prune >= PRUNE_EVERY) {
			last_prune = ts + n;
			err = apply_retention(g, ts + n, false);
		}
	}
	if (!err && g->o.retention)
		err = apply_retention(g, stop, true);
	return err;
}

static int alloc_buffers(struct gen *g)
{
	g->keys = calloc((size_t)g->o.cpus * g->o.frequency + 1, sizeof(*g->keys));
	g->alive = calloc(g->nprocs, sizeof(*g->alive));
	g->cum = calloc(g->nprocs, sizeof(*g->cum));
	return g->keys && g->alive && g->cum ? 0 : -ENOMEM;
}

/* The process with the most samples in the kept window. */
static const struct proc *busiest(const struct gen *g)
{
	const struct proc *best = &g->procs[0];

	for (size_t i = 1; i < g->nprocs; i++)
		if (g->procs[i].kept > best->kept)
			best = &g->procs[i];
	return best;
}

static size_t kept_procs(const struct gen *g)
{
	size_t n = 0;

	for (size_t i = 0; i < g->nprocs; i++)
		n += g->procs[i].kept > 0;
	return n;
}

static uint64_t file_bytes(const char *path)
{
	char wal[4096];
	struct stat sb;
	uint64_t n = 0;

	if (stat(path, &sb) == 0)
		n += (uint64_t)sb.st_size;
	if (snprintf(wal, sizeof(wal), "%s-wal", path) < (int)sizeof(wal) && stat(wal, &sb) == 0)
		n += (uint64_t)sb.st_size;
	return n;
}

/* One line of key=value pairs on stdout: what run.sh reads. */
static int report(const struct gen *g, const struct store_stats *ss, double seconds)
{
	const struct proc *top = busiest(g);
	int64_t window = g->o.retention && g->o.retention < g->o.duration ? g->o.retention : g->o.duration;

	printf("samples_written=%llu samples=%llu rows=%llu stacks=%llu processes=%zu processes_written=%zu "
	       "from=%lld to=%lld window_seconds=%lld db_bytes=%llu retention=%s prunes=%llu top_pid=%u "
	       "top_comm=%s top_samples=%llu gen_seconds=%.1f timed_prunes=%llu prune_mean_ms=%.1f "
	       "prune_max_ms=%.1f rollup_rows=%llu raw_folded=%llu\n",
	       (unsigned long long)g->samples, (unsigned long long)g->kept, (unsigned long long)ss->sample_rows,
	       (unsigned long long)ss->stacks, kept_procs(g), g->nprocs, (long long)(g->o.end - window),
	       (long long)g->o.end, (long long)window, (unsigned long long)file_bytes(g->o.db),
	       !g->o.retention ? "none" : g->prunes ? "applied" : "unavailable", (unsigned long long)g->prunes,
	       top->pid, top->comm, (unsigned long long)top->kept, seconds, (unsigned long long)g->timed_prunes,
	       g->timed_prunes ? g->prune_ms / g->timed_prunes : 0.0, g->prune_max_ms,
	       (unsigned long long)ss->rollup_rows, (unsigned long long)g->raw_folded);
	return fflush(stdout) ? -EIO : 0;
}

static int run(struct gen *g)
{
	int64_t begin = g->o.end - g->o.duration;
	struct store_stats ss;
	double t0 = now_ms();
	int err;

	common_init(&g->rng, &g->c);
	for (unsigned i = 0; i < NTMPLS; i++)
		program_init(&g->rng, &g->c, &tmpls[i], &g->progs[i]);
	procs_init(g, begin, g->o.end);
	err = alloc_buffers(g);
	if (err) {
		fprintf(stderr, "gen_history: out of memory\n");
		return err;
	}
	err = store_open(g->o.db, STORE_READ_WRITE, &g->st);
	if (err) {
		fprintf(stderr, "gen_history: cannot open %s: %s\n", g->o.db, strerror(-err));
		return err;
	}
	err = generate(g, begin, g->o.end);
	err = err ?: store_get_stats(g->st, &ss);
	store_close(g->st);
	g->st = NULL;
	return err ?: report(g, &ss, (now_ms() - t0) / 1e3);
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: gen_history --db PATH [--duration 24h] [--retention DURATION] [--end UNIX]\n"
		   "                   [--frequency 99] [--cpus 2] [--flush-interval 10] [--seed N]\n"
		   "Writes DURATION of a busy host's samples ending at END (default: now) into a new database,\n"
		   "one transaction per flush interval; with --retention, prunes as flamed does every minute\n"
		   "(retention, and folding into rollups with flamed's default windows).\n"
		   "Prints one line of key=value results.\n");
	return rc;
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_opt(int c, const char *arg, struct gen_opts *o)
{
	uint64_t v = 0;
	int err = 0;

	switch (c) {
	case 'D': o->db = arg; break;
	case 'd': err = window_parse_duration(arg, &o->duration); break;
	case 'r': err = window_parse_duration(arg, &o->retention); break;
	case 'e': err = parse_u64(arg, 1, INT64_MAX / 2, &v); o->end = (int64_t)v; break;
	case 'f': err = parse_u64(arg, 1, 10000, &v); o->frequency = (unsigned)v; break;
	case 'c': err = parse_u64(arg, 1, 1024, &v); o->cpus = (unsigned)v; break;
	case 'i': err = parse_u64(arg, 1, 3600, &v); o->flush_interval = (unsigned)v; break;
	case 's': err = parse_u64(arg, 0, UINT64_MAX, &o->seed); break;
	default: err = -EINVAL;
	}
	return err;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, 'D' }, { "duration", required_argument, NULL, 'd' },
		{ "retention", required_argument, NULL, 'r' }, { "end", required_argument, NULL, 'e' },
		{ "frequency", required_argument, NULL, 'f' }, { "cpus", required_argument, NULL, 'c' },
		{ "flush-interval", required_argument, NULL, 'i' }, { "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct gen g = { .o = { .duration = 86400, .frequency = 99, .cpus = 2, .flush_interval = 10, .seed = 1 } };
	struct stat sb;
	int c;

	g.o.end = (int64_t)time(NULL);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
		if (c == 'h' || parse_opt(c, optarg, &g.o))
			return usage(c == 'h' ? stdout : stderr, c == 'h' ? 0 : 2);
	if (optind != argc || !g.o.db || g.o.duration > g.o.end)
		return usage(stderr, 2);
	if (stat(g.o.db, &sb) == 0) {
		fprintf(stderr, "gen_history: %s exists; give a new path\n", g.o.db);
		return 2;
	}
#ifndef HAVE_STORE_PRUNE
	if (g.o.retention)
		fprintf(stderr, "gen_history: this store has no store_prune; retention is not applied\n");
#endif
	g.rng.s = g.o.seed;
	return run(&g) ? 1 : 0;
}
