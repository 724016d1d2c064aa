/* pyruntime.c - CPython behind the runtime operations (see pyruntime.h, runtime/runtime.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "profile.h"
#include "python.h"
#include "python/pyglue.h"
#include "python/pyruntime.h"

/* Its counters, each described once: what its BPF walker counted (the BPF program's stat array), what
 * the process tracker and the frame namer did (struct python_stats). */
#define PROCS(field, ...) COUNTER(struct python_stats, procs.field, __VA_ARGS__)
#define PROCS_OF(field, ...) COUNTER_OF(struct python_stats, procs.field, __VA_ARGS__)
#define NAMES(field, ...) COUNTER(struct python_stats, names.field, __VA_ARGS__)
#define NAMES_OF(field, ...) COUNTER_OF(struct python_stats, names.field, __VA_ARGS__)

static const struct counter stat_counters[] = {
	COUNTER_STAT(STAT_PY_STACKS, "stacks", "flamed_python_stacks_total", "counter",
		"User stacks with Python frames in them."),
	COUNTER_STAT(STAT_PY_TRUNCATED, "truncated", "flamed_python_stacks_truncated_total", "counter",
		"Python walks cut at --python-frames frames."),
	COUNTER_STAT(STAT_PY_CALL_EDGE, "calls_starting_or_ending", "flamed_python_calls_starting_or_ending_total",
		"counter", "Eval-loop calls sampled before their frames were pushed or after they were popped: the "
		"frames read for them written at their caller's."),
	COUNTER_STAT(STAT_PY_TRAMP_LEAF, "trampoline_leaves", "flamed_python_trampoline_leaves_total", "counter",
		"Samples taken in a -X perf trampoline, unwound by its instruction."),
	COUNTER_STAT_OF(STAT_PY_NO_THREAD, "walk_errors", "reason", "no_thread_state", "flamed_python_walk_errors_total",
		   "Python walks that came up short, by reason: no_thread_state (a thread of a Python process whose "
		   "thread state was not found), read_failed (a thread state or frame could not be read), unmatched "
		   "(Python frames left when the native walk ended, not written), native_failed (the native walk "
		   "failed; the Python frames left written after it), code_events_lost (code objects first written "
		   "not reported: named at the flush)."),
	COUNTER_STAT_OF(STAT_PY_READ_FAILED, "walk_errors", "reason", "read_failed", "flamed_python_walk_errors_total", NULL),
	COUNTER_STAT_OF(STAT_PY_UNMATCHED, "walk_errors", "reason", "unmatched", "flamed_python_walk_errors_total", NULL),
	COUNTER_STAT_OF(STAT_PY_APPENDED, "walk_errors", "reason", "native_failed", "flamed_python_walk_errors_total", NULL),
	COUNTER_STAT_OF(STAT_PY_EVENTS_LOST, "walk_errors", "reason", "code_events_lost",
			"flamed_python_walk_errors_total", NULL),
};
static const struct counter counters[] = {
	PROCS(processes, "processes", "flamed_python_processes", "gauge", "Python processes whose frames are walked."),
	PROCS(processes_refused, "processes_refused", "flamed_python_processes_refused_total", "counter",
		"Python processes not walked: --python-processes reached."),
	PROCS(interpreters, "interpreters", "flamed_python_interpreters_total", "counter",
		"Interpreter binaries (libpython or a python program) found."),
	PROCS(unsupported, "unsupported", "flamed_python_unsupported_processes_total", "counter",
		"Processes of an interpreter flamed does not walk (by reason in flamed_python_unsupported_total)."),
	PROCS_OF(unsupported_version, "unsupported_by_reason", "reason", "version", "flamed_python_unsupported_total",
		   "Processes of an interpreter flamed does not walk, by reason: version (not 3.8 to 3.15), prerelease, "
		   "free_threaded."),
	PROCS_OF(unsupported_prerelease, "unsupported_by_reason", "reason", "prerelease",
		 "flamed_python_unsupported_total", NULL),
	PROCS_OF(unsupported_free_threaded, "unsupported_by_reason", "reason", "free_threaded",
		 "flamed_python_unsupported_total", NULL),
	PROCS(debug_offsets_refused, "debug_offsets_refused", "flamed_python_debug_offsets_refused_total", "counter",
		"Interpreters whose _Py_DebugOffsets were missing or lied (not walked)."),
	PROCS(inconsistent, "inconsistent", "flamed_python_inconsistent_total", "counter",
		"Interpreter binaries refused as inconsistent (not walked; those whose _Py_DebugOffsets were refused "
		"among them)."),
	PROCS(binaries_checked, "binaries_checked", "flamed_python_binaries_checked_total", "counter",
		"Binaries looked at for an interpreter."),
	PROCS(binaries_known, "binaries_known", "flamed_python_binaries_known_total", "counter",
		"Mappings taken for a binary looked at lately (same device and inode), without opening it again."),
	PROCS(binaries_evicted, "binaries_evicted", "flamed_python_binaries_evicted_total", "counter",
		"Binaries looked at, forgotten for room."),
	PROCS(cold_by_jumps, "cold_by_jumps", "flamed_python_cold_by_jumps_total", "counter",
		"Interpreters whose eval loop's cold part was found by following its jumps."),
	PROCS(late_libpython, "late_libpython", "flamed_python_late_libpython_total", "counter",
		"Processes whose libpython was mapped after their first sample (found when their mappings were read "
		"again)."),
	PROCS(retries_dropped, "retries_dropped", "flamed_python_retries_dropped_total", "counter",
		"Processes waiting for their libpython not looked at again: the retry list was full."),
	PROCS(rereads_failed, "rereads_failed", "flamed_python_rereads_failed_total", "counter",
		"Tracked Python processes whose mappings were read again without their interpreter (kept)."),
	NAMES(codes, "code_objects", "flamed_python_code_objects", "gauge",
		"Code objects cached (--python-code-cache)."),
	NAMES(bytes, "code_cache_bytes", "flamed_python_code_cache_bytes", "gauge",
		"Memory the cached code objects hold."),
	NAMES(hits, "code_hits", "flamed_python_code_hits_total", "counter",
		"Python frames named from the code cache."),
	NAMES(misses, "code_misses", "flamed_python_code_misses_total", "counter",
		"Python frames whose code object was read from the process."),
	NAMES(prefetched, "code_prefetched", "flamed_python_code_prefetched_total", "counter",
		"Code objects read when first sampled, before a flush named them."),
	NAMES(replaced, "code_replaced", "flamed_python_code_replaced_total", "counter",
		"Cached code objects found replaced by another at their address."),
	NAMES(evicted, "code_evicted", "flamed_python_code_evicted_total", "counter",
		"Code objects dropped from the cache for room."),
	NAMES_OF(gone, "frames_unnamed", "reason", "process_gone", "flamed_python_frames_unnamed_total",
		   "Python frames left unnamed, by reason: process_gone, unreadable, not_code (what the address held "
		   "was not a code object), untracked (a process not tracked as Python)."),
	NAMES_OF(unreadable, "frames_unnamed", "reason", "unreadable", "flamed_python_frames_unnamed_total", NULL),
	NAMES_OF(invalid, "frames_unnamed", "reason", "not_code", "flamed_python_frames_unnamed_total", NULL),
	NAMES_OF(untracked, "frames_unnamed", "reason", "untracked", "flamed_python_frames_unnamed_total", NULL),
};


struct pyruntime {
	struct pyprocs *procs;
	struct pynames *names;
};

static void py_free(void *rt)
{
	struct pyruntime *p = rt;

	if (!p)
		return;
	pyprocs_free(p->procs);
	pynames_free(p->names);
	free(p);
}

static int py_start(const struct runtime_config *c, void **out)
{
	struct pyprocs_opts po = { .procs_fd = c->procs_fd, .max_procs = c->max_procs, .max_binaries = 1024,
				   .max_frames = c->max_frames, .debug_dir = c->debug_dir };
	struct pynames_opts no = { .max_codes = c->max_names, .max_bytes = (size_t)c->max_names * 1024,
				   .lines = c->lines };
	struct pyruntime *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	err = pyprocs_new(&po, &p->procs);
	err = err ?: pynames_new(&no, &p->names);
	if (err) {
		py_free(p);
		return err;
	}
	*out = p;
	return 0;
}

static void py_process(void *rt, uint32_t pid, uint64_t token, const struct procmap *maps, size_t n)
{
	pyprocs_add_maps(((struct pyruntime *)rt)->procs, pid, token, maps, n);
}

static void py_reported(void *rt, uint32_t pid, uint64_t addr)
{
	struct pyruntime *p = rt;

	pynames_prefetch(p->names, pid, pyprocs_find(p->procs, pid), addr);
}

static int py_retry(void *rt)
{
	return pyprocs_retry(((struct pyruntime *)rt)->procs);
}

static void py_flush_begin(void *rt)
{
	pynames_begin_flush(((struct pyruntime *)rt)->names);
}

static void py_flush_end(void *rt)
{
	pyprocs_sweep(((struct pyruntime *)rt)->procs);
}

static const void *py_find(void *rt, uint32_t pid)
{
	return pyprocs_find(((struct pyruntime *)rt)->procs, pid);
}

static bool py_owns(uint64_t v)
{
	return PY_IS_FRAME(v);
}

static void py_name_frame(void *rt, uint32_t pid, const void *proc, uint64_t v, struct runtime_frame *out)
{
	struct py_frame_name pn;

	pynames_name(((struct pyruntime *)rt)->names, pid, proc, v, &pn);
	*out = (struct runtime_frame){ .folded = pn.folded, .file = pn.file, .first_line = pn.first_line,
				       .line = pn.line };
}

static bool py_is_own(const void *proc, const char *module)
{
	const struct pyproc_info *info = proc;

	return info && info->path && !strcmp(module, info->path);
}

static void py_get_stats(void *rt, void *out)
{
	struct pyruntime *p = rt;
	struct python_stats *s = out;

	pyprocs_get_stats(p->procs, &s->procs);
	pynames_get_stats(p->names, &s->names);
}

const struct runtime_ops python_runtime = {
	.name = "python",
	.stats_size = sizeof(struct python_stats),
	.start = py_start,
	.process = py_process,
	.reported = py_reported,
	.retry = py_retry,
	.flush_begin = py_flush_begin,
	.flush_end = py_flush_end,
	.find = py_find,
	.owns = py_owns,
	.name_frame = py_name_frame,
	.is_own = py_is_own,
	.is_glue = py_is_glue,
	.stat_counters = stat_counters,
	.n_stat_counters = COUNTERS_LEN(stat_counters),
	.counters = counters,
	.n_counters = COUNTERS_LEN(counters),
	.note_key = "unsupported_last",
	.note_off = offsetof(struct python_stats, procs.unsupported_last),
	.get_stats = py_get_stats,
	.free = py_free,
};
