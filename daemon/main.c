/* main.c - flamed: options, lifecycle, signals and the watchdog; every flush drains the sampler into
 * ingest (frames named and folded), which adds the rows to the store. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <bpf/libbpf.h>

#include "http/http.h"
#include "http/tls.h"
#include "deferred.h"
#include "runtimes.h"
#include "ingest.h"
#include "lineage.h"
#include "losses.h"
#include "options.h"
#include "notify.h"
#include "sampler.h"
#include "rechecks.h"
#include "status.h"
#include "token.h"
#include "unwcache.h"
#include "query/query.h"
#include "store/store.h"
#include "symbolize/symbolizer.h"
#include "unwind/unwinder.h"

/* The parsed options: the only mutable global. */
static struct options opt;

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && opt.verbose < 2)
		return 0;
	fputs(strncmp(fmt, "libbpf: ", 8) ? "flamed: libbpf: " : "flamed: ", stderr); /* most say "libbpf: " */
	return vfprintf(stderr, fmt, ap);
}

/* Stacks of blocked threads kept until their waits are counted (the sampler's max_off_cpu_stacks). */
#define OFF_CPU_STACKS 8192
#define DEFER_MAX_BYTES (64u << 20) /* deferred samples kept: about 1,800 of 36 KiB (most copies are shorter) */
#define DEFER_MAX_WAIT_S ((double)DEFER_WINDOW_S) /* how long one waits for its tables (libtorch's: 7 s) */
/* Two stacks (kernel and user) per CPU per tick of one flush: room for every sample's stacks even
 * when all differ. The map allocates as stacks arrive, so unused room costs nothing. */
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

/* The daemon: the flush path (main thread only) and the state HTTP threads may read or poke. */
struct daemon {
	struct rechecks rechecks;     /* new processes' mappings read again shortly */
	uint64_t rechecks_unchanged;  /* ... that found them as they were */
	uint64_t reports_chained; /* later reports of an image its rechecks read again */
	struct sampler *smp;
	struct unwinder *unw;      /* NULL with --unwind fp */
	struct tablecache *unwcache; /* the unwinder's tables on disk; NULL: none */
	struct debugfiles files;   /* debug files fetched (--debuginfod); stored frames named when read */
	struct deferred *deferred; /* samples before their process's tables; NULL when not deferred */
	struct store *store;
	struct symbolizer *sym;
	struct runtimes rts;       /* the runtimes walked (CPython): each NULL when its walker is off */
	struct ingest *ingest;     /* what a flush does with each sample drained */
	struct lineage *lineage;   /* who started whom, written with each flush */
	struct http *http;
	struct tls *tls;          /* the certificate and key HTTPS serves; NULL: plain HTTP */
	struct sampler_stats prev; /* for the losses logged per flush */
	int wake_fd;               /* eventfd: an HTTP thread asks for a flush now */
	pthread_mutex_t lock;      /* guards what follows */
	pthread_cond_t flushed;
	uint64_t flushes_started, flushes_done;
	int last_flush_err;
	bool stopping;             /* the loop has ended: no flush will come */
	double last_prune;         /* monotonic seconds; 0: never */
	double last_db_stats;      /* when the database's size and stacks were last counted */
	double watchdog_s;         /* systemd's watchdog interval; 0: none */
	bool store_failing;        /* the last flush could not be stored */
	bool asked;                /* HTTP asked for a flush that has not started yet */
	bool stopping_flush;       /* the flush before exiting: deferred samples are walked however far their
				    * tables are */
	double last_flush_start;   /* monotonic seconds; 0: none yet */
	uint64_t unstored_at_failure;
	double watchdog_sent;      /* monotonic seconds */
	struct daemon_status status;
};

#define DB_STATS_EVERY_S 60

/* Refreshes the status HTTP reads, after a flush. Called with d->lock held. */
static void update_status(struct daemon *d, const struct sampler_stats *st, double seconds)
{
	struct symbolizer_stats sy;
	struct foldcache_stats fc;
	struct store_stats ss;
	struct daemon_status *s = &d->status;

	s->cpus = st->cpus;
	s->samples = st->stat[STAT_SAMPLES];
	memcpy(s->lost, st->stat, sizeof(s->lost));
	s->sent_read = st->sent_read;
	s->sent_malformed = st->sent_malformed;
	s->sent_ring_bytes = st->sent_ring_bytes;
	s->flushes++;
	s->last_flush_time = time(NULL);
	s->last_flush_seconds = seconds;
	s->flush_seconds_total += seconds;
	symbolizer_get_stats(d->sym, &sy);
	s->symbolizer = sy;
	s->sym_user_hits = sy.user_hits;
	s->sym_user_misses = sy.user_misses;
	s->sym_kernel_hits = sy.kernel_hits;
	s->sym_kernel_misses = sy.kernel_misses;
	s->sym_binaries_cached = sy.binaries_cached;
	s->sym_processes_cached = sy.processes_cached;
	s->sym_cache_bytes = sy.symbol_bytes;
	s->sym_binaries_evicted = sy.binaries_evicted;
	s->sym_symbols_dropped = sy.symbols_dropped;
	ingest_get_stats(d->ingest, &fc, &s->frames);
	s->fold_hits = fc.hits;
	s->fold_misses = fc.misses;
	s->fold_full = fc.full;
	if (d->unw)
		unwinder_get_stats(d->unw, &s->unwind);
	if (d->deferred)
		deferred_get_stats(d->deferred, &s->deferred);
	s->samples += s->deferred.stored; /* counted once walked */
	for (unsigned i = 0; i < RUNTIMES; i++)
		runtimes_get_stats(&d->rts, i, s->runtime[i].stats);
	lineage_get_stats(d->lineage, &s->lineage);
	s->rechecks = d->rechecks.taken;
	s->rechecks_dropped = d->rechecks.dropped;
	s->rechecks_unchanged = d->rechecks_unchanged;
	s->reports_chained = d->reports_chained;
	ingest_get_cgroup_stats(d->ingest, &s->cgroups);
	/* Counting rows reads whole tables (seconds on a big database): once a minute, not per flush. */
	if ((!d->last_db_stats || now_sec() - d->last_db_stats >= DB_STATS_EVERY_S) &&
	    !store_get_stats(d->store, &ss)) {
		s->db_bytes = ss.db_bytes;
		s->stacks_stored = ss.stacks;
		d->last_db_stats = now_sec();
	}
}

/* Logs the first flush the store fails (disk full, say) and the first that works again, not every
 * one in between: sampling goes on, and what cannot be stored is counted as unstored. */
static void log_store_state(struct daemon *d, int err)
{
	if (err && !d->store_failing)
		fprintf(stderr, "flamed: cannot store samples in %s: %s; sampling goes on, and flushes are counted "
			"as unstored until it works again%s\n", opt.db, store_errmsg(d->store),
			err == -ENOSPC ? " (the disk is full: free space or lower --max-db-size)" : "");
	else if (!err && d->store_failing)
		fprintf(stderr, "flamed: storing in %s works again; %llu samples could not be stored meanwhile\n",
			opt.db, (unsigned long long)(d->status.samples_unstored - d->unstored_at_failure));
	if (err && !d->store_failing)
		d->unstored_at_failure = d->status.samples_unstored;
	d->store_failing = err != 0;
}

#define PRUNE_EVERY_S 60

/* Applies --retention and --max-db-size, at most once a minute. */
static void prune(struct daemon *d)
{
	struct store_prune_result r;
	double now = now_sec();
	int err;

	if (d->last_prune && now - d->last_prune < PRUNE_EVERY_S)
		return;
	d->last_prune = now;
	err = store_prune(d->store, (int64_t)time(NULL) - opt.retention, opt.max_db_size, &r);
	if (err) {
		fprintf(stderr, "flamed: cannot apply retention to %s: %s\n", opt.db, store_errmsg(d->store));
		return;
	}
	if (r.samples_deleted && (opt.verbose || r.bytes_before > opt.max_db_size))
		fprintf(stderr, "flamed: retention deleted %llu sample rows and %llu stacks before %lld in %.1f ms; "
			"%llu -> %llu bytes in use%s\n", (unsigned long long)r.samples_deleted,
			(unsigned long long)r.stacks_deleted, (long long)r.cut, (now_sec() - now) * 1e3,
			(unsigned long long)r.bytes_before, (unsigned long long)r.bytes_after,
			r.bytes_before > opt.max_db_size ? " (over --max-db-size)" : "");
	if (opt.verbose && (r.raw_folded || r.rows_expired))
		fprintf(stderr, "flamed: folded %llu raw rows into %llu rollup rows; %llu rows past their window\n",
			(unsigned long long)r.raw_folded, (unsigned long long)r.rollup_rows_written,
			(unsigned long long)r.rows_expired);
	pthread_mutex_lock(&d->lock);
	d->status.samples_pruned += r.samples_deleted;
	pthread_mutex_unlock(&d->lock);
}

static void on_process_event(const struct process_event *e, void *ctx);

/* Drains the sampler into one store transaction. Returns 0 or -errno (the samples of a failed
 * transaction are lost, logged and counted). */
/* sampler_drain's callback: a sample to the ingest, an off-CPU wait under a deferred block's id by way of
 * the deferred samples, which put the block's walk in place of the id. */
static int drain_sample(const struct sampler_sample *s, void *ctx)
{
	struct daemon *d = ctx;

	if (d->deferred && (s->key->flags & (SAMPLE_OFFCPU | SAMPLE_DEFERRED)) == (SAMPLE_OFFCPU | SAMPLE_DEFERRED))
		return deferred_offcpu(d->deferred, s, ingest_sample, d->ingest);
	return ingest_sample(s, d->ingest);
}

static int flush(struct daemon *d)
{
	struct sampler_stats st = { 0 };
	struct ingest_counts n;
	struct timespec drained;
	uint64_t n_deferred = 0;
	double t0 = now_sec();
	int err, store_err;

	pthread_mutex_lock(&d->lock);
	d->flushes_started++;
	pthread_mutex_unlock(&d->lock);
	d->last_flush_start = t0;

	/* The processes first sampled so far, so that their parents go with their samples. */
	sampler_read_events(d->smp, on_process_event, d);
	if (d->deferred) /* waiting for their tables, maybe longer than the symbolizer keeps an idle process */
		deferred_keep_names(d->deferred, d->sym);
	ingest_begin(d->ingest);
	/* Just before the maps switch: what was sampled earlier is in this flush. */
	clock_gettime(CLOCK_REALTIME, &drained);
	err = sampler_drain(d->smp, drain_sample, d);
	if (err)
		fprintf(stderr, "flamed: draining the BPF maps failed: %s\n", strerror(-err));
	if (d->deferred) { /* the deferred samples whose tables came, and those that waited too long */
		deferred_poll(d->deferred, d->stopping_flush);
		struct unix_clock clock = sampler_clock(d->smp);

		n_deferred = deferred_emit(d->deferred, &clock, ingest_sample, d->ingest);
	}
	lineage_store(d->lineage, d->store); /* fails only with the flush's transaction */
	store_err = ingest_end(d->ingest, &n);
	log_store_state(d, store_err);
	if (n.rejected)
		fprintf(stderr, "flamed: %llu samples rejected by the store as malformed\n",
			(unsigned long long)n.rejected);
	if (!sampler_get_stats(d->smp, &st))
		losses_log(&st, &d->prev, OFF_CPU_STACKS);
	if (opt.verbose) {
		/* The first line's form is read by tests and bench/run.sh: "flushed N samples in K keys in
		 * X ms, drained at T" (T in Unix seconds: a kill -9 test knows what was committed by when). */
		fprintf(stderr, "flamed: flushed %llu samples in %llu keys in %.1f ms, drained at %lld.%06ld\n",
			(unsigned long long)n.samples, (unsigned long long)n.keys, (now_sec() - t0) * 1e3,
			(long long)drained.tv_sec, drained.tv_nsec / 1000);
		fprintf(stderr, "flamed: stacks so far: %llu read in batches, %llu looked up one by one\n",
			(unsigned long long)st.stacks_stashed, (unsigned long long)st.stacks_looked_up);
		if (d->deferred)
			fprintf(stderr, "flamed: deferred samples: %llu walked now\n", (unsigned long long)n_deferred);
		if (opt.off_cpu)
			fprintf(stderr, "flamed: off-CPU: %llu keys, %.3f s blocked\n",
				(unsigned long long)n.offcpu_keys, n.offcpu_us / 1e6);
	}
	err = store_err ? store_err : err;

	prune(d);
	if (d->unw)
		unwinder_request_sweep(d->unw);
	runtimes_flush_end(&d->rts);

	pthread_mutex_lock(&d->lock);
	if (store_err) {
		d->status.samples_unstored += n.samples;
		d->status.offcpu_us_unstored += n.offcpu_us;
	} else {
		d->status.samples_stored += n.samples;
		d->status.offcpu_keys_stored += n.offcpu_keys;
		d->status.offcpu_us_stored += n.offcpu_us;
	}
	update_status(d, &st, now_sec() - t0);
	d->last_flush_err = err;
	d->flushes_done = d->flushes_started;
	pthread_cond_broadcast(&d->flushed);
	pthread_mutex_unlock(&d->lock);
	return err;
}

/* http_opts.get_status: a copy of the live state. */
static void get_status(struct daemon_status *out, void *ctx)
{
	struct daemon *d = ctx;

	pthread_mutex_lock(&d->lock);
	*out = d->status;
	pthread_mutex_unlock(&d->lock);
	debugfiles_get_status(&d->files, &opt, &out->debuginfod);
}

/* http_opts.flush_now: wakes the main loop and waits for a flush that started after this call. */
static int flush_now(void *ctx)
{
	struct daemon *d = ctx;
	uint64_t one = 1, want;
	int err;

	pthread_mutex_lock(&d->lock);
	want = d->flushes_started + 1;
	pthread_mutex_unlock(&d->lock);
	if (write(d->wake_fd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	pthread_mutex_lock(&d->lock);
	while (d->flushes_done < want && !d->stopping)
		pthread_cond_wait(&d->flushed, &d->lock);
	err = d->flushes_done < want ? -ECANCELED : d->last_flush_err;
	pthread_mutex_unlock(&d->lock);
	return err;
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
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPIPE);
	if (pthread_sigmask(SIG_BLOCK, &mask, NULL))
		return -EINVAL;
	sigdelset(&mask, SIGPIPE);
	*sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (*sfd < 0)
		return -errno;
	*tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (*tfd < 0 || timerfd_settime(*tfd, 0, &its, NULL))
		return -errno;
	return 0;
}

/* Reads again the processes whose time has come; returns the poll timeout (ms) to the next one, -1
 * for none. */
static int run_rechecks(struct daemon *d)
{
	double now = now_sec();
	unsigned round;
	uint32_t pid;

	while (rechecks_next(&d->rechecks, now, &pid, &round)) {
		const struct procmap *maps = NULL;
		size_t n = 0;

		/* One read of its mappings, for the symbolizer, the unwinder and the runtimes, by the maps file
		 * its first read left open, closed at the last round's. Found as they were, the unwinder and
		 * the runtimes have them already (handed on at the report, or the read before) and the
		 * dynamic loader is done: nothing is handed on, and the next read is the last round's (a
		 * runtime's jitdump file). */
		unsigned held = round + 1 < RECHECK_ROUNDS ? PROCCACHE_KEEP_FD : PROCCACHE_CLOSE_FD;

		if (symbolizer_snapshot(d->sym, pid, held) == 0) {
			if (!symbolizer_maps_changed(d->sym)) {
				d->rechecks_unchanged++;
				rechecks_queue(&d->rechecks, pid, round ? round + 1 : RECHECK_ROUNDS - 1, now);
				continue;
			}
			rechecks_queue(&d->rechecks, pid, round + 1, now);
			maps = symbolizer_maps(d->sym, pid, &n);
		}
		if (d->unw) /* libraries the dynamic loader mapped since */
			unwinder_request_maps(d->unw, pid, 0, maps, n, maps != NULL);
		runtimes_process(&d->rts, pid, 0, maps, n); /* libpython, once the dynamic loader mapped it */
	}
	return rechecks_timeout(&d->rechecks, now);
}

/* sampler_process_cb: a process was sampled for the first time; capture its mappings and binaries
 * now, in case it exits before the flush, and again shortly; give it unwind tables. Or its stack met
 * an address in none of its known mappings: read them again. */
static void on_process_event(const struct process_event *e, void *ctx)
{
	struct daemon *d = ctx;
	uint32_t pid = e->pid;
	unsigned kind = e->kind;
	uint64_t token = e->token;
	const struct procmap *maps = NULL;
	bool read_now = false;
	size_t n = 0;

	if (kind == PROCESS_PY_CODE) { /* named now, while the process lives; the flush finds it cached */
		runtimes_reported(&d->rts, pid, e->addr);
		return;
	}
	if (kind == PROCESS_NEW)
		lineage_note(d->lineage, pid, e->start_ns, e->ppid, e->ppid_start_ns);
	/* A later report of an image whose rechecks are queued: they read it again (3 and 18 ms after
	 * its first report, as the later reports come 5 and 15 ms after), so it is not read now too. Those
	 * reports stand for the first where it was lost (the ring full): the chain starts at one of them. */
	if (kind == PROCESS_NEW && rechecks_chained(&d->rechecks, pid, token)) {
		d->reports_chained++;
		return;
	}
	/* Gone: what is known is used. One read of its mappings serves the symbolizer and the runtimes. */
	if (kind == PROCESS_NEW) {
		read_now = symbolizer_snapshot(d->sym, pid, PROCCACHE_FRESH | PROCCACHE_KEEP_FD) == 0;
		if (read_now) {
			rechecks_queue(&d->rechecks, pid, 0, now_sec());
			rechecks_chain(&d->rechecks, pid, token);
		}
		maps = symbolizer_maps(d->sym, pid, &n); /* read now, or before: if it is gone by then */
	}
	/* Tables are built in the unwinder's thread: they may take a second. At a first sample the dynamic
	 * loader may still be mapping libraries: its own read, a moment later, sees more of them. */
	if (d->unw)
		unwinder_request_maps(d->unw, pid, token, maps, n, false);
	/* its interpreter, if any: before its next samples */
	runtimes_process(&d->rts, pid, token, read_now ? maps : NULL, read_now ? n : 0);
}

/* Tells systemd the daemon is alive, at half its watchdog interval; returns the poll timeout (ms) to
 * the next time, -1 for none. A main loop stuck in a flush stops these, and systemd restarts it. */
static int pet_watchdog(struct daemon *d)
{
	double now = now_sec(), due;

	if (!d->watchdog_s)
		return -1;
	due = d->watchdog_sent + d->watchdog_s / 2;
	if (now >= due) {
		notify_send("WATCHDOG=1");
		d->watchdog_sent = now;
		due = now + d->watchdog_s / 2;
	}
	return (int)((due - now) * 1e3) + 1;
}

/* The smaller of two poll timeouts (-1: none). */
static int min_timeout(int a, int b)
{
	return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/* Flushes HTTP asks for (flush=1, /debug/pprof/profile) start at least this long after the last one
 * started: requests in a loop cannot keep the daemon flushing. */
#define ASKED_GAP_S 0.25

/* Runs the flush HTTP asked for when the gap allows; returns the poll timeout (ms) until it does, -1
 * for none. */
static int asked_flush(struct daemon *d)
{
	double wait;

	if (!d->asked)
		return -1;
	wait = d->last_flush_start + ASKED_GAP_S - now_sec();
	if (wait > 0)
		return (int)(wait * 1e3) + 1;
	d->asked = false;
	pthread_mutex_lock(&d->lock);
	d->status.flushes_asked++;
	pthread_mutex_unlock(&d->lock);
	flush(d);
	return -1;
}

/* SIGHUP: the TLS certificate and key read again (the listener and connections kept). */
static void reload_tls(struct daemon *d)
{
	char why[512];

	if (!d->tls)
		fprintf(stderr, "flamed: SIGHUP: no --tls-cert to read again\n");
	else if (tls_reload(d->tls, why, sizeof(why)))
		fprintf(stderr, "flamed: SIGHUP: the TLS certificate and key were not read again, the ones before "
			"serve on: %s\n", why);
	else
		fprintf(stderr, "flamed: SIGHUP: TLS certificate and key read again from %s, %s\n", opt.tls_cert,
			opt.tls_key);
}

/* Flushes every interval and when HTTP asks, until SIGINT/SIGTERM, then flushes once more; captures
 * new processes as they are first sampled. */
static int run(struct daemon *d, int sfd, int tfd)
{
	for (;;) {
		struct pollfd pfd[4] = {
			{ .fd = sfd, .events = POLLIN },
			{ .fd = tfd, .events = POLLIN },
			{ .fd = d->wake_fd, .events = POLLIN },
			{ .fd = sampler_events_fd(d->smp), .events = POLLIN },
		};
		uint64_t ticks;
		int timeout = min_timeout(min_timeout(run_rechecks(d), pet_watchdog(d)), asked_flush(d));

		timeout = min_timeout(timeout, runtimes_retry(&d->rts));
		if (d->deferred)
			timeout = min_timeout(timeout, deferred_poll(d->deferred, false));

		if (poll(pfd, 4, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[0].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) != sizeof(si))
				si.ssi_signo = SIGTERM;
			if (si.ssi_signo == SIGHUP) {
				reload_tls(d);
				continue;
			}
			fprintf(stderr, "flamed: %s: storing what is pending, then exiting\n", strsignal(si.ssi_signo));
			d->stopping_flush = true;
			return flush(d);
		}
		if (pfd[3].revents)
			sampler_read_events(d->smp, on_process_event, d);
		bool due = pfd[1].revents && read(tfd, &ticks, sizeof(ticks)) == sizeof(ticks);
		if (pfd[2].revents && read(d->wake_fd, &ticks, sizeof(ticks)) == sizeof(ticks))
			d->asked = true; /* run by asked_flush at the loop's top, when the gap allows */
		if (due) {
			d->asked = false; /* this flush serves them */
			flush(d);
		}
	}
}

/* Each runtime whose walker loaded (CPython: --python on). Python's options (--python-processes,
 * --python-frames, --python-code-cache) are the only runtime's. Logs and returns -errno. */
static int start_runtimes(struct daemon *d)
{
	struct runtime_config c = {
		.procs_fd = sampler_python_fd(d->smp),
		.max_procs = opt.python_processes,
		.max_frames = opt.python_frames,
		.max_names = opt.python_code_cache,
		.lines = true,
		.debug_dir = opt.debug_dir,
	};
	int err = 0;

	for (unsigned i = 0; i < RUNTIMES && !err; i++)
		if (d->status.bpf.feature[runtime_kinds[i].feature].on)
			err = runtimes_start(&d->rts, i, &c);
	return err;
}

/* Logs each feature asked for that the kernel refused, and makes the status say what runs. */
static void use_features(struct daemon *d)
{
	const struct bpf_feature_state *f = d->status.bpf.feature;

	bpffeature_log(&d->status.bpf);
	if (!f[BPF_FEATURE_UNWIND].on)
		d->status.unwind_mode = "fp";
	for (unsigned i = 0; i < RUNTIMES; i++)
		d->status.runtime[i].on = f[runtime_kinds[i].feature].on;
	d->status.off_cpu = f[BPF_FEATURE_OFFCPU].on;
	d->status.off_cpu_max_stacks = d->status.off_cpu ? OFF_CPU_STACKS : 0;
}

/* Tells the service manager (or flamectl record) that flamed samples, and what it left out. */
static void notify_ready(const struct daemon *d)
{
	char msg[2048];

	bpffeature_ready(&d->status.bpf, d->status.cpus, opt.frequency, msg, sizeof(msg));
	notify_send(msg);
}

/* Opens the store, the symbolizer and the sampler, in that order, then the unwinder, the Python walker
 * and the ingest step. Logs and returns -errno. */
static int start(struct daemon *d)
{
	struct symbolizer_opts so = {
		.debug_dir = opt.debug_dir,
		.max_symbol_bytes = (size_t)opt.symbol_cache_mb << 20,
		.inline_frames = opt.inline_frames,
		.fetch = d->files.fetch,
	};
	struct sampler_opts sopts = {
		.frequency = opt.frequency,
		.flush_interval = opt.flush_interval,
		.include_idle = opt.include_idle,
		.max_stacks = opt.max_stacks ? opt.max_stacks : default_max_stacks(),
		.max_keys = opt.max_keys,
		.unwind_mode = opt.unwind,
		.max_unwind_tables = 1024,
		.max_unwind_procs = opt.unwind_processes,
		.defer_new = true,
		.python = opt.python,
		.max_python_procs = opt.python_processes,
		.max_python_threads = 16384,
		.off_cpu = opt.off_cpu,
		.off_cpu_min_ns = (uint64_t)opt.off_cpu_min_us * 1000,
		.max_off_cpu_stacks = OFF_CPU_STACKS,
	};
	int err;

	err = store_open(opt.db, STORE_READ_WRITE, &d->store);
	if (err) {
		fprintf(stderr, "flamed: cannot open database %s: %s%s\n", opt.db, strerror(-err),
			err == -ENOENT ? " (create its directory or pass --db PATH)" : "");
		return err;
	}
	err = store_set_rollups(d->store, &(struct store_rollup_opts){
		.raw_seconds = opt.raw_retention,
		.minute_seconds = opt.minute_retention,
		/* a minute is folded once the flush that brings its last samples has come (prune runs right
		 * after a flush), with 20 s to spare for a slow one; queries read raw rows only after that */
		.fold_delay = (int64_t)opt.flush_interval + 20,
	}) ?: store_set_cpu_period(d->store, query_cpu_period_us(opt.frequency));
	if (err) {
		fprintf(stderr, "flamed: %s\n", store_errmsg(d->store));
		return err;
	}
	err = symbolizer_new(&so, &d->sym);
	if (err) {
		fprintf(stderr, "flamed: cannot start the symbolizer: %s\n", strerror(-err));
		return err;
	}
	err = sampler_new(&sopts, &d->smp, &d->status.bpf);
	if (err) {
		bpffeature_log_sampler(&d->status.bpf.cpu, err);
		return err;
	}
	use_features(d);
	err = lineage_new(&(struct lineage_opts){ .forks_fd = sampler_forks_fd(d->smp) }, &d->lineage);
	if (err) {
		fprintf(stderr, "flamed: cannot start the process tree: %s\n", strerror(-err));
		return err;
	}
	if (d->status.bpf.feature[BPF_FEATURE_UNWIND].on) {
		struct unwinder_opts uo = {
			.max_tables = sopts.max_unwind_tables,
			.max_procs = sopts.max_unwind_procs,
			.max_bytes = (size_t)opt.unwind_tables_mb << 20,
			.debug_dir = opt.debug_dir,
			.verbose = opt.verbose > 0,
			.cache = d->unwcache = unwcache_open(&opt),
		};

		sampler_unwind_fds(d->smp, &uo.tables_fd, &uo.procs_fd);
		err = unwinder_new(&uo, &d->unw);
		if (err)
			fprintf(stderr, "flamed: cannot start the unwinder: %s\n", strerror(-err));
		if (!err && sopts.defer_new && sopts.unwind_mode != UNWIND_MODE_FP) {
			struct deferred_opts dop = { .tables_fd = uo.tables_fd, .procs_fd = uo.procs_fd,
						     .py_fd = d->status.bpf.feature[BPF_FEATURE_PYTHON].on ?
							      sampler_python_fd(d->smp) : -1,
						     .max_tables = uo.max_tables, .max_bytes = DEFER_MAX_BYTES,
						     .max_wait_s = DEFER_MAX_WAIT_S, .no_fp = opt.unwind == UNWIND_MODE_DWARF,
						     .unwinder = d->unw };

			err = deferred_new(&dop, &d->deferred);
			if (err)
				fprintf(stderr, "flamed: cannot keep deferred samples: %s\n", strerror(-err));
			else
				sampler_on_deferred(d->smp, deferred_add, d->deferred);
			d->status.deferred_on = !err;
		}
	}
	err = err ?: start_runtimes(d);
	if (err)
		return err;
	err = ingest_new(&(struct ingest_opts){ .store = d->store, .sym = d->sym, .rts = &d->rts, .cgroups = true },
			 &d->ingest);
	if (err)
		fprintf(stderr, "flamed: cannot start the ingest step: %s\n", strerror(-err));
	return err;
}

/* Serves the HTTP API unless --listen none. Logs and returns -errno. */
static int start_http(struct daemon *d)
{
	char token[512];
	struct http_opts ho = {
		.listen = opt.listen,
		.db_path = opt.db,
		.get_status = get_status,
		.flush_now = flush_now,
		.ctx = d,
		.namer = debugfiles_namer(&d->files),
	};
	int err;

	if (!strcmp(opt.listen, "none"))
		return 0;
	ho.tls = d->tls;
	if (opt.auth_token_file) {
		err = token_read(opt.auth_token_file, token, sizeof(token));
		if (err)
			return err;
		ho.auth_token = token;
	}
	err = http_new(&ho, &d->http);
	explicit_bzero(token, sizeof(token));
	if (err) {
		fprintf(stderr, "flamed: cannot serve HTTP on %s: %s%s\n", opt.listen, strerror(-err),
			err == -EADDRINUSE ? " (another flamed? pass --listen ADDR:PORT or --listen none)" :
			err == -EINVAL ? " (--listen wants ADDR:PORT, e.g. 127.0.0.1:7070 or [::1]:7070)" : "");
		return err;
	}
	fprintf(stderr, "flamed: serving the HTTP API on %s (port %u%s)\n", opt.listen, http_port(d->http),
		d->tls ? ", HTTPS" : "");
	return 0;
}

int main(int argc, char **argv)
{
	static struct daemon d = {
		.wake_fd = -1,
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.flushed = PTHREAD_COND_INITIALIZER,
	};
	struct sampler_stats st;
	struct timespec sampling;
	int sfd = -1, tfd = -1, err;

	/* Two malloc arenas, not eight per CPU: each HTTP thread's query (megabytes of page cache and
	 * answer) would otherwise grow an arena of its own, kept after it: 64 connections asking for
	 * profiles took flamed from 34 to 124 MB; with two (and two queries at once), 58 MB. */
	mallopt(M_ARENA_MAX, 2);
	/* Blocks of 128 KiB and more (a flush's tables, a query's answer) mapped apart and unmapped when
	 * freed, not carved from an arena: left to itself glibc raises this bound to the largest block freed,
	 * and the arenas then keep what those blocks left between small ones. Under the bench's load and 64
	 * connections of wrk on profile queries: steady 33 -> 25 MB, peak 59 -> 47 MB. */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	options_parse(argc, argv, &opt);
	libbpf_set_print(libbpf_log);
	d.status.version = FLAMED_VERSION;
	d.status.start_time = time(NULL);
	d.status.frequency = opt.frequency;
	d.status.flush_interval = opt.flush_interval;
	d.status.unwind_mode = opt.unwind == UNWIND_MODE_FP ? "fp" : opt.unwind == UNWIND_MODE_DWARF ? "dwarf" : "auto";
	for (unsigned i = 0; i < RUNTIMES; i++) /* on once their walkers load (use_features) */
		d.status.runtime[i].max_frames = opt.python_frames;
	d.status.off_cpu = opt.off_cpu;
	d.status.off_cpu_min_us = opt.off_cpu_min_us;
	d.status.off_cpu_max_stacks = opt.off_cpu ? OFF_CPU_STACKS : 0;

	/* The certificate and key first: a bad one stops flamed before anything is stored. */
	if (opt.tls_cert && strcmp(opt.listen, "none")) {
		char why[512];

		err = tls_new(opt.tls_cert, opt.tls_key, opt.tls_client_ca, &d.tls, why, sizeof(why));
		if (err) {
			fprintf(stderr, "flamed: cannot serve HTTPS: %s\n", why);
			goto out;
		}
	}
	/* Signals are blocked before any thread starts, so only the main loop receives them. */
	err = setup_fds(&sfd, &tfd);
	if (err) {
		fprintf(stderr, "flamed: cannot set up signals and timers: %s\n", strerror(-err));
		goto out;
	}
	d.wake_fd = eventfd(0, EFD_CLOEXEC);
	if (d.wake_fd < 0) {
		err = -errno;
		goto out;
	}
	debugfiles_open(&opt, &d.files); /* before any thread: it sets libdebuginfod's environment */
	err = start(&d);
	if (err)
		goto out;
	clock_gettime(CLOCK_REALTIME, &sampling);
	if (!sampler_get_stats(d.smp, &st))
		d.status.cpus = st.cpus;
	fprintf(stderr, "flamed: sampling %u CPUs at %u Hz, storing every %u s in %s\n", d.status.cpus,
		opt.frequency, opt.flush_interval, opt.db);
	/* When every CPU was sampled, in Unix seconds: a test reading this log late knows from when. */
	if (opt.verbose)
		fprintf(stderr, "flamed: sampling since %lld.%06ld\n", (long long)sampling.tv_sec,
			sampling.tv_nsec / 1000);
	err = start_http(&d);
	if (err)
		goto out;
	/* Ready once sampling runs and the API answers: what Type=notify waits for. */
	d.watchdog_s = notify_watchdog_usec() / 1e6;
	d.watchdog_sent = now_sec();
	notify_ready(&d);
	err = run(&d, sfd, tfd);
	notify_send("STOPPING=1");
out:
	pthread_mutex_lock(&d.lock);
	d.stopping = true; /* releases HTTP requests waiting for a flush */
	pthread_cond_broadcast(&d.flushed);
	pthread_mutex_unlock(&d.lock);
	http_free(d.http); /* before the store and sampler: requests in flight may wait on a flush */
	tls_free(d.tls);
	unwinder_free(d.unw);
	tablecache_free(d.unwcache);
	ingest_free(d.ingest);
	lineage_free(d.lineage);
	runtimes_free(&d.rts);
	sampler_free(d.smp);
	deferred_free(d.deferred); /* after the sampler, whose callback fed it */
	symbolizer_free(d.sym);
	debugfiles_close(&d.files);
	store_close(d.store);
	if (d.wake_fd >= 0)
		close(d.wake_fd);
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	return err ? 1 : 0;
}
