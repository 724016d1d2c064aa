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

/* Parameters of the statements run per piece of a plan: ?1 piece from, ?2 piece to, ?3 pid, ?4 tid
 * (NULL: any), ?5 process name id (NULL: any), ?6 rollup span, ?7 the window's from (timeline steps
 * start there), ?8 step, ?9 the first bucket start >= ?1, ?10 the kind of rows (enum store_kind; -1:
 * both, for STORE_WALL), ?11 what a CPU row's count is worth (1; for STORE_WALL the sampling period in
 * microseconds), ?12 1 to keep only the processes of temp.family (the processes listing), ?13 1 to keep
 * only the rows of the cgroups in temp.cgsel (a unit, container, pod or cgroup filter). Raw rows are
 * found by samples(ts), a pid filters them; a one-pid variant of rollups walks the piece's buckets and
 * seeks (span, bucket, pid) in each, instead of reading every process's rows of those buckets. Its
 * CROSS JOIN keeps the buckets the outer loop, which SQLite honours whatever its costs say: without it
 * SQLite 3.46 (Debian 13) puts the rollups outside, SEARCH r USING PRIMARY KEY (span=?), a read of
 * every process's rows of the span with the buckets scanned for each, where 3.40 chose the seeks. The
 * family variant keeps the rows of the processes in temp.family, each within its seconds (a rollup
 * bucket when it overlaps them). */
#define AND_PID " AND pid = ?3"
#define IN_FAMILY "EXISTS (SELECT 1 FROM temp.family AS q WHERE q.pid = samples.pid AND q.since <= samples.ts" \
		  " AND q.until > samples.ts)"
#define IN_FAMILY_ROLLUP "EXISTS (SELECT 1 FROM temp.family AS q WHERE q.pid = rollups.pid"                \
			 " AND q.since < rollups.bucket + ?6 AND q.until > rollups.bucket)"
#define AND_FAMILY " AND " IN_FAMILY
#define AND_FAMILY_ROLLUP " AND " IN_FAMILY_ROLLUP
#define AND_KIND " AND (?10 < 0 OR kind = ?10)"
#define AND_CG " AND (?13 = 0 OR cg IN (SELECT id FROM temp.cgsel))"
#define AND_CG_R " AND (?13 = 0 OR r.cg IN (SELECT id FROM temp.cgsel))"
#define WEIGHED(col) "(" col " * CASE kind WHEN 0 THEN ?11 ELSE 1 END)"
#define RAW_WHERE(pid) " FROM samples WHERE ts >= ?1 AND ts < ?2" pid " AND (?4 IS NULL OR tid = ?4)" \
		       " AND (?5 IS NULL OR comm_id = ?5)" AND_KIND AND_CG
#define ROLLUP_WHERE " FROM rollups WHERE span = ?6 AND bucket >= ?1 AND bucket < ?2 AND (?5 IS NULL OR comm_id = ?5)" \
		     AND_KIND AND_CG
#define ROLLUP_PID(cols) "WITH RECURSIVE b(x) AS (SELECT ?9 WHERE ?9 < ?2 UNION ALL SELECT x + ?6 FROM b"   \
			 " WHERE x + ?6 < ?2) SELECT " cols " FROM b CROSS JOIN rollups AS r ON r.span = ?6" \
			 " AND r.bucket = b.x AND r.pid = ?3 AND (?5 IS NULL OR r.comm_id = ?5)"             \
			 " AND (?10 < 0 OR r.kind = ?10)" AND_CG_R

/* Every sample. */
extern const struct store_filter qrun_filter_all;

/* Which variant of the statements the query runs (QV_ANY, QV_PID or QV_FAMILY). */
int qvariant(const struct qrun *q);

/* Starts a query over f (NULL: every sample): checks it, begins the read transaction unless one is
 * open, reads the rollup markers, gathers its family and cgroups. 0 or a store error (nothing open). */
int qrun_begin(struct store *st, const struct store_filter *f, struct qrun *q);

/* qrun_begin for a listing of f's window by process (or by cgroup): a pid filter is kept only with
 * children (a family), a tid never. */
int qrun_begin_listing(struct store *st, const struct store_filter *f, struct qrun *q);

/* Ends the read transaction the query began. */
void qrun_end(struct qrun *q);

/* Handed each row of a piece's statement; non-zero stops the run and is returned. */
typedef int (*piece_row_fn)(struct qrun *q, sqlite3_stmt *s, const struct rollup_piece *p, void *ctx);

/* Runs raw (a raw piece) or rollup statements over each piece of the window's plan, handing each row
 * to fn. 0, fn's first non-zero return, or a store error. */
int qrun_each_piece(struct qrun *q, sqlite3_stmt *raw, sqlite3_stmt *rollup, const struct rollup_plan_opts *o,
		    piece_row_fn fn, void *ctx);

/* Prepares a query over samples or rollups (its text built from the fragments above) for this
 * database, adapted to its version: before schema version 7 rows have no cgroup, before 5 no kind. */
int qrun_prepare(struct store *st, sqlite3_stmt **stmt, const char *sql);

#endif
