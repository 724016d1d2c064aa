/* services.h - where samples ran, in the words people use (services.c): each process's cgroup as
 * unit, container and pod fields of the processes listing, and the services listing (units, containers
 * and other cgroups of a window by samples). */
#ifndef FLAMED_SERVICES_H
#define FLAMED_SERVICES_H

#include <stdbool.h>
#include <stdio.h>

#include "store/store.h"

/* Writes ',"cgroup":PATH,"unit":U,"slice":S,"container":ID,"runtime":R,"pod":UID,"qos":Q' for a cgroup
 * path (each "" where the path does not tell; all "" for ""), escaped for JSON. */
void services_json_fields(FILE *out, const char *cgroup);

/* What a process of cgroup path is shown as in a table: its container's first 12 characters, else its
 * unit, else its path; "-" for "". Into buf (cap bytes, cut to fit). */
const char *services_short(const char *cgroup, char *buf, size_t cap);

/* The services of the samples matching f (a pid filter applies only with children), most samples
 * first: a container (by id) with its pod, else a systemd unit, else the cgroup path itself, else
 * samples whose cgroup is not known. As JSON: {"unit", "total", "services": [{"kind": "container",
 * "unit", "cgroup" or "none", "name", "unit", "slice", "container", "runtime", "pod", "qos",
 * "samples", "share", "processes", "cgroups": [PATH, ...]}, ...]}; as an aligned table (tty); or as
 * tab-separated "kind name samples processes" lines. 0, -ENOMEM, -EIO or a store error. */
int query_services(struct store *st, const struct store_filter *f, bool json, bool tty, FILE *out);

#endif
