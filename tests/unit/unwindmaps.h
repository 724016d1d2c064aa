/* unwindmaps.h - the unwinder's BPF maps made as profile.bpf.c makes them, for the unit tests that
 * load tables into the kernel (root). */
#ifndef FLAMED_UNWINDMAPS_H
#define FLAMED_UNWINDMAPS_H

#include <errno.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "check.h"
#include "unwind.h"
#include "unwind/unwinder.h"

struct maps {
	int tmpl, tables, procs;
};

/* Makes maps like profile.bpf.c's. Returns 0 or -errno. */
static inline int make_maps(struct maps *m, unsigned max_tables, unsigned max_procs)
{
	LIBBPF_OPTS(bpf_map_create_opts, inner, .map_flags = BPF_F_INNER_MAP);
	LIBBPF_OPTS(bpf_map_create_opts, outer);
	LIBBPF_OPTS(bpf_map_create_opts, hash, .map_flags = BPF_F_NO_PREALLOC);

	m->tmpl = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_tmpl", 4, sizeof(struct unwind_row), 1, &inner);
	if (m->tmpl < 0)
		return -errno;
	outer.inner_map_fd = m->tmpl;
	m->tables = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "t_tables", 4, 4, max_tables, &outer);
	m->procs = bpf_map_create(BPF_MAP_TYPE_HASH, "t_procs", 4, sizeof(struct unwind_proc), max_procs, &hash);
	return m->tables < 0 || m->procs < 0 ? -errno : 0;
}

static inline void close_maps(struct maps *m)
{
	close(m->tmpl);
	close(m->tables);
	close(m->procs);
}

static inline struct unwinder *new_unwinder(const struct maps *m, unsigned max_tables, unsigned max_procs, size_t bytes)
{
	struct unwinder_opts o = { .tables_fd = m->tables, .procs_fd = m->procs, .max_tables = max_tables,
				   .max_procs = max_procs, .max_bytes = bytes };
	struct unwinder *u = NULL;
	int err = unwinder_new(&o, &u);

	CHECK(err == 0, "unwinder_new (%d)", err);
	return u;
}

#endif
