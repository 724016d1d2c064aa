/* pprof.h - encodes stacks as a gzip-compressed pprof profile.proto (what go tool pprof, Parca and
 * Pyroscope read). */
#ifndef FLAMED_RENDER_PPROF_H
#define FLAMED_RENDER_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pprof_frame {
	const char *name;     /* function name as in the folded stack, suffix ("_[k]") included */
	const char *system_name; /* the name as the binary has it, where name is demangled; NULL, "": name */
	const char *module;   /* path of the binary, "[kernel]", or "" when unknown */
	const char *build_id; /* lowercase hex, "" when unknown */
	const char *file;     /* a Python frame's source file (its name is "QUALNAME (FILE)"); NULL, "": none */
	int start_line;       /* its function's first line, 0 when not known */
	int line;             /* the line it ran, 0 when not known */
};

struct pprof_stack {
	const struct pprof_frame *frames; /* leaf first */
	unsigned nframes;
	uint64_t count;                   /* samples */
	const char *comm;                 /* process name, a sample label "comm"; may be NULL */
	int64_t pid;                      /* a numeric label "pid" when >= 0 */
	/* Where it ran: labels "unit", "container" and "cgroup" where set and not "" */
	const char *unit, *container, *cgroup;
};

struct pprof_info {
	int64_t time_unix_ns;  /* start of the window */
	int64_t duration_ns;   /* length of the window */
	int64_t period_ns;     /* CPU time one sample stands for: 1e9 / frequency (time_type: the period) */
	const char *time_type; /* NULL: counts are CPU samples; else counts are microseconds of this
				* kind of time ("off_cpu", "wall"), written as one sample type TYPE/nanoseconds */
};

/* Writes the profile: sample types samples/count and cpu/nanoseconds (count * period), or with
 * info->time_type the one sample type TYPE/nanoseconds (count * 1000) and that period type; one
 * Location per distinct (module, function), one Mapping per module with its build-id. A Python frame
 * (with a file) is a Function named QUALNAME (its name less " (FILE)") with its file name and first
 * line, no Mapping, and one Location per line it ran, whose Line says it (go tool pprof -list).
 * Returns 0, -ENOMEM or -EIO.
 * Also: -EINVAL when stacks is NULL and n > 0; n == 0 writes a valid empty profile. NULL info means
 * zero times and period; NULL frames count as none; NULL name/module/build_id as "". Bytes that are
 * not UTF-8 are written as U+FFFD (protobuf strings are UTF-8). */
int render_pprof(FILE *out, const struct pprof_stack *stacks, size_t n, const struct pprof_info *info);

#endif
