/* pynames.h - names the Python frames of stacks (include/python.h): the code object's qualified name,
 * file and first line, and the line being run, read out of the process and cached by code object. */
#ifndef FLAMED_PYTHON_PYNAMES_H
#define FLAMED_PYTHON_PYNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/pycode.h"
#include "python/pyprocs.h"

struct pynames;

struct pynames_opts {
	unsigned max_codes;   /* code objects cached (> 0) */
	size_t max_bytes;     /* memory they may hold (> 0); the least recently used go first */
	bool lines;           /* find the line each frame runs (py_frame_name.line; 0 when not asked) */
};

struct pynames_stats {
	uint64_t codes;        /* cached now */
	uint64_t bytes;        /* memory they hold */
	uint64_t hits, misses; /* frames named from the cache, or by reading the process */
	uint64_t evicted;      /* code objects dropped for room */
	uint64_t gone;         /* frames left unnamed: the process had exited */
	uint64_t unreadable;   /* ... its memory could not be read there */
	uint64_t invalid;      /* ... what was there is not a code object */
	uint64_t untracked;    /* ... the process is not a tracked Python process */
	uint64_t prefetched;   /* code objects read when first sampled (pynames_prefetch) */
	uint64_t replaced;     /* cached code objects found replaced by another at their address */
};

/* One named Python frame. The strings live until the next pynames call. */
struct py_frame_name {
	const char *folded;     /* "name (short_file)" as a folded stack holds it: ';' and control
				 * characters made '?'; "[unknown] (python)" when unnamed */
	const char *name;       /* qualified name (co_name before 3.11); "[unknown]" when unnamed */
	const char *file;       /* the file as the code object has it; "" when unnamed */
	const char *short_file; /* file without its directories outside Python packages (as py-spy shows
				 * it): "json/decoder.py", "prog.py", "<frozen runpy>" */
	int first_line;         /* the function's first line; 0 when not known */
	int line;               /* the line being run; 0 when not known */
};

/* Creates a namer. Returns 0, -EINVAL (a zero bound) or -ENOMEM; *out set only on success. */
int pynames_new(const struct pynames_opts *opts, struct pynames **out);

/* Starts a flush: each cached code object is checked (one read of its header) at its first use in the
 * flush, and read anew when another code object has taken its address since (a freed function's). */
void pynames_begin_flush(struct pynames *n);

/* Names the Python frame v (PY_IS_FRAME) of process pid, whose interpreter is info (NULL: not known).
 * Returns 0, or -ENOENT when the code object could not be read (out then names an unknown frame; why
 * is counted: the process gone, its memory unreadable, not a code object, or not tracked). */
int pynames_name(struct pynames *n, uint32_t pid, const struct pyproc_info *info, uint64_t v,
		 struct py_frame_name *out);

/* Reads and caches the code object at addr of process pid (interpreter info; NULL: not known) unless
 * it is cached: a frame first sampled now is named even if the process is gone by the flush. Failures
 * are counted as pynames_name's are. */
void pynames_prefetch(struct pynames *n, uint32_t pid, const struct pyproc_info *info, uint64_t addr);

/* Copies the counters. */
void pynames_get_stats(const struct pynames *n, struct pynames_stats *out);

/* Frees everything; NULL is safe. */
void pynames_free(struct pynames *n);

#endif
