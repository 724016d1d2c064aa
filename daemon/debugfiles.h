/* debugfiles.h - debug files that come after flamed started, from flamed's command line: fetched from
 * debuginfod servers (--debuginfod, lib/elf/debugfetch.h) and used to name frames stored unnamed when
 * they are read (lib/symbolize/latenames.h). */
#ifndef FLAMED_DEBUGFILES_H
#define FLAMED_DEBUGFILES_H

#include <stdbool.h>

#include "elf/debugfetch.h"
#include "options.h"
#include "store/store.h"
#include "symbolize/latenames.h"

struct debugfiles {
	struct debugfetch *fetch;  /* NULL: no servers, or the cache could not be made */
	struct latenames *late;    /* NULL: out of memory */
	struct store_namer namer;  /* late's, for the stores of HTTP requests */
};

/* What the status shows of them. */
struct debugfiles_status {
	bool enabled;              /* servers asked */
	const char *urls;          /* the servers, "" when none */
	struct debugfetch_stats fetch;
	struct latenames_stats late;
};

/* Starts the fetcher o asks for (before other threads: it sets libdebuginfod's environment) and the
 * namer of stored frames. What fails is said on stderr; flamed goes on without it. */
void debugfiles_open(const struct options *o, struct debugfiles *df);

/* The namer for the stores of HTTP requests, or NULL. */
const struct store_namer *debugfiles_namer(const struct debugfiles *df);

/* Fills out from the live counters. Thread-safe. */
void debugfiles_get_status(const struct debugfiles *df, const struct options *o, struct debugfiles_status *out);

/* Stops the fetcher, frees both. */
void debugfiles_close(struct debugfiles *df);

#endif
