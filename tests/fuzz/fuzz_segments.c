/* fuzz_segments.c - libFuzzer target: a mapping's file offset taken to an ELF address through segments a
 * binary claims (elf_segments_vaddr), as the unwinder, the symbolizer and the Python finder take them:
 * any offsets, addresses and sizes (overlapping, wrapping), any flags. The answer must come from a
 * segment that holds the offset, exactly or within its pages, and one executable as the mapping is
 * whenever such a segment holds it. */
#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "elf/elf_file.h"

#define PAGE 4096u

/* Whether segment s holds off: exactly, or within its pages. */
static bool holds(const struct elf_segment *s, uint64_t off, bool pages)
{
	uint64_t lo = s->offset, hi = s->offset + s->filesz;

	if (hi < s->offset || hi > UINT64_MAX - PAGE)
		return false;
	if (pages) {
		lo &= ~(uint64_t)(PAGE - 1);
		hi = (hi + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	}
	return off >= lo && off < hi;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_segment segs[ELF_MAX_SEGMENTS];
	size_t n = 0, pos = 0;
	uint64_t off, vaddr = 0;
	bool exec, from_match = false, any_match = false, matched = false;
	int r;

	/* The input: the mapping (offset, executable), then segments (offset, vaddr, filesz, flags). */
	if (size < 9)
		return 0;
	memcpy(&off, data, 8);
	exec = data[8] & 1;
	pos = 9;
	while (n < ELF_MAX_SEGMENTS && size - pos >= 25) {
		memcpy(&segs[n].offset, data + pos, 8);
		memcpy(&segs[n].vaddr, data + pos + 8, 8);
		memcpy(&segs[n].filesz, data + pos + 16, 8);
		segs[n].flags = data[pos + 24] & (PF_R | PF_W | PF_X);
		pos += 25;
		n++;
	}
	/* Small offsets and sizes often: the layouts linkers write. */
	if (data[8] & 2)
		for (size_t i = 0; i < n; i++) {
			segs[i].offset &= 0xffff;
			segs[i].filesz &= 0xffff;
			off &= 0xffff;
		}
	r = elf_segments_vaddr(segs, n, off, exec, &vaddr);
	for (size_t i = 0; i < n; i++) {
		bool h = holds(&segs[i], off, true); /* the pages hold what the segment holds exactly */

		any_match |= h;
		from_match |= h && !!(segs[i].flags & PF_X) == exec;
	}
	/* The answer is some holding segment's, one executable as the mapping is when one of those holds it. */
	for (size_t i = 0; r == 0 && i < n; i++)
		if (holds(&segs[i], off, true) && vaddr == off - segs[i].offset + segs[i].vaddr &&
		    (!from_match || !!(segs[i].flags & PF_X) == exec))
			matched = true;
	FUZZ_ASSERT(r == 0 || r == -ENOENT);
	FUZZ_ASSERT((r == 0) == any_match);
	if (r == 0)
		FUZZ_ASSERT(matched);
	return 0;
}
