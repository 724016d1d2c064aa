/* bpfload.c - opens, sizes and loads profile.bpf.c. The CPU sampler must load; each optional feature
 * (unwind tables, Python frames, the fork hook, off-CPU time and its task iterator) whose program the
 * kernel refuses is left out and the object loaded again without it, and what was refused and why is
 * kept in a report. */
#include <errno.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfload.h"
#include "profile.skel.h"

/* A refused program's verifier log: from Linux 6.4 the kernel keeps its end when it does not fit; before,
 * a log that does not fit makes the load fail with ENOSPC instead of the verifier's own error. */
#define LOG_SIZE (1u << 20)
/* Loads tried at most: the first, one with preallocated maps, one per feature left out. */
#define MAX_LOADS (2 + BPF_FEATURE_MAX)
#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The programs: the feature each serves (BPF_FEATURE_MAX: the CPU sampler itself, which must load),
 * and its REFUSE_* bit for tests. */
static const struct {
	const char *name;
	int feature;
	unsigned refuse;
} programs[] = {
	{ "profile_tick", BPF_FEATURE_MAX, REFUSE_PROFILE_TICK },
	{ "process_exec", BPF_FEATURE_MAX, REFUSE_PROCESS_EXEC },
	{ "walk_native", BPF_FEATURE_UNWIND, 0 },
	{ "walk_python", BPF_FEATURE_PYTHON, 0 }, /* refused for tests by "python" (REFUSE_PYTHON) */
	{ "offcpu_walk_native", BPF_FEATURE_UNWIND, 0 }, /* with off-CPU time: sched_switch's walkers */
	{ "offcpu_walk_python", BPF_FEATURE_PYTHON, 0 },
	{ "process_fork", BPF_FEATURE_FORKS, REFUSE_PROCESS_FORK },
	{ "offcpu_switch", BPF_FEATURE_OFFCPU, REFUSE_OFFCPU_SWITCH },
	{ "offcpu_exit", BPF_FEATURE_OFFCPU, REFUSE_OFFCPU_EXIT },
	{ "offcpu_ongoing", BPF_FEATURE_OFFCPU_ONGOING, REFUSE_OFFCPU_ONGOING },
};

/* The REFUSE_* bits FLAMED_TEST_REFUSE names (program names and "python", comma-separated). */
static unsigned test_refuse(void)
{
	const char *env = getenv("FLAMED_TEST_REFUSE"), *p = env;
	unsigned bits = 0;

	while (p && *p) {
		size_t n = strcspn(p, ",");

		if (n == 6 && !strncmp(p, "python", 6))
			bits |= REFUSE_PYTHON;
		for (size_t i = 0; i < LEN(programs); i++)
			if (strlen(programs[i].name) == n && !strncmp(p, programs[i].name, n))
				bits |= programs[i].refuse;
		p += n + (p[n] == ',');
	}
	return bits;
}

/* Gives the array of maps outer (a generation's maps by number) the template its inner maps must match:
 * inner's type, key, value and flags, with one entry. libbpf's own would take the size and flags the
 * BPF object declares: as much memory as a preallocated map of that size while it loads, and the wrong
 * flags once the stacks maps are preallocated. Returns the template's descriptor (closed by the caller
 * after the load) or -errno. */
static int set_template(struct bpf_map *outer, const struct bpf_map *inner)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = bpf_map__map_flags(inner));
	int fd = bpf_map_create(bpf_map__type(inner), NULL, bpf_map__key_size(inner), bpf_map__value_size(inner), 1, &o);
	int err;

	if (fd < 0)
		return -errno;
	err = bpf_map__set_inner_map_fd(outer, fd);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* The deferred samples' ring buffer (defer_new): DEFER_RING_PER_CPU bytes per possible CPU, in a power of
 * two from DEFER_RING_MIN to DEFER_RING_MAX. Records are as long as the stack they copied (up to 39 KiB;
 * a short program's main thread, a few KiB), so 1 MiB holds about 50 of the longest, enough for the main
 * loop to be busy with a flush meanwhile (a fuller one: those samples are read by frame pointers,
 * counted). Its pages are mapped twice into flamed (the ring wraps), so it counts twice in flamed's
 * RSS: 4 MiB on 2 CPUs. */
#define DEFER_RING_PER_CPU (1u << 20)
#define DEFER_RING_MIN (1u << 20)
#define DEFER_RING_MAX (8u << 20)

/* The deferred ring buffer's size for ncpus possible CPUs. */
static unsigned defer_ring_bytes(int ncpus)
{
	size_t want = (size_t)ncpus * DEFER_RING_PER_CPU;
	unsigned bytes = DEFER_RING_MIN;

	while (bytes < DEFER_RING_MAX && bytes < want)
		bytes <<= 1;
	return bytes;
}

/* The samples ring (send_walked): what comes in one flush interval at opts' frequency, for records of
 * SENT_RECORD_BYTES (a key and 38 frames), in a power of two from SENT_RING_MIN to SENT_RING_MAX. What does
 * not fit goes to the maps, as before the ring (STAT_SEND_FULL): only a cost, no loss. Mapped twice, as
 * the deferred ring: its pages count twice in flamed's RSS once written (2 MiB at 99 Hz on 2 CPUs). */
#define SENT_RECORD_BYTES 400u
#define SENT_RING_MIN (64u << 10)
#define SENT_RING_MAX (4u << 20)

static unsigned sent_ring_bytes(int ncpus, unsigned frequency, unsigned flush_interval)
{
	double want = (double)ncpus * frequency * (flush_interval ?: 1) * SENT_RECORD_BYTES;
	unsigned bytes = SENT_RING_MIN;
	const char *test = getenv("FLAMED_TEST_SENT_RING"); /* tests only: a smaller ring, to fill */

	if (test && !strcmp(test, "4096"))
		return 4096;

	while (bytes < SENT_RING_MAX && bytes < want)
		bytes <<= 1;
	return bytes;
}

/* CLOCK_MONOTONIC now, in ns: the clock of the kernel's task start times and bpf_ktime_get_ns(). */
static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* Sets the knobs, map sizes and programs of the opened skel for what rep still has on. */
static int configure(struct profile *skel, const struct sampler_opts *opts, const struct bpfload_report *rep,
		     int templates[3])
{
	const struct bpf_feature_state *f = rep->feature;
	bool off_cpu = f[BPF_FEATURE_OFFCPU].on;
	int err, ncpus = libbpf_num_possible_cpus();

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	skel->rodata->include_idle = opts->include_idle;
	skel->rodata->unwind_mode = f[BPF_FEATURE_UNWIND].on ? opts->unwind_mode : UNWIND_MODE_FP;
	skel->rodata->python_walk = f[BPF_FEATURE_PYTHON].on;
	skel->rodata->defer_new = f[BPF_FEATURE_UNWIND].on && opts->unwind_mode != UNWIND_MODE_FP && opts->defer_new;
	skel->rodata->defer_since_ns = mono_ns();
	/* Samples sent whole: only where a walker program walks them (not with --unwind fp). */
	skel->rodata->send_walked = f[BPF_FEATURE_UNWIND].on && opts->unwind_mode != UNWIND_MODE_FP;
	skel->rodata->test_refuse = test_refuse();
	if ((err = bpf_map__set_max_entries(skel->maps.deferred, skel->rodata->defer_new ? defer_ring_bytes(ncpus) : 4096)) ||
	    (err = bpf_map__set_max_entries(skel->maps.samples, skel->rodata->send_walked ?
					    sent_ring_bytes(ncpus, opts->frequency, opts->flush_interval) : 4096)) ||
	    (err = bpf_map__set_max_entries(skel->maps.defer_records, skel->rodata->defer_new ? (unsigned)ncpus : 1)) ||
	    (err = bpf_map__set_max_entries(skel->maps.py_procs, opts->max_python_procs ?: 1)) ||
	    (err = bpf_map__set_max_entries(skel->maps.py_threads, opts->max_python_threads ?: 1)) ||
	    (err = bpf_map__set_max_entries(skel->maps.unwind_tables, opts->max_unwind_tables ?: 1)) ||
	    (err = bpf_map__set_max_entries(skel->maps.unwind_procs, opts->max_unwind_procs ?: 1)) ||
	    (err = bpf_map__set_max_entries(skel->maps.counts0, opts->max_keys)) ||
	    (err = bpf_map__set_max_entries(skel->maps.counts1, opts->max_keys)) ||
	    (err = bpf_map__set_max_entries(skel->maps.stacks0, opts->max_stacks)) ||
	    (err = bpf_map__set_max_entries(skel->maps.stacks1, opts->max_stacks)))
		return err;
	/* Off-CPU: its programs load only when asked for, its maps take room only then. */
	skel->rodata->offcpu_min_ns = opts->off_cpu_min_ns;
	/* The walkers profile_tick and offcpu_switch hand user stacks to: only those their features need. */
	if ((err = bpf_program__set_autoload(skel->progs.walk_native, f[BPF_FEATURE_UNWIND].on)) ||
	    (err = bpf_program__set_autoload(skel->progs.walk_python, f[BPF_FEATURE_PYTHON].on)) ||
	    (err = bpf_program__set_autoload(skel->progs.offcpu_walk_native, off_cpu && f[BPF_FEATURE_UNWIND].on)) ||
	    (err = bpf_program__set_autoload(skel->progs.offcpu_walk_python, off_cpu && f[BPF_FEATURE_PYTHON].on)))
		return err;
	if ((err = bpf_program__set_autoload(skel->progs.process_fork, f[BPF_FEATURE_FORKS].on)) ||
	    (err = bpf_program__set_autoload(skel->progs.offcpu_switch, off_cpu)) ||
	    (err = bpf_program__set_autoload(skel->progs.offcpu_exit, off_cpu)) ||
	    (err = bpf_program__set_autoload(skel->progs.offcpu_ongoing, f[BPF_FEATURE_OFFCPU_ONGOING].on)) ||
	    (err = bpf_map__set_max_entries(skel->maps.offcpu0, off_cpu ? opts->max_keys : 1)) ||
	    (err = bpf_map__set_max_entries(skel->maps.offcpu1, off_cpu ? opts->max_keys : 1)) ||
	    (err = bpf_map__set_max_entries(skel->maps.offcpu_frames, off_cpu ? (opts->max_off_cpu_stacks ?: 1) : 1)))
		return err;
	if (rep->preallocated && ((err = bpf_map__set_map_flags(skel->maps.stacks0, 0)) ||
				  (err = bpf_map__set_map_flags(skel->maps.stacks1, 0)) ||
				  (err = bpf_map__set_map_flags(skel->maps.unwind_procs, 0))))
		return err;
	if ((templates[0] = set_template(skel->maps.counts_gen, skel->maps.counts0)) < 0)
		return templates[0];
	if ((templates[1] = set_template(skel->maps.stacks_gen, skel->maps.stacks0)) < 0)
		return templates[1];
	if ((templates[2] = set_template(skel->maps.offcpu_gen, skel->maps.offcpu0)) < 0)
		return templates[2];
	return 0;
}

/* Copies the last lines of a verifier log (up to BPFLOAD_LOG_TAIL bytes, whole lines) into out. */
static void log_tail(const char *log, char *out)
{
	size_t n = strlen(log), from;
	const char *nl;

	while (n && log[n - 1] == '\n')
		n--;
	from = n > BPFLOAD_LOG_TAIL - 1 ? n - (BPFLOAD_LOG_TAIL - 1) : 0;
	if (from && (nl = memchr(log + from, '\n', n - from))) /* cut: start at a line */
		from = (size_t)(nl + 1 - log);
	snprintf(out, BPFLOAD_LOG_TAIL, "%.*s", (int)(n - from), log + from);
}

/* After a refused load: the program that was refused (its log has the verifier's words), or -1. */
static int refused_program(char *const logs[])
{
	for (size_t i = 0; i < LEN(programs); i++)
		if (logs[i][0])
			return (int)i;
	return -1;
}

/* Leaves feature f out, as it needs feature other, which is out. */
static void needs(struct bpfload_report *rep, int f, int other)
{
	if (rep->feature[f].on) {
		rep->feature[f].on = false;
		rep->feature[f].needs = other;
	}
}

/* Leaves feature f out after program i was refused with err. */
static void leave_out(struct bpfload_report *rep, int f, int i, int err, const char *log)
{
	struct bpf_feature_state *s = &rep->feature[f];

	s->on = false;
	s->error = err;
	s->attach = false;
	snprintf(s->program, sizeof(s->program), "%s", programs[i].name);
	log_tail(log, s->log);
	/* Off-CPU time without its programs has no waits for the iterator to count; Python frames are
	 * found by the walk with unwind tables. */
	if (f == BPF_FEATURE_OFFCPU)
		needs(rep, BPF_FEATURE_OFFCPU_ONGOING, f);
	if (f == BPF_FEATURE_UNWIND)
		needs(rep, BPF_FEATURE_PYTHON, f);
}

/* What to do after program i was refused with err: 1 when something was left out (or the maps made
 * preallocated) and another load may pass, 0 when the CPU sampler itself cannot load. */
static int after_refusal(struct bpfload_report *rep, int i, int err, const char *log)
{
	int f = programs[i].feature;

	/* Kernels before 6.1 take only preallocated hash maps in perf_event programs. */
	if (!rep->preallocated && strstr(log, "preallocated")) {
		rep->preallocated = true;
		return 1;
	}
	if (f < BPF_FEATURE_MAX) {
		leave_out(rep, f, i, err, log);
		return 1;
	}
	/* The CPU sampler: without Python frames, then without unwind tables (frame pointers only). */
	if (i == 0 && rep->feature[BPF_FEATURE_PYTHON].on) {
		leave_out(rep, BPF_FEATURE_PYTHON, i, err, log);
		return 1;
	}
	if (i == 0 && rep->feature[BPF_FEATURE_UNWIND].on) {
		leave_out(rep, BPF_FEATURE_UNWIND, i, err, log);
		return 1;
	}
	return 0;
}

/* Reads what the verifier did for each loaded program of skel into rep. */
static void note_programs(struct profile *skel, struct bpfload_report *rep)
{
	struct bpf_program *p;

	rep->nprogs = 0;
	bpf_object__for_each_program(p, skel->obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		struct bpf_program_state *ps;
		int fd = bpf_program__fd(p);

		if (fd < 0 || rep->nprogs >= BPFLOAD_MAX_PROGS)
			continue;
		ps = &rep->prog[rep->nprogs++];
		snprintf(ps->name, sizeof(ps->name), "%s", bpf_program__name(p));
		if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
			ps->verified_insns = len > offsetof(struct bpf_prog_info, verified_insns) ? info.verified_insns : 0;
			ps->insns = info.xlated_prog_len / 8;
		}
	}
}

/* Puts each walker program that loaded in its slot of cpu_walkers, where profile_tick tail-calls it, and
 * each off-CPU one in offcpu_walkers, for offcpu_switch. Returns 0 or -errno. */
static int fill_walkers(struct profile *skel)
{
	const struct bpf_program *walkers[2][WALKER_MAX] = {
		{ [WALKER_NATIVE] = skel->progs.walk_native, [WALKER_PYTHON] = skel->progs.walk_python },
		{ [WALKER_NATIVE] = skel->progs.offcpu_walk_native, [WALKER_PYTHON] = skel->progs.offcpu_walk_python },
	};
	int maps[2] = { bpf_map__fd(skel->maps.cpu_walkers), bpf_map__fd(skel->maps.offcpu_walkers) };

	for (int m = 0; m < 2; m++)
		for (__u32 i = 0; i < WALKER_MAX; i++) {
			int fd = bpf_program__fd(walkers[m][i]);

			if (fd >= 0 && bpf_map_update_elem(maps[m], &i, &fd, BPF_ANY))
				return -errno;
		}
	return 0;
}

/* One load as rep has it now. Returns 0, or -errno with *refused the program refused (-1: none known). */
static int load_once(const struct sampler_opts *opts, struct bpfload_report *rep, char *const logs[],
		     struct profile **out, int *refused)
{
	int templates[3] = { -1, -1, -1 }, err;
	struct profile *skel;

	*refused = -1;
	/* 1. Open: parse the embedded object, nothing in the kernel yet. */
	skel = profile__open();
	if (!skel)
		return -errno;
	/* 2. Configure: knobs, map sizes and flags, the programs to load; a log buffer for each. */
	err = configure(skel, opts, rep, templates);
	for (size_t i = 0; !err && i < LEN(programs); i++) {
		struct bpf_program *p = bpf_object__find_program_by_name(skel->obj, programs[i].name);

		logs[i][0] = '\0';
		err = p ? bpf_program__set_log_buf(p, logs[i], LOG_SIZE) : -ENOENT;
	}
	/* 3. Load: create the maps, pass the verifier. */
	if (!err) {
		err = profile__load(skel);
		if (err)
			*refused = refused_program(logs);
	}
	/* 4. Link: the walkers where profile_tick finds them. */
	if (!err)
		err = fill_walkers(skel);
	for (int i = 0; i < 3; i++)
		if (templates[i] >= 0)
			close(templates[i]);
	if (err) {
		profile__destroy(skel);
		return err;
	}
	note_programs(skel, rep);
	*out = skel;
	return 0;
}

int bpfload_load(const struct sampler_opts *opts, struct profile **out, struct bpfload_report *rep)
{
	char *logs[LEN(programs)] = { 0 };
	int err = -ENOMEM, refused;

	memset(rep, 0, sizeof(*rep));
	rep->feature[BPF_FEATURE_UNWIND].asked = opts->unwind_mode != UNWIND_MODE_FP;
	rep->feature[BPF_FEATURE_PYTHON].asked = opts->python && opts->unwind_mode != UNWIND_MODE_FP;
	rep->feature[BPF_FEATURE_FORKS].asked = true;
	rep->feature[BPF_FEATURE_OFFCPU].asked = opts->off_cpu;
	rep->feature[BPF_FEATURE_OFFCPU_ONGOING].asked = opts->off_cpu;
	for (int f = 0; f < BPF_FEATURE_MAX; f++) {
		rep->feature[f].on = rep->feature[f].asked;
		rep->feature[f].needs = -1;
	}
	/* Untouched pages of a buffer cost nothing: only a refused program's log is written. */
	for (size_t i = 0; i < LEN(programs); i++)
		if (!(logs[i] = malloc(LOG_SIZE)))
			goto out;
	for (rep->loads = 1; rep->loads <= MAX_LOADS; rep->loads++) {
		err = load_once(opts, rep, logs, out, &refused);
		if (!err || refused < 0 || !after_refusal(rep, refused, err, logs[refused]))
			break;
	}
	if (err && refused >= 0) { /* the CPU sampler itself: which program and why */
		rep->cpu.error = err;
		snprintf(rep->cpu.program, sizeof(rep->cpu.program), "%s", programs[refused].name);
		log_tail(logs[refused], rep->cpu.log);
	}
out:
	for (size_t i = 0; i < LEN(programs); i++)
		free(logs[i]);
	return err;
}

void bpfload_detached(struct bpfload_report *rep, enum bpf_feature f, const char *program, int err)
{
	struct bpf_feature_state *s = &rep->feature[f];

	s->on = false;
	s->error = err;
	s->attach = true;
	s->log[0] = '\0';
	snprintf(s->program, sizeof(s->program), "%s", program);
	if (f == BPF_FEATURE_OFFCPU)
		needs(rep, BPF_FEATURE_OFFCPU_ONGOING, f);
}
