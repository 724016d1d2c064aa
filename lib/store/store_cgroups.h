/* store_cgroups.h - the cgroups table for the query path (store_cgroups.c): the cgroups a query's unit, container, pod or path filter picks gathered into
 * temp.cgsel, a cgroup's path by id, and retention's delete. Store files only. */
#ifndef FLAMED_STORE_CGROUPS_H
#define FLAMED_STORE_CGROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_impl.h"

/* Whether f picks samples by cgroup (a unit, container, pod or cgroup path). */
bool store_filter_has_groups(const struct store_filter *f);

/* Fills temp.cgsel with the ids of the cgroups f's unit, container, pod and path filters all take;
 * *count how many. Inside the caller's read transaction, version 7 or later. -EINVAL (the reason in
 * store_errmsg) when f's container or pod prefix names more than one, -E2BIG past STORE_CGROUPS_MAX
 * cgroups stored, or a store error. */
int store_cgsel_load(struct store *st, const struct store_filter *f, size_t *count);

/* The path of cgroup id into buf (cap bytes): "" for 0 or an id not stored. 0 or a store error. */
int store_cgroup_path(struct store *st, int64_t id, char *buf, size_t cap);

/* Deletes the cgroups no raw row or rollup names any more (inside store_prune's transaction). */
int store_prune_cgroups(struct store *st);

#endif
