/* store_stmts.h - the store's statement sets, each prepared by the file that runs them; store_open.c
 * is their only caller, once per store_open(). Each returns 0 or -errno (store_errmsg() tells). */
#ifndef FLAMED_STORE_STMTS_H
#define FLAMED_STORE_STMTS_H

#include "store/store_impl.h"

/* store_write.c: the statements of flushes (READ_WRITE only). */
int store_prepare_writes(struct store *st);

/* store_rollup_rows.c: the rollup rows' and fold markers' writes (READ_WRITE only). */
int store_prepare_rollup_rows(struct store *st);

/* store_fold.c: retention and folding (READ_WRITE, version 3). */
int store_prepare_fold(struct store *st);

/* store_parents.c: parent records and the family of a query (every store; writes READ_WRITE only). */
int store_prepare_parents(struct store *st);

/* store_cgroups.c: the cgroups table and a query's cgroups (every store; writes READ_WRITE only). */
int store_prepare_cgroups(struct store *st);

/* store_groups.c: a window's samples per cgroup. */
int store_prepare_groups(struct store *st);

/* store_query.c: the read path. */
int store_prepare_queries(struct store *st);

#endif
