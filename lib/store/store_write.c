/* store_write.c - one transaction per flush: each sample checked, its names, binaries, frames and
 * stack given ids (each distinct one stored once), its row merged with the transaction's others and
 * written at the commit; rows that come after their minute was folded are added to the rollups too. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "util/hash.h"
#include "store/store.h"
#include "store/store_impl.h"
#include "store/store_rollup_rows.h"
#include "store/store_stmts.h"

#define NAME_MAX_BYTES 255           /* longest process or thread name accepted */
#define MODULE_MAX_BYTES 4096        /* longest module path accepted */
#define BUILD_ID_MAX_CHARS 128       /* longest build-id accepted, in hex digits */
#define PENDING_MAX_ROWS 65536       /* rows merged in memory before they are written out early */

/* 64-bit FNV-1a of len bytes. */
static uint64_t fnv1a(const char *s, size_t len)
{
	return hash_bytes(HASH_FNV_OFFSET, s, len);
}

/* Adds the pending rows older than the minute rollups' fold mark to every rollup that already holds
 * their bucket: a fold never reads them again, so this keeps rollups equal to the raw rows. */
static int merge_late_rows(struct store *st)
{
	const struct pending *p = &st->pending;
	struct rollup_map late[ROLLUP_LEVELS];
	int err = 0;

	for (int l = 0; l < ROLLUP_LEVELS; l++)
		rollup_map_init(&late[l], 0);
	for (size_t i = 0; !err && i < p->cap; i++) {
		const struct pending_row *r = &p->rows[i];

		for (int l = 0; !err && r->count && l < ROLLUP_LEVELS; l++) {
			int64_t b = rollup_floor(r->ts, rollup_span[l]);

			if (b >= st->tiers.kept[l] && b < st->tiers.folded[l] - rollup_span[l] + 1)
				err = rollup_map_add(&late[l], b, r->pid, r->comm_id, r->kind, r->cg, r->stack_id, r->count,
						     r->ts);
		}
	}
	if (err)
		err = store_set_err(st, err, "out of memory for samples that came after their minute was folded");
	for (int l = 0; !err && l < ROLLUP_LEVELS; l++) {
		size_t n = rollup_map_compact(&late[l]);

		rollup_cells_sort(late[l].cells, n);
		err = store_write_rollups(st, l, late[l].cells, n, true);
	}
	for (int l = 0; l < ROLLUP_LEVELS; l++)
		rollup_map_free(&late[l]);
	return err;
}

/* Whether a pending row is older than what the minute rollups hold already. */
static bool any_late(const struct store *st)
{
	const struct pending *p = &st->pending;

	if (st->tiers.folded[0] == INT64_MIN)
		return false;
	for (size_t i = 0; i < p->cap; i++)
		if (p->rows[i].count && p->rows[i].ts < st->tiers.folded[0])
			return true;
	return false;
}

/* Inserts every pending row (merging late ones into rollups) and empties the table (inside the open
 * transaction). */
static int pending_flush(struct store *st)
{
	struct pending *p = &st->pending;
	sqlite3_stmt *s = st->sample_put;
	int err;

	for (size_t i = 0; i < p->cap; i++) {
		const struct pending_row *r = &p->rows[i];

		if (!r->count)
			continue;
		sqlite3_bind_int64(s, 1, r->ts);
		sqlite3_bind_int64(s, 2, r->pid);
		sqlite3_bind_int64(s, 3, r->tid);
		sqlite3_bind_int64(s, 4, r->comm_id);
		sqlite3_bind_int64(s, 5, r->thread_id);
		sqlite3_bind_int64(s, 6, r->stack_id);
		sqlite3_bind_int64(s, 7, (sqlite3_int64)r->count);
		sqlite3_bind_int64(s, 8, r->kind);
		sqlite3_bind_int64(s, 9, r->cg);
		err = store_run(st, s, "cannot write samples");
		if (err)
			return err;
	}
	if (any_late(st)) {
		err = merge_late_rows(st);
		if (err)
			return err;
	}
	if (p->cap)
		memset(p->rows, 0, p->cap * sizeof(*p->rows));
	p->n = 0;
	return 0;
}

/* Steps get (bound): the id it finds, else runs put (bound) and gives the new row's id. */
static int get_or_put(struct store *st, sqlite3_stmt *get, sqlite3_stmt *put, const char *what, int64_t *id)
{
	int rc = sqlite3_step(get);
	int err;

	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(get, 0);
		sqlite3_reset(get);
		sqlite3_reset(put);
		return 0;
	}
	if (rc != SQLITE_DONE)
		return store_fail(st, get, rc, what);
	sqlite3_reset(get);
	err = store_run(st, put, what);
	if (err)
		return err;
	*id = sqlite3_last_insert_rowid(st->db);
	return 0;
}

/* The id of a name, from the cache, the table, or a new row. */
static int name_id(struct store *st, const char *name, int64_t *id)
{
	size_t len = strlen(name);
	uint64_t hash = fnv1a(name, len);
	int err;

	if (store_cache_get(&st->names, name, len, hash, id))
		return 0;
	sqlite3_bind_text(st->name_get, 1, name, (int)len, SQLITE_STATIC);
	sqlite3_bind_text(st->name_put, 1, name, (int)len, SQLITE_STATIC);
	err = get_or_put(st, st->name_get, st->name_put, "cannot write a name", id);
	if (!err)
		store_cache_put(&st->names, name, len, hash, *id, false);
	return err;
}

/* The id of a cgroup path, as name_id (*id 0 for NULL or ""): within 32 bits, as raw rows and rollups
 * keep it. */
static int cgroup_id(struct store *st, const char *path, uint32_t *id)
{
	size_t len = path ? strlen(path) : 0;
	uint64_t hash;
	int64_t v;
	int err = 0;

	*id = 0;
	if (!len)
		return 0;
	hash = fnv1a(path, len);
	if (!store_cache_get(&st->cgroups, path, len, hash, &v)) {
		sqlite3_bind_text(st->cgroup_get, 1, path, (int)len, SQLITE_STATIC);
		sqlite3_bind_text(st->cgroup_put, 1, path, (int)len, SQLITE_STATIC);
		err = get_or_put(st, st->cgroup_get, st->cgroup_put, "cannot write a cgroup", &v);
		if (!err && (v <= 0 || v > UINT32_MAX))
			err = store_set_err(st, -E2BIG, "cgroup id %lld is past 2^32-1", (long long)v);
		if (!err)
			store_cache_put(&st->cgroups, path, len, hash, v, false);
	}
	if (!err)
		*id = (uint32_t)v;
	return err;
}

/* The id of a module (path, build_id); its cache key is path NUL build_id. */
static int module_id(struct store *st, const char *path, const char *build_id, int64_t *id)
{
	size_t plen = strlen(path), blen = strlen(build_id), len = plen + 1 + blen;
	const char *key;
	uint64_t hash;
	int err;

	if (store_buf_reserve(&st->key, len) < 0)
		return store_set_err(st, -ENOMEM, "out of memory for a module");
	key = (const char *)st->key.p;
	memcpy(st->key.p, path, plen + 1);
	memcpy(st->key.p + plen + 1, build_id, blen);
	hash = fnv1a(key, len);
	if (store_cache_get(&st->modules, key, len, hash, id))
		return 0;
	sqlite3_bind_text(st->module_get, 1, path, (int)plen, SQLITE_STATIC);
	sqlite3_bind_text(st->module_get, 2, build_id, (int)blen, SQLITE_STATIC);
	sqlite3_bind_text(st->module_put, 1, path, (int)plen, SQLITE_STATIC);
	sqlite3_bind_text(st->module_put, 2, build_id, (int)blen, SQLITE_STATIC);
	err = get_or_put(st, st->module_get, st->module_put, "cannot write a module", id);
	if (!err)
		store_cache_put(&st->modules, key, len, hash, *id, false);
	return err;
}

/* The id of a frame (name, module, file, line); its cache key is the module id's and the line's bytes,
 * then the name, a NUL and the file. A new frame gets its start line too. */
static int frame_id(struct store *st, const struct store_frame *f, int64_t module, int64_t *id)
{
	const char *file = f->file ? f->file : "";
	size_t nlen = strlen(f->name), flen = strlen(file), len = sizeof(module) + sizeof(f->line) + nlen + 1 + flen;
	const char *key;
	uint64_t hash;
	int err;

	if (store_buf_reserve(&st->key, len) < 0)
		return store_set_err(st, -ENOMEM, "out of memory for a frame");
	key = (const char *)st->key.p;
	memcpy(st->key.p, &module, sizeof(module));
	memcpy(st->key.p + sizeof(module), &f->line, sizeof(f->line));
	memcpy(st->key.p + sizeof(module) + sizeof(f->line), f->name, nlen + 1);
	memcpy(st->key.p + sizeof(module) + sizeof(f->line) + nlen + 1, file, flen);
	hash = fnv1a(key, len);
	if (store_cache_get(&st->frames, key, len, hash, id))
		return 0;
	sqlite3_bind_text(st->frame_id_get, 1, f->name, (int)nlen, SQLITE_STATIC);
	sqlite3_bind_int64(st->frame_id_get, 2, module);
	sqlite3_bind_text(st->frame_id_get, 3, file, (int)flen, SQLITE_STATIC);
	sqlite3_bind_int(st->frame_id_get, 4, f->line);
	sqlite3_bind_text(st->frame_put, 1, f->name, (int)nlen, SQLITE_STATIC);
	sqlite3_bind_int64(st->frame_put, 2, module);
	sqlite3_bind_text(st->frame_put, 3, file, (int)flen, SQLITE_STATIC);
	sqlite3_bind_int(st->frame_put, 4, f->start_line);
	sqlite3_bind_int(st->frame_put, 5, f->line);
	err = get_or_put(st, st->frame_id_get, st->frame_put, "cannot write a frame", id);
	if (!err)
		store_cache_put(&st->frames, key, len, hash, *id, false);
	return err;
}

/* Encodes s's frames as frame_ids into st->blob (ids found or added); *len its bytes. */
static int encode_frames(struct store *st, const struct store_sample *s, size_t *len)
{
	size_t n = 0;

	if (store_buf_reserve(&st->blob, (size_t)s->nframes * ROLLUP_VARINT_MAX) < 0)
		return store_set_err(st, -ENOMEM, "out of memory for a stack's frames");
	for (unsigned i = 0; i < s->nframes; i++) {
		const struct store_frame *f = &s->frames[i];
		int64_t module = 0, frame = 0;
		int err;

		err = module_id(st, f->module ? f->module : "", f->build_id ? f->build_id : "", &module);
		err = err ?: frame_id(st, f, module, &frame);
		if (err)
			return err;
		n += rollup_put_varint(st->blob.p + n, (uint64_t)frame);
	}
	*len = n;
	return 0;
}

/* Whether frame i (read by st->frame_get) is the sample's: its frame i when it has frames, else the
 * i-th name of its text (then with no source). seg: that name in the text. */
static bool frame_is(struct store *st, const struct store_sample *s, unsigned i, const char *seg, size_t seglen)
{
	sqlite3_stmt *g = st->frame_get;
	const unsigned char *name = sqlite3_column_text(g, 0), *file = sqlite3_column_text(g, 3);
	size_t nlen = (size_t)sqlite3_column_bytes(g, 0);
	int line = sqlite3_column_int(g, 5);

	if (!name || nlen != seglen || memcmp(name, seg, seglen))
		return false;
	if (!s->frames || i >= s->nframes)
		return line == 0 && (!file || !file[0]);
	return line == s->frames[i].line &&
	       !strcmp(file ? (const char *)file : "", s->frames[i].file ? s->frames[i].file : "");
}

/* Whether frame_ids (blob[0..len)) is the sample's stack: the names of its frames spell the text,
 * folded[0..flen), and their sources are the sample's frames' (none when it has no frames). */
static int frames_match(struct store *st, const unsigned char *blob, size_t len, const struct store_sample *s,
			size_t flen, bool *same)
{
	const char *folded = s->folded;
	size_t pos = 0, off = 0;
	unsigned i = 0;

	*same = false;
	while (pos < len) {
		const char *end = off <= flen ? memchr(folded + off, ';', flen - off) : NULL;
		size_t seg = end ? (size_t)(end - folded) - off : flen - off;
		uint64_t id;
		bool hit;
		int rc;

		if (off > flen)
			return 0; /* more frames than the text has */
		if (rollup_get_varint(blob, len, &pos, &id) < 0 || id > INT64_MAX)
			return store_set_err(st, -EIO, "a stack's frame ids are damaged");
		sqlite3_bind_int64(st->frame_get, 1, (int64_t)id);
		rc = sqlite3_step(st->frame_get);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return store_fail(st, st->frame_get, rc, "cannot read frames");
		hit = rc == SQLITE_ROW && frame_is(st, s, i++, folded + off, seg);
		sqlite3_reset(st->frame_get);
		if (!hit)
			return 0;
		off += seg + 1;
	}
	*same = off == flen + 1;
	return 0;
}

/* Writes v in decimal (after a '-' when negative) at p + n; returns the new length. */
static size_t put_decimal(unsigned char *p, size_t n, uint64_t v, bool negative)
{
	char digits[20];
	int k = 0;

	if (negative)
		p[n++] = '-';
	do
		digits[k++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (k)
		p[n++] = (unsigned char)digits[--k];
	return n;
}

/* Builds a stack's identity in st->ident (*len bytes): its text, then, when a frame has a source (a
 * Python frame's file and line), a line break and "INDEX:LINE:FILE" and a unit separator (0x1f) for each
 * such frame. A text holds no line break, so a stack without sources is its text: its hash is its
 * text's, as stored before schema version 4. */
static int stack_ident(struct store *st, const struct store_sample *s, size_t flen, size_t *len)
{
	size_t n = flen, need = flen + 1;
	bool sourced = false;

	for (unsigned i = 0; s->frames && i < s->nframes; i++) {
		if (s->frames[i].line || (s->frames[i].file && s->frames[i].file[0])) {
			need += 32 + (s->frames[i].file ? strlen(s->frames[i].file) : 0);
			sourced = true;
		}
	}
	if (store_buf_reserve(&st->ident, need + 1) < 0)
		return store_set_err(st, -ENOMEM, "out of memory for a stack");
	memcpy(st->ident.p, s->folded, flen);
	if (sourced) {
		st->ident.p[n++] = '\n';
		for (unsigned i = 0; i < s->nframes; i++) {
			const struct store_frame *f = &s->frames[i];

			if (!f->line && !(f->file && f->file[0]))
				continue;
			/* "%u:%d:%s\x1f" of i, its line and its file, without printf's cost per frame */
			n = put_decimal(st->ident.p, n, i, false);
			st->ident.p[n++] = ':';
			n = put_decimal(st->ident.p, n, f->line < 0 ? -(int64_t)f->line : f->line, f->line < 0);
			st->ident.p[n++] = ':';
			if (f->file) {
				size_t fl = strlen(f->file);

				memcpy(st->ident.p + n, f->file, fl);
				n += fl;
			}
			st->ident.p[n++] = '\x1f';
		}
	}
	st->ident.p[n] = '\0';
	*len = n;
	return 0;
}

/* Looks a stack up by identity (rows with the same hash are compared by text, or by their frames for
 * a row stored without text, so a hash collision gets a row of its own): *found, and then its *id and
 * whether it *has_frames. ident (ilen bytes) is st->ident; the text is s's first flen bytes. */
static int stack_find(struct store *st, const struct store_sample *s, size_t flen, size_t ilen, uint64_t hash,
		      int64_t *id, bool *has_frames, bool *found)
{
	const char *ident = (const char *)st->ident.p;
	const struct cache_slot *e = store_cache_find(&st->stacks, ident, ilen, hash);
	int rc = SQLITE_DONE, err = 0;
	bool hit = false;

	if (e) {
		*id = e->id;
		*has_frames = e->tag;
		*found = true;
		return 0;
	}
	sqlite3_bind_int64(st->stack_get, 1, (sqlite3_int64)hash);
	while (!hit && !err && (rc = sqlite3_step(st->stack_get)) == SQLITE_ROW) {
		const unsigned char *text = sqlite3_column_text(st->stack_get, 1);
		size_t n = (size_t)sqlite3_column_bytes(st->stack_get, 1);
		const unsigned char *blob = sqlite3_column_blob(st->stack_get, 2);
		size_t blen = (size_t)sqlite3_column_bytes(st->stack_get, 2);

		if (n) /* stored without frames: its text, which only a stack without sources is */
			hit = text && n == ilen && memcmp(text, ident, ilen) == 0;
		else if (blob)
			err = frames_match(st, blob, blen, s, flen, &hit);
		if (hit) {
			*id = sqlite3_column_int64(st->stack_get, 0);
			*has_frames = blob != NULL;
		}
	}
	if (!err && !hit && rc != SQLITE_DONE)
		return store_fail(st, st->stack_get, rc, "cannot read stacks");
	sqlite3_reset(st->stack_get);
	if (err)
		return err;
	if (hit)
		store_cache_put(&st->stacks, ident, ilen, hash, *id, *has_frames);
	*found = hit;
	return 0;
}

/* Adds a stack row: with frames, st->blob's blob_len bytes as frame_ids and no text; else the text. */
static int stack_insert(struct store *st, const char *folded, size_t len, uint64_t hash, bool frames,
			size_t blob_len, int64_t *id)
{
	int err;

	sqlite3_bind_int64(st->stack_put, 1, (sqlite3_int64)hash);
	if (frames) {
		sqlite3_bind_text(st->stack_put, 2, "", 0, SQLITE_STATIC);
		sqlite3_bind_blob(st->stack_put, 3, st->blob.p, (int)blob_len, SQLITE_STATIC);
	} else {
		sqlite3_bind_text(st->stack_put, 2, folded, (int)len, SQLITE_STATIC);
		sqlite3_bind_null(st->stack_put, 3);
	}
	err = store_run(st, st->stack_put, "cannot write a stack");
	if (!err)
		*id = sqlite3_last_insert_rowid(st->db);
	return err;
}

/* Fills in the frame_ids of a stack stored without them; its text goes (the frames spell it). */
static int stack_add_frames(struct store *st, int64_t id, size_t blob_len)
{
	sqlite3_bind_int64(st->stack_set_frames, 1, id);
	sqlite3_bind_blob(st->stack_set_frames, 2, st->blob.p, (int)blob_len, SQLITE_STATIC);
	return store_run(st, st->stack_set_frames, "cannot write a stack's frames");
}

/* The id of s's stack, from the cache, the table, or a new row. The frames of the first sample of a
 * stack stored with frames are kept; later ones are not compared. */
static int stack_id(struct store *st, const struct store_sample *s, int64_t *id)
{
	size_t len = strlen(s->folded), ilen = 0, blob_len = 0;
	bool found = false, has_frames = false;
	struct cache_slot *e;
	uint64_t hash;
	int err;

	err = stack_ident(st, s, len, &ilen);
	if (err)
		return err;
	hash = fnv1a((const char *)st->ident.p, ilen);
	err = stack_find(st, s, len, ilen, hash, id, &has_frames, &found);
	if (err || (found && (has_frames || !s->frames)))
		return err;
	if (s->frames) {
		err = encode_frames(st, s, &blob_len);
		if (err)
			return err;
	}
	if (!found) {
		err = stack_insert(st, s->folded, len, hash, s->frames != NULL, blob_len, id);
		if (!err)
			store_cache_put(&st->stacks, (const char *)st->ident.p, ilen, hash, *id, s->frames != NULL);
		return err;
	}
	err = stack_add_frames(st, *id, blob_len);
	e = err ? NULL : store_cache_find(&st->stacks, (const char *)st->ident.p, ilen, hash);
	if (e)
		e->tag = true;
	return err;
}

/* Checks frame i's module path and build-id (NULL: ""), and its source; -EINVAL with the reason in
 * errmsg. */
static int validate_module(struct store *st, const struct store_frame *f, unsigned i)
{
	const char *b = f->build_id ? f->build_id : "";
	size_t n;

	if (f->file && strnlen(f->file, MODULE_MAX_BYTES + 1) > MODULE_MAX_BYTES)
		return store_set_err(st, -EINVAL, "invalid sample: frame %u's file is longer than %d bytes", i,
				     MODULE_MAX_BYTES);
	if (f->line < 0 || f->start_line < 0)
		return store_set_err(st, -EINVAL, "invalid sample: frame %u's line is negative", i);
	if (f->module && strnlen(f->module, MODULE_MAX_BYTES + 1) > MODULE_MAX_BYTES)
		return store_set_err(st, -EINVAL, "invalid sample: frame %u's module path is longer than %d bytes", i,
				     MODULE_MAX_BYTES);
	n = strnlen(b, BUILD_ID_MAX_CHARS + 1);
	if (n > BUILD_ID_MAX_CHARS)
		return store_set_err(st, -EINVAL, "invalid sample: frame %u's build-id is longer than %d hex digits", i,
				     BUILD_ID_MAX_CHARS);
	if (strspn(b, "0123456789abcdef") != n)
		return store_set_err(st, -EINVAL, "invalid sample: frame %u's build-id is not lowercase hex", i);
	return 0;
}

/* Checks s's frames against its folded stack (one per frame, same text, in order) and their
 * modules and build-ids; -EINVAL with the reason in errmsg. No frames (NULL) is valid. */
static int validate_frames(struct store *st, const struct store_sample *s)
{
	const char *p = s->folded;

	if (!s->frames)
		return 0;
	for (unsigned i = 0; i < s->nframes; i++) {
		const struct store_frame *f = &s->frames[i];
		size_t len = strcspn(p, ";");
		int err;

		if (!*p)
			return store_set_err(st, -EINVAL, "invalid sample: %u frames given, the stack has %u",
					     s->nframes, i);
		if (!f->name || strnlen(f->name, len + 1) != len || memcmp(f->name, p, len) != 0)
			return store_set_err(st, -EINVAL, "invalid sample: frame %u's name is not the stack's frame %u",
					     i, i);
		err = validate_module(st, f, i);
		if (err)
			return err;
		p += len;
		if (*p == ';')
			p++;
	}
	if (*p)
		return store_set_err(st, -EINVAL, "invalid sample: %u frames given, the stack has more", s->nframes);
	return 0;
}

/* Checks a sample's stack (its folded text and frames); -EINVAL with the reason in errmsg. */
static int validate_stack(struct store *st, const struct store_sample *s)
{
	size_t len;

	if (!s->folded || !s->folded[0])
		return store_set_err(st, -EINVAL, "invalid sample: the stack is empty");
	len = strnlen(s->folded, STACK_MAX_BYTES + 1);
	if (len > STACK_MAX_BYTES)
		return store_set_err(st, -EINVAL, "invalid sample: the stack is longer than %d bytes", STACK_MAX_BYTES);
	if (strpbrk(s->folded, "\n\r"))
		return store_set_err(st, -EINVAL, "invalid sample: the stack contains a line break");
	if (s->folded[0] == ';' || s->folded[len - 1] == ';' || strstr(s->folded, ";;"))
		return store_set_err(st, -EINVAL, "invalid sample: the stack has an empty frame: '%s'", s->folded);
	return validate_frames(st, s);
}

/* Checks a sample before anything is written; -EINVAL with the reason in errmsg. Its stack only when it
 * has no id yet: one with an id (s->stack_id) was checked when store_add gave it that id, and only the
 * id is used. */
static int validate(struct store *st, const struct store_sample *s)
{
	if (!(s->stack_id && *s->stack_id > 0)) {
		int err = validate_stack(st, s);

		if (err)
			return err;
	}
	if (s->count == 0)
		return store_set_err(st, -EINVAL, "invalid sample: the count is 0");
	if (s->kind != STORE_CPU && s->kind != STORE_OFFCPU)
		return store_set_err(st, -EINVAL, "invalid sample: kind %d is neither CPU (0) nor off-CPU (1)", (int)s->kind);
	if (s->count > (uint64_t)INT64_MAX)
		return store_set_err(st, -EINVAL, "invalid sample: the count is too large");
	if (!s->comm || !s->thread)
		return store_set_err(st, -EINVAL, "invalid sample: the %s name is missing",
				     s->comm ? "thread" : "process");
	if (strnlen(s->comm, NAME_MAX_BYTES + 1) > NAME_MAX_BYTES ||
	    strnlen(s->thread, NAME_MAX_BYTES + 1) > NAME_MAX_BYTES)
		return store_set_err(st, -EINVAL, "invalid sample: a name is longer than %d bytes", NAME_MAX_BYTES);
	if (s->cgroup && s->cgroup[0]) {
		size_t n = strnlen(s->cgroup, STORE_CGROUP_MAX_BYTES + 1);

		if (n > STORE_CGROUP_MAX_BYTES || s->cgroup[0] != '/')
			return store_set_err(st, -EINVAL, "invalid sample: a cgroup path starts with '/' and is at most %d bytes",
					     STORE_CGROUP_MAX_BYTES);
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)s->cgroup[i] < 0x20 || s->cgroup[i] == 0x7f)
				return store_set_err(st, -EINVAL, "invalid sample: the cgroup path has a control character");
	}
	return 0;
}


int store_prepare_writes(struct store *st)
{
	int err = 0;

	err = err ?: store_prepare(st, &st->name_put, "INSERT INTO names(name) VALUES (?1)");
	err = err ?: store_prepare(st, &st->stack_get, "SELECT id, folded, frame_ids FROM stacks WHERE hash = ?1");
	err = err ?: store_prepare(st, &st->stack_put, "INSERT INTO stacks(hash, folded, frame_ids) VALUES (?1, ?2, ?3)");
	err = err ?: store_prepare(st, &st->stack_set_frames, "UPDATE stacks SET frame_ids = ?2, folded = '' WHERE id = ?1");
	err = err ?: store_prepare(st, &st->module_get, "SELECT id FROM modules WHERE path = ?1 AND build_id = ?2");
	err = err ?: store_prepare(st, &st->module_put, "INSERT INTO modules(path, build_id) VALUES (?1, ?2)");
	err = err ?: store_prepare(st, &st->frame_id_get,
			     "SELECT id FROM frames WHERE name = ?1 AND module_id = ?2 AND file = ?3 AND line = ?4");
	err = err ?: store_prepare(st, &st->frame_put,
			     "INSERT INTO frames(name, module_id, file, start_line, line) VALUES (?1, ?2, ?3, ?4, ?5)");
	err = err ?: store_prepare(st, &st->sample_put,
			     "INSERT INTO samples(ts, pid, tid, comm_id, thread_id, stack_id, count, kind, cg)"
			     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
	/* IMMEDIATE takes the write lock at once, so a busy database shows here, not mid-flush. */
	err = err ?: store_prepare(st, &st->begin, "BEGIN IMMEDIATE");
	err = err ?: store_prepare(st, &st->commit, "COMMIT");
	err = err ?: store_prepare(st, &st->rollback, "ROLLBACK");
	return err;
}

int store_begin(struct store *st)
{
	int err;

	if (!st)
		return -EINVAL;
	if (st->mode == STORE_READ_ONLY)
		return store_set_err(st, -EROFS, "the store was opened read-only");
	if (st->in_tx)
		return store_set_err(st, -EINVAL, "a transaction is already open: commit or roll it back first");
	err = store_run(st, st->begin, "cannot start a transaction");
	if (err)
		return err;
	st->in_tx = true;
	/* What the rollups hold, for samples older than that (another writer may have folded). */
	err = store_load_tiers(st, &st->tiers);
	if (err)
		store_abandon(st);
	return err;
}

int store_add(struct store *st, const struct store_sample *s)
{
	struct pending_row r;
	int err;

	if (!st)
		return -EINVAL;
	if (!s)
		return store_set_err(st, -EINVAL, "invalid sample: NULL");
	if (!st->in_tx)
		return store_set_err(st, -EINVAL, "no open transaction (store_begin not called, or an error rolled it back)");
	err = validate(st, s);
	if (err)
		return err;

	/* From here on a failure rolls the whole flush back (all of it or nothing), except a count that
	 * cannot be merged, which rejects only this sample. */
	r = (struct pending_row){ .ts = s->ts, .pid = s->pid, .tid = s->tid, .count = s->count, .kind = s->kind };
	err = name_id(st, s->comm, &r.comm_id);
	err = err ?: name_id(st, s->thread, &r.thread_id);
	if (s->stack_id && *s->stack_id > 0) {
		r.stack_id = *s->stack_id;
	} else {
		err = err ?: stack_id(st, s, &r.stack_id);
		if (!err && s->stack_id)
			*s->stack_id = r.stack_id;
	}
	err = err ?: cgroup_id(st, s->cgroup, &r.cg);
	if (!err) {
		err = store_pending_add(&st->pending, &r);
		if (err == -EOVERFLOW)
			return store_set_err(st, err, "invalid sample: its count merged with an earlier one's exceeds 2^63-1");
		if (err)
			store_set_err(st, err, "out of memory for pending samples");
	}
	/* Bound the memory of one flush: write the merged rows out early. Queries sum rows, so a later
	 * duplicate getting a row of its own changes nothing they show. */
	if (!err && st->pending.n >= PENDING_MAX_ROWS)
		err = pending_flush(st);
	if (err && st->in_tx)
		store_abandon(st);
	return err;
}

int store_commit(struct store *st)
{
	int err;

	if (!st)
		return -EINVAL;
	if (!st->in_tx)
		return store_set_err(st, -EINVAL, "no open transaction (store_begin not called, or an error rolled it back)");
	err = pending_flush(st);
	if (!err)
		err = store_run(st, st->commit, "cannot commit");
	if (err) {
		if (st->in_tx)
			store_abandon(st);
		return err;
	}
	store_pending_free(&st->pending);
	st->in_tx = false;
	return 0;
}

void store_rollback(struct store *st)
{
	if (st && st->in_tx)
		store_abandon(st);
}
