/* sampler.c - loads profile.bpf.c, attaches it per CPU and drains its double-buffered maps. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfload.h"
#include "sampler.h"
#include "profile.skel.h"

#define CLEAR_CHUNK 256  /* stacks read per call while emptying a stacks map */
#define DRAIN_CHUNK 4096 /* counts taken per call and handed on before the next: memory stays bounded */
/* A drain first moves the stacks map into a stash (CLEAR_CHUNK per call), so that the keys find their
 * stacks there instead of by one lookup each; what does not fit stays in the map and is looked up. The
 * stash is mapped for the drain and unmapped after it, so it adds nothing to the daemon's steady size. */
#define STASH_SLOTS 8192           /* index slots (128 KiB): at most half are used */
#define STASH_FRAMES (64u * 1024)  /* frames held (512 KiB) */

struct sampler {
	struct profile *skel;
	struct bpf_link **links;
	struct bpf_link *exec_link; /* forgets a process at execve() */
	struct bpf_link *fork_link; /* records the parent of each new process (forks map) */
	struct bpf_link *switch_link, *exit_link, *ongoing_link; /* off-CPU: sched_switch, exits, the iterator */
	int *event_fds;
	int ncpus_possible;
	unsigned cpus_attached;
	unsigned chunk;
	struct sample_key *keys; /* drain buffers, chunk each */
	__u64 *values;
	__u64 *kips, *uips;      /* PROFILE_MAX_DEPTH each */
	__u64 *percpu;           /* ncpus_possible values */
	__u64 *percpu_values;    /* chunk * ncpus_possible: an off-CPU map's per-CPU values */
	__u64 *clear_keys;       /* CLEAR_CHUNK each: where emptying the stacks map reads to */
	struct stack_trace *clear_values;
	struct stash_slot {      /* the stash's index: STASH_SLOTS, mapped during a drain */
		__u64 key;       /* 0: free */
		__u32 off, depth; /* frames[off .. off + depth) */
	} *stash;
	__u64 *stash_frames;     /* STASH_FRAMES, mapped during a drain */
	unsigned stash_n, stash_used;
	uint64_t stacks_stashed, stacks_looked_up;
	struct ring_buffer *events;
	struct ring_buffer *sent;    /* the samples sent whole: read at each drain, never polled */
	sampler_cb sent_cb;          /* during a drain */
	void *sent_ctx;
	struct unix_clock sent_clock;
	int64_t clock_offset; /* whole seconds of unix - boot time, as the BPF program begins seconds (set_clock) */
	int sent_err;
	uint64_t sent_read, sent_malformed;
	sampler_process_cb event_cb; /* during sampler_read_events */
	void *event_ctx;
	sampler_deferred_cb deferred_cb; /* sampler_on_deferred */
	void *deferred_ctx;
	uint64_t drains;
};

static int open_cpu_clock(unsigned cpu, unsigned freq)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = freq,
	};
	long fd = syscall(__NR_perf_event_open, &attr, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

/* Attaches the program to a cpu-clock event on each CPU; offline CPUs (ENODEV) are skipped. */
static int attach_all(struct sampler *s, unsigned freq)
{
	for (int cpu = 0; cpu < s->ncpus_possible; cpu++) {
		int fd = open_cpu_clock(cpu, freq);

		if (fd == -ENODEV)
			continue;
		if (fd < 0)
			return fd;
		s->event_fds[cpu] = fd;
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.profile_tick, fd);
		if (!s->links[cpu])
			return -errno;
		s->cpus_attached++;
	}
	return s->cpus_attached ? 0 : -ENODEV;
}

/* Attaches the optional programs that loaded; one that cannot be attached leaves its feature off. */
static void attach_features(struct sampler *s, struct bpfload_report *rep)
{
	struct bpf_feature_state *f = rep->feature;

	if (f[BPF_FEATURE_FORKS].on && !(s->fork_link = bpf_program__attach(s->skel->progs.process_fork)))
		bpfload_detached(rep, BPF_FEATURE_FORKS, "process_fork", -errno);
	if (f[BPF_FEATURE_OFFCPU].on) {
		if (!(s->switch_link = bpf_program__attach(s->skel->progs.offcpu_switch)))
			bpfload_detached(rep, BPF_FEATURE_OFFCPU, "offcpu_switch", -errno);
		else if (!(s->exit_link = bpf_program__attach(s->skel->progs.offcpu_exit)))
			bpfload_detached(rep, BPF_FEATURE_OFFCPU, "offcpu_exit", -errno);
		if (!f[BPF_FEATURE_OFFCPU].on) { /* neither half without the other */
			bpf_link__destroy(s->switch_link);
			s->switch_link = NULL;
			f[BPF_FEATURE_OFFCPU_ONGOING].on = false;
		}
	}
	if (f[BPF_FEATURE_OFFCPU_ONGOING].on &&
	    !(s->ongoing_link = bpf_program__attach_iter(s->skel->progs.offcpu_ongoing, NULL)))
		bpfload_detached(rep, BPF_FEATURE_OFFCPU_ONGOING, "offcpu_ongoing", -errno);
}

static int alloc_buffers(struct sampler *s)
{
	s->links = calloc(s->ncpus_possible, sizeof(*s->links));
	s->event_fds = malloc(s->ncpus_possible * sizeof(*s->event_fds));
	s->keys = calloc(s->chunk, sizeof(*s->keys));
	s->values = calloc(s->chunk, sizeof(*s->values));
	s->kips = calloc(PROFILE_MAX_DEPTH, sizeof(__u64));
	s->uips = calloc(PROFILE_MAX_DEPTH, sizeof(__u64));
	s->percpu = calloc(s->ncpus_possible, sizeof(__u64));
	s->percpu_values = calloc((size_t)s->chunk * s->ncpus_possible, sizeof(__u64));
	s->clear_keys = calloc(CLEAR_CHUNK, sizeof(*s->clear_keys));
	s->clear_values = calloc(CLEAR_CHUNK, sizeof(*s->clear_values));
	if (!s->links || !s->event_fds || !s->keys || !s->values || !s->kips || !s->uips || !s->percpu ||
	    !s->percpu_values || !s->clear_keys || !s->clear_values)
		return -ENOMEM;
	for (int i = 0; i < s->ncpus_possible; i++)
		s->event_fds[i] = -1;
	return 0;
}

/* ring_buffer callback: hands one event to the caller of sampler_read_events. */
static int on_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	const struct process_event *e = data;

	if (size >= sizeof(*e) && s->event_cb)
		s->event_cb(e, s->event_ctx);
	return 0;
}

/* ring_buffer callback: hands one deferred sample to sampler_on_deferred's callback. */
static int on_deferred(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	if (size >= offsetof(struct deferred_sample, kips) && s->deferred_cb)
		s->deferred_cb(data, size, s->deferred_ctx);
	return 0;
}

/* ring_buffer callback: one sample sent whole, to the drain's callback. */
static int on_sent(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	const struct sample_record *r = data;
	int err;

	if (size < offsetof(struct sample_record, ips) || !r->nu || r->nu > PROFILE_MAX_DEPTH ||
	    size < offsetof(struct sample_record, ips) + r->nu * sizeof(__u64)) {
		s->sent_malformed++;
		return 0;
	}
	struct sampler_sample smp = {
		.key = &r->key,
		.unix_sec = unix_clock_sec(&s->sent_clock, r->key.boot_sec),
		.uips = r->ips,
		.nu = r->nu,
		.count = 1,
	};
	s->sent_read++;
	err = s->sent_cb(&smp, s->sent_ctx);
	if (err && !s->sent_err)
		s->sent_err = err;
	return 0;
}

/* Reads how far the wall clock is ahead of CLOCK_BOOTTIME now: its whole seconds kept in
 * s->clock_offset, the rest written to the BPF program's unix_frac_ns, by which it begins a key's
 * seconds. Each drain reads it again (after the samples it takes), so the wall clock set since is
 * followed. */
static void set_clock(struct sampler *s)
{
	struct timespec rt, bt;
	int64_t ns, sec;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_BOOTTIME, &bt);
	ns = (rt.tv_sec - bt.tv_sec) * 1000000000LL + (rt.tv_nsec - bt.tv_nsec);
	sec = ns / 1000000000LL;
	if (ns < 0 && sec * 1000000000LL != ns)
		sec--; /* the floor */
	s->clock_offset = sec;
	__atomic_store_n(&s->skel->bss->unix_frac_ns, (__u64)(ns - sec * 1000000000LL), __ATOMIC_RELAXED);
}

int sampler_new(const struct sampler_opts *opts, struct sampler **out, struct bpfload_report *rep)
{
	struct sampler *s;
	int err;

	if (!opts->frequency || !opts->max_stacks || !opts->max_keys)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->chunk = opts->max_keys < DRAIN_CHUNK ? opts->max_keys : DRAIN_CHUNK;
	s->ncpus_possible = libbpf_num_possible_cpus();
	if (s->ncpus_possible <= 0) {
		err = s->ncpus_possible ? s->ncpus_possible : -ENODEV;
		goto fail;
	}
	err = alloc_buffers(s);
	if (err)
		goto fail;

	/* 1-3. Open, configure, load: the CPU sampler, and each feature the kernel accepts. */
	err = bpfload_load(opts, &s->skel, rep);
	if (err)
		goto fail;
	set_clock(s);
	/* 4. Listen for events of processes (first samples, Python code), then attach: one cpu-clock event
	 * per online CPU. */
	s->events = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_event, s, NULL);
	if (!s->events) {
		err = -errno;
		goto fail;
	}
	err = ring_buffer__add(s->events, bpf_map__fd(s->skel->maps.py_events), on_event, s);
	if (!err && s->skel->rodata->defer_new)
		err = ring_buffer__add(s->events, bpf_map__fd(s->skel->maps.deferred), on_deferred, s);
	if (err)
		goto fail;
	if (s->skel->rodata->send_walked &&
	    !(s->sent = ring_buffer__new(bpf_map__fd(s->skel->maps.samples), on_sent, s, NULL))) {
		err = -errno;
		goto fail;
	}
	s->exec_link = bpf_program__attach(s->skel->progs.process_exec);
	if (!s->exec_link) {
		err = -errno;
		goto fail;
	}
	err = attach_all(s, opts->frequency);
	if (err)
		goto fail;
	attach_features(s, rep);
	*out = s;
	return 0;
fail:
	sampler_free(s);
	return err < 0 ? err : -EINVAL;
}

struct unix_clock sampler_clock(const struct sampler *s)
{
	return (struct unix_clock){ .offset = s->clock_offset, .now = (int64_t)time(NULL) };
}

/* Makes gen the one being filled and returns once no program can still be writing the other. */
static int switch_generation(struct sampler *s, __u32 gen)
{
	__u32 zero = 0;
	int inner = bpf_map__fd(s->skel->maps.barrier_inner);

	__atomic_store_n(&s->skel->bss->active_gen, gen, __ATOMIC_SEQ_CST);
	/* A map-of-maps update returns after synchronize_rcu(): every program that read the old
	 * active_gen (they run under rcu_read_lock) has finished. */
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.barrier), &zero, &inner, BPF_ANY))
		return -errno;
	return 0;
}

/* Reads the stack stored under key into ips (leaf first); returns its depth, 0 for none. */
static unsigned read_stack(int fd, __u64 key, __u64 *ips)
{
	unsigned n = 0;

	if (!key || bpf_map_lookup_elem(fd, &key, ips))
		return 0;
	while (n < PROFILE_MAX_DEPTH && ips[n])
		n++;
	return n;
}

static struct stash_slot *stash_slot(const struct sampler *s, __u64 key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (STASH_SLOTS - 1);

	while (s->stash[i].key && s->stash[i].key != key)
		i = (i + 1) & (STASH_SLOTS - 1);
	return &s->stash[i];
}

/* Keeps one stack of the map in the stash, which has room for it (stash_stacks checks first). */
static void stash_put(struct sampler *s, __u64 key, const struct stack_trace *st)
{
	struct stash_slot *slot;
	unsigned n = 0;

	while (n < PROFILE_MAX_DEPTH && st->ips[n])
		n++;
	slot = key ? stash_slot(s, key) : NULL;
	if (!slot || slot->key)
		return;
	*slot = (struct stash_slot){ .key = key, .off = s->stash_used, .depth = n };
	memcpy(s->stash_frames + s->stash_used, st->ips, n * sizeof(__u64));
	s->stash_used += n;
	s->stash_n++;
}

static void stash_release(struct sampler *s)
{
	if (s->stash)
		munmap(s->stash, STASH_SLOTS * sizeof(*s->stash));
	if (s->stash_frames)
		munmap(s->stash_frames, STASH_FRAMES * sizeof(__u64));
	s->stash = NULL;
	s->stash_frames = NULL;
}

/* Moves the stacks map into the stash, CLEAR_CHUNK stacks per call, until the map is empty (true) or the
 * stash is full or cannot be had (false: the rest stays in the map). */
static bool stash_stacks(struct sampler *s, int fd)
{
	__u64 batch_in = 0, batch_out = 0;
	void *index = mmap(NULL, STASH_SLOTS * sizeof(*s->stash), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *frames = mmap(NULL, STASH_FRAMES * sizeof(__u64), PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	s->stash = index == MAP_FAILED ? NULL : index;
	s->stash_frames = frames == MAP_FAILED ? NULL : frames;
	s->stash_n = s->stash_used = 0;
	if (!s->stash || !s->stash_frames) {
		stash_release(s);
		return false;
	}
	for (bool first = true;; first = false) {
		/* No more stacks than the stash has room for at their deepest: a stack taken out of the map
		 * must land in it. */
		__u32 count = CLEAR_CHUNK, room = STASH_SLOTS / 2 - s->stash_n;
		int err;

		if (room < count)
			count = room;
		room = (STASH_FRAMES - s->stash_used) / PROFILE_MAX_DEPTH;
		if (room < count)
			count = room;
		if (!count)
			return false;
		err = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &batch_in, &batch_out, s->clear_keys,
						      s->clear_values, &count, NULL);
		if (err && errno != ENOENT)
			return false; /* ENOSPC (a bucket holds more than a chunk) or worse: the rest is looked up */
		for (__u32 i = 0; i < count; i++)
			stash_put(s, s->clear_keys[i], &s->clear_values[i]);
		if (err)
			return true; /* ENOENT: the map is empty */
		batch_in = batch_out;
	}
}

/* The stack under key, from the stash or else from the map (into ips); its depth, 0 for none. */
static unsigned find_stack(struct sampler *s, int fd, __u64 key, __u64 *ips, const __u64 **out)
{
	const struct stash_slot *slot = key && s->stash ? stash_slot(s, key) : NULL;

	if (slot && slot->key) {
		s->stacks_stashed++;
		*out = s->stash_frames + slot->off;
		return slot->depth;
	}
	*out = ips;
	if (!key)
		return 0;
	s->stacks_looked_up++;
	return read_stack(fd, key, ips);
}

/* Moves up to s->chunk keys of a counts map into s->keys/s->values, continuing from *batch (first: from
 * the start). Returns how many, or -errno; *done tells the map is empty after them. */
static int take_counts(struct sampler *s, int fd, __u64 *batch, bool first, bool *done)
{
	__u32 count = s->chunk;
	__u64 batch_out = 0;
	int err = bpf_map_lookup_and_delete_batch(fd, first ? NULL : batch, &batch_out, s->keys, s->values, &count,
						  NULL);

	if (err && errno != ENOENT) /* ENOENT: the map ends with these */
		return -errno;
	if (!err && !count)
		return -EIO; /* no progress and no end: never loop on it */
	*batch = batch_out;
	*done = err != 0;
	return (int)count;
}

/* Empties a stacks map, CLEAR_CHUNK stacks per call. */
static void clear_stacks(struct sampler *s, int fd)
{
	__u64 batch_in = 0, batch_out = 0;
	bool first = true;

	for (;;) {
		__u32 count = CLEAR_CHUNK;
		int err = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &batch_in, &batch_out, s->clear_keys,
							  s->clear_values, &count, NULL);

		if (err && errno == ENOSPC) { /* a bucket holds more than a chunk: one at a time */
			__u64 key;

			while (bpf_map_get_next_key(fd, NULL, &key) == 0 && bpf_map_delete_elem(fd, &key) == 0)
				;
			return;
		}
		if (err)
			return; /* ENOENT: empty */
		batch_in = batch_out;
		first = false;
	}
}

/* Runs the offcpu_ongoing iterator once: every wait going on is counted up to now. */
static int count_ongoing(struct sampler *s)
{
	char buf[64];
	int fd = bpf_iter_create(bpf_link__fd(s->ongoing_link)), err = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

/* Moves up to s->chunk keys of an off-CPU map (per-CPU values) into s->keys/s->values, each value
 * summed over CPUs; as take_counts. */
static int take_offcpu(struct sampler *s, int fd, __u64 *batch, bool first, bool *done)
{
	__u32 count = s->chunk;
	__u64 batch_out = 0;
	int err = bpf_map_lookup_and_delete_batch(fd, first ? NULL : batch, &batch_out, s->keys, s->percpu_values,
						  &count, NULL);

	if (err && errno != ENOENT)
		return -errno;
	if (!err && !count)
		return -EIO;
	for (__u32 i = 0; i < count; i++) {
		__u64 sum = 0;

		for (int c = 0; c < s->ncpus_possible; c++)
			sum += s->percpu_values[(size_t)i * s->ncpus_possible + c];
		s->values[i] = sum;
	}
	*batch = batch_out;
	*done = err != 0;
	return (int)count;
}

/* Hands every key of a quiescent counts map (take: how its values are read) to cb. Returns 0, the first
 * non-zero cb return, or -errno. */
static int drain_map(struct sampler *s, int counts_fd, int stacks_fd, bool offcpu, const struct unix_clock *clock,
		     sampler_cb cb, void *ctx)
{
	__u64 batch = 0;
	int n, err, ret = 0;

	for (bool first = true, done = false; !done; first = false) {
		n = offcpu ? take_offcpu(s, counts_fd, &batch, first, &done) : take_counts(s, counts_fd, &batch, first, &done);
		if (n < 0)
			return ret ?: n;
		for (int i = 0; i < n; i++) {
			struct sampler_sample smp = {
				.key = &s->keys[i],
				.unix_sec = unix_clock_sec(clock, s->keys[i].boot_sec),
				.count = offcpu ? (s->values[i] + 500) / 1000 : s->values[i],
			};

			if (!smp.count)
				continue; /* under half a microsecond */
			smp.nk = find_stack(s, stacks_fd, s->keys[i].kstack, s->kips, &smp.kips);
			smp.nu = find_stack(s, stacks_fd, s->keys[i].ustack, s->uips, &smp.uips);
			err = cb(&smp, ctx);
			if (err && !ret)
				ret = err;
		}
	}
	return ret;
}

int sampler_drain(struct sampler *s, sampler_cb cb, void *ctx)
{
	__u32 old = __atomic_load_n(&s->skel->bss->active_gen, __ATOMIC_SEQ_CST);
	int counts_fd = bpf_map__fd(old ? s->skel->maps.counts1 : s->skel->maps.counts0);
	int offcpu_fd = bpf_map__fd(old ? s->skel->maps.offcpu1 : s->skel->maps.offcpu0);
	int stacks_fd = bpf_map__fd(old ? s->skel->maps.stacks1 : s->skel->maps.stacks0);
	struct unix_clock clock = sampler_clock(s);
	bool emptied;
	int err, ret;

	/* Waits going on are counted into the generation ending now. */
	if (s->ongoing_link && (err = count_ongoing(s)) < 0)
		return err;
	err = switch_generation(s, !old);
	if (err)
		return err;
	emptied = stash_stacks(s, stacks_fd);
	/* A chunk of counts at a time: the old generation is quiescent, so no key comes or goes meanwhile. */
	ret = drain_map(s, counts_fd, stacks_fd, false, &clock, cb, ctx);
	if (s->sent) { /* the samples sent whole so far (some of the new generation's too: no matter) */
		s->sent_cb = cb;
		s->sent_ctx = ctx;
		s->sent_clock = clock;
		s->sent_err = 0;
		err = ring_buffer__consume(s->sent);
		ret = ret ?: (err < 0 ? err : s->sent_err);
	}
	if (s->switch_link) {
		err = drain_map(s, offcpu_fd, stacks_fd, true, &clock, cb, ctx);
		ret = ret ?: err;
	}
	if (!emptied)
		clear_stacks(s, stacks_fd);
	stash_release(s);
	set_clock(s);
	s->drains++;
	return ret;
}

void sampler_on_deferred(struct sampler *s, sampler_deferred_cb cb, void *ctx)
{
	s->deferred_cb = cb;
	s->deferred_ctx = ctx;
}

int sampler_events_fd(const struct sampler *s)
{
	return ring_buffer__epoll_fd(s->events);
}

int sampler_read_events(struct sampler *s, sampler_process_cb cb, void *ctx)
{
	int n;

	s->event_cb = cb;
	s->event_ctx = ctx;
	n = ring_buffer__consume(s->events);
	s->event_cb = NULL;
	return n;
}

void sampler_unwind_fds(const struct sampler *s, int *tables_fd, int *procs_fd)
{
	*tables_fd = bpf_map__fd(s->skel->maps.unwind_tables);
	*procs_fd = bpf_map__fd(s->skel->maps.unwind_procs);
}

int sampler_python_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.py_procs);
}

int sampler_forks_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.forks);
}

int sampler_get_stats(struct sampler *s, struct sampler_stats *out)
{
	int fd = bpf_map__fd(s->skel->maps.stats);

	memset(out, 0, sizeof(*out));
	for (__u32 i = 0; i < STAT_MAX; i++) {
		if (bpf_map_lookup_elem(fd, &i, s->percpu))
			return -errno;
		for (int c = 0; c < s->ncpus_possible; c++)
			out->stat[i] += s->percpu[c];
	}
	out->cpus = s->cpus_attached;
	out->drains = s->drains;
	out->stacks_stashed = s->stacks_stashed;
	out->stacks_looked_up = s->stacks_looked_up;
	out->sent_read = s->sent_read;
	out->sent_malformed = s->sent_malformed;
	out->sent_ring_bytes = s->sent ? bpf_map__max_entries(s->skel->maps.samples) : 0;
	return 0;
}

void sampler_free(struct sampler *s)
{
	if (!s)
		return;
	for (int i = 0; s->links && i < s->ncpus_possible; i++)
		bpf_link__destroy(s->links[i]);
	for (int i = 0; s->event_fds && i < s->ncpus_possible; i++)
		if (s->event_fds[i] >= 0)
			close(s->event_fds[i]);
	bpf_link__destroy(s->exec_link);
	bpf_link__destroy(s->fork_link);
	bpf_link__destroy(s->ongoing_link);
	bpf_link__destroy(s->exit_link);
	bpf_link__destroy(s->switch_link);
	ring_buffer__free(s->events);
	ring_buffer__free(s->sent);
	profile__destroy(s->skel);
	free(s->links);
	free(s->event_fds);
	free(s->keys);
	free(s->values);
	free(s->kips);
	free(s->uips);
	free(s->percpu);
	free(s->percpu_values);
	free(s->clear_keys);
	free(s->clear_values);
	stash_release(s);
	free(s);
}
