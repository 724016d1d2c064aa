/* fuzz_elf.c - libFuzzer target: the ELF reader (headers, build-id, debuglink, segments, symbol tables). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "elf/elf_file.h"
#include "symbolize/elf_symbols.h"

/* Looks up addresses in and around each segment and checks each name found is a readable string. */
static void lookups(const struct elf_symtab *t, const struct elf_segment *segs, int nsegs)
{
	const uint64_t fixed[] = { 0, 1, 0x1000, UINT64_MAX };
	const char *name;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if ((name = elf_symtab_lookup(t, fixed[i])))
			FUZZ_ASSERT(strlen(name) <= ELF_MAX_NAME);
	for (int i = 0; i < nsegs; i++) {
		uint64_t a = segs[i].vaddr, mid = a + segs[i].filesz / 2, end = a + segs[i].filesz;

		if ((name = elf_symtab_lookup(t, a)))
			FUZZ_ASSERT(strlen(name) <= ELF_MAX_NAME);
		if ((name = elf_symtab_lookup(t, mid)))
			FUZZ_ASSERT(strlen(name) <= ELF_MAX_NAME);
		if ((name = elf_symtab_lookup(t, end)))
			FUZZ_ASSERT(strlen(name) <= ELF_MAX_NAME);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_segment segs[ELF_MAX_SEGMENTS];
	struct elf_symtab *t;
	struct elf_file *f;
	uint8_t id[ELF_BUILD_ID_MAX];
	char link[256];
	uint32_t crc;
	uint64_t vaddr;
	int n, r;

	if (elf_file_from_fd(fuzz_memfd(data, size), &f) < 0)
		return 0;
	r = elf_file_build_id(f, id, sizeof(id));
	FUZZ_ASSERT(r == -ENOENT || r == -EINVAL || (r > 0 && r <= ELF_BUILD_ID_MAX));
	if (elf_file_debuglink(f, link, sizeof(link), &crc) == 0)
		FUZZ_ASSERT(strlen(link) > 0 && strlen(link) < sizeof(link) && !strchr(link, '/'));
	n = elf_file_segments(f, segs, ELF_MAX_SEGMENTS);
	FUZZ_ASSERT(n <= ELF_MAX_SEGMENTS);
	for (int i = 0; i < n; i++) {
		elf_segments_vaddr(segs, (size_t)n, segs[i].offset, true, &vaddr);
		elf_segments_vaddr(segs, (size_t)n, segs[i].offset + segs[i].filesz, false, &vaddr);
	}
	for (int dynamic = 0; dynamic <= 1; dynamic++) {
		if (elf_symtab_load(f, dynamic, &t) < 0)
			continue;
		FUZZ_ASSERT(elf_symtab_count(t) > 0 && elf_symtab_bytes(t) > 0);
		lookups(t, segs, n < 0 ? 0 : n);
		elf_symtab_free(t);
	}
	elf_file_free(f);
	return 0;
}
