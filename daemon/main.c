/* main.c - flamed: options, lifecycle and signals; every flush moves samples sampler -> symbolizer -> store. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <bpf/libbpf.h>

#include "sampler.h"
#include "store.h"
#include "symbolize/symbolizer.h"

#define DEFAULT_DB "/var/lib/flamed/flamed.db"
#define FRAME_NAME_MAX 240
#define FOLDED_MAX (2 * PROFILE_MAX_DEPTH * (FRAME_NAME_MAX + 5) + 64)

/* The parsed options: the only mutable global. */
static struct options {
	const char *db;
	unsigned frequency;
	unsigned flush_interval;
	bool include_idle;
	const char *debug_dir;
	unsigned max_stacks;
	unsigned max_keys;
	bool verbose;
} opt = {
	.db = DEFAULT_DB,
	.frequency = 19,
	.flush_interval = 10,
	.debug_dir = "/usr/lib/debug",
	.max_stacks = 0, /* auto */
	.max_keys = 16384,
};

/* What one flush needs to turn raw samples into stored stacks. */
struct flush {
	struct symbolizer *sym;
	struct store *store;
	char folded[FOLDED_MAX];
	uint64_t samples, keys, rejected;
	int store_err;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: flamed [OPTION]...\n"
		"System-wide CPU profiler: samples every CPU with BPF, names every frame and stores\n"
		"folded stacks in SQLite. Needs root, or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and\n"
		"CAP_SYSLOG. Stops on SIGINT or SIGTERM after storing what is pending.\n"
		"\n"
		"  --db PATH              SQLite database, created if missing (default %s)\n"
		"  --frequency HZ         samples per second per CPU, 1-10000 (default 19)\n"
		"  --flush-interval S     seconds between drains to the database, 1-3600 (default 10)\n"
		"  --include-idle         also count the idle task (pid 0)\n"
		"  --debug-dir DIR        root of separate debug files (default /usr/lib/debug)\n"
		"  --max-stacks N         stack map entries per flush, 256-1048576 (default: two\n"
		"                         per CPU per tick of a flush, at least 8192, about 1 KiB\n"
		"                         of kernel memory each); stacks that find their hash\n"
		"                         bucket taken are counted as lost\n"
		"  --max-keys N           distinct (thread, second, stack) keys per flush,\n"
		"                         256-4194304 (default 16384); more are counted as lost\n"
		"  -v, --verbose          log a line per flush, and libbpf's debug output\n"
		"  -h, --help             show this help and exit\n"
		"  -V, --version          show the version and exit\n"
		"\n"
		"Read the profiles with: flamectl --db PATH query --pid N\n",
		DEFAULT_DB);
}

__attribute__((noreturn, format(printf, 1, 2)))
static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("flamed: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\ntry 'flamed --help'\n", stderr);
	exit(2);
}

static unsigned parse_uint(const char *name, const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		die_usage("%s wants a whole number from %u to %u, not '%s'", name, lo, hi, s);
	return (unsigned)v;
}

static void parse_options(int argc, char **argv)
{
	enum { O_DB = 256, O_FREQ, O_FLUSH, O_IDLE, O_DEBUG_DIR, O_MAX_STACKS, O_MAX_KEYS };
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, O_DB },
		{ "frequency", required_argument, NULL, O_FREQ },
		{ "flush-interval", required_argument, NULL, O_FLUSH },
		{ "include-idle", no_argument, NULL, O_IDLE },
		{ "debug-dir", required_argument, NULL, O_DEBUG_DIR },
		{ "max-stacks", required_argument, NULL, O_MAX_STACKS },
		{ "max-keys", required_argument, NULL, O_MAX_KEYS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vhV", longopts, NULL)) != -1) {
		switch (c) {
		case O_DB: opt.db = optarg; break;
		case O_FREQ: opt.frequency = parse_uint("--frequency", optarg, 1, 10000); break;
		case O_FLUSH: opt.flush_interval = parse_uint("--flush-interval", optarg, 1, 3600); break;
		case O_IDLE: opt.include_idle = true; break;
		case O_DEBUG_DIR: opt.debug_dir = optarg; break;
		case O_MAX_STACKS: opt.max_stacks = parse_uint("--max-stacks", optarg, 256, 1 << 20); break;
		case O_MAX_KEYS: opt.max_keys = parse_uint("--max-keys", optarg, 256, 1 << 22); break;
		case 'v': opt.verbose = true; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("flamed %s\n", FLAMED_VERSION); exit(0);
		case ':': die_usage("%s needs a value", argv[optind - 1]);
		default: die_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (!opt.db[0])
		die_usage("--db needs a path");
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !opt.verbose)
		return 0;
	fputs("flamed: libbpf: ", stderr);
	return vfprintf(stderr, fmt, ap);
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

/* Appends ";name" (or "name" first) to the folded stack at *len; false when it would not fit. */
static bool append_frame(struct flush *f, size_t *len, const char *name, const char *suffix)
{
	int n = snprintf(f->folded + *len, sizeof(f->folded) - *len, "%s%s%s", *len ? ";" : "", name, suffix);

	if (n < 0 || (size_t)n >= sizeof(f->folded) - *len)
		return false;
	*len += n;
	return true;
}

/* Did bpf_get_stackid() fail (as opposed to there being no stack of that kind, -EFAULT)? */
static bool stack_lost(__s32 id)
{
	return id < 0 && id != -EFAULT;
}

/* Builds the folded stack of one sample, root first: user frames, then kernel frames marked _[k]. */
static void fold(struct flush *f, const struct sampler_sample *s)
{
	char name[FRAME_NAME_MAX];
	size_t len = 0;

	if (s->nu) {
		for (unsigned i = s->nu; i-- > 0;) {
			symbolizer_user(f->sym, s->key->pid, s->uips[i], i > 0, name, sizeof(name));
			append_frame(f, &len, name, "");
		}
	} else if (stack_lost(s->key->ustack_id)) {
		append_frame(f, &len, "[unknown]", "");
	}
	if (s->nk) {
		for (unsigned i = s->nk; i-- > 0;) {
			symbolizer_kernel(f->sym, s->kips[i], name, sizeof(name));
			append_frame(f, &len, name, "_[k]");
		}
	} else if (stack_lost(s->key->kstack_id)) {
		append_frame(f, &len, "[unknown]", "_[k]");
	}
	if (!len)
		append_frame(f, &len, "[unknown]", "");
	f->folded[len] = '\0';
}

static int store_sample(const struct sampler_sample *s, void *ctx)
{
	struct flush *f = ctx;
	char comm[PROFILE_COMM_LEN + 16], thread[PROFILE_COMM_LEN + 16];
	int err;

	f->keys++;
	f->samples += s->count;
	if (f->store_err)
		return 0; /* the transaction failed; keep draining so the maps empty */
	fold(f, s);
	clean_comm(comm, s->key->pcomm);
	clean_comm(thread, s->key->comm);
	struct store_sample row = {
		.ts = s->unix_sec,
		.pid = s->key->pid,
		.tid = s->key->tid,
		.comm = comm,
		.thread = thread,
		.folded = f->folded,
		.count = s->count,
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

static const char *const stat_names[STAT_MAX] = {
	[STAT_KSTACK_COLLISION] = "kernel stack collisions",
	[STAT_USTACK_COLLISION] = "user stack collisions",
	[STAT_STACK_MAP_FULL] = "stack map full",
	[STAT_STACK_OTHER] = "other stack errors",
	[STAT_COUNTS_FULL] = "counts map full",
};

/* Logs, once, the stack-capture failures counted since the previous flush. */
static void log_losses(const struct sampler_stats *now, struct sampler_stats *prev)
{
	char line[512];
	size_t len = 0;

	for (int i = STAT_KSTACK_COLLISION; i < STAT_MAX; i++) {
		uint64_t d = now->stat[i] - prev->stat[i];

		if (d && len < sizeof(line))
			len += snprintf(line + len, sizeof(line) - len, "%s%llu %s", len ? ", " : "",
					(unsigned long long)d, stat_names[i]);
	}
	if (len)
		fprintf(stderr, "flamed: this flush lost stacks or samples: %s%s\n", line,
			now->stat[STAT_COUNTS_FULL] > prev->stat[STAT_COUNTS_FULL] ? " (raise --max-keys)" :
			now->stat[STAT_KSTACK_COLLISION] + now->stat[STAT_USTACK_COLLISION] >
					prev->stat[STAT_KSTACK_COLLISION] + prev->stat[STAT_USTACK_COLLISION] ?
				" (raise --max-stacks)" : "");
	*prev = *now;
}

/* Two stack map entries per CPU per tick of one flush: the stack map is a hash table with one stack
 * per bucket, so a bucket taken by another stack loses the new one; room keeps that rare. */
static unsigned default_max_stacks(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t n = 2ULL * (cpus > 0 ? cpus : 1) * opt.frequency * opt.flush_interval;

	return n < 8192 ? 8192 : n > (1 << 20) ? 1 << 20 : (unsigned)n;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Drains the sampler into one store transaction. Returns 0 or -errno (the samples of a failed
 * transaction are lost and logged). */
static int flush(struct sampler *smp, struct flush *f, struct sampler_stats *prev)
{
	struct sampler_stats st;
	double t0 = now_sec();
	int err;

	f->samples = f->keys = f->rejected = 0;
	f->store_err = store_begin(f->store);
	if (f->store_err)
		fprintf(stderr, "flamed: cannot start a transaction in %s: %s\n", opt.db, store_errmsg(f->store));
	symbolizer_begin_flush(f->sym);
	err = sampler_drain(smp, store_sample, f);
	if (err)
		fprintf(stderr, "flamed: draining the BPF maps failed: %s\n", strerror(-err));
	if (!f->store_err)
		f->store_err = store_commit(f->store);
	if (f->store_err) {
		fprintf(stderr, "flamed: %llu samples of this flush not stored in %s: %s\n",
			(unsigned long long)f->samples, opt.db, store_errmsg(f->store));
		store_rollback(f->store);
	}
	if (f->rejected)
		fprintf(stderr, "flamed: %llu samples rejected by the store as malformed\n",
			(unsigned long long)f->rejected);
	if (!sampler_get_stats(smp, &st))
		log_losses(&st, prev);
	if (opt.verbose)
		fprintf(stderr, "flamed: flushed %llu samples in %llu keys in %.1f ms\n",
			(unsigned long long)f->samples, (unsigned long long)f->keys, (now_sec() - t0) * 1e3);
	return f->store_err ? f->store_err : err;
}

static int setup_fds(int *sfd, int *tfd)
{
	sigset_t mask;
	struct itimerspec its = {
		.it_value = { .tv_sec = opt.flush_interval },
		.it_interval = { .tv_sec = opt.flush_interval },
	};

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	*sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (*sfd < 0)
		return -errno;
	*tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (*tfd < 0 || timerfd_settime(*tfd, 0, &its, NULL))
		return -errno;
	return 0;
}

/* Flushes every interval until SIGINT/SIGTERM, then flushes once more. */
static int run(struct sampler *smp, struct flush *f)
{
	struct sampler_stats prev = { 0 };
	int sfd = -1, tfd = -1, err;

	err = setup_fds(&sfd, &tfd);
	if (err) {
		fprintf(stderr, "flamed: cannot set up signals and timers: %s\n", strerror(-err));
		goto out;
	}
	for (;;) {
		struct pollfd pfd[2] = { { .fd = sfd, .events = POLLIN }, { .fd = tfd, .events = POLLIN } };
		uint64_t ticks;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (pfd[0].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				fprintf(stderr, "flamed: %s: storing what is pending, then exiting\n",
					strsignal(si.ssi_signo));
			err = flush(smp, f, &prev);
			break;
		}
		if (pfd[1].revents && read(tfd, &ticks, sizeof(ticks)) == sizeof(ticks))
			flush(smp, f, &prev);
	}
out:
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	return err;
}

int main(int argc, char **argv)
{
	static struct flush f; /* large: keep it off the stack */
	struct sampler *smp = NULL;
	int err;

	parse_options(argc, argv);
	libbpf_set_print(libbpf_log);

	err = store_open(opt.db, STORE_READ_WRITE, &f.store);
	if (err) {
		fprintf(stderr, "flamed: cannot open database %s: %s%s\n", opt.db,
			f.store ? store_errmsg(f.store) : strerror(-err),
			err == -ENOENT ? " (create its directory or pass --db PATH)" : "");
		goto out;
	}
	struct symbolizer_opts so = { .debug_dir = opt.debug_dir };
	err = symbolizer_new(&so, &f.sym);
	if (err) {
		fprintf(stderr, "flamed: cannot start the symbolizer: %s\n", strerror(-err));
		goto out;
	}
	if (!opt.max_stacks)
		opt.max_stacks = default_max_stacks();
	struct sampler_opts sopts = {
		.frequency = opt.frequency,
		.include_idle = opt.include_idle,
		.max_stacks = opt.max_stacks,
		.max_keys = opt.max_keys,
	};
	err = sampler_new(&sopts, &smp);
	if (err) {
		fprintf(stderr, "flamed: cannot load and attach the BPF profiler: %s%s\n", strerror(-err),
			err == -EPERM || err == -EACCES ?
				" (run as root, or grant CAP_BPF and CAP_PERFMON)" : "");
		goto out;
	}
	struct sampler_stats st;
	if (!sampler_get_stats(smp, &st))
		fprintf(stderr, "flamed: sampling %u CPUs at %u Hz, storing every %u s in %s\n", st.cpus,
			opt.frequency, opt.flush_interval, opt.db);
	err = run(smp, &f);
out:
	sampler_free(smp);
	symbolizer_free(f.sym);
	store_close(f.store);
	return err ? 1 : 0;
}
