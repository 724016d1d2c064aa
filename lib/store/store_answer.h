/* store_answer.h - a query's answer: its stacks and frames named from their ids (interned, read in
 * bulk), ranked and merged (its id -> index maps: store_idmap.h). For store_query.c only. */
#ifndef FLAMED_STORE_ANSWER_H
#define FLAMED_STORE_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/rollup.h"
#include "store/store_idmap.h"
#include "store/store_impl.h"

/* One frame of an answer: a frame row (id > 0) or a frame name split out of a stack's stored text
 * (id 0, module, build-id and file ""). text is name NUL module NUL build-id NUL file NUL, NULL until
 * read. */
struct qframe {
	int64_t id;
	char *text;
	size_t module_off, build_id_off, file_off; /* the name's length is module_off - 1 */
	int start_line, line;                     /* a Python frame's source; else 0 */
	char *system;  /* the name as stored, where the answer demangled it (text holds the new one); else NULL */
	uint32_t rank; /* order of the names as if each ended with ';' */
};

/* One stack of an answer, as runs of frame indexes in the answer's seq. */
struct qstack {
	int64_t id;
	uint32_t tok_off, ntok; /* its text, frame by frame: what it is named and sorted by */
	uint32_t fr_off, nfr;   /* its frames for pprof (nfr 0: stored without frames) */
	uint32_t rank;          /* order of the texts */
	bool loaded;
};

/* A summed answer being named and sorted. */
struct answer {
	struct store *st;
	bool want_frames;
	enum demangle_mode demangle; /* how its frames' names are written */
	struct idmap stack_of, frame_of, name_idx, comm_of;
	struct qstack *stacks;
	uint32_t nstacks;
	struct qframe *frames;
	uint32_t nframes, frames_cap;
	uint32_t *seq;       /* frame indexes of the stacks' runs */
	uint32_t *ranks;     /* the rank of each seq entry's frame, once ranked */
	size_t nseq, seq_cap;
	uint32_t *dense;     /* frame id -> index + 1 (0: none yet), for ids up to ndense; larger use frame_of */
	int64_t ndense;
	char **comms;      /* names of the process name ids, by index */
	uint32_t *comm_rank;
	uint32_t ncomms;
};

/* One row of a sorted answer: indexes into the answer's stacks and names. */
struct qrow {
	uint64_t count;
	uint32_t pid, comm, stack;
	uint32_t side; /* store_query_diff: 1 for the base window, 0 for the new one */
};

/* An order of struct qrow (qsort_r; ctx: the answer). */
typedef int (*row_cmp)(const void *x, const void *y, void *ctx);

/* Frees what the answer holds (not a itself). */
void store_answer_free(struct answer *a);

/* Indexes the cells' stacks and names (*count of them), reads them, sorts the rows (*rows, one per cell,
 * side from the cell's bucket) by cmp. Unless the answer wants frames, rows of stacks with one text are
 * summed into one first (*count is then the rows left). */
int store_answer_build(struct answer *a, const struct rollup_cell *c, size_t *count, row_cmp cmp,
			struct qrow **rows);

/* Writes stack s's text (its frames' names joined by ';') into st->text; NULL when out of memory. */
const char *store_answer_text(struct answer *a, const struct qstack *s);

/* Reads the names of the process name ids and ranks them. */
int store_answer_comms(struct answer *a, const int64_t *ids);

/* Most first; then pid (when the answer is per pid: else all 0), process name, stack text. */
int store_rows_cmp(const void *x, const void *y, void *ctx);

/* By process name, then stack text, then side (base last): a diff's order. */
int store_diff_rows_cmp(const void *x, const void *y, void *ctx);

#endif
