/* store_parents.h - the parents table's reads for the query path (store_parents.c): a process's
 * family gathered into temp.family, a process's recorded parent, and retention's delete. Store files
 * only. */
#ifndef FLAMED_STORE_PARENTS_H
#define FLAMED_STORE_PARENTS_H

#include <stddef.h>
#include <stdint.h>

#include "store/store_impl.h"

/* Fills temp.family with pid's family as of the window ending at to: the process that had pid last
 * before to (or pid at any time when none is recorded), the processes it started while it had the pid
 * and before to, theirs, and so on; each with the seconds [since, until) its pid was its own (until
 * the next process recorded with that pid started). *count (may be NULL) says how many. Inside the
 * caller's read transaction. -E2BIG past 65536 processes, or a store error. A database before schema
 * version 6 has no parents: the family is pid alone. */
int store_family_load(struct store *st, int64_t pid, int64_t to, size_t *count);

/* The parent recorded for the process that had pid at unix second at (the newest started by then);
 * *ppid 0 when none is recorded. 0 or a store error. */
int store_parent_of(struct store *st, uint32_t pid, int64_t at, uint32_t *ppid);

/* Deletes the parent records not seen since before (inside store_prune's transaction). */
int store_prune_parents(struct store *st, int64_t before);

#endif
