/* bgfetch.h - one topsource fetch at a time on a thread of its own, so that flamectl top --watch reads
 * keys and signals while a request is in flight (a daemon that hangs holds a request for up to
 * TOPSOURCE_TIMEOUT_S seconds). */
#ifndef FLAMECTL_BGFETCH_H
#define FLAMECTL_BGFETCH_H

#include <stdbool.h>
#include <stddef.h>

#include "topsource.h"

struct bgfetch;

/* Fetches from src (which must outlive it). Returns 0, or -errno. */
int bgfetch_new(struct topsource *src, struct bgfetch **out);

/* Readable once the fetch started last has ended (poll it beside the keys). */
int bgfetch_fd(const struct bgfetch *b);

/* Is a fetch in flight (started, not yet taken)? */
bool bgfetch_busy(const struct bgfetch *b);

/* Starts a fetch on its own thread. Returns 0, -EBUSY while one is in flight, or -errno. The thread
 * is started with the caller's signal mask: block the signals it is not to take first. */
int bgfetch_start(struct bgfetch *b);

/* After bgfetch_fd is readable: waits for the thread (which is ending) and hands over its snapshot
 * (*snap, which the caller clears) and its result, 0 or -errno with why said as topsource_fetch says
 * it. -EAGAIN when no fetch ended yet. */
int bgfetch_take(struct bgfetch *b, struct top_snapshot *snap, char *why, size_t whylen);

/* Frees b when no fetch is in flight, and returns true. With one in flight (a quit while the daemon is
 * slow to answer) the thread is left to run, and b and src with it: returns false, and the caller,
 * about to exit, must not free src either. NULL is safe (true). */
bool bgfetch_free(struct bgfetch *b);

#endif
