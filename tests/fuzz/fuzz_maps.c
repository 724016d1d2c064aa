/* fuzz_maps.c - libFuzzer target: /proc/PID/maps lines (procmaps_parse_line) and whole files (procmaps_read_file). */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "elf/procmaps.h"

/* Parses one line and checks what a parsed mapping promises. */
static void parse_line(char *line, void *ctx)
{
	struct procmap m;

	(void)ctx;
	if (procmaps_parse_line(line, &m) < 0)
		return;
	FUZZ_ASSERT(m.start < m.end);
	FUZZ_ASSERT(!m.path || (m.path[0] && !strchr(m.path, '\n')));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmap *maps = NULL;
	char path[64];
	size_t n = 0;
	int fd;

	fuzz_each_line(data, size, parse_line, NULL);

	fd = fuzz_memfd(data, size);
	fuzz_fd_path(fd, path, sizeof(path));
	if (procmaps_read_file(path, &maps, &n) == 0) {
		FUZZ_ASSERT(n <= PROCMAPS_MAX && (n == 0 || maps));
		for (size_t i = 0; i < n; i++) {
			FUZZ_ASSERT(maps[i].exec && maps[i].start < maps[i].end);
			FUZZ_ASSERT(i == 0 || maps[i - 1].start <= maps[i].start);
		}
		procmaps_free(maps, n);
	}
	close(fd);
	return 0;
}
