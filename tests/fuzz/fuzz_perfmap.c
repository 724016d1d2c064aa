/* fuzz_perfmap.c - libFuzzer target: perf-map lines, and tables read from a growing file and looked up. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "symbolize/perfmap.h"

/* Starts of the lines parsed, to look up in the table afterwards. */
struct addrs {
	uint64_t v[64];
	size_t n;
};

static void parse_line(char *line, void *ctx)
{
	struct addrs *a = ctx;
	const char *name;
	uint64_t start, size;
	size_t len;

	if (perfmap_parse_line(line, &start, &size, &name, &len) < 0)
		return;
	FUZZ_ASSERT(size > 0 && len > 0 && name + len <= line + strlen(line));
	if (a->n < sizeof(a->v) / sizeof(a->v[0]))
		a->v[a->n++] = start;
}

static void find(const struct perfmap_table *t, uint64_t addr)
{
	const char *name = perfmap_table_find(t, addr);

	if (name)
		FUZZ_ASSERT(strlen(name) <= PERFMAP_MAX_NAME);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap_stats st = { 0 };
	struct perfmap_table *t;
	struct addrs a = { .n = 0 };
	size_t half = size / 2;
	int fd;

	fuzz_each_line(data, size, parse_line, &a);

	/* The first half, then the rest appended: a runtime writing its map as it compiles. */
	fd = fuzz_memfd(data, half);
	FUZZ_ASSERT(perfmap_table_new(256, &t) == 0);
	if (perfmap_table_read(t, fd, &st) == 0) {
		FUZZ_ASSERT(perfmap_table_offset(t) <= half && perfmap_table_unchanged(t, fd));
		FUZZ_ASSERT(pwrite(fd, data + half, size - half, (off_t)half) == (ssize_t)(size - half));
		if (perfmap_table_read(t, fd, &st) == 0)
			FUZZ_ASSERT(perfmap_table_offset(t) <= size && perfmap_table_count(t) <= 256);
	}
	find(t, 0);
	find(t, UINT64_MAX);
	for (size_t i = 0; i < a.n; i++) {
		find(t, a.v[i]);
		find(t, a.v[i] + 1);
		find(t, a.v[i] - 1);
	}
	perfmap_table_free(t);
	close(fd);
	return 0;
}
