/* unwcache.c - the unwind tables' disk cache of flamed's command line (see unwcache.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "unwcache.h"

struct tablecache *unwcache_open(const struct options *o)
{
	char dir[PATH_MAX];
	struct tablecache *c;
	const char *slash;
	int err;

	if (o->unwind_cache && !strcmp(o->unwind_cache, "none"))
		return NULL;
	if (o->unwind_cache) {
		snprintf(dir, sizeof(dir), "%s", o->unwind_cache);
	} else {
		slash = strrchr(o->db, '/');
		if (snprintf(dir, sizeof(dir), "%.*sunwind-cache", slash ? (int)(slash - o->db + 1) : 0, o->db) >=
		    (int)sizeof(dir)) {
			fprintf(stderr, "flamed: no unwind table cache: the database's path is too long\n");
			return NULL;
		}
	}
	err = tablecache_open(dir, (uint64_t)o->unwind_cache_mb << 20, &c);
	if (err) {
		fprintf(stderr, "flamed: no unwind table cache in %s: %s (tables are built at every start)\n", dir,
			strerror(-err));
		return NULL;
	}
	return c;
}
