/* store_rollup_rows.h - the rollup rows and fold markers, for store_write.c (rows that come late)
 * and store_fold.c (folding, retention); store files only. */
#ifndef FLAMED_STORE_ROLLUP_ROWS_H
#define FLAMED_STORE_ROLLUP_ROWS_H

#include <stdbool.h>
#include <stddef.h>

#include "store/rollup.h"
#include "store/store_impl.h"

/* Reads the rollup markers of the meta table into *t (INT64_MIN for a marker not set, and for every
 * one of a database older than version 3). */
int store_load_tiers(struct store *st, struct rollup_tiers *t);

/* Writes t's markers into the meta table (in the open transaction). */
int store_save_tiers(struct store *st, const struct rollup_tiers *t);

/* Writes the cells (sorted by rollup_cells_sort, counts > 0) as rollup rows of level: one row per
 * (bucket, pid, comm_id) and ROLLUP_PART_BYTES of pairs. merge: rows of those buckets may exist (rows that
 * came late), so pairs are merged into their last part or go in new parts; else the buckets are new. */
int store_write_rollups(struct store *st, int level, const struct rollup_cell *c, size_t n, bool merge);

#endif
