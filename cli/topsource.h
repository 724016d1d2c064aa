/* topsource.h - where flamectl top --watch gets its numbers: one snapshot of the top functions of the
 * window, from flamed's API (flush=1: up to the last second) or from its database, bounded. */
#ifndef FLAMECTL_TOPSOURCE_H
#define FLAMECTL_TOPSOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"

#define TOPSOURCE_MAX_BODY (16u << 20) /* bytes of one answer */
#define TOPSOURCE_MAX_FUNCS 100000     /* functions kept; the rest (the least self) are counted */
#define TOPSOURCE_NAME_MAX 1024        /* bytes of a name; longer ones are cut */
#define TOPSOURCE_TIMEOUT_S 10         /* seconds for each network step */

struct top_fn {
	char *name;
	uint64_t self, total;
};

/* One snapshot: the functions in the order the query gave them (by self). */
struct top_snapshot {
	struct top_fn *fn;
	size_t n;
	uint64_t total;   /* samples, or microseconds, in the window */
	bool micros;      /* the values are microseconds (offcpu, wall), else CPU samples */
	uint64_t left_out; /* functions past TOPSOURCE_MAX_FUNCS */
};

struct topsource;

/* Prepares to read what o asks (--db or $FLAMED_DB: the database; else the API, with --token-file or
 * $FLAMED_TOKEN). Returns 0, -ENOMEM, or -errno with why (up to whylen bytes) when the token cannot be
 * read. */
int topsource_new(const struct options *o, struct topsource **out, char *why, size_t whylen);

/* Is it the database, not the API? */
bool topsource_local(const struct topsource *s);

/* Where it reads: the API's URL or the database's path. */
const char *topsource_where(const struct topsource *s);

/* Reads the window ending now into *snap (emptied first; left empty on failure). Returns 0, or -errno
 * with why said for a person: -EINVAL (a bad --server URL, or not a flamed database), network
 * errors, -EPROTO (an HTTP error status or an answer that is not the top JSON), -EFBIG, store errors. */
int topsource_fetch(struct topsource *s, struct top_snapshot *snap, char *why, size_t whylen);

/* Frees the snapshot's functions and empties it. */
void topsource_clear(struct top_snapshot *snap);

/* Frees; NULL is safe. */
void topsource_free(struct topsource *s);

#endif
