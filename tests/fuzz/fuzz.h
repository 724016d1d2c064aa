/* fuzz.h - helpers shared by the libFuzzer targets: inputs as C strings, as lines and as files. */
#ifndef FLAMED_FUZZ_H
#define FLAMED_FUZZ_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Aborts (a finding for libFuzzer) with what broke: for invariants and failed set-up. */
#define FUZZ_ASSERT(cond)                                                                    \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                             \
		}                                                                            \
	} while (0)

/* A NUL-terminated heap copy of data[0..size) (which may hold NULs of its own). */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	FUZZ_ASSERT(s);
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* Calls fn on a NUL-terminated heap copy of each '\n'-separated line of data (newline kept, so a line
 * looks as getline() gives it). */
static inline void fuzz_each_line(const uint8_t *data, size_t size, void (*fn)(char *line, void *ctx), void *ctx)
{
	size_t start = 0, end;

	while (start < size) {
		const uint8_t *nl = memchr(data + start, '\n', size - start);
		char *line;

		end = nl ? (size_t)(nl - data) + 1 : size;
		line = fuzz_string(data + start, end - start);
		fn(line, ctx);
		free(line);
		start = end;
	}
}

/* An anonymous in-memory file (memfd) holding data, offset 0. Returns its descriptor. */
static inline int fuzz_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t off = 0;

	FUZZ_ASSERT(fd >= 0);
	while (off < size) {
		ssize_t n = write(fd, data + off, size - off);

		FUZZ_ASSERT(n > 0);
		off += (size_t)n;
	}
	FUZZ_ASSERT(lseek(fd, 0, SEEK_SET) == 0);
	return fd;
}

/* The path under which fd can be opened again, for parsers that take a path. */
static inline void fuzz_fd_path(int fd, char *buf, size_t size)
{
	snprintf(buf, size, "/proc/self/fd/%d", fd);
}

#endif
