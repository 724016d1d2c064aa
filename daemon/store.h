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
/* On failure *out is NULL, so store_errmsg has nothing to say; the codes tell the caller what to
 * report: -ENOENT no file (READ_ONLY; nothing is created), -EISDIR a directory, -EACCES/-EPERM no
 * permission, -EIO corrupt or not an SQLite file, -EINVAL an SQLite file that is not flamed's
 * (READ_WRITE leaves it alone), -ENOTSUP written by a newer flamed (schema_version > 1), -ENOLCK the
 * file system cannot do WAL, -EBUSY locked past the 5 s busy timeout, -ENOSPC, -ENOMEM.
 * READ_ONLY never creates a file. When no writer has the database open (no PATH-wal file) it reads
 * the file as immutable: that works for a user who cannot write the directory, but the store does
 * not see writes made after it opened, so keep such a store for one command, not for hours. While
 * flamed runs, a READ_ONLY store sees each commit. One store is for one thread at a time. */
int store_open(const char *path, enum store_mode mode, struct store **out);

/* Closes; a transaction still open is rolled back. NULL is safe. */
void store_close(struct store *st);

/* The last error in words (SQLite's message or the validation failure); never NULL. */
const char *store_errmsg(const struct store *st);

/* Starts the transaction of one flush. */
/* -EROFS on a READ_ONLY store, -EINVAL when one is open, -EBUSY when another writer holds the
 * database past the busy timeout. */
int store_begin(struct store *st);

/* Adds one sample to the open transaction. Rejects (-EINVAL, nothing stored) an empty or malformed
 * stack (newline, empty frame), count 0, or NULL names. */
/* Also -EINVAL: names over 255 bytes, a stack over 64 KiB, a count over INT64_MAX, no open
 * transaction. Samples equal in (ts, pid, tid, comm, thread, folded) are merged (counts summed);
 * -EOVERFLOW when the sum would pass INT64_MAX. After -EINVAL or -EOVERFLOW the transaction goes on
 * without that sample; after any other error (-ENOSPC, -EIO, -ENOMEM, ...) it has been rolled back
 * and store_commit returns -EINVAL: start the next flush with store_begin. */
int store_add(struct store *st, const struct store_sample *s);

/* Commits the flush's transaction: all of it or nothing. */
/* On failure the transaction has been rolled back (store_rollback is then a no-op). */
int store_commit(struct store *st);

/* Abandons the open transaction. */
/* A no-op when none is open; NULL is safe. */
void store_rollback(struct store *st);

/* Aggregates the samples matching f by (process name, stack), calls cb for each, most first. */
/* Ties are ordered by process name, then stack. f NULL: every sample. -EINVAL when pid or tid is
 * neither -1 nor in 0..UINT32_MAX. The strings passed to cb live until cb returns; cb must not call
 * back into this store. Returns 0, cb's non-zero return, or -errno. */
int store_query_stacks(struct store *st, const struct store_filter *f, store_stack_cb cb, void *ctx);

/* Fills out with counts and the database size. */
int store_get_stats(struct store *st, struct store_stats *out);

#endif
