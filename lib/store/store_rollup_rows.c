/* store_rollup_rows.c - the rows of the minute and hour rollups: (stack, count) pairs encoded in
 * parts of at most ROLLUP_PART_BYTES, merged into a bucket's last part; the fold markers in meta. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store/store_impl.h"
#include "store/store_rollup_rows.h"
#include "store/store_stmts.h"

/* The meta keys of the rollup markers: raw_from, then kept and folded per level. */
static const char *const marker_keys[1 + 2 * ROLLUP_LEVELS] = {
	"raw_from", "kept_60", "folded_60", "kept_3600", "folded_3600",
};

/* The marker of key i in t. */
static int64_t *marker(struct rollup_tiers *t, int i)
{
	return i == 0 ? &t->raw_from : (i - 1) % 2 == 0 ? &t->kept[(i - 1) / 2] : &t->folded[(i - 1) / 2];
}

int store_load_tiers(struct store *st, struct rollup_tiers *t)
{
	int rc;

	for (int i = 0; i < 1 + 2 * ROLLUP_LEVELS; i++)
		*marker(t, i) = INT64_MIN;
	if (st->version < 3)
		return 0;
	while ((rc = sqlite3_step(st->meta_get)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st->meta_get, 0);

		for (int i = 0; key && i < 1 + 2 * ROLLUP_LEVELS; i++)
			if (!strcmp(key, marker_keys[i]))
				*marker(t, i) = sqlite3_column_int64(st->meta_get, 1);
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, st->meta_get, rc, "cannot read the rollup markers");
	sqlite3_reset(st->meta_get);
	return 0;
}

int store_save_tiers(struct store *st, const struct rollup_tiers *t)
{
	int err = 0;

	for (int i = 0; !err && i < 1 + 2 * ROLLUP_LEVELS; i++) {
		int64_t v = *marker((struct rollup_tiers *)t, i);

		if (v == INT64_MIN)
			continue;
		sqlite3_bind_text(st->meta_put, 1, marker_keys[i], -1, SQLITE_STATIC);
		sqlite3_bind_int64(st->meta_put, 2, v);
		err = store_run(st, st->meta_put, "cannot write the rollup markers");
	}
	return err;
}

/* Decodes a rollup blob into pairs (appended to *out, growing it); -EIO when damaged. */
static int decode_pairs(struct store *st, const void *blob, size_t len, struct rollup_pair **out, size_t *n,
			size_t *cap)
{
	struct rollup_reader r;
	struct rollup_pair p;
	int rc;

	rollup_reader_init(&r, blob, len);
	while ((rc = rollup_next(&r, &p)) == 1) {
		if (*n == *cap) {
			size_t c = *cap ? *cap * 2 : 1024;
			struct rollup_pair *np = reallocarray(*out, c, sizeof(*np));

			if (!np)
				return store_set_err(st, -ENOMEM, "out of memory for rollups");
			*out = np;
			*cap = c;
		}
		(*out)[(*n)++] = p;
	}
	return rc < 0 ? store_set_err(st, -EIO, "a rollup row is damaged") : 0;
}

/* Merges two pair arrays sorted by stack id into out (room for na + nb); returns its length. */
static size_t merge_pairs(const struct rollup_pair *a, size_t na, const struct rollup_pair *b, size_t nb,
			  struct rollup_pair *out)
{
	size_t i = 0, j = 0, n = 0;

	while (i < na || j < nb) {
		if (j == nb || (i < na && a[i].stack_id < b[j].stack_id)) {
			out[n++] = a[i++];
		} else if (i == na || b[j].stack_id < a[i].stack_id) {
			out[n++] = b[j++];
		} else {
			out[n] = a[i++];
			out[n].count = b[j].count > (uint64_t)INT64_MAX - out[n].count ? (uint64_t)INT64_MAX
											 : out[n].count + b[j].count;
			n++, j++;
		}
	}
	return n;
}

/* Writes one rollup row (insert, or update of an existing part). */
static int put_rollup(struct store *st, sqlite3_stmt *stmt, int level, const struct rollup_cell *key, int64_t part,
		      int64_t last, const struct rollup_pair *p, size_t n)
{
	uint64_t total = 0;
	size_t len = 0;
	int err;

	if (store_buf_reserve(&st->blob, rollup_encode_bound(n)) < 0)
		return store_set_err(st, -ENOMEM, "out of memory for rollups");
	for (size_t i = 0; i < n; i++)
		total = p[i].count > (uint64_t)INT64_MAX - total ? (uint64_t)INT64_MAX : total + p[i].count;
	if (rollup_encode(p, n, st->blob.p, &len) < 0)
		return store_set_err(st, -EIO, "cannot encode a rollup row: stack ids out of order");
	sqlite3_bind_int64(stmt, 1, rollup_span[level]);
	sqlite3_bind_int64(stmt, 2, key->bucket);
	sqlite3_bind_int64(stmt, 3, key->pid);
	sqlite3_bind_int64(stmt, 4, key->comm_id);
	sqlite3_bind_int64(stmt, 5, part);
	sqlite3_bind_int64(stmt, 6, last);
	sqlite3_bind_int64(stmt, 7, (int64_t)total);
	sqlite3_bind_blob(stmt, 8, st->blob.p, (int)len, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 9, key->kind);
	sqlite3_bind_int64(stmt, 10, key->cg);
	err = store_run(st, stmt, "cannot write rollups");
	return err;
}

/* The newest part of a rollup row's key: *part -1 when there is none, else its number, last and pairs. */
static int rollup_tail(struct store *st, int level, const struct rollup_cell *key, int64_t *part, int64_t *last,
		       struct rollup_pair **pairs, size_t *n, size_t *cap)
{
	sqlite3_stmt *s = st->rollup_tail;
	int rc, err = 0;

	*part = -1;
	*n = 0;
	sqlite3_bind_int64(s, 1, rollup_span[level]);
	sqlite3_bind_int64(s, 2, key->bucket);
	sqlite3_bind_int64(s, 3, key->pid);
	sqlite3_bind_int64(s, 4, key->comm_id);
	sqlite3_bind_int64(s, 5, key->kind);
	sqlite3_bind_int64(s, 6, key->cg);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*part = sqlite3_column_int64(s, 0);
		*last = sqlite3_column_int64(s, 1);
		err = decode_pairs(st, sqlite3_column_blob(s, 3), (size_t)sqlite3_column_bytes(s, 3), pairs, n, cap);
	} else if (rc != SQLITE_DONE) {
		return store_fail(st, s, rc, "cannot read rollups");
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return err;
}

/* The bytes of v as a varint. */
static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >>= 7)
		n++;
	return n;
}

/* Writes pairs as rows of at most ROLLUP_PART_BYTES encoded bytes (each part's ids encoded from 0),
 * numbered from part on; the first replaces row `part` when update. */
static int write_parts(struct store *st, int level, const struct rollup_cell *key, int64_t part, bool update,
		       int64_t last, const struct rollup_pair *p, size_t n)
{
	size_t i = 0;
	int err = 0;

	do {
		size_t k = 0, bytes = 0;
		int64_t prev = 0;

		while (i + k < n) {
			size_t b = varint_len((uint64_t)(p[i + k].stack_id - prev)) + varint_len(p[i + k].count);

			if (k && bytes + b > ROLLUP_PART_BYTES)
				break;
			bytes += b;
			prev = p[i + k].stack_id;
			k++;
		}
		err = put_rollup(st, update ? st->rollup_set : st->rollup_put, level, key, part++, last, p + i, k);
		update = false;
		i += k;
	} while (!err && i < n);
	return err;
}

/* Writes one group's pairs; merge: into its newest part (read, merged, written back), which may
 * spill into new parts. */
static int write_group(struct store *st, int level, const struct rollup_cell *key, int64_t last,
		       const struct rollup_pair *p, size_t n, bool merge, struct rollup_pair **tmp, size_t *tn,
		       size_t *tcap)
{
	int64_t part = -1, old_last = INT64_MIN;
	struct rollup_pair *m;
	size_t mn;
	int err;

	if (!merge)
		return write_parts(st, level, key, 0, false, last, p, n);
	err = rollup_tail(st, level, key, &part, &old_last, tmp, tn, tcap);
	if (err || part < 0)
		return err ?: write_parts(st, level, key, 0, false, last, p, n);
	m = reallocarray(NULL, *tn + n, sizeof(*m));
	if (!m)
		return store_set_err(st, -ENOMEM, "out of memory for rollups");
	mn = merge_pairs(*tmp, *tn, p, n, m);
	err = write_parts(st, level, key, part, true, last > old_last ? last : old_last, m, mn);
	free(m);
	return err;
}

int store_write_rollups(struct store *st, int level, const struct rollup_cell *c, size_t n, bool merge)
{
	struct rollup_pair *pairs = NULL, *tmp = NULL;
	size_t cap = 0, tn = 0, tcap = 0;
	int err = 0;

	for (size_t i = 0; !err && i < n;) {
		size_t j = i, k = 0;
		int64_t last = INT64_MIN;

		while (j < n && c[j].bucket == c[i].bucket && c[j].pid == c[i].pid && c[j].comm_id == c[i].comm_id &&
		       c[j].kind == c[i].kind && c[j].cg == c[i].cg)
			j++;
		if (j - i > cap) {
			struct rollup_pair *np = reallocarray(pairs, j - i, sizeof(*np));

			if (!np) {
				err = store_set_err(st, -ENOMEM, "out of memory for rollups");
				break;
			}
			pairs = np;
			cap = j - i;
		}
		for (size_t x = i; x < j; x++) {
			pairs[k++] = (struct rollup_pair){ .stack_id = c[x].stack_id, .count = c[x].count };
			last = c[x].last > last ? c[x].last : last;
		}
		err = write_group(st, level, &c[i], last, pairs, k, merge, &tmp, &tn, &tcap);
		i = j;
	}
	free(pairs);
	free(tmp);
	return err;
}

int store_prepare_rollup_rows(struct store *st)
{
	int err = 0;

	err = err ?: store_prepare(st, &st->meta_put, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)");
	err = err ?: store_prepare(st, &st->rollup_tail,
			     "SELECT part, last, total, stacks FROM rollups WHERE span = ?1 AND bucket = ?2 AND pid = ?3"
			     " AND comm_id = ?4 AND kind = ?5 AND cg = ?6 ORDER BY part DESC LIMIT 1");
	err = err ?: store_prepare(st, &st->rollup_put,
			     "INSERT INTO rollups(span, bucket, pid, comm_id, part, last, total, stacks, kind, cg)"
			     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
	err = err ?: store_prepare(st, &st->rollup_set,
			     "UPDATE rollups SET last = ?6, total = ?7, stacks = ?8 WHERE span = ?1 AND bucket = ?2"
			     " AND pid = ?3 AND comm_id = ?4 AND part = ?5 AND kind = ?9 AND cg = ?10");
	return err;
}
