/* services.h - where samples ran, in the words people use (services.c): each process's cgroup as
 * unit, container and pod fields of the processes listing, and the services listing (units, containers
 * and other cgroups of a window by samples). */
#ifndef FLAMED_SERVICES_H
#define FLAMED_SERVICES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "store/store.h"

/* Writes ',"cgroup":PATH,"unit":U,"slice":S,"container":ID,"runtime":R,"pod":UID,"qos":Q' for a cgroup
 * path (each "" where the path does not tell; all "" for ""), escaped for JSON. */
void services_json_fields(FILE *out, const char *cgroup);

/* What a process of cgroup path is shown as in a table: its container's first 12 characters, else its
 * unit, else its path; "-" for "". Into buf (cap bytes, cut to fit). */
const char *services_short(const char *cgroup, char *buf, size_t cap);

/* Each process's cgroup over a window, by pid: the cgroup of its newest sample there. */
struct services_map;

/* What a process's cgroup is called: its path, unit and container ("" where not told), and its
 * service as a flame graph's root frame ("web.service", "docker 0123456789ab" (runtime and the id's
 * first 12 characters), else the path; "[no cgroup]" for none). */
struct services_of {
	const char *cgroup, *unit, *container, *service;
};

/* Reads the cgroup of each process with samples matching f (a pid filter applies only with
 * children). 0, -ENOMEM or a store error; *out set only on success. */
int services_map_load(struct store *st, const struct store_filter *f, struct services_map **out);

/* What pid ran in (every field "" for a pid not in the map, service "[no cgroup]"). Valid until the
 * map is freed. */
struct services_of services_map_get(const struct services_map *m, uint32_t pid);

/* Frees the map; NULL is safe. */
void services_map_free(struct services_map *m);

/* The stacks of f as store_query_stacks gives them, each under a root frame of its process's service
 * (services_of.service): cb gets (service, "comm;stack", count), summed and most first. */
int services_each_stack(struct store *st, const struct store_filter *f, store_stack_cb cb, void *ctx);

/* The services of the samples matching f (a pid filter applies only with children), most samples
 * first: a container (by id) with its pod, else a systemd unit, else the cgroup path itself, else
 * samples whose cgroup is not known. As JSON: {"unit", "total", "services": [{"kind": "container",
 * "unit", "cgroup" or "none", "name", "unit", "slice", "container", "runtime", "pod", "qos",
 * "samples", "share", "processes", "cgroups": [PATH, ...]}, ...]}; as an aligned table (tty); or as
 * tab-separated "kind name samples processes" lines. 0, -ENOMEM, -EIO or a store error. */
int query_services(struct store *st, const struct store_filter *f, bool json, bool tty, FILE *out);

#endif
