/* fuzz_jitdump.c - libFuzzer target: any bytes as a jitdump file (jit-PID.dump is written by the traced
 * runtime: outside data). Read whole and in two growing halves, as a file a runtime is still writing is
 * read, for names and for the unwind rows of its unwinding information; every record must be bounded and
 * checked, lookups must answer within the names read, and the rows of any range must be strictly
 * increasing. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "symbolize/jitdump.h"
#include "unwind/dumprows.h"

/* Reads fd (data[0..size) written to it, in one or two steps) into a new table and looks up a few
 * addresses. */
static void read_all(int fd, const uint8_t *data, size_t size, size_t first)
{
	struct jitdump_stats st = { 0 };
	struct jitdump_table *t = NULL;
	uint64_t stamp;
	uint32_t pid;

	FUZZ_ASSERT(ftruncate(fd, 0) == 0);
	FUZZ_ASSERT(pwrite(fd, data, first, 0) == (ssize_t)first);
	FUZZ_ASSERT(jitdump_table_new(&t) == 0);
	jitdump_table_read(t, fd, &st);
	FUZZ_ASSERT(pwrite(fd, data + first, size - first, (off_t)first) == (ssize_t)(size - first));
	for (int i = 0; i < 3; i++)
		jitdump_table_read(t, fd, &st);
	jitdump_table_header(t, &pid, &stamp);
	for (size_t i = 0; i + 8 <= size && i < 512; i += 8) {
		uint64_t addr;
		const char *name;

		memcpy(&addr, data + i, sizeof(addr));
		name = jitdump_table_find(t, addr, addr * 7919);
		FUZZ_ASSERT(!name || strlen(name) < (64u << 20));
	}
	FUZZ_ASSERT(st.loads <= st.records && st.moves <= st.records);
	jitdump_table_free(t);
}

/* The same for the unwind rows: the rows of the range around each object's first address. */
static void read_rows(int fd, const uint8_t *data, size_t size, size_t first)
{
	struct jitrows_stats rst = { 0 };
	struct dumprows_stats st = { 0 };
	struct dumprows *d = NULL;
	struct unwind_row *rows;
	size_t n;

	FUZZ_ASSERT(ftruncate(fd, 0) == 0);
	FUZZ_ASSERT(pwrite(fd, data, first, 0) == (ssize_t)first);
	FUZZ_ASSERT(dumprows_new(&d) == 0);
	dumprows_read(d, fd, &rst, &st);
	FUZZ_ASSERT(pwrite(fd, data + first, size - first, (off_t)first) == (ssize_t)(size - first));
	for (int i = 0; i < 3; i++)
		dumprows_read(d, fd, &rst, &st);
	FUZZ_ASSERT(st.bad <= st.records && st.records <= st.file.records);
	for (size_t i = 0; i + 8 <= size && i < 256; i += 8) {
		uint64_t addr;

		memcpy(&addr, data + i, sizeof(addr));
		addr &= ~0xfffULL;
		if (addr + (1ULL << 20) < addr ||
		    jitrows_range(dumprows_rows(d), addr, addr + (1ULL << 20), 1u << 20, &rows, &n))
			continue;
		for (size_t k = 1; k < n; k++)
			FUZZ_ASSERT(rows[k].pc > rows[k - 1].pc);
		free(rows);
	}
	dumprows_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;

	if (fd < 0)
		fd = memfd_create("fuzz-jitdump", MFD_CLOEXEC);
	FUZZ_ASSERT(fd >= 0);
	read_all(fd, data, size, size);
	read_all(fd, data, size, size / 2);
	read_rows(fd, data, size, size);
	read_rows(fd, data, size, size / 2);
	return 0;
}
