/* query.h - the queries users ask (profile, top, diff, processes, threads, timeline), run against the
 * store and rendered in the format asked; shared by the HTTP API and flamectl --db. */
#ifndef FLAMED_QUERY_H
#define FLAMED_QUERY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "store/store.h"

enum query_format {
	QUERY_FOLDED = 0, /* text/plain: "comm;a;b;c COUNT" lines, most samples first */
	QUERY_JSON,       /* application/json */
	QUERY_SVG,        /* image/svg+xml, interactive flame graph */
	QUERY_PPROF,      /* application/octet-stream: gzip profile.proto */
	QUERY_TOP,        /* text/plain table of functions (self, total) */
};
#define QUERY_FORMAT_COUNT (QUERY_TOP + 1)

/* The largest pid or tid a query takes: the kernel's PID_MAX_LIMIT. */
#define QUERY_PID_LIMIT 4194304

/* Parses "folded", "json", "svg", "pprof", "top". Returns 0 or -EINVAL. */
int query_parse_format(const char *s, enum query_format *out);

/* Parses a kind of profile: "cpu" (CPU samples), "offcpu" (time blocked, microseconds) or "wall"
 * (both as time). Returns 0 or -EINVAL. */
int query_parse_kind(const char *s, enum store_kind *out);

/* A kind's name, as query_parse_kind() takes it ("?" for none). */
const char *query_kind_name(enum store_kind k);

/* What one CPU sample stands for at a sampling frequency, in microseconds (1e6 / hz, rounded; at
 * least 1), for STORE_WALL filters. */
int64_t query_cpu_period_us(unsigned hz);

/* A format's name, as query_parse_format() takes it ("?" for none). */
const char *query_format_name(enum query_format f);

/* The Content-Type of a format's output. */
const char *query_content_type(enum query_format f);

/* How a flame graph is drawn. */
struct query_graph {
	bool reverse;         /* icicle view: leaf first */
	const char *title;    /* NULL: the renderer's default */
	unsigned width;       /* SVG pixels; 0: 1200 */
	double minwidth;      /* SVG: frames narrower than this many pixels are pruned; < 0: default */
	unsigned frequency;   /* sampling frequency, for pprof's period; 0: 19 */
	bool lines;           /* QUERY_TOP: rank a Python function's lines apart ("QUALNAME (FILE:LINE)") */
	bool by_service;      /* QUERY_FOLDED, JSON, SVG: each stack under a root frame of its process's
			       * service (query/services.h), above its process name */
};

/* Writes the aggregated profile of the samples matching f in format fmt (QUERY_TOP: the top table,
 * limit 0 = all). Returns 0, -ENOMEM, -EIO or a store error. */
int query_profile(struct store *st, const struct store_filter *f, enum query_format fmt,
		  const struct query_graph *g, unsigned limit, FILE *out);

/* Top functions as an aligned table with percentages (tty) or tab-separated "self total name" lines.
 * limit 0: all. by_line: each line run of a Python function ranks apart, as "QUALNAME (FILE:LINE)". */
int query_top_text(struct store *st, const struct store_filter *f, unsigned limit, bool tty, bool by_line,
		   FILE *out);

/* Top functions as JSON: {"total": N, "functions": [{"name", "self", "total"}, ...]} by self
 * samples then total; a function is counted once per stack for its total however often it recurs.
 * limit 0: all. */
int query_top_json(struct store *st, const struct store_filter *f, unsigned limit, bool by_line, FILE *out);

/* Writes the differential profile of window/pid `now` against `base`, base scaled to now's total:
 * QUERY_FOLDED ("comm;stack BASE NEW" lines, as FlameGraph's difffolded.pl writes, by process name
 * then stack; the process name written as in a profile's folded lines), QUERY_JSON (tree with
 * "delta") or QUERY_SVG (red grew, blue shrank). Others: -EINVAL. */
int query_diff(struct store *st, const struct store_filter *base, const struct store_filter *now,
	       enum query_format fmt, const struct query_graph *g, FILE *out);

/* Processes in the window (f->children: of pid's family) as JSON: {"processes": [{"pid", "comm",
 * "samples", "first_seen", "last_seen", "ppid" (the parent recorded, 0: not known), "parent" (the
 * nearest ancestor among those listed, 0: none), and where its newest sample ran: "cgroup", "unit",
 * "slice", "container", "runtime", "pod", "qos" (services.h)}, ...]}, or as aligned text (tty, with
 * its service) or tab-separated text. */
int query_processes(struct store *st, const struct store_filter *f, bool json, bool tty, FILE *out);

/* Threads of f->pid as JSON: {"pid", "threads": [{"tid", "name", "samples"}, ...]}. */
int query_threads(struct store *st, const struct store_filter *f, FILE *out);

/* Samples per step as JSON: {"from", "to", "step", "points": [{"t", "count"} | {"t", "tid",
 * "count"}, ...]}. */
int query_timeline(struct store *st, const struct store_filter *f, int64_t step, bool per_thread,
		   FILE *out);

#endif
