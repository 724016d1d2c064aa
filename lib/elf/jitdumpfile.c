/* jitdumpfile.c - a jitdump file read record by record (see jitdumpfile.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/jitdumpfile.h"

#define HEADER_MIN 40
#define HEADER_MAX 4096
#define RECORD_HEAD 16
#define WINDOW JITDUMP_MAX_PEEK /* bytes read at once; a record's head and what is looked at fit in it */

uint32_t jitdump_u32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

uint64_t jitdump_u64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

bool jitdump_path(const char *path)
{
	const char *base = strrchr(path, '/'), *p;

	base = base ? base + 1 : path;
	if (strncmp(base, "jit-", 4))
		return false;
	for (p = base + 4; *p >= '0' && *p <= '9'; p++)
		;
	return p > base + 4 && !strcmp(p, ".dump");
}

void jitdump_file_reset(struct jitdump_file *f)
{
	free(f->win);
	memset(f, 0, sizeof(*f));
}

/* The len bytes at file offset off (len <= WINDOW, inside the file of size end), from the window, read
 * again from off when it does not hold them. NULL: unreadable. */
static const unsigned char *bytes_at(struct jitdump_file *f, int fd, uint64_t off, uint64_t len, uint64_t end)
{
	uint64_t want;
	ssize_t got;

	if (off >= f->win_off && off + len <= f->win_off + f->win_len)
		return f->win + (off - f->win_off);
	if (!f->win && !(f->win = malloc(WINDOW)))
		return NULL;
	want = end - off < WINDOW ? end - off : WINDOW;
	got = pread(fd, f->win, want, (off_t)off);
	if (got < 0 || (uint64_t)got < len) {
		f->win_len = 0;
		return NULL;
	}
	f->win_off = off;
	f->win_len = (uint64_t)got;
	return f->win;
}

static int read_header(struct jitdump_file *f, int fd, uint64_t end, struct jitdump_file_stats *st)
{
	const unsigned char *h = end >= HEADER_MIN ? bytes_at(f, fd, 0, HEADER_MIN, end) : NULL;
	uint32_t size;

	if (!h)
		return -EAGAIN; /* not written yet */
	size = jitdump_u32(h + 8);
	if (jitdump_u32(h) != JITDUMP_MAGIC || jitdump_u32(h + 4) < 1 || size < HEADER_MIN || size > HEADER_MAX) {
		f->bad = true;
		st->files_bad++;
		return -EINVAL;
	}
	f->offset = size;
	f->pid = jitdump_u32(h + 20);
	f->stamp = jitdump_u64(h + 24);
	f->flags = jitdump_u64(h + 32);
	st->files_read++;
	return 0;
}

int jitdump_file_read(struct jitdump_file *f, int fd, jitdump_peek_fn peek, jitdump_record_fn fn, void *ctx,
		      struct jitdump_file_stats *st)
{
	uint64_t end, stop;
	struct stat sb;
	int err = 0;

	if (f->bad)
		return -EINVAL;
	if (f->closed)
		return 0;
	if (fstat(fd, &sb))
		return -errno;
	end = (uint64_t)sb.st_size < JITDUMP_MAX_FILE ? (uint64_t)sb.st_size : JITDUMP_MAX_FILE;
	if (!f->offset && (err = read_header(f, fd, end, st)))
		return err == -EAGAIN ? 0 : err;
	stop = f->offset + JITDUMP_READ_BUDGET;
	f->win_len = 0; /* the file may have grown since the window was read */
	while (f->offset + RECORD_HEAD <= end && f->offset < stop) {
		const unsigned char *h = bytes_at(f, fd, f->offset, RECORD_HEAD, end), *b;
		uint32_t id, size;
		uint64_t body, need, stamp;

		if (!h)
			return -EIO;
		id = jitdump_u32(h);
		size = jitdump_u32(h + 4);
		stamp = jitdump_u64(h + 8);
		if (size < RECORD_HEAD) { /* no way to the next record */
			st->records_bad++;
			f->bad = true;
			return -EINVAL;
		}
		if (f->offset + size > end) {
			if ((uint64_t)sb.st_size >= JITDUMP_MAX_FILE || f->offset + size > JITDUMP_MAX_FILE) {
				st->files_cut++;
				f->closed = true;
			}
			break; /* not whole yet */
		}
		body = size - RECORD_HEAD;
		need = peek(id, body);
		if (need > body)
			need = body;
		if (need > WINDOW)
			need = WINDOW;
		st->records++;
		b = need ? bytes_at(f, fd, f->offset + RECORD_HEAD, need, end) : h;
		if (!b)
			return -EIO;
		err = fn(ctx, id, stamp, b, need, body);
		if (err)
			return err;
		if (id == JITDUMP_CLOSE)
			f->closed = true;
		f->offset += size;
	}
	return 0;
}
