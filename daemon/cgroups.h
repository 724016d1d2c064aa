/* cgroups.h - where each sample ran: the cgroup v2 path of the kernel's cgroup id the BPF program put in
 * its key, opened by that id on the cgroup2 file system (so a process gone, or moved since, still gets
 * the cgroup it ran in), else read from /proc/PID/cgroup (its "0::" line, or the v1 "name=systemd" one
 * when that is all there is); each remembered, within a bound. */
#ifndef FLAMED_CGROUPS_H
#define FLAMED_CGROUPS_H

#include <stddef.h>
#include <stdint.h>

struct cgroups;

struct cgroups_opts {
	const char *mountinfo; /* NULL: "/proc/self/mountinfo" (where the cgroup2 file system is mounted) */
	const char *proc_root; /* NULL: "/proc" */
	unsigned max;          /* cgroups remembered at most (all forgotten at once past it); 0: 4096 */
};

struct cgroups_stats {
	uint64_t by_id;    /* cgroups learnt by opening their id on the cgroup2 file system */
	uint64_t by_proc;  /* ... from /proc/PID/cgroup */
	uint64_t unknown;  /* (process, id) pairs neither told: a cgroup removed and its process gone */
	uint64_t cut;      /* paths cut to STORE_CGROUP_MAX_BYTES or cleaned of control characters */
	uint64_t forgotten; /* times the table reached its bound and was emptied */
	uint64_t known;    /* cgroups remembered now */
	char mount[256];   /* the cgroup2 mount read by id ("" none: /proc only) */
};

/* Creates the resolver and finds the cgroup2 mount. Returns 0, -EINVAL or -ENOMEM; *out set only on
 * success. No mount is not an error: paths then come from /proc. */
int cgroups_new(const struct cgroups_opts *o, struct cgroups **out);

/* The cgroup path ("/system.slice/nginx.service", cleaned, at most STORE_CGROUP_MAX_BYTES) of the
 * cgroup with kernel id cgid that pid ran in, or "" when it cannot be told (cgid 0: the kernel gave
 * none). Valid until the next call. */
const char *cgroups_path(struct cgroups *c, uint32_t pid, uint64_t cgid);

/* Copies the counters. */
void cgroups_get_stats(const struct cgroups *c, struct cgroups_stats *out);

/* Frees the resolver; NULL is safe. */
void cgroups_free(struct cgroups *c);

#endif
