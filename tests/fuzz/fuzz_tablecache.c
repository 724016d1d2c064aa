/* fuzz_tablecache.c - libFuzzer target: any bytes as a cached unwind table file (a file on disk is outside
 * data: another program, a bad disk or an older flamed may have written it). Reading it must return rows
 * that are whole, in order and within bounds, or an error that deleted the file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "unwind/tablecache.h"

/* The build-id the seeds were written for: 0x11 0x12 ... 0x24. */
static uint8_t id[20];
static char dir[PATH_MAX], path[PATH_MAX];
static struct tablecache *cache;

static void cleanup(void)
{
	unlink(path);
	tablecache_free(cache);
	rmdir(dir);
}

static void setup(void)
{
	size_t off;

	for (int i = 0; i < 20; i++)
		id[i] = (uint8_t)(0x11 + i);
	snprintf(dir, sizeof(dir), "/tmp/flamed-fuzz-tablecache.%d", (int)getpid());
	FUZZ_ASSERT(tablecache_open(dir, 1 << 26, &cache) == 0);
	off = (size_t)snprintf(path, sizeof(path), "%s/", dir);
	for (int i = 0; i < 20; i++)
		off += (size_t)snprintf(path + off, sizeof(path) - off, "%02x", id[i]);
	snprintf(path + off, sizeof(path) - off, ".rows");
	atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_row *rows;
	size_t n;
	int fd, err;

	if (!cache)
		setup();
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	FUZZ_ASSERT(fd >= 0);
	FUZZ_ASSERT(write(fd, data, size) == (ssize_t)size);
	close(fd);
	err = tablecache_get(cache, id, 20, &rows, &n);
	if (err) {
		FUZZ_ASSERT(!rows && !n);
		FUZZ_ASSERT(access(path, F_OK) && errno == ENOENT); /* a bad file is deleted */
		return 0;
	}
	FUZZ_ASSERT(n >= 2 && n <= UNWIND_MAX_ROWS && n * sizeof(*rows) < size);
	for (size_t i = 1; i < n; i++)
		FUZZ_ASSERT(rows[i].pc >= rows[i - 1].pc);
	free(rows);
	return 0;
}
