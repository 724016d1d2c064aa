/* fuzz_gdbjit.c - libFuzzer target: the GDB JIT interface's list read from a traced process's memory,
 * which may hold anything: the input is that memory (at BASE), the descriptor at its start. Entries that
 * loop or point anywhere, sizes of any value, images that are not ELF: the read must stay bounded, and
 * every name found must be a string within GDBJIT_MAX_NAME. The same memory is read for unwind rows
 * (unwind/jitrows.h): whatever its images' section headers claim, rows come back sorted. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "symbolize/gdbjit.h"
#include "unwind/jitrows.h"

#define BASE 0x10000ULL

struct image {
	const uint8_t *data;
	size_t size;
};

static int read_image(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *m = ctx;

	if (addr < BASE || addr - BASE > m->size || len > m->size - (addr - BASE))
		return -EFAULT;
	memcpy(buf, m->data + (addr - BASE), len);
	return 0;
}

/* The rows of every object of the list, for a mapping holding all of the input's addresses. */
static void unwind_rows(struct image *m)
{
	struct jitrows_stats st = { 0 };
	struct jitrows *j = NULL, *again = NULL;
	struct unwind_row *rows;
	uint64_t sig;
	size_t n;

	if (jitrows_read(read_image, m, BASE, &sig, NULL, &j, &st) != 0) {
		FUZZ_ASSERT(j == NULL);
		return;
	}
	FUZZ_ASSERT(jitrows_count(j) <= JITROWS_MAX_OBJECTS);
	if (jitrows_range(j, 0, 0xffffffffULL, UNWIND_MAX_ROWS, &rows, &n) == 0) {
		for (size_t i = 1; i < n; i++)
			FUZZ_ASSERT(rows[i].pc > rows[i - 1].pc);
		free(rows);
	}
	/* Read again over the first read: every object with rows kept, as many as before. */
	memset(&st, 0, sizeof(st));
	if (jitrows_read(read_image, m, BASE, &sig, j, &again, &st) == 0) {
		FUZZ_ASSERT(jitrows_count(again) == jitrows_count(j) && st.objects == 0);
		jitrows_free(again);
	}
	jitrows_free(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image m = { data, size };
	struct gdbjit_stats st = { 0 };
	struct gdbjit_table *t = NULL;
	uint64_t sig;
	int err;

	unwind_rows(&m);
	err = gdbjit_table_read(read_image, &m, BASE, &t, &sig, &st);
	FUZZ_ASSERT(err == 0 ? t != NULL : t == NULL);
	FUZZ_ASSERT(st.objects + st.objects_bad <= GDBJIT_MAX_ENTRIES + 1);
	if (!t)
		return 0;
	FUZZ_ASSERT(gdbjit_table_count(t) <= GDBJIT_MAX_SYMBOLS);
	for (uint64_t a = 0; a < 4096; a += 7) {
		const char *name = gdbjit_table_find(t, a);

		if (name)
			FUZZ_ASSERT(strlen(name) < GDBJIT_MAX_NAME);
	}
	gdbjit_table_free(t);
	return 0;
}
