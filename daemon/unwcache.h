/* unwcache.h - where flamed keeps its unwind tables between restarts (--unwind-cache), opened for the
 * unwinder (lib/unwind/tablecache.h). */
#ifndef FLAMED_UNWCACHE_H
#define FLAMED_UNWCACHE_H

#include "options.h"
#include "unwind/tablecache.h"

/* Opens the cache o asks for: o->unwind_cache, or "unwind-cache" in the directory of o->db. Returns NULL
 * with --unwind-cache none, or when it cannot be opened (said on stderr: tables are then built at every
 * start, as without one). */
struct tablecache *unwcache_open(const struct options *o);

#endif
