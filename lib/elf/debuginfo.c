/* debuginfo.c - locates and verifies a binary's separate debug file (build-id directory, .gnu_debuglink). */
#include "elf/debuginfo.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "elf/elf_file.h"

#define CRC_CHUNK 65536
#define DEFAULT_DEBUG_DIR "/usr/lib/debug"

int debuginfo_crc32(int fd, uint32_t *crc)
{
	unsigned char *buf = malloc(CRC_CHUNK);
	uLong sum = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t r;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		r = pread(fd, buf, CRC_CHUNK, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		sum = crc32(sum, buf, (uInt)r);
		off += r;
	}
	free(buf);
	if (!err)
		*crc = (uint32_t)sum;
	return err;
}

/* The build-id of f equals id (len bytes). */
static bool build_id_is(const struct elf_file *f, const uint8_t *id, int len)
{
	uint8_t got[ELF_BUILD_ID_MAX];
	int n = elf_file_build_id(f, got, sizeof(got));

	return n == len && memcmp(got, id, (size_t)len) == 0;
}

/* Opens path when its build-id is id (len bytes). Returns 0, -ENOENT (another), -ENOMEM or another -errno. */
static int open_with_id(const char *path, const uint8_t *id, int len, struct elf_file **out)
{
	struct elf_file *f;
	int err = elf_file_open(path, &f);

	if (err)
		return err;
	if (!build_id_is(f, id, len)) {
		elf_file_free(f);
		return -ENOENT;
	}
	*out = f;
	return 0;
}

/* Tries DEBUG_DIR/.build-id/xx/rest.debug. Returns 0, -ENOENT, -ENOMEM or another -errno. */
static int try_build_id(const struct debuginfo_query *q, const char *debug_dir, const uint8_t *id, int len,
			struct elf_file **out)
{
	char hex[2 * ELF_BUILD_ID_MAX + 1], path[PATH_MAX];
	int i, n, err;

	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	n = snprintf(path, sizeof(path), "%s%s/.build-id/%.2s/%s.debug", q->root, debug_dir, hex, hex + 2);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	err = open_with_id(path, id, len, out);
	if (!err && q->found)
		snprintf(q->found, q->found_len, "%s", path);
	return err;
}

int debuginfo_open_matching(const char *path, const struct elf_file *bin, struct elf_file **out)
{
	uint8_t id[ELF_BUILD_ID_MAX];
	int len = elf_file_build_id(bin, id, sizeof(id));

	return len < 2 ? -ENOENT : open_with_id(path, id, len, out);
}

/* Tries one debuglink candidate (a path as the process sees it): CRC, then build-ids when both have one.
 * Returns 0, -ENOENT, -ENOMEM or another -errno. */
static int try_debuglink(const struct debuginfo_query *q, const char *cand, uint32_t crc, const uint8_t *id,
			 int len, struct elf_file **out)
{
	uint8_t got_id[ELF_BUILD_ID_MAX];
	char path[PATH_MAX];
	struct elf_file *f;
	uint32_t got;
	int fd, n, err;

	n = snprintf(path, sizeof(path), "%s%s", q->root, cand);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = elf_file_open_fd(path);
	if (fd < 0)
		return fd;
	err = debuginfo_crc32(fd, &got);
	if (err || got != crc) {
		close(fd);
		return err ? err : -ENOENT;
	}
	err = elf_file_from_fd(fd, &f);
	if (err)
		return err;
	n = elf_file_build_id(f, got_id, sizeof(got_id));
	if (len > 0 && n > 0 && (n != len || memcmp(got_id, id, (size_t)len) != 0)) {
		elf_file_free(f);
		return -ENOENT;
	}
	if (q->found)
		snprintf(q->found, q->found_len, "%s", path);
	*out = f;
	return 0;
}

/* Tries DIR/NAME, DIR/.debug/NAME, DEBUG_DIR/DIR/NAME. Returns 0, -ENOENT or -ENOMEM. */
static int try_debuglinks(const struct debuginfo_query *q, const char *debug_dir, const uint8_t *id, int len,
			  struct elf_file **out)
{
	char name[NAME_MAX + 1], dir[PATH_MAX], cand[PATH_MAX];
	const char *forms[3][2] = { { "", "/" }, { "", "/.debug/" }, { debug_dir, "/" } };
	const char *slash;
	uint32_t crc;
	size_t i;
	int n, err;

	if (!q->path || q->path[0] != '/' || elf_file_debuglink(q->bin, name, sizeof(name), &crc) < 0)
		return -ENOENT;
	slash = strrchr(q->path, '/');
	n = snprintf(dir, sizeof(dir), "%.*s", (int)(slash - q->path), q->path);
	if (n < 0 || (size_t)n >= sizeof(dir))
		return -ENOENT;
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		n = snprintf(cand, sizeof(cand), "%s%s%s%s", forms[i][0], dir, forms[i][1], name);
		if (n < 0 || (size_t)n >= sizeof(cand))
			continue;
		err = try_debuglink(q, cand, crc, id, len, out);
		if (err == 0 || err == -ENOMEM)
			return err;
	}
	return -ENOENT;
}

/* The candidates under one root. */
static int find_under(const struct debuginfo_query *q, struct elf_file **out)
{
	const char *debug_dir = q->debug_dir ? q->debug_dir : DEFAULT_DEBUG_DIR;
	uint8_t id[ELF_BUILD_ID_MAX];
	int len, err;

	len = elf_file_build_id(q->bin, id, sizeof(id));
	if (len >= 2) {
		err = try_build_id(q, debug_dir, id, len, out);
		if (err == 0 || err == -ENOMEM)
			return err;
	}
	return try_debuglinks(q, debug_dir, id, len > 0 ? len : 0, out);
}

int debuginfo_find(const struct debuginfo_query *q, struct elf_file **out)
{
	struct debuginfo_query host = *q;
	int err = find_under(q, out);

	if (err == 0 || err == -ENOMEM || !q->root || !q->root[0])
		return err;
	/* The process's root is gone (it exited: a process of 30 ms often has by now) or holds no debug
	 * file: the daemon's own. A candidate must match by build-id or CRC there too. */
	host.root = "";
	return find_under(&host, out);
}
