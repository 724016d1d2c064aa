/* store.h - the SQLite store: folded stacks stored once, samples (second, pid, tid, names, count) referencing them. */
#ifndef FLAMED_STORE_H
#define FLAMED_STORE_H

#include <stdint.h>

struct store;

enum store_mode {
	STORE_READ_WRITE, /* creates the file and schema when missing (the daemon) */
	STORE_READ_ONLY,  /* fails with -ENOENT when the file is missing (flamectl) */
};

/* One aggregated sample to write. */
struct store_sample {
	int64_t ts;         /* unix seconds */
	uint32_t pid, tid;
	const char *comm;   /* process name */
	const char *thread; /* thread name */
	const char *folded; /* frames root first, ';' between them, no newline */
	uint64_t count;     /* > 0 */
};

/* Which samples a query covers. */
struct store_filter {
	int64_t pid;       /* -1: any */
	int64_t tid;       /* -1: any */
	int64_t from, to;  /* unix seconds, half-open [from, to) */
};

struct store_stats {
	uint64_t stacks;       /* distinct stacks stored */
	uint64_t sample_rows;  /* rows in samples */
	uint64_t db_bytes;     /* page_count * page_size */
};

/* Called once per aggregated stack, most samples first. A non-zero return stops the query and is
 * returned by it. */
typedef int (*store_stack_cb)(const char *comm, const char *folded, uint64_t count, void *ctx);

/* Opens (and in READ_WRITE mode creates) the database at path, in WAL mode.
 * Returns 0 or -errno (-ENOENT: no database there in READ_ONLY mode). */
int store_open(const char *path, enum store_mode mode, struct store **out);

/* Closes; a transaction still open is rolled back. NULL is safe. */
void store_close(struct store *st);

/* The last error in words (SQLite's message or the validation failure); never NULL. */
const char *store_errmsg(const struct store *st);

/* Starts the transaction of one flush. */
int store_begin(struct store *st);

/* Adds one sample to the open transaction. Rejects (-EINVAL, nothing stored) an empty or malformed
 * stack (newline, empty frame), count 0, or NULL names. */
int store_add(struct store *st, const struct store_sample *s);

/* Commits the flush's transaction: all of it or nothing. */
int store_commit(struct store *st);

/* Abandons the open transaction. */
void store_rollback(struct store *st);

/* Aggregates the samples matching f by (process name, stack), calls cb for each, most first. */
int store_query_stacks(struct store *st, const struct store_filter *f, store_stack_cb cb, void *ctx);

/* Fills out with counts and the database size. */
int store_get_stats(struct store *st, struct store_stats *out);

#endif
