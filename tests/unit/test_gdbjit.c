/* test_gdbjit.c - JIT names from the GDB JIT interface, on this process: it defines its own
 * __jit_debug_descriptor and registers ELF objects compiled by cc (their .text placed at an address of
 * the test's choosing, as a JIT places them); the cache finds the descriptor in this binary, names
 * addresses inside the objects' functions, reads the list again once it changed (at the next flush),
 * keeps what it read when the list goes bad, and cuts a list that loops. */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "testutil.h"
#include "elf/procmaps.h"
#include "symbolize/gdbjit.h"

struct jit_code_entry {
	struct jit_code_entry *next_entry, *prev_entry;
	const char *symfile_addr;
	uint64_t symfile_size;
};

struct jit_descriptor {
	uint32_t version, action_flag;
	struct jit_code_entry *relevant_entry, *first_entry;
};

/* gdb's name: the cache looks for it in the binaries the process maps (here, this test's .symtab). */
struct jit_descriptor __jit_debug_descriptor = { 1, 0, NULL, NULL };

/* An object compiled from src by cc -c, its .text's sh_addr set to text_addr (as a JIT writes where it
 * loaded the section). Returns the image (malloc'd) and its size, or NULL. */
static char *object(const char *dir, const char *name, const char *src, uint64_t text_addr, size_t *size)
{
	char c[512], o[512];
	Elf64_Ehdr *eh;
	char *buf;
	FILE *f;
	long len;

	snprintf(c, sizeof(c), "%s/%s.c", dir, name);
	snprintf(o, sizeof(o), "%s/%s.o", dir, name);
	if (!(f = fopen(c, "w")))
		return NULL;
	fputs(src, f);
	fclose(f);
	if (run("cc -O1 -fno-asynchronous-unwind-tables -c %s -o %s", c, o) || !(f = fopen(o, "rb")))
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	eh = (Elf64_Ehdr *)buf;
	for (int i = 1; i < eh->e_shnum; i++) {
		Elf64_Shdr *sh = (Elf64_Shdr *)(buf + eh->e_shoff + (size_t)i * eh->e_shentsize);
		const Elf64_Shdr *strs = (const Elf64_Shdr *)(buf + eh->e_shoff + (size_t)eh->e_shstrndx * eh->e_shentsize);

		if (!strcmp(buf + strs->sh_offset + sh->sh_name, ".text"))
			sh->sh_addr = text_addr;
	}
	*size = (size_t)len;
	return buf;
}

static void link_in(struct jit_code_entry *e, const char *image, size_t size)
{
	e->symfile_addr = image;
	e->symfile_size = size;
	e->prev_entry = NULL;
	e->next_entry = __jit_debug_descriptor.first_entry;
	if (e->next_entry)
		e->next_entry->prev_entry = e;
	__jit_debug_descriptor.first_entry = e;
	__jit_debug_descriptor.relevant_entry = e;
	__jit_debug_descriptor.action_flag = 1;
}

int main(void)
{
	char dir[] = "/tmp/test_gdbjit.XXXXXX";
	static struct jit_code_entry e1, e2;
	struct gdbjit_cache *c = NULL;
	struct gdbjit_stats st;
	struct procmap *maps = NULL;
	uint32_t pid = (uint32_t)getpid();
	const uint64_t a1 = 0x7000000000ULL, a2 = 0x7100000000ULL;
	size_t n = 0, s1 = 0, s2 = 0;
	char *o1, *o2;
	const char *name;

	if (!mkdtemp(dir))
		return 1;
	o1 = object(dir, "one", "int jit_first(int x) { return x * 3 + 1; }\n", a1, &s1);
	o2 = object(dir, "two", "int jit_pad(int x) { return x - 7; }\nint jit_second(int x) { return x * x + 5; }\n",
		    a2, &s2);
	CHECK(o1 && o2, "two objects compiled");
	CHECK(gdbjit_cache_new(0, &c) == 0, "gdbjit_cache_new");
	CHECK(procmaps_read(pid, &maps, &n) == 0 && n > 0, "this process's mappings");
	if (!o1 || !o2 || !c || !n)
		goto out;

	CHECK(gdbjit_cache_find(c, pid, maps, n, a1 + 2) == NULL, "an empty list names nothing");
	link_in(&e1, o1, s1);
	CHECK(gdbjit_cache_find(c, pid, maps, n, a1 + 2) == NULL,
	      "a list changed since this flush's look is read again only at the next flush");
	gdbjit_cache_begin_flush(c);
	name = gdbjit_cache_find(c, pid, maps, n, a1 + 2);
	CHECK(name && !strcmp(name, "jit_first"), "the next flush: an address inside the object's function is named (%s)",
	      name ? name : "NULL");
	CHECK(gdbjit_cache_find(c, pid, maps, n, a1 + 0x100000) == NULL, "an address past it is not");
	link_in(&e2, o2, s2);
	gdbjit_cache_begin_flush(c);
	name = gdbjit_cache_find(c, pid, maps, n, a2 + 1);
	CHECK(name && !strncmp(name, "jit_", 4), "a second object registered: its functions named (%s)", name ? name : "NULL");
	name = gdbjit_cache_find(c, pid, maps, n, a1 + 2);
	CHECK(name && !strcmp(name, "jit_first"), "and the first's still");
	gdbjit_cache_get_stats(c, &st);
	CHECK(st.lists_read == 3 && st.objects == 3 && st.symbols == 4 && st.processes == 1 && st.objects_bad == 0,
	      "counted: 3 reads (the empty list's too), 3 objects parsed, 4 symbols (%" PRIu64 " %" PRIu64 " %" PRIu64 ")", st.lists_read,
	      st.objects, st.symbols);

	/* A loop: the second entry points back at the first, whose prev is not it. */
	e1.next_entry = &e2;
	__jit_debug_descriptor.relevant_entry = &e1;
	gdbjit_cache_begin_flush(c);
	name = gdbjit_cache_find(c, pid, maps, n, a1 + 2);
	gdbjit_cache_get_stats(c, &st);
	CHECK(st.lists_cut == 1 && name && !strcmp(name, "jit_first"), "a list that loops is cut, counted (%" PRIu64 ")",
	      st.lists_cut);
	e1.next_entry = NULL;

	/* Another version: refused, counted; what was read before stays. */
	__jit_debug_descriptor.version = 2;
	gdbjit_cache_begin_flush(c);
	name = gdbjit_cache_find(c, pid, maps, n, a1 + 2);
	CHECK(name && !strcmp(name, "jit_first"), "a descriptor of version 2 is not read: the names read before stay");
	__jit_debug_descriptor.version = 1;

	/* An image that is not ELF, and one too big: counted, the others named. */
	e2.symfile_addr = "not an ELF image at all, just text";
	e2.symfile_size = 30;
	__jit_debug_descriptor.relevant_entry = &e2;
	gdbjit_cache_begin_flush(c);
	name = gdbjit_cache_find(c, pid, maps, n, a1 + 2);
	gdbjit_cache_get_stats(c, &st);
	CHECK(name && st.objects_bad == 1, "an image that is not ELF is counted bad, the other still named");
	e2.symfile_size = (uint64_t)GDBJIT_MAX_OBJECT + 1;
	__jit_debug_descriptor.relevant_entry = &e1;
	gdbjit_cache_begin_flush(c);
	name = gdbjit_cache_find(c, pid, maps, n, a1 + 2);
	gdbjit_cache_get_stats(c, &st);
	CHECK(name && st.objects_too_big == 1, "an image past 16 MiB is not read, counted");
out:
	gdbjit_cache_free(c);
	procmaps_free(maps, n);
	free(o1);
	free(o2);
	run("rm -rf %s", dir);
	return CHECK_EXIT();
}
