/* capstream.c - a bounded write stream into memory (see capstream.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/capstream.h"

#define FIRST_ALLOC 4096

static ssize_t capstream_write(void *cookie, const char *p, size_t n)
{
	struct capstream *b = cookie;

	if (n > b->max - b->len) {
		b->full = true;
		errno = EFBIG;
		return 0; /* fopencookie(3): 0 on error, never negative */
	}
	if (b->len + n + 1 > b->alloc) { /* + 1: the NUL */
		size_t alloc = b->alloc ? b->alloc : FIRST_ALLOC;
		char *data;

		while (alloc < b->len + n + 1)
			alloc = alloc > b->max / 2 ? b->max + 1 : alloc * 2;
		data = realloc(b->data, alloc);
		if (!data) {
			b->nomem = true;
			errno = ENOMEM;
			return 0;
		}
		b->data = data;
		b->alloc = alloc;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return (ssize_t)n;
}

FILE *capstream_open(struct capstream *b, size_t max)
{
	static const cookie_io_functions_t io = { .write = capstream_write };

	memset(b, 0, sizeof(*b));
	b->max = max;
	return fopencookie(b, "w", io);
}
