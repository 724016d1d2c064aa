/* pyprocs.h - finds the CPython interpreter of each sampled process (its python binary or a loaded
 * libpython) and gives the BPF program what walking its Python frames needs (py_procs, python.h). */
#ifndef FLAMED_PYTHON_PYPROCS_H
#define FLAMED_PYTHON_PYPROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/pyelf.h"

struct procmap;

struct pyprocs;

struct pyprocs_opts {
	int procs_fd;          /* the py_procs map: pid -> struct py_proc, max_procs entries; -1: none (tests) */
	unsigned max_procs;    /* Python processes tracked at once (> 0) */
	unsigned max_binaries; /* files remembered as interpreter or not (> 0) */
	unsigned max_frames;   /* Python frames the BPF program writes per stack (1 to PROFILE_MAX_DEPTH) */
	const char *debug_dir; /* where separate debug files are (.symtab); NULL: "/usr/lib/debug" */
};

struct pyprocs_stats {
	uint64_t processes;        /* Python processes tracked now */
	uint64_t processes_refused; /* not tracked: max_procs reached, or the map refused them */
	uint64_t interpreters;     /* interpreter binaries found since start */
	uint64_t unsupported;      /* processes whose interpreter is not walked (py_elf_inspect -ENOTSUP): */
	uint64_t unsupported_version;       /* of them: a version flamed has no layout for (or not x86-64) */
	uint64_t unsupported_free_threaded; /* of them: a free-threaded build (3.13t+) */
	uint64_t unsupported_prerelease;    /* of them: an alpha, beta or rc of a version whose table
					     * differs */
	char unsupported_last[24];          /* the version of the last one ("3.16.0", "3.14.2t"); "" */
	uint64_t inconsistent;     /* interpreter binaries rejected as inconsistent (py_elf_inspect -EINVAL) */
	uint64_t debug_offsets_refused; /* of them: a 3.13+ _Py_DebugOffsets missing or lying */
	uint64_t binaries_checked; /* files inspected since start */
	uint64_t binaries_known;   /* mappings taken for a file checked lately by device and inode, not opened */
	uint64_t binaries_evicted; /* remembered files dropped for room */
	uint64_t cold_by_jumps;    /* interpreters whose eval loop's cold part was found by its jumps */
	uint64_t late_libpython;   /* processes looked at again: their program needs a libpython not mapped
				    * yet (the dynamic loader maps it after the first samples) */
	uint64_t retries_dropped;  /* such processes not looked at again: PYPROCS_RETRIES waiting */
	uint64_t rereads_failed;   /* a tracked process's mappings read again without its interpreter: kept */
};

#define PYPROCS_RETRIES 256 /* processes waiting to be looked at again; more are dropped (counted) */

/* What naming a Python process's frames needs. */
struct pyproc_info {
	uint64_t token;            /* the image it was found in (struct process_event's) */
	const struct py_layout *layout;
	uint64_t code_type;        /* PyCode_Type in the process; 0: not known */
	unsigned major, minor, micro;
	const char *path;          /* the interpreter's file as the process maps it (valid until the next
				    * call that changes the tracker) */
};

/* Creates a tracker. Returns 0, -EINVAL (a zero bound) or -ENOMEM; *out set only on success. */
int pyprocs_new(const struct pyprocs_opts *opts, struct pyprocs **out);

/* Reads pid's mappings and, when one is an interpreter, writes the process into py_procs under token
 * (struct process_event's: the time of the image's first sample), or under a later one this tracker saw
 * for pid (0: the latest it saw, and nothing is done when it saw none). A process whose interpreter is
 * gone under a new token (execve of another program) is dropped; under the same one it is kept (counted
 * in rereads_failed: an exiting process's mappings are gone while its last samples wait for the flush).
 * Binaries are
 * inspected once per file (dev, inode, size, mtime). Returns 0, -ENOENT (no interpreter), -ESRCH (the
 * process is gone), -ENOTSUP (an interpreter of a version without a layout), -ENOSPC (max_procs
 * reached), -EAGAIN (its program needs a libpython not mapped yet: pyprocs_retry looks again), or another
 * -errno. */
int pyprocs_add(struct pyprocs *p, uint32_t pid, uint64_t token);

/* pyprocs_add with pid's executable mappings (n) as the caller read them just now, in place of a read;
 * NULL: read them. */
int pyprocs_add_maps(struct pyprocs *p, uint32_t pid, uint64_t token, const struct procmap *maps, size_t n);

/* Looks again at the processes whose program needs a libpython that was not mapped yet when
 * pyprocs_add read their mappings, when their time has come (20 ms, then 60, 200, 600 ms, 2 s after).
 * Returns the milliseconds to the next one, -1 for none. */
int pyprocs_retry(struct pyprocs *p);

/* Drops the processes that have exited (a process is kept one sweep after it is first found gone, so
 * the flush that drains its last samples can still name them). */
void pyprocs_sweep(struct pyprocs *p);

/* The interpreter of pid, or NULL when it is not a tracked Python process. */
const struct pyproc_info *pyprocs_find(const struct pyprocs *p, uint32_t pid);

/* Copies the counters. */
void pyprocs_get_stats(const struct pyprocs *p, struct pyprocs_stats *out);

/* Frees everything and removes its processes from py_procs; NULL is safe. */
void pyprocs_free(struct pyprocs *p);

#endif
