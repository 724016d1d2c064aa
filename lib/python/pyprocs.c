/* pyprocs.c - tracks the Python processes the BPF program walks (see pyprocs.h). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "python/pyprocs.h"
#include "elf/mapped.h"
#include "elf/debuginfo.h"
#include "elf/elf_file.h"
#include "elf/procmaps.h"

#define BIN_TRUST_S 1.0 /* a file seen through a mapping's device and inode is opened again after this */
#define TOKEN_SLOTS 4096 /* recent (pid, token) of any process, direct-mapped: for adds without a token */

/* When a process whose program needs a libpython not mapped yet is looked at again: after its first
 * look, then after each. */
static const unsigned retry_ms[] = { 20, 60, 200, 600, 2000 };
#define RETRY_ROUNDS (sizeof(retry_ms) / sizeof(retry_ms[0]))

/* A file, as fstat sees it: a replaced binary is another file. */
struct file_key {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
};

/* What a file was found to be. */
struct bin_entry {
	struct file_key key;
	int verdict;             /* 0: an interpreter (b is valid), else py_elf_inspect's -errno */
	bool needs_libpython;    /* not one, but it needs a libpython3 (py_elf_needs_libpython) */
	struct py_binary b;
	struct elf_segment segs[ELF_MAX_SEGMENTS];
	size_t nsegs;
	uint64_t last_used;
	struct bin_seen seen; /* as a mapping last named it: taken for it unopened within BIN_TRUST_S */
};

struct proc_entry {
	uint32_t pid;
	uint64_t token;
	unsigned gone_sweeps;    /* sweeps that found it gone */
	struct pyproc_info info;
	struct py_layout layout; /* info.layout: its own copy, as the binary's entry may be evicted */
	char path[1024];
};

struct pyprocs {
	struct pyprocs_opts o;
	char debug_dir[PATH_MAX];
	struct bin_entry *bins;  /* max_binaries */
	size_t nbins;
	struct proc_entry *procs; /* max_procs */
	size_t nprocs;
	struct { uint32_t pid; uint64_t token; } tokens[TOKEN_SLOTS];
	struct retry { uint32_t pid; uint64_t token; unsigned round; double due; } retries[PYPROCS_RETRIES];
	size_t nretries;
	unsigned next_round;     /* the round a process pyprocs_add queues again waits in */
	uint64_t clock;          /* uses of binaries, for LRU */
	struct pyprocs_stats st;
};

int pyprocs_new(const struct pyprocs_opts *opts, struct pyprocs **out)
{
	struct pyprocs *p;

	if (!opts->max_procs || !opts->max_binaries || !opts->max_frames)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->o = *opts;
	snprintf(p->debug_dir, sizeof(p->debug_dir), "%s", opts->debug_dir ? opts->debug_dir : "/usr/lib/debug");
	p->bins = calloc(opts->max_binaries, sizeof(*p->bins));
	p->procs = calloc(opts->max_procs, sizeof(*p->procs));
	if (!p->bins || !p->procs) {
		pyprocs_free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

static struct proc_entry *find_proc(const struct pyprocs *p, uint32_t pid)
{
	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].pid == pid)
			return &p->procs[i];
	return NULL;
}

const struct pyproc_info *pyprocs_find(const struct pyprocs *p, uint32_t pid)
{
	const struct proc_entry *e = find_proc(p, pid);

	return e ? &e->info : NULL;
}

/* Forgets process i, and removes it from py_procs. */
static void drop_proc(struct pyprocs *p, size_t i)
{
	if (p->o.procs_fd >= 0)
		bpf_map_delete_elem(p->o.procs_fd, &p->procs[i].pid);
	p->procs[i] = p->procs[--p->nprocs];
	p->procs[i].info.path = p->procs[i].path; /* it moved */
	p->procs[i].info.layout = &p->procs[i].layout;
	p->st.processes = p->nprocs;
}

/* Inspects the ELF open on fd (taken over): with no cold part found in the file alone, once more with
 * its separate debug file's .symtab. */
static int inspect(struct pyprocs *p, int fd, const char *root, const char *path, struct bin_entry *e)
{
	struct elf_file *ef, *dbg = NULL;
	int err, n;

	err = elf_file_from_fd(fd, &ef);
	if (err)
		return err;
	err = py_elf_inspect(ef, NULL, &e->b);
	e->needs_libpython = err == -ENOENT && py_elf_needs_libpython(ef) == 1;
	if (!err && e->b.cold_source == PY_COLD_NONE) {
		struct debuginfo_query q = { .root = root, .debug_dir = p->debug_dir, .path = path, .bin = ef };
		struct py_binary with;

		if (!debuginfo_find(&q, &dbg) && !py_elf_inspect(ef, dbg, &with))
			e->b = with;
	}
	n = elf_file_segments(ef, e->segs, ELF_MAX_SEGMENTS);
	e->nsegs = n > 0 ? (size_t)n : 0;
	elf_file_free(dbg);
	elf_file_free(ef);
	return err;
}

static double mono_now(void);

/* The entry of the file mapped at m in pid, inspected on first sight. NULL: not a file, unreadable. */
static const struct bin_entry *binary_for(struct pyprocs *p, uint32_t pid, const struct procmap *m)
{
	struct bin_source src = bin_source_of(pid, m);
	char root[BIN_ROOT_LEN];
	struct bin_entry *e = NULL;
	struct file_key key;
	struct stat st;
	double now;
	int fd;

	if (!m->path || m->path[0] != '/')
		return NULL; /* anonymous (JIT, perf trampolines), [vdso] */
	now = m->inode ? mono_now() : 0;
	for (size_t i = 0; m->inode && i < p->nbins; i++) {
		if (bin_seen_is(&p->bins[i].seen, &src, now, BIN_TRUST_S)) {
			p->bins[i].last_used = ++p->clock;
			p->st.binaries_known++;
			return &p->bins[i];
		}
	}
	fd = bin_open_mapped(&src, root);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return NULL;
	}
	key = (struct file_key){ st.st_dev, st.st_ino, st.st_size,
				 (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec };
	for (size_t i = 0; i < p->nbins; i++) {
		if (!memcmp(&p->bins[i].key, &key, sizeof(key))) {
			close(fd);
			p->bins[i].last_used = ++p->clock;
			bin_seen_note(&p->bins[i].seen, &src, mono_now());
			return &p->bins[i];
		}
	}
	if (p->nbins < p->o.max_binaries) {
		e = &p->bins[p->nbins++];
	} else { /* the least recently used makes room */
		e = &p->bins[0];
		for (size_t i = 1; i < p->nbins; i++)
			if (p->bins[i].last_used < e->last_used)
				e = &p->bins[i];
		p->st.binaries_evicted++;
	}
	memset(e, 0, sizeof(*e));
	e->key = key;
	e->last_used = ++p->clock;
	e->verdict = inspect(p, fd, root, m->path, e);
	bin_seen_note(&e->seen, &src, mono_now());
	p->st.binaries_checked++;
	if (!e->verdict) {
		p->st.interpreters++;
		if (e->b.cold_source == PY_COLD_JUMPS)
			p->st.cold_by_jumps++;
	} else if (e->verdict == -EINVAL) {
		p->st.inconsistent++;
		if (e->b.debug_offsets_refused)
			p->st.debug_offsets_refused++;
	}
	return e;
}

/* The BPF map value for a process whose interpreter b is loaded bias bytes from its ELF addresses. */
static void fill_value(const struct pyprocs *p, const struct py_binary *b, uint64_t bias, uint64_t token,
		       struct py_proc *v)
{
	memset(v, 0, sizeof(*v));
	v->token = token;
	v->runtime = b->runtime + bias;
	v->eval_start[0] = b->eval_start + bias;
	v->eval_end[0] = b->eval_end + bias;
	if (b->cold_end > b->cold_start) {
		v->eval_start[1] = b->cold_start + bias;
		v->eval_end[1] = b->cold_end + bias;
	}
	v->version = b->major << 16 | b->minor << 8 | b->micro;
	v->tramp_cfa = b->tramp_cfa;
	v->tramp_rbp_saved = b->tramp_rbp_saved;
	v->max_frames = (__u16)p->o.max_frames;
	v->off = b->layout.bpf;
}

/* Records pid as a Python process whose interpreter (b, mapped at m) is loaded bias bytes away. */
static int track(struct pyprocs *p, uint32_t pid, uint64_t token, const struct bin_entry *e,
		 const struct procmap *m, uint64_t bias)
{
	struct proc_entry *pe = find_proc(p, pid);
	struct py_proc v;

	if (!pe && p->nprocs == p->o.max_procs) {
		p->st.processes_refused++;
		return -ENOSPC;
	}
	fill_value(p, &e->b, bias, token, &v);
	if (p->o.procs_fd >= 0 && bpf_map_update_elem(p->o.procs_fd, &pid, &v, BPF_ANY)) {
		int err = -errno;

		p->st.processes_refused++;
		if (pe)
			drop_proc(p, (size_t)(pe - p->procs));
		return err;
	}
	if (!pe) {
		pe = &p->procs[p->nprocs++];
		p->st.processes = p->nprocs;
	}
	pe->pid = pid;
	pe->token = token;
	pe->gone_sweeps = 0;
	snprintf(pe->path, sizeof(pe->path), "%s", m->path);
	pe->layout = e->b.layout;
	pe->info = (struct pyproc_info){ .token = token, .layout = &pe->layout,
					 .code_type = e->b.code_type ? e->b.code_type + bias : 0,
					 .major = e->b.major, .minor = e->b.minor, .micro = e->b.micro,
					 .path = pe->path };
	return 0;
}

/* Counts a process of an interpreter it does not walk, by why. */
static void count_unsupported(struct pyprocs *p, const struct py_binary *b)
{
	p->st.unsupported++;
	if (b->unsupported == PY_UNSUPPORTED_FREE_THREADED)
		p->st.unsupported_free_threaded++;
	else if (b->unsupported == PY_UNSUPPORTED_PRERELEASE)
		p->st.unsupported_prerelease++;
	else
		p->st.unsupported_version++;
	snprintf(p->st.unsupported_last, sizeof(p->st.unsupported_last), "%u.%u.%u%s", b->major, b->minor,
		 b->micro, b->unsupported == PY_UNSUPPORTED_FREE_THREADED ? "t" : "");
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Queues pid to be looked at again in round's time (a round past the last: given up). */
static void retry_later(struct pyprocs *p, uint32_t pid, uint64_t token, unsigned round)
{
	if (round >= RETRY_ROUNDS)
		return;
	for (size_t i = 0; i < p->nretries; i++)
		if (p->retries[i].pid == pid)
			return; /* already waiting: another report of the same process */
	if (p->nretries == PYPROCS_RETRIES) {
		p->st.retries_dropped++;
		return;
	}
	p->retries[p->nretries++] = (struct retry){ pid, token, round, mono_now() + retry_ms[round] / 1e3 };
}

int pyprocs_retry(struct pyprocs *p)
{
	double now = mono_now(), next = -1;

	for (size_t i = 0; i < p->nretries;) {
		struct retry r = p->retries[i];

		if (r.due > now) {
			if (next < 0 || r.due < next)
				next = r.due;
			i++;
			continue;
		}
		p->retries[i] = p->retries[--p->nretries];
		p->st.late_libpython++;
		p->next_round = r.round + 1;
		pyprocs_add(p, r.pid, r.token); /* queues it again, in its next round, if still not there (with
						 * the latest token known for it) */
		p->next_round = 0;
		i = 0; /* the queue changed: look again from its start */
	}
	return next < 0 ? -1 : (int)((next - now) * 1e3) + 1;
}

int pyprocs_add(struct pyprocs *p, uint32_t pid, uint64_t token)
{
	return pyprocs_add_maps(p, pid, token, NULL, 0);
}

int pyprocs_add_maps(struct pyprocs *p, uint32_t pid, uint64_t token, const struct procmap *given, size_t ngiven)
{
	struct proc_entry *pe = find_proc(p, pid);
	unsigned slot = pid % TOKEN_SLOTS;
	struct procmap *read = NULL;
	const struct procmap *maps = given;
	size_t n = ngiven;
	int err, found = -ENOENT;
	bool needs = false; /* its program needs a libpython */

	/* Tokens are the time of an image's first sample: the largest known names the image running now
	 * (an add with an older one, a recheck queued before an execve, must not write it back). */
	if (p->tokens[slot].pid == pid && p->tokens[slot].token > token)
		token = p->tokens[slot].token;
	if (pe && pe->token > token)
		token = pe->token;
	if (!token)
		return -ENOENT; /* no image known to write it for */
	p->tokens[slot].pid = pid;
	p->tokens[slot].token = token;
	if (!given) {
		err = procmaps_read(pid, &read, &n);
		if (err)
			return err == -ENOENT ? -ESRCH : err;
		maps = read;
	}
	for (size_t i = 0; i < n && found == -ENOENT; i++) {
		const struct bin_entry *e = binary_for(p, pid, &maps[i]);
		uint64_t vaddr;

		if (e && e->verdict == -ENOENT && e->needs_libpython)
			needs = true;
		if (!e || e->verdict == -ENOENT || e->verdict == -EINVAL)
			continue;
		if (e->verdict) { /* -ENOTSUP and the like: an interpreter, not walked */
			found = e->verdict;
			if (e->verdict == -ENOTSUP)
				count_unsupported(p, &e->b);
			break;
		}
		if (elf_segments_vaddr(e->segs, e->nsegs, maps[i].offset, maps[i].exec, &vaddr))
			continue;
		found = track(p, pid, token, e, &maps[i], maps[i].start - vaddr);
	}
	if (read)
		procmaps_free(read, n);
	pe = find_proc(p, pid);
	/* The same image as tracked: its interpreter cannot have gone, this read of it failed (an exiting
	 * process's mappings are torn down, a file it maps cannot be opened now). */
	if (found && pe && pe->token == token) {
		p->st.rereads_failed++;
		return 0;
	}
	if (found && found != -ENOSPC && pe) /* it runs another program now */
		drop_proc(p, (size_t)(pe - p->procs));
	if (found == -ENOENT && needs) { /* the dynamic loader has not mapped it yet */
		retry_later(p, pid, token, p->next_round);
		return -EAGAIN;
	}
	return found;
}

void pyprocs_sweep(struct pyprocs *p)
{
	for (size_t i = 0; i < p->nprocs;) {
		struct proc_entry *pe = &p->procs[i];

		if (kill((pid_t)pe->pid, 0) == 0 || errno != ESRCH) {
			pe->gone_sweeps = 0;
			i++;
		} else if (++pe->gone_sweeps >= 2) {
			drop_proc(p, i);
		} else {
			i++;
		}
	}
}

void pyprocs_get_stats(const struct pyprocs *p, struct pyprocs_stats *out)
{
	*out = p->st;
}

void pyprocs_free(struct pyprocs *p)
{
	if (!p)
		return;
	while (p->procs && p->nprocs)
		drop_proc(p, p->nprocs - 1);
	free(p->procs);
	free(p->bins);
	free(p);
}
