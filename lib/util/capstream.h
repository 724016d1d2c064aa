/* capstream.h - a write stream into memory with a bound: it grows by doubling and refuses a write that
 * would pass the bound (instead of allocating it first, as open_memstream would). */
#ifndef FLAMED_UTIL_CAPSTREAM_H
#define FLAMED_UTIL_CAPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct capstream {
	char *data;        /* what was written, NUL-terminated (NULL: nothing yet); the caller frees it */
	size_t len, alloc;
	size_t max;        /* bytes it may hold */
	bool full;         /* a write would have passed max (it failed with EFBIG) */
	bool nomem;        /* a write found no memory (it failed with ENOMEM) */
};

/* Opens a stream writing into b, emptied, holding at most max bytes. NULL with errno on failure. */
FILE *capstream_open(struct capstream *b, size_t max);

#endif
