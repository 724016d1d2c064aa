/* test_tablecache.c - unwind tables on disk by build-id: written and read back equal; a bad file (cut
 * short, a byte flipped, rows out of order, renamed to another build-id, another version's) deleted
 * unread and counted; the bound held by deleting the least recently read; a table bigger than the bound
 * refused; crash leftovers deleted, files not the cache's left alone, a link not followed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "unwind/tablecache.h"

/* The file's layout (tablecache.c's struct head): magic 8, version 16, format, row size, rows, crc, build-id
 * length, reserved (4 each), build-id 64; then the rows. */
#define HEAD 112
#define CRC_AT 36

static char dir[PATH_MAX] = "/tmp/flamed-tablecache.XXXXXX";

static struct unwind_row *make_rows(size_t n, uint32_t seed)
{
	struct unwind_row *r = calloc(n, sizeof(*r));

	for (size_t i = 0; r && i < n; i++)
		r[i] = (struct unwind_row){ .pc = (uint32_t)(i * 16 + seed), .cfa_off = (__s16)(8 + i % 64),
					    .kinds = (__u8)(1 + i % 3), .rbp_off = (__s8)(i % 5) };
	return r;
}

static void id_of(uint8_t id[20], uint8_t v)
{
	for (int i = 0; i < 20; i++)
		id[i] = (uint8_t)(v + i * 7);
}

static void path_of(char *out, size_t len, const uint8_t id[20])
{
	size_t off = (size_t)snprintf(out, len, "%s/", dir);

	for (int i = 0; i < 20; i++)
		off += (size_t)snprintf(out + off, len - off, "%02x", id[i]);
	snprintf(out + off, len - off, ".rows");
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : st.st_size;
}

/* Changes the byte at off of path (from its end when off < 0). */
static void flip(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	unsigned char b = 0;

	if (off < 0)
		off += file_size(path);
	if (fd < 0 || pread(fd, &b, 1, off) != 1)
		return;
	b ^= 0x5a;
	if (pwrite(fd, &b, 1, off) != 1)
		perror("pwrite");
	close(fd);
}

static void set_mtime(const char *path, time_t t)
{
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };

	utimensat(AT_FDCWD, path, ts, 0);
}

static void test_roundtrip(void)
{
	struct tablecache *c;
	struct tablecache_stats st;
	struct unwind_row *rows = make_rows(1000, 3), *got;
	uint8_t id[20];
	char path[PATH_MAX];
	size_t n;
	int err;

	CHECK(tablecache_open(dir, 1 << 20, &c) == 0, "opens (creating) the directory");
	id_of(id, 1);
	CHECK(tablecache_get(c, id, 20, &got, &n) == -ENOENT && !got, "a table never written: -ENOENT");
	CHECK(tablecache_put(c, id, 20, rows, 1000) == 0, "a table of 1000 rows is written");
	path_of(path, sizeof(path), id);
	CHECK(file_size(path) > 8000, "as a file named by its build-id (%lld bytes)", (long long)file_size(path));
	CHECK(tablecache_get(c, id, 20, &got, &n) == 0 && n == 1000 && !memcmp(got, rows, 1000 * sizeof(*rows)),
	      "read back: the same 1000 rows");
	free(got);
	CHECK(tablecache_get(c, id, 19, &got, &n) == -ENOENT, "a build-id of another length is another table");
	tablecache_get_stats(c, &st);
	CHECK(st.hits == 1 && st.misses == 2 && st.stored == 1 && st.files == 1 && st.bytes == (uint64_t)file_size(path),
	      "counted: 1 hit, 2 misses, 1 stored, 1 file of %" PRIu64 " bytes", st.bytes);
	tablecache_free(c);

	CHECK(tablecache_open(dir, 1 << 20, &c) == 0, "opened again (a restart)");
	tablecache_get_stats(c, &st);
	CHECK(st.files == 1 && st.bytes == (uint64_t)file_size(path), "it finds the file there");
	CHECK(tablecache_get(c, id, 20, &got, &n) == 0 && n == 1000 && !memcmp(got, rows, 1000 * sizeof(*rows)),
	      "and reads the same rows after the restart");
	free(got);
	err = tablecache_put(c, id, 20, rows, 1);
	CHECK(err == -EINVAL, "a table of one row is not written (%d)", err);
	tablecache_free(c);
	free(rows);
}

/* The *.rows files in dir. */
static uint64_t tables_on_disk(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t n = 0;

	while (d && (de = readdir(d)))
		n += strlen(de->d_name) > 5 && !strcmp(de->d_name + strlen(de->d_name) - 5, ".rows");
	if (d)
		closedir(d);
	return n;
}

/* Writes a good table of build-id v, damages it with how, and checks it is deleted and counted. */
static void bad_file(const char *name, uint8_t v, void (*how)(const char *path), bool stale)
{
	struct tablecache *c;
	struct tablecache_stats a, b;
	struct unwind_row *rows = make_rows(500, v), *got = (void *)1;
	uint8_t id[20];
	char path[PATH_MAX];
	size_t n = 7;
	int err;

	if (tablecache_open(dir, 1 << 20, &c))
		return;
	id_of(id, v);
	path_of(path, sizeof(path), id);
	tablecache_put(c, id, 20, rows, 500);
	how(path);
	tablecache_get_stats(c, &a);
	err = tablecache_get(c, id, 20, &got, &n);
	tablecache_get_stats(c, &b);
	CHECK(err < 0 && err != -ENOENT && !got && !n, "%s: refused (%d), nothing returned", name, err);
	CHECK(access(path, F_OK) && errno == ENOENT, "%s: the file is deleted", name);
	CHECK(stale ? b.stale == a.stale + 1 && b.bad == a.bad : b.bad == a.bad + 1 && b.stale == a.stale,
	      "%s: counted %s", name, stale ? "stale" : "bad");
	CHECK(b.files == tables_on_disk(), "%s: the cache's count is the disk's (%" PRIu64 " files)", name, b.files);
	tablecache_free(c);
	free(rows);
}

static void cut_short(const char *path)
{
	if (truncate(path, file_size(path) - 3))
		perror("truncate");
}

static void cut_header(const char *path)
{
	if (truncate(path, 20))
		perror("truncate");
}

static void grown(const char *path)
{
	FILE *f = fopen(path, "a");

	if (f) {
		fputs("more", f);
		fclose(f);
	}
}

static void row_flipped(const char *path)
{
	flip(path, -5);
}

static void magic_flipped(const char *path)
{
	flip(path, 0);
}

static void version_flipped(const char *path)
{
	flip(path, 9); /* in the writer's version */
}

/* The last row's pc made lower than the one before, the checksum made right again: only the order
 * check can refuse it. */
static void unordered(const char *path)
{
	off_t size = file_size(path);
	unsigned char *buf = size > HEAD ? malloc((size_t)size) : NULL;
	int fd = open(path, O_RDWR);
	uint32_t crc, zero = 0;

	if (!buf || fd < 0 || pread(fd, buf, (size_t)size, 0) != size) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return;
	}
	memcpy(buf + size - sizeof(struct unwind_row), &zero, sizeof(zero)); /* pc is the row's first field */
	crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), buf + HEAD, (uInt)(size - HEAD));
	memcpy(buf + CRC_AT, &crc, sizeof(crc));
	if (pwrite(fd, buf, (size_t)size, 0) != size)
		perror("pwrite");
	close(fd);
	free(buf);
}

static void renamed(const char *path)
{
	char other[PATH_MAX];
	uint8_t id[20];

	id_of(id, 200);
	path_of(other, sizeof(other), id);
	rename(other, path); /* a good file of another build-id, under this one's name */
}

static void test_bad_files(void)
{
	struct tablecache *c;
	struct unwind_row *rows = make_rows(300, 9);
	uint8_t id[20];

	bad_file("cut short by 3 bytes", 10, cut_short, false);
	bad_file("cut inside its header", 11, cut_header, false);
	bad_file("4 bytes more than its rows", 12, grown, false);
	bad_file("a row's byte changed (checksum)", 13, row_flipped, false);
	bad_file("its magic changed", 14, magic_flipped, false);
	bad_file("another version's", 15, version_flipped, true);
	bad_file("the last row out of order", 16, unordered, false);
	if (!tablecache_open(dir, 1 << 20, &c)) {
		id_of(id, 200);
		tablecache_put(c, id, 20, rows, 300);
		tablecache_free(c);
	}
	bad_file("another build-id's file", 17, renamed, false);
	free(rows);
}

static void test_bound(void)
{
	struct tablecache *c;
	struct tablecache_stats st;
	struct unwind_row *rows = make_rows(4000, 1), *got;
	char path[4][PATH_MAX];
	uint8_t id[4][20];
	size_t n;
	int err;

	/* Each file: 32,000 bytes of rows and the header; the bound: room for two. */
	CHECK(tablecache_open(dir, 2 * 4000 * sizeof(*rows) + 2 * 200, &c) == 0, "opened with room for two tables");
	for (int i = 0; i < 3; i++) {
		id_of(id[i], (uint8_t)(100 + i));
		path_of(path[i], sizeof(path[i]), id[i]);
	}
	tablecache_put(c, id[0], 20, rows, 4000);
	tablecache_put(c, id[1], 20, rows, 4000);
	set_mtime(path[0], time(NULL) - 100);
	set_mtime(path[1], time(NULL) - 50);
	CHECK(tablecache_get(c, id[0], 20, &got, &n) == 0, "the older is read: now the most recently used");
	free(got);
	tablecache_get_stats(c, &st);
	uint64_t evicted = st.evicted;
	tablecache_put(c, id[2], 20, rows, 4000);
	tablecache_get_stats(c, &st);
	CHECK(!access(path[0], F_OK) && access(path[1], F_OK) && !access(path[2], F_OK),
	      "a third: the least recently read is deleted, the one read kept");
	CHECK(st.evicted == evicted + 1 && st.files == 2 && st.bytes <= st.max_bytes,
	      "counted: 1 evicted, 2 files, %" PRIu64 " bytes within %" PRIu64, st.bytes, st.max_bytes);
	free(rows);
	rows = make_rows(9000, 1);
	id_of(id[3], 120);
	path_of(path[3], sizeof(path[3]), id[3]);
	err = tablecache_put(c, id[3], 20, rows, 9000);
	tablecache_get_stats(c, &st);
	CHECK(err == -EFBIG && access(path[3], F_OK) && st.refused == 1 && st.files == 2,
	      "a table bigger than the whole bound is refused, counted, and nothing deleted for it (%d)", err);
	tablecache_free(c);
	free(rows);
}

static void test_leftovers(void)
{
	char tmp[PATH_MAX], other[PATH_MAX], link[PATH_MAX], target[PATH_MAX];
	struct tablecache *c;
	struct tablecache_stats st;
	struct unwind_row *got;
	uint8_t id[20];
	size_t n;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/.tmp-123-abcd.rows", dir);
	snprintf(other, sizeof(other), "%s/README", dir);
	snprintf(target, sizeof(target), "%s.target", dir);
	id_of(id, 77);
	path_of(link, sizeof(link), id);
	if ((f = fopen(tmp, "w")))
		fclose(f);
	if ((f = fopen(other, "w")))
		fclose(f);
	if ((f = fopen(target, "w"))) {
		fputs("not a table", f);
		fclose(f);
	}
	if (symlink(target, link))
		perror("symlink");
	CHECK(tablecache_open(dir, 1 << 20, &c) == 0, "opened with leftovers in the directory");
	CHECK(access(tmp, F_OK) && errno == ENOENT, "a crash's temporary file is deleted at open");
	CHECK(!access(other, F_OK), "a file not named as the cache's is left alone");
	CHECK(tablecache_get(c, id, 20, &got, &n) < 0 && !got, "a link named as a table is not followed");
	CHECK(!access(target, F_OK), "and its target is left alone");
	tablecache_get_stats(c, &st);
	CHECK(st.files < 100, "counted files: %" PRIu64, st.files);
	tablecache_free(c);
	unlink(target);
	unlink(other);
	CHECK(tablecache_open("", 1 << 20, &c) == -EINVAL, "no directory: -EINVAL");
	CHECK(tablecache_open("/proc/self/no/such", 1 << 20, &c) < 0 && !c, "a directory that cannot be made: an error");
}

int main(void)
{
	char cmd[PATH_MAX + 16];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	strcat(dir, "/cache"); /* made by tablecache_open */
	test_roundtrip();
	test_bad_files();
	test_bound();
	test_leftovers();
	snprintf(cmd, sizeof(cmd), "rm -rf %.*s", (int)(strlen(dir) - 6), dir);
	if (system(cmd))
		perror("rm");
	return CHECK_EXIT();
}
