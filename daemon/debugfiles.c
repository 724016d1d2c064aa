/* debugfiles.c - the debug file fetcher and the stored frames' namer, from flamed's options (see
 * debugfiles.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "debugfiles.h"

void debugfiles_open(const struct options *o, struct debugfiles *df)
{
	struct debugfetch_opts fo = { .urls = o->debuginfod, .max_bytes = (uint64_t)o->debuginfod_cache_mb << 20 };
	char dir[PATH_MAX];
	const char *slash = strrchr(o->db, '/');
	int err;

	*df = (struct debugfiles){ 0 };
	if (o->debuginfod_cache)
		snprintf(dir, sizeof(dir), "%s", o->debuginfod_cache);
	else if (snprintf(dir, sizeof(dir), "%.*sdebuginfod", slash ? (int)(slash - o->db + 1) : 0, o->db) >=
		 (int)sizeof(dir))
		dir[0] = '\0';
	if (o->debuginfod) {
		fo.cache_dir = dir;
		err = dir[0] ? debugfetch_new(&fo, &df->fetch) : -ENAMETOOLONG;
		if (err)
			fprintf(stderr, "flamed: no debug files from debuginfod (cache %s): %s%s\n", dir, strerror(-err),
				err == -ELIBACC ? " (libdebuginfod.so.1: apt-get install libdebuginfod1)" : "");
		else
			fprintf(stderr, "flamed: debug files missing here are fetched from %s into %s\n", o->debuginfod, dir);
	}
	/* Files fetched by an earlier run name stored frames even with the servers off now. */
	err = latenames_new(&(struct latenames_opts){ .debug_dir = o->debug_dir, .fetch = df->fetch,
						      .cache_dir = dir[0] ? dir : NULL }, &df->late);
	if (err)
		fprintf(stderr, "flamed: frames stored unnamed stay so when read: %s\n", strerror(-err));
	df->namer = (struct store_namer){ .name = latenames_name, .ctx = df->late };
}

const struct store_namer *debugfiles_namer(const struct debugfiles *df)
{
	return df->late ? &df->namer : NULL;
}

void debugfiles_get_status(const struct debugfiles *df, const struct options *o, struct debugfiles_status *out)
{
	*out = (struct debugfiles_status){ .enabled = df->fetch != NULL, .urls = df->fetch ? o->debuginfod : "" };
	if (df->fetch)
		debugfetch_get_stats(df->fetch, &out->fetch);
	if (df->late)
		latenames_get_stats(df->late, &out->late);
}

void debugfiles_close(struct debugfiles *df)
{
	debugfetch_free(df->fetch);
	latenames_free(df->late);
	*df = (struct debugfiles){ 0 };
}
