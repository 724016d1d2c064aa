/* dumprows.c - unwind rows from a jitdump file's unwinding information (see dumprows.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/dumprows.h"

struct dumprows {
	struct jitdump_file f;
	struct jitrows *j;
	unsigned char *eh;  /* the .eh_frame of the last unwinding-information record, for the next load */
	size_t eh_size;
	int64_t eh_delta;   /* where it lies from its code's start; INT64_MIN: after the code, 16-aligned */
	bool added;         /* rows added by the read going on */
	struct jitrows_stats *rst;
	struct dumprows_stats *st;
	int err;
};

int dumprows_new(struct dumprows **out)
{
	struct dumprows *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d || jitrows_new(&d->j)) {
		free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void dumprows_free(struct dumprows *d)
{
	if (!d)
		return;
	jitdump_file_reset(&d->f);
	jitrows_free(d->j);
	free(d->eh);
	free(d);
}

const struct jitrows *dumprows_rows(const struct dumprows *d)
{
	return d && jitrows_count(d->j) ? d->j : NULL;
}

uint64_t dumprows_offset(const struct dumprows *d)
{
	return d->f.offset;
}

static int32_t s32_at(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Where the .eh_frame lies from the code's start, by the .eh_frame_hdr (len bytes at hdr, right after
 * the .eh_frame): its pc-relative pointer to the .eh_frame, and its first entry's code address relative to
 * itself (the encodings perf and the runtimes write: version 1, pcrel|sdata4, udata4, datarel|sdata4).
 * INT64_MIN: not told so. */
static int64_t hdr_delta(const unsigned char *hdr, size_t len)
{
	if (len < 20 || hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b ||
	    jitdump_u32(hdr + 8) == 0)
		return INT64_MIN;
	/* .eh_frame = hdr + 4 + ptr; the code = hdr + loc */
	return (int64_t)4 + s32_at(hdr + 4) - s32_at(hdr + 12);
}

/* An unwinding-information record: { u64 unwinding_size, eh_frame_hdr_size, mapped_size } then the
 * .eh_frame and the .eh_frame_hdr, unwinding_size bytes in all. */
static void take_unwind(struct dumprows *d, const unsigned char *b, uint64_t have, uint64_t body)
{
	uint64_t size, hdr;
	unsigned char *eh;

	d->st->records++;
	free(d->eh);
	d->eh = NULL;
	if (have < JITDUMP_UNWIND_FIXED || have != body) {
		d->st->bad++;
		return;
	}
	size = jitdump_u64(b);
	hdr = jitdump_u64(b + 8);
	if (size == hdr && size <= body - JITDUMP_UNWIND_FIXED)
		return; /* a header alone: no .eh_frame (V8 writes one so for code without unwinding info) */
	if (size > body - JITDUMP_UNWIND_FIXED || hdr > size || size - hdr < 8 || size - hdr > DUMPROWS_MAX_UNWIND) {
		d->st->bad++;
		return;
	}
	if (!(eh = malloc(size - hdr))) {
		d->err = -ENOMEM;
		return;
	}
	memcpy(eh, b + JITDUMP_UNWIND_FIXED, size - hdr);
	d->eh = eh;
	d->eh_size = size - hdr;
	d->eh_delta = hdr_delta(b + JITDUMP_UNWIND_FIXED + (size - hdr), hdr);
}

/* A code load: the code the unwinding information before it describes. */
static void take_load(struct dumprows *d, const unsigned char *b, uint64_t have)
{
	uint64_t code, size, eh_addr, before;
	int err;

	if (!d->eh)
		return;
	if (have < JITDUMP_LOAD_FIXED) {
		d->st->bad++;
	} else {
		code = jitdump_u64(b + 16);
		size = jitdump_u64(b + 24);
		if (d->eh_delta != INT64_MIN)
			eh_addr = code + (uint64_t)d->eh_delta;
		else
			eh_addr = code + ((size + 15) & ~15ULL);
		before = d->rst->objects;
		err = jitrows_add(d->j, code, size, eh_addr, d->eh, d->eh_size, d->rst);
		if (err)
			d->err = err;
		d->added |= d->rst->objects != before;
	}
	free(d->eh);
	d->eh = NULL;
}

/* jitdump_peek_fn: an unwinding-information record whole, up to the bound; a code load's fields. */
static uint64_t peek(uint32_t id, uint64_t body)
{
	if (id == JITDUMP_UNWIND)
		return body <= JITDUMP_UNWIND_FIXED + 2 * (uint64_t)DUMPROWS_MAX_UNWIND ? body : JITDUMP_UNWIND_FIXED;
	return id == JITDUMP_LOAD ? JITDUMP_LOAD_FIXED : 0;
}

/* jitdump_record_fn */
static int record(void *ctx, uint32_t id, uint64_t stamp, const unsigned char *b, uint64_t have, uint64_t body)
{
	struct dumprows *d = ctx;

	(void)stamp;
	if (id == JITDUMP_UNWIND)
		take_unwind(d, b, have, body);
	else if (id == JITDUMP_LOAD)
		take_load(d, b, have);
	return d->err;
}

int dumprows_read(struct dumprows *d, int fd, struct jitrows_stats *rst, struct dumprows_stats *st)
{
	int err;

	d->added = false;
	d->rst = rst;
	d->st = st;
	d->err = 0;
	err = jitdump_file_read(&d->f, fd, peek, record, d, &st->file);
	if (err)
		return err;
	return d->added;
}
