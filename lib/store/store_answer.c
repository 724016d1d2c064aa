/* store_answer.c - a query's answer: the stacks of its summed cells read by id (whole tables at once
 * when there are many), their frames named (from frame rows, or split out of a stack's stored text),
 * ranked by name so every output sorts the same, rows of one text merged, then sorted. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "util/demangle.h"
#include "util/hash.h"
#include "store/store_answer.h"
#include "store/store_impl.h"

#define BULK_IDS 2048                 /* more ids to resolve than this: read the whole table once */
#define QUERY_MAX_FRAMES (1u << 24)   /* frame references of the stacks of one answer at most (-E2BIG) */
#define DENSE_MAX_ID (1 << 22)        /* frame ids below this map to answers through an array (16 MiB) */

void store_answer_free(struct answer *a)
{
	store_idmap_free(&a->stack_of);
	store_idmap_free(&a->frame_of);
	store_idmap_free(&a->name_idx);
	store_idmap_free(&a->comm_of);
	free(a->stacks);
	for (uint32_t i = 0; i < a->nframes; i++) {
		free(a->frames[i].text);
		free(a->frames[i].system);
	}
	free(a->frames);
	free(a->seq);
	free(a->ranks);
	free(a->dense);
	for (uint32_t i = 0; i < a->ncomms; i++)
		free(a->comms[i]);
	free(a->comms);
	free(a->comm_rank);
}

/* Appends frame index f to seq. */
static int seq_push(struct answer *a, uint32_t f)
{
	if (a->nseq == a->seq_cap) {
		size_t cap = a->seq_cap ? a->seq_cap * 2 : 4096;
		uint32_t *s = cap <= QUERY_MAX_FRAMES ? reallocarray(a->seq, cap, sizeof(*s)) : NULL;

		if (!s)
			return store_set_err(a->st, cap <= QUERY_MAX_FRAMES ? -ENOMEM : -E2BIG,
					     "the stacks of this answer have too many frames: narrow the window");
		a->seq = s;
		a->seq_cap = cap;
	}
	a->seq[a->nseq++] = f;
	return 0;
}

/* A new frame slot (index *idx). */
static int frame_new(struct answer *a, int64_t id, uint32_t *idx)
{
	if (a->nframes == a->frames_cap) {
		uint32_t cap = a->frames_cap ? a->frames_cap * 2 : 1024;
		struct qframe *f = reallocarray(a->frames, cap, sizeof(*f));

		if (!f)
			return store_set_err(a->st, -ENOMEM, "out of memory naming frames");
		a->frames = f;
		a->frames_cap = cap;
	}
	a->frames[a->nframes] = (struct qframe){ .id = id };
	*idx = a->nframes++;
	return 0;
}

/* FNV-1a of a frame name, as the key of the map of names split out of texts. */
static int64_t name_key(const char *s, size_t len)
{
	return (int64_t)hash_bytes(HASH_FNV_OFFSET, s, len);
}

/* The frame index of a name split out of a stored text (names are kept once, by hash and text). */
static int name_frame(struct answer *a, const char *name, size_t len, uint32_t *idx)
{
	int64_t key = name_key(name, len);
	uint32_t next = a->nframes;
	bool added;
	int err;

	/* Probe on: two names with one hash take consecutive keys. */
	for (;; key++) {
		err = store_idmap_put(&a->name_idx, key, &next, idx, &added);
		if (err)
			return store_set_err(a->st, err, "out of memory naming frames");
		if (added)
			break;
		if (strlen(a->frames[*idx].text) == len && !memcmp(a->frames[*idx].text, name, len))
			return 0;
	}
	err = frame_new(a, 0, idx);
	if (err)
		return err;
	a->frames[*idx].text = malloc(len + 4);
	if (!a->frames[*idx].text)
		return store_set_err(a->st, -ENOMEM, "out of memory naming frames");
	memcpy(a->frames[*idx].text, name, len);
	memset(a->frames[*idx].text + len, 0, 4);
	a->frames[*idx].module_off = len + 1;
	a->frames[*idx].build_id_off = len + 2;
	a->frames[*idx].file_off = len + 3;
	return 0;
}

/* The frame index of frame row id (its text read later). */
static int id_frame(struct answer *a, int64_t id, uint32_t *idx)
{
	uint32_t next = a->nframes;
	bool added;
	int err;

	if (id < a->ndense) {
		if (a->dense[id]) {
			*idx = a->dense[id] - 1;
			return 0;
		}
		err = frame_new(a, id, idx);
		if (!err)
			a->dense[id] = *idx + 1;
		return err;
	}
	err = store_idmap_put(&a->frame_of, id, &next, idx, &added);
	if (err)
		return store_set_err(a->st, err, "out of memory naming frames");
	return added ? frame_new(a, id, idx) : 0;
}

/* The index of frame row id in the answer, when a stack names it. */
static bool frame_index(const struct answer *a, int64_t id, uint32_t *idx)
{
	if (id < 0 || id >= a->ndense)
		return store_idmap_get(&a->frame_of, id, idx);
	if (!a->dense[id])
		return false;
	*idx = a->dense[id] - 1;
	return true;
}

/* Frame ids are dense from 1: an array maps them to indexes, when the largest is not too large. */
static int dense_init(struct answer *a)
{
	int64_t max = 0;
	bool found = false;
	int err;

	if (!a->st->frames_max)
		return 0;
	err = store_step_int(a->st, a->st->frames_max, &max, &found, "cannot read frames");
	if (err || !found || max < 0 || max >= DENSE_MAX_ID)
		return err;
	a->dense = calloc((size_t)max + 1, sizeof(*a->dense));
	if (!a->dense)
		return store_set_err(a->st, -ENOMEM, "out of memory naming frames");
	a->ndense = max + 1;
	return 0;
}

/* Splits a stored text at ';' into frames: s's tok run. */
static int split_text(struct answer *a, struct qstack *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int err = 0;

	s->tok_off = (uint32_t)a->nseq;
	while (!err && p <= end) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		size_t n = semi ? (size_t)(semi - p) : (size_t)(end - p);
		uint32_t f;

		err = name_frame(a, p, n, &f);
		err = err ?: seq_push(a, f);
		p += n + 1;
	}
	s->ntok = (uint32_t)(a->nseq - s->tok_off);
	return err;
}

/* Decodes frame_ids into frames: s's fr run. */
static int split_ids(struct answer *a, struct qstack *s, const unsigned char *blob, size_t len)
{
	size_t pos = 0;
	int err = 0;

	s->fr_off = (uint32_t)a->nseq;
	while (!err && pos < len) {
		uint64_t id = 0;
		uint32_t f;

		if (rollup_get_varint(blob, len, &pos, &id) < 0 || id == 0 || id > INT64_MAX ||
		    a->nseq - s->fr_off >= FRAMES_MAX)
			return store_set_err(a->st, -EIO, "stack %lld's frame ids are damaged", (long long)s->id);
		err = id_frame(a, (int64_t)id, &f);
		err = err ?: seq_push(a, f);
	}
	s->nfr = (uint32_t)(a->nseq - s->fr_off);
	return err;
}

/* Takes one stack row: its text (or, stored without, its frames' names) and, for pprof, its frames. */
static int take_stack(struct answer *a, uint32_t idx, const char *text, size_t tlen, const unsigned char *blob,
		      size_t blen)
{
	struct qstack *s = &a->stacks[idx];
	int err = 0;

	if (s->loaded)
		return 0;
	if (!tlen && !blob)
		return store_set_err(a->st, -EIO, "stack %lld has neither text nor frames: the database is damaged",
				     (long long)s->id);
	if (tlen)
		err = split_text(a, s, text, tlen);
	if (!err && blob && (a->want_frames || !tlen))
		err = split_ids(a, s, blob, blen);
	if (!err && !tlen) {
		s->tok_off = s->fr_off;
		s->ntok = s->nfr;
	}
	if (!err && !s->ntok)
		return store_set_err(a->st, -EIO, "stack %lld has no frames: the database is damaged", (long long)s->id);
	s->loaded = !err;
	return err;
}

/* Hands each row of stmt (id, text, frame_ids) or (text, frame_ids) for id to take_stack. */
static int read_stack_row(struct answer *a, sqlite3_stmt *s, int col, uint32_t idx)
{
	return take_stack(a, idx, (const char *)sqlite3_column_text(s, col), (size_t)sqlite3_column_bytes(s, col),
			  sqlite3_column_blob(s, col + 1), (size_t)sqlite3_column_bytes(s, col + 1));
}

/* Reads every stack the answer names: one lookup each, or the whole table when they are many. */
static int load_stacks(struct answer *a)
{
	struct store *st = a->st;
	sqlite3_stmt *s = a->nstacks > BULK_IDS ? st->stacks_all : st->stack_of;
	int rc = SQLITE_DONE, err = 0;

	if (s == st->stacks_all) {
		store_prefetch_table(st, "stacks");
		while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
			uint32_t idx;

			if (store_idmap_get(&a->stack_of, sqlite3_column_int64(s, 0), &idx))
				err = read_stack_row(a, s, 1, idx);
		}
	} else {
		for (uint32_t i = 0; !err && i < a->nstacks; i++) {
			sqlite3_bind_int64(s, 1, a->stacks[i].id);
			rc = sqlite3_step(s);
			if (rc == SQLITE_ROW)
				err = read_stack_row(a, s, 0, i);
			if (rc == SQLITE_ROW || rc == SQLITE_DONE)
				rc = sqlite3_reset(s) == SQLITE_OK ? SQLITE_DONE : SQLITE_ERROR;
			if (rc != SQLITE_DONE)
				break;
		}
	}
	if (!err && rc != SQLITE_DONE)
		return store_fail(st, s, rc, "cannot read stacks");
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	for (uint32_t i = 0; !err && i < a->nstacks; i++)
		if (!a->stacks[i].loaded)
			err = store_set_err(st, -EIO, "a sample names stack %lld, which is not stored: the database is"
					    " damaged", (long long)a->stacks[i].id);
	return err;
}

void store_set_namer(struct store *st, const struct store_namer *n)
{
	st->namer = n ? *n : (struct store_namer){ 0 };
}

/* A frame stored unnamed, "MODULE+0xADDR" of module path (with a build-id), named by the store's namer
 * into buf. Returns false when it is not such a frame or the namer has no name. */
static bool name_late(const struct store *st, const char *name, const char *path, const char *build_id,
		      char *buf, size_t cap)
{
	const char *base = strrchr(path, '/'), *hex;
	size_t n;
	char *end;
	uint64_t addr;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (!st->namer.name || !build_id[0] || !n || strncmp(name, base, n) || strncmp(name + n, "+0x", 3))
		return false;
	hex = name + n + 3;
	if (!isxdigit((unsigned char)hex[0]) || strlen(hex) > 16)
		return false;
	errno = 0;
	addr = strtoull(hex, &end, 16);
	if (*end || errno)
		return false;
	return st->namer.name(st->namer.ctx, path, build_id, addr, buf, cap) == 0 && buf[0] && !strchr(buf, ';');
}

/* Takes a frame row's name, module path, build-id and file (columns col..col+3), start line and line
 * (col+4, col+5); a frame stored unnamed is named now when the store's namer can. */
static int take_frame(struct answer *a, sqlite3_stmt *s, int col, uint32_t idx)
{
	struct qframe *f = &a->frames[idx];
	const unsigned char *c[4];
	size_t len[4], off = 0;
	char late[STORE_NAME_MAX];

	for (int i = 0; i < 4; i++) {
		c[i] = sqlite3_column_text(s, col + i);
		len[i] = (size_t)sqlite3_column_bytes(s, col + i);
		if (!c[i])
			return store_set_err(a->st, -EIO, "frame %lld is damaged", (long long)f->id);
	}
	if (name_late(a->st, (const char *)c[0], (const char *)c[1], (const char *)c[2], late, sizeof(late))) {
		c[0] = (const unsigned char *)late;
		len[0] = strlen(late);
	}
	f->text = malloc(len[0] + len[1] + len[2] + len[3] + 4);
	if (!f->text)
		return store_set_err(a->st, -ENOMEM, "out of memory naming frames");
	for (int i = 0; i < 4; i++) {
		memcpy(f->text + off, c[i], len[i] + 1);
		off += len[i] + 1;
	}
	f->module_off = len[0] + 1;
	f->build_id_off = len[0] + len[1] + 2;
	f->file_off = len[0] + len[1] + len[2] + 3;
	f->start_line = sqlite3_column_int(s, col + 4);
	f->line = sqlite3_column_int(s, col + 5);
	return 0;
}

/* Reads the frame rows the stacks name: one lookup each, or all when they are many. */
static int load_frames(struct answer *a)
{
	struct store *st = a->st;
	uint32_t want = 0;
	sqlite3_stmt *s;
	int rc = SQLITE_DONE, err = 0;

	for (uint32_t i = 0; i < a->nframes; i++)
		want += !a->frames[i].text;
	if (!want)
		return 0;
	s = want > BULK_IDS ? st->frames_all : st->frame_get;
	if (!s)
		return store_set_err(st, -EIO, "stacks name frames, but this database has none");
	if (s == st->frames_all) {
		store_prefetch_table(st, "frames");
		while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
			uint32_t idx;

			if (frame_index(a, sqlite3_column_int64(s, 0), &idx) && !a->frames[idx].text)
				err = take_frame(a, s, 1, idx);
		}
	} else {
		for (uint32_t i = 0; !err && i < a->nframes; i++) {
			if (a->frames[i].text)
				continue;
			sqlite3_bind_int64(s, 1, a->frames[i].id);
			rc = sqlite3_step(s);
			if (rc == SQLITE_ROW)
				err = take_frame(a, s, 0, i);
			if (rc == SQLITE_ROW || rc == SQLITE_DONE)
				rc = sqlite3_reset(s) == SQLITE_OK ? SQLITE_DONE : SQLITE_ERROR;
			if (rc != SQLITE_DONE)
				break;
		}
	}
	if (!err && rc != SQLITE_DONE)
		return store_fail(st, s, rc, "cannot read frames");
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	for (uint32_t i = 0; !err && i < a->nframes; i++)
		if (!a->frames[i].text)
			err = store_set_err(st, -EIO, "a stack names frame %lld, which is not stored: the database is"
					    " damaged", (long long)a->frames[i].id);
	return err;
}

/* Writes each frame's name as the answer's demangle mode asks, keeping the stored name (system) where
 * it changed. Frames whose names come out alike rank as one, so their stacks merge. */
static int demangle_frames(struct answer *a)
{
	for (uint32_t i = 0; i < a->nframes; i++) {
		struct qframe *f = &a->frames[i];
		size_t nlen = f->module_off - 1, rest, dlen;
		char *d = demangle_frame(f->text, nlen, a->demangle), *t;

		if (!d)
			continue;
		/* The name, then module, build-id and file, each ending in '\0'. */
		rest = f->file_off + strlen(f->text + f->file_off) + 1 - f->module_off;
		dlen = strlen(d);
		t = malloc(dlen + 1 + rest);
		if (!t) {
			free(d);
			return store_set_err(a->st, -ENOMEM, "out of memory naming frames");
		}
		memcpy(t, d, dlen + 1);
		memcpy(t + dlen + 1, f->text + f->module_off, rest);
		free(d);
		f->system = f->text;
		f->system[nlen] = '\0';
		f->text = t;
		f->build_id_off = f->build_id_off - f->module_off + dlen + 1;
		f->file_off = f->file_off - f->module_off + dlen + 1;
		f->module_off = dlen + 1;
	}
	return 0;
}

/* strcmp of a + ta vs b + tb, where ta and tb are the characters that follow each name in a text
 * (';' before another frame, '\0' at the end). */
static int cmp_names(const char *a, int ta, const char *b, int tb)
{
	int ca, cb;

	while (*a && *a == *b)
		a++, b++;
	ca = *a ? (unsigned char)*a : ta;
	cb = *b ? (unsigned char)*b : tb;
	return ca - cb;
}

static int cmp_frame_names(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;

	return cmp_names(a->frames[*(const uint32_t *)x].text, ';', a->frames[*(const uint32_t *)y].text, ';');
}

/* Orders two stacks as their texts would be by strcmp, frame by frame: frames of the same name are
 * passed by rank; at the first that differ, the ranks decide unless one is a stack's last frame. */
static int cmp_stacks(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;
	const struct qstack *sx = &a->stacks[*(const uint32_t *)x], *sy = &a->stacks[*(const uint32_t *)y];
	const uint32_t *rx = a->ranks + sx->tok_off, *ry = a->ranks + sy->tok_off;
	uint32_t n = sx->ntok < sy->ntok ? sx->ntok : sy->ntok, i = 0;
	bool lx, ly;

	while (i < n && rx[i] == ry[i])
		i++;
	if (i == n)
		return (sx->ntok > sy->ntok) - (sx->ntok < sy->ntok);
	lx = i + 1 == sx->ntok;
	ly = i + 1 == sy->ntok;
	if (!lx && !ly)
		return rx[i] < ry[i] ? -1 : 1;
	return cmp_names(a->frames[a->seq[sx->tok_off + i]].text, lx ? '\0' : ';',
			 a->frames[a->seq[sy->tok_off + i]].text, ly ? '\0' : ';');
	return (sx->ntok > sy->ntok) - (sx->ntok < sy->ntok);
}

/* Ranks the frames by name, then the stacks by text. */
static int rank_stacks(struct answer *a)
{
	uint32_t *order;

	if (!a->nstacks)
		return 0;
	order = reallocarray(NULL, a->nframes > a->nstacks ? a->nframes : a->nstacks, sizeof(*order));
	if (!order)
		return store_set_err(a->st, -ENOMEM, "out of memory sorting stacks");
	for (uint32_t i = 0; i < a->nframes; i++)
		order[i] = i;
	qsort_r(order, a->nframes, sizeof(*order), cmp_frame_names, a);
	for (uint32_t i = 0; i < a->nframes; i++)
		a->frames[order[i]].rank = i && !cmp_frame_names(&order[i - 1], &order[i], a)
						   ? a->frames[order[i - 1]].rank : i;
	a->ranks = reallocarray(NULL, a->nseq ? a->nseq : 1, sizeof(*a->ranks));
	if (!a->ranks) {
		free(order);
		return store_set_err(a->st, -ENOMEM, "out of memory sorting stacks");
	}
	for (size_t i = 0; i < a->nseq; i++)
		a->ranks[i] = a->frames[a->seq[i]].rank;
	for (uint32_t i = 0; i < a->nstacks; i++)
		order[i] = i;
	qsort_r(order, a->nstacks, sizeof(*order), cmp_stacks, a);
	for (uint32_t i = 0; i < a->nstacks; i++) /* stacks of one text (their sources differ) share a rank */
		a->stacks[order[i]].rank =
			i && !cmp_stacks(&order[i - 1], &order[i], a) ? a->stacks[order[i - 1]].rank : i;
	free(order);
	return 0;
}

static int cmp_comms(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;

	return strcmp(a->comms[*(const uint32_t *)x], a->comms[*(const uint32_t *)y]);
}

/* Reads the names of the process name ids and ranks them. */
int store_answer_comms(struct answer *a, const int64_t *ids)
{
	struct store *st = a->st;
	uint32_t *order;
	int err = 0;

	a->comms = calloc(a->ncomms ? a->ncomms : 1, sizeof(*a->comms));
	a->comm_rank = calloc(a->ncomms ? a->ncomms : 1, sizeof(*a->comm_rank));
	order = calloc(a->ncomms ? a->ncomms : 1, sizeof(*order));
	if (!a->comms || !a->comm_rank || !order) {
		free(order);
		return store_set_err(st, -ENOMEM, "out of memory naming processes");
	}
	for (uint32_t i = 0; !err && i < a->ncomms; i++) {
		const unsigned char *name;
		int rc;

		sqlite3_bind_int64(st->name_of, 1, ids[i]);
		rc = sqlite3_step(st->name_of);
		name = rc == SQLITE_ROW ? sqlite3_column_text(st->name_of, 0) : NULL;
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			err = store_fail(st, st->name_of, rc, "cannot read names");
		else if (!name)
			err = store_set_err(st, -EIO, "a sample names process name %lld, which is not stored: the"
					    " database is damaged", (long long)ids[i]);
		else if (!(a->comms[i] = strdup((const char *)name)))
			err = store_set_err(st, -ENOMEM, "out of memory naming processes");
		sqlite3_reset(st->name_of);
		order[i] = i;
	}
	sqlite3_clear_bindings(st->name_of);
	if (!err) {
		qsort_r(order, a->ncomms, sizeof(*order), cmp_comms, a);
		for (uint32_t i = 0; i < a->ncomms; i++)
			a->comm_rank[order[i]] = i;
	}
	free(order);
	return err;
}

/* Most first; then pid (when the answer is per pid: else all 0), process name, stack text. */
int store_rows_cmp(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;
	const struct qrow *rx = x, *ry = y;

	if (rx->count != ry->count)
		return rx->count > ry->count ? -1 : 1;
	if (rx->pid != ry->pid)
		return rx->pid < ry->pid ? -1 : 1;
	if (rx->comm != ry->comm)
		return a->comm_rank[rx->comm] < a->comm_rank[ry->comm] ? -1 : 1;
	return (a->stacks[rx->stack].rank > a->stacks[ry->stack].rank) -
	       (a->stacks[rx->stack].rank < a->stacks[ry->stack].rank);
}

/* By process name, then stack text, then side (base last): a diff's order. */
int store_diff_rows_cmp(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;
	const struct qrow *rx = x, *ry = y;

	if (rx->comm != ry->comm)
		return a->comm_rank[rx->comm] < a->comm_rank[ry->comm] ? -1 : 1;
	if (rx->stack != ry->stack)
		return a->stacks[rx->stack].rank < a->stacks[ry->stack].rank ? -1 : 1;
	return (rx->side > ry->side) - (rx->side < ry->side);
}

/* By pid, process name, stack text and side: rows of one text next to each other. */
static int cmp_same_text(const void *x, const void *y, void *ctx)
{
	const struct answer *a = ctx;
	const struct qrow *rx = x, *ry = y;
	uint32_t kx = a->stacks[rx->stack].rank, ky = a->stacks[ry->stack].rank;

	if (rx->pid != ry->pid)
		return rx->pid < ry->pid ? -1 : 1;
	if (rx->comm != ry->comm)
		return rx->comm < ry->comm ? -1 : 1;
	if (kx != ky)
		return kx < ky ? -1 : 1;
	return (rx->side > ry->side) - (rx->side < ry->side);
}

/* Sums the rows of stacks that differ only in their frames' sources (Python lines): an answer by text
 * has one row per text. Returns the rows left. */
static size_t merge_same_text(struct answer *a, struct qrow *rows, size_t n)
{
	size_t out = 0;

	qsort_r(rows, n, sizeof(*rows), cmp_same_text, a);
	for (size_t i = 0; i < n; i++) {
		struct qrow *last = out ? &rows[out - 1] : NULL;

		if (last && !cmp_same_text(last, &rows[i], a))
			last->count = rows[i].count > UINT64_MAX - last->count ? UINT64_MAX : last->count + rows[i].count;
		else
			rows[out++] = rows[i];
	}
	return out;
}

/* Indexes the cells' stacks and names (*count of them), reads them, sorts the rows (*rows, one per cell,
 * side from the cell's bucket) by cmp. Unless the answer wants frames, rows of stacks with one text are
 * summed into one first (*count is then the rows left). */
int store_answer_build(struct answer *a, const struct rollup_cell *c, size_t *count, row_cmp cmp,
			struct qrow **rows)
{
	int64_t *comm_ids = NULL;
	uint32_t next_comm = 0;
	size_t n = *count;
	int err = 0;

	*rows = calloc(n ? n : 1, sizeof(**rows));
	a->stacks = calloc(n ? n : 1, sizeof(*a->stacks));
	comm_ids = calloc(n ? n : 1, sizeof(*comm_ids));
	if (!*rows || !a->stacks || !comm_ids)
		err = store_set_err(a->st, -ENOMEM, "out of memory for the answer");
	for (size_t i = 0; !err && i < n; i++) {
		uint32_t s, cm;
		bool added;

		err = store_idmap_put(&a->stack_of, c[i].stack_id, &a->nstacks, &s, &added);
		if (!err && added)
			a->stacks[s] = (struct qstack){ .id = c[i].stack_id };
		err = err ?: store_idmap_put(&a->comm_of, c[i].comm_id, &next_comm, &cm, &added);
		if (!err && added)
			comm_ids[cm] = c[i].comm_id;
		if (err)
			err = store_set_err(a->st, err, "out of memory for the answer");
		else
			(*rows)[i] = (struct qrow){ .count = c[i].count, .pid = c[i].pid, .comm = cm, .stack = s,
						    .side = (uint32_t)c[i].bucket };
	}
	a->ncomms = next_comm;
	err = err ?: dense_init(a);
	err = err ?: load_stacks(a);
	err = err ?: load_frames(a);
	err = err ?: demangle_frames(a);
	err = err ?: rank_stacks(a);
	err = err ?: store_answer_comms(a, comm_ids);
	free(comm_ids);
	if (!err && !a->want_frames) /* by text: one row per text, whatever the frames' sources */
		*count = n = merge_same_text(a, *rows, n);
	if (!err)
		qsort_r(*rows, n, sizeof(**rows), cmp, a);
	return err;
}

/* Writes stack s's text (its frames' names joined by ';') into st->text; NULL when out of memory. */
const char *store_answer_text(struct answer *a, const struct qstack *s)
{
	size_t len = 0;
	char *p;

	for (uint32_t i = 0; i < s->ntok; i++)
		len += a->frames[a->seq[s->tok_off + i]].module_off;
	if (store_buf_reserve(&a->st->text, len + 1) < 0)
		return NULL;
	p = (char *)a->st->text.p;
	for (uint32_t i = 0; i < s->ntok; i++) {
		const struct qframe *f = &a->frames[a->seq[s->tok_off + i]];

		if (i)
			*p++ = ';';
		memcpy(p, f->text, f->module_off - 1);
		p += f->module_off - 1;
	}
	*p = '\0';
	return (const char *)a->st->text.p;
}
