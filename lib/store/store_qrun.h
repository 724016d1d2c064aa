/* store_qrun.h - one query's run over the store (store_qrun.c): its filter checked, its process name,
 * family and cgroups resolved, the rollup markers read in one read transaction, and the statements
 * of each piece of its window's plan stepped. Store files only. */
#ifndef FLAMED_STORE_QRUN_H
#define FLAMED_STORE_QRUN_H

#include <stdbool.h>
#include <stdint.h>

#include "store/rollup.h"
#include "store/store.h"
#include "store/store_impl.h"

/* One query's view of the store: the filter checked, the process name resolved, the rollup markers
 * read, all in one read transaction (a fold committing meanwhile cannot make a second count twice). */
struct qrun {
	struct store *st;
	struct store_filter f;
	int64_t comm_id; /* -1: any */
	bool none;       /* the name filter names no stored name: nothing matches */
	bool tx;         /* this query began the read transaction */
	struct rollup_tiers tiers;
	int64_t cpu_weight; /* what a CPU sample counts: 1, or its period in microseconds for STORE_WALL */
	bool family;        /* f.children: the rows of temp.family's processes (QV_FAMILY) */
	bool groups;        /* a unit, container, pod or cgroup filter: the rows of temp.cgsel's cgroups */
};

/* Every sample. */
extern const struct store_filter qrun_filter_all;

/* Which variant of the statements the query runs (QV_ANY, QV_PID or QV_FAMILY). */
int qvariant(const struct qrun *q);

/* Starts a query over f (NULL: every sample): checks it, begins the read transaction unless one is
 * open, reads the rollup markers, gathers its family and cgroups. 0 or a store error (nothing open). */
int qrun_begin(struct store *st, const struct store_filter *f, struct qrun *q);

/* Ends the read transaction the query began. */
void qrun_end(struct qrun *q);

/* Handed each row of a piece's statement; non-zero stops the run and is returned. */
typedef int (*piece_row_fn)(struct qrun *q, sqlite3_stmt *s, const struct rollup_piece *p, void *ctx);

/* Runs raw (a raw piece) or rollup statements over each piece of the window's plan, handing each row
 * to fn. 0, fn's first non-zero return, or a store error. */
int qrun_each_piece(struct qrun *q, sqlite3_stmt *raw, sqlite3_stmt *rollup, const struct rollup_plan_opts *o,
		    piece_row_fn fn, void *ctx);

#endif
