/* fuzz_gdbjit.c - libFuzzer target: the GDB JIT interface's list read from a traced process's memory,
 * which may hold anything: the input is that memory (at BASE), the descriptor at its start. Entries that
 * loop or point anywhere, sizes of any value, images that are not ELF: the read must stay bounded, and
 * every name found must be a string within GDBJIT_MAX_NAME. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "symbolize/gdbjit.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image m = { data, size };
	struct gdbjit_stats st = { 0 };
	struct gdbjit_table *t = NULL;
	uint64_t sig;
	int err;

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
