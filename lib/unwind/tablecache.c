/* tablecache.c - unwind tables on disk by build-id (see tablecache.h).
 *
 * A file is named by the hex of its build-id and ".rows": a header (struct head), then the rows. It is
 * written to a temporary name and renamed, so a reader sees a whole file or none; a crash leaves a
 * temporary one, deleted at the next open. Its modification time is its last use. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "elf/elf_file.h"
#include "unwind/tablecache.h"

/* Bumped whenever cfi.c or prologue.c would build other rows for the same binary: files of another
 * format are stale, deleted unused. */
#define ROWS_FORMAT 1
#define MAGIC "FLMDUNW\n"
#define SUFFIX ".rows"
#define TMP_PREFIX ".tmp-"
#define NAME_MAX_LEN (2 * ELF_BUILD_ID_MAX + sizeof(SUFFIX))

struct head {
	char magic[8];
	char version[16]; /* FLAMED_VERSION of the writer, NUL-padded */
	__u32 format;     /* ROWS_FORMAT */
	__u32 row_size;   /* sizeof(struct unwind_row) */
	__u32 nrows;
	__u32 crc;        /* zlib's crc32 of the rows */
	__u32 id_len;
	__u32 reserved;
	__u8 id[ELF_BUILD_ID_MAX];
};

struct tablecache {
	int dirfd;
	uint64_t max_bytes;
	struct tablecache_stats st;
};

static bool valid_name(const char *name, bool *tmp)
{
	size_t len = strlen(name), hex;

	*tmp = !strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX));
	if (*tmp)
		return true;
	if (len <= strlen(SUFFIX) || strcmp(name + len - strlen(SUFFIX), SUFFIX))
		return false;
	hex = len - strlen(SUFFIX);
	if (hex < 2 || hex > 2 * ELF_BUILD_ID_MAX || hex % 2)
		return false;
	for (size_t i = 0; i < hex; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return true;
}

static void file_name(char *out, const uint8_t *id, int len)
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	strcpy(out + 2 * len, SUFFIX);
}

struct entry {
	char name[NAME_MAX_LEN];
	uint64_t size;
	struct timespec mtime;
};

static int older(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

/* Counts the cache's files and bytes afresh, deleting temporary ones left by a crash; then, while
 * more than room bytes are taken, deletes the least recently used. */
static void scan(struct tablecache *c, uint64_t room)
{
	struct entry *e = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	struct stat st;
	int fd = dup(c->dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	bool tmp;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(d);
	c->st.files = c->st.bytes = 0;
	while ((de = readdir(d))) {
		if (!valid_name(de->d_name, &tmp) || fstatat(c->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (tmp) {
			unlinkat(c->dirfd, de->d_name, 0);
			continue;
		}
		c->st.files++;
		c->st.bytes += (uint64_t)st.st_size;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct entry *ne = realloc(e, ncap * sizeof(*e));

			if (!ne)
				break;
			e = ne;
			cap = ncap;
		}
		snprintf(e[n].name, sizeof(e[n].name), "%s", de->d_name);
		e[n].size = (uint64_t)st.st_size;
		e[n].mtime = st.st_mtim;
		n++;
	}
	closedir(d);
	if (c->st.bytes > room && n) {
		qsort(e, n, sizeof(*e), older);
		for (size_t i = 0; i < n && c->st.bytes > room; i++) {
			if (unlinkat(c->dirfd, e[i].name, 0))
				continue;
			c->st.files--;
			c->st.bytes -= e[i].size;
			c->st.evicted++;
		}
	}
	free(e);
}

int tablecache_open(const char *dir, uint64_t max_bytes, struct tablecache **out)
{
	struct tablecache *c;

	*out = NULL;
	if (!dir || !*dir || !max_bytes)
		return -EINVAL;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (c->dirfd < 0) {
		int err = -errno;

		free(c);
		return err;
	}
	c->max_bytes = max_bytes;
	c->st.max_bytes = max_bytes;
	scan(c, max_bytes);
	*out = c;
	return 0;
}

static bool read_all(int fd, void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t r = read(fd, (char *)buf + done, len - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		done += (size_t)r;
	}
	return true;
}

static bool write_all(int fd, const void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t r = write(fd, (const char *)buf + done, len - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		done += (size_t)r;
	}
	return true;
}

static uint32_t rows_crc(const struct unwind_row *rows, size_t n)
{
	const unsigned char *p = (const unsigned char *)rows;
	size_t len = n * sizeof(*rows);
	uLong crc = crc32(0L, Z_NULL, 0);

	while (len) {
		uInt chunk = len > (1u << 30) ? 1u << 30 : (uInt)len;

		crc = crc32(crc, p, chunk);
		p += chunk;
		len -= chunk;
	}
	return (uint32_t)crc;
}

static void set_version(char version[16])
{
	memset(version, 0, 16);
	strncpy(version, FLAMED_VERSION, 15);
}

/* Checks the header h of a file of size bytes against build-id id. Returns 0, -ESTALE (another
 * format) or -EBADMSG. */
static int check_head(const struct head *h, uint64_t size, const uint8_t *id, int len)
{
	char version[16];

	if (memcmp(h->magic, MAGIC, sizeof(h->magic)))
		return -EBADMSG;
	set_version(version);
	if (h->format != ROWS_FORMAT || h->row_size != sizeof(struct unwind_row) ||
	    memcmp(h->version, version, sizeof(version)))
		return -ESTALE;
	if (h->nrows < 2 || h->nrows > UNWIND_MAX_ROWS || size != sizeof(*h) + (uint64_t)h->nrows * h->row_size)
		return -EBADMSG;
	if (h->id_len != (__u32)len || memcmp(h->id, id, (size_t)len))
		return -EBADMSG;
	return 0;
}

int tablecache_get(struct tablecache *c, const uint8_t *id, int len, struct unwind_row **rows, size_t *n)
{
	char name[NAME_MAX_LEN];
	struct unwind_row *r = NULL;
	struct head h;
	struct stat st;
	int fd, err;

	*rows = NULL;
	*n = 0;
	if (len <= 0 || len > ELF_BUILD_ID_MAX)
		return -EINVAL;
	file_name(name, id, len);
	fd = openat(c->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOENT)
			c->st.misses++;
		return err;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = -EBADMSG;
	} else if (!read_all(fd, &h, sizeof(h))) {
		err = -EBADMSG;
	} else if (!(err = check_head(&h, (uint64_t)st.st_size, id, len))) {
		r = malloc((size_t)h.nrows * sizeof(*r));
		if (!r)
			err = -ENOMEM;
		else if (!read_all(fd, r, (size_t)h.nrows * sizeof(*r)) || rows_crc(r, h.nrows) != h.crc)
			err = -EBADMSG;
		for (__u32 i = 1; !err && i < h.nrows; i++)
			if (r[i].pc < r[i - 1].pc)
				err = -EBADMSG; /* the BPF program searches them: they must be in order */
	}
	if (!err)
		futimens(fd, NULL); /* used now: the last to go */
	close(fd);
	if (err == -ENOMEM)
		return err;
	if (err) {
		free(r);
		unlinkat(c->dirfd, name, 0);
		scan(c, c->max_bytes); /* counted afresh */
		if (err == -ESTALE)
			c->st.stale++;
		else
			c->st.bad++;
		return err;
	}
	c->st.hits++;
	*rows = r;
	*n = h.nrows;
	return 0;
}

int tablecache_put(struct tablecache *c, const uint8_t *id, int len, const struct unwind_row *rows, size_t n)
{
	char name[NAME_MAX_LEN], tmp[NAME_MAX_LEN + 32];
	struct head h = { .magic = MAGIC, .format = ROWS_FORMAT, .row_size = sizeof(*rows) };
	uint64_t size = sizeof(h) + (uint64_t)n * sizeof(*rows);
	struct stat old;
	bool replaced;
	int fd, err = 0;

	if (len <= 0 || len > ELF_BUILD_ID_MAX || n < 2 || n > UNWIND_MAX_ROWS)
		return -EINVAL;
	if (size > c->max_bytes) {
		c->st.refused++;
		return -EFBIG;
	}
	set_version(h.version);
	h.nrows = (__u32)n;
	h.crc = rows_crc(rows, n);
	h.id_len = (__u32)len;
	memcpy(h.id, id, (size_t)len);
	file_name(name, id, len);
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%d-%s", (int)getpid(), name);
	scan(c, c->max_bytes - size); /* room first, the files counted: the put adds to that count */
	fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		c->st.refused++;
		return -errno;
	}
	errno = 0;
	if (!write_all(fd, &h, sizeof(h)) || !write_all(fd, rows, n * sizeof(*rows)))
		err = errno ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	/* A file of the same build-id it replaces (another flamed on this cache wrote one meanwhile). */
	replaced = !err && !fstatat(c->dirfd, name, &old, AT_SYMLINK_NOFOLLOW) && S_ISREG(old.st_mode);
	if (!err && renameat(c->dirfd, tmp, c->dirfd, name))
		err = -errno;
	if (err) {
		unlinkat(c->dirfd, tmp, 0);
		c->st.refused++;
		return err;
	}
	c->st.stored++;
	c->st.files += !replaced;
	c->st.bytes += size - (replaced ? (uint64_t)old.st_size : 0);
	return 0;
}

void tablecache_get_stats(const struct tablecache *c, struct tablecache_stats *out)
{
	if (c)
		*out = c->st;
	else
		memset(out, 0, sizeof(*out));
}

void tablecache_free(struct tablecache *c)
{
	if (!c)
		return;
	close(c->dirfd);
	free(c);
}
