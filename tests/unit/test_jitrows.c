/* test_jitrows.c - unwind rows of JIT code from the GDB JIT interface's list (lib/unwind/jitrows.c), read
 * from a stand-in for a process's memory: a shared library built by cc from a function with CFI and one
 * without (-fno-asynchronous-unwind-tables, as LLVM leaves a function that cannot throw), its bytes laid
 * out at its addresses, its own file as the registered image. The rows must follow the FDE where there
 * is one and the prologue where there is none, be placed relative to the mapping asked for, and every
 * lie (not ELF, an .eh_frame that cannot be read, an object spread over 4 GiB) be counted, not read. */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "testutil.h"
#include "unwind/cfi.h"
#include "unwind/jitrows.h"

#define DESC 0x1000000ULL   /* the descriptor, then the entries */
#define IMAGES 0x2000000ULL /* the registered images, 16 MiB apart */
#define LOAD 0x7f0000000000ULL /* where the library's bytes are "loaded" */

/* The stand-in memory: the list, the images and the loaded library, each a region. */
struct region {
	uint64_t addr;
	const void *data;
	size_t len;
};
static struct region regions[8];
static size_t nregions;
static uint64_t hole = 0; /* reads touching this address fail, as an unmapped page would */

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (hole && addr <= hole && hole < addr + len)
		return -EFAULT;
	for (size_t i = 0; i < nregions; i++)
		if (addr >= regions[i].addr && addr - regions[i].addr <= regions[i].len &&
		    len <= regions[i].len - (addr - regions[i].addr)) {
			memcpy(buf, (const char *)regions[i].data + (addr - regions[i].addr), len);
			return 0;
		}
	return -EFAULT;
}

struct entry {
	uint64_t next, prev, symfile, size;
};

static struct {
	uint32_t version, action;
	uint64_t relevant, first;
	struct entry e[4];
} list;

/* Lists the images (n of them, each at IMAGES + i * 16 MiB) in that order. */
static void set_list(const size_t *sizes, size_t n)
{
	memset(&list, 0, sizeof(list));
	list.version = 1;
	list.first = n ? DESC + 24 : 0;
	list.relevant = list.first;
	for (size_t i = 0; i < n; i++) {
		list.e[i].next = i + 1 < n ? DESC + 24 + (i + 1) * sizeof(struct entry) : 0;
		list.e[i].prev = i ? DESC + 24 + (i - 1) * sizeof(struct entry) : 0;
		list.e[i].symfile = IMAGES + i * (16ULL << 20);
		list.e[i].size = sizes[i];
	}
}

/* Reads the whole file path. Returns it (malloc'd) or NULL. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && (buf = malloc((size_t)n))) {
		rewind(f);
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

/* The address of the function symbol name in the ELF image (its value and size in *size). */
static uint64_t symbol(const char *image, const char *name, uint64_t *size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)image;

	for (int i = 1; i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = (const Elf64_Shdr *)(image + eh->e_shoff + (size_t)i * sizeof(Elf64_Shdr));
		const Elf64_Shdr *strs = (const Elf64_Shdr *)(image + eh->e_shoff + (size_t)sh->sh_link * sizeof(Elf64_Shdr));

		if (sh->sh_type != SHT_SYMTAB)
			continue;
		for (size_t k = 1; k < sh->sh_size / sizeof(Elf64_Sym); k++) {
			const Elf64_Sym *s = (const Elf64_Sym *)(image + sh->sh_offset + k * sizeof(Elf64_Sym));

			if (!strcmp(image + strs->sh_offset + s->st_name, name)) {
				*size = s->st_size;
				return s->st_value;
			}
		}
	}
	return 0;
}

/* Moves every section's sh_addr and every symbol's value by delta: the image as a JIT that loaded it
 * at LOAD would register it. */
static void relocate(char *image, uint64_t delta)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)image;

	for (int i = 1; i < eh->e_shnum; i++) {
		Elf64_Shdr *sh = (Elf64_Shdr *)(image + eh->e_shoff + (size_t)i * sizeof(Elf64_Shdr));

		if (sh->sh_addr)
			sh->sh_addr += delta;
		if (sh->sh_type == SHT_SYMTAB)
			for (size_t k = 1; k < sh->sh_size / sizeof(Elf64_Sym); k++) {
				Elf64_Sym *s = (Elf64_Sym *)(image + sh->sh_offset + k * sizeof(Elf64_Sym));

				if (s->st_shndx != SHN_UNDEF && s->st_shndx < SHN_LORESERVE)
					s->st_value += delta;
			}
	}
}

/* The memory image of the library: each PT_LOAD's file bytes at LOAD + p_vaddr. */
static char *loaded(const char *file, size_t *len)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)file;
	uint64_t top = 0;
	char *mem;

	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(file + eh->e_phoff + (size_t)i * sizeof(Elf64_Phdr));

		if (ph->p_type == PT_LOAD && ph->p_vaddr + ph->p_memsz > top)
			top = ph->p_vaddr + ph->p_memsz;
	}
	if (!(mem = calloc(1, top)))
		return NULL;
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(file + eh->e_phoff + (size_t)i * sizeof(Elf64_Phdr));

		if (ph->p_type == PT_LOAD)
			memcpy(mem + ph->p_vaddr, file + ph->p_offset, ph->p_filesz);
	}
	*len = top;
	return mem;
}

static const struct unwind_row *row_at(const struct unwind_row *rows, size_t n, uint64_t pc)
{
	return cfi_lookup(rows, n, pc);
}

int main(void)
{
	char dir[] = "/tmp/test_jitrows.XXXXXX", path[600];
	struct jitrows_stats st = { 0 };
	struct jitrows *j = NULL;
	struct unwind_row *rows = NULL;
	const struct unwind_row *r;
	uint64_t sig, with_lo, with_size, without_lo, without_size;
	size_t flen = 0, mlen = 0, n = 0, sizes[3];
	char *file, *mem, *image, *bad;
	int err;

	if (!mkdtemp(dir))
		return 1;
	if (run("cd %s && printf 'int g(int);\\nint with_cfi(int x) { int a = g(x); return g(a) + a + x; }\\n' > a.c && "
		"printf 'int g(int);\\nint without_cfi(int x) { int a = g(x + 1); int b = g(a); return a + b + x; }\\n"
		"int g(int x) { return x * 3; }\\n' > b.c && "
		"cc -O1 -fPIC -c a.c && cc -O1 -fPIC -fno-asynchronous-unwind-tables -fno-unwind-tables -c b.c && "
		"cc -shared -nostdlib -Wl,--no-eh-frame-hdr -o lib.so a.o b.o", dir)) {
		CHECK(0, "the library built");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/lib.so", dir);
	file = slurp(path, &flen);
	CHECK(file != NULL, "the library read");
	if (!file)
		return 1;
	mem = loaded(file, &mlen);
	image = malloc(flen);
	bad = malloc(flen);
	if (!mem || !image || !bad)
		return 1;
	memcpy(image, file, flen);
	relocate(image, LOAD);
	with_lo = symbol(file, "with_cfi", &with_size);
	without_lo = symbol(file, "without_cfi", &without_size);
	CHECK(with_lo && without_lo, "both functions found (%#" PRIx64 ", %#" PRIx64 ")", with_lo, without_lo);
	regions[nregions++] = (struct region){ DESC, &list, sizeof(list) };
	regions[nregions++] = (struct region){ IMAGES, image, flen };
	regions[nregions++] = (struct region){ LOAD, mem, mlen };

	/* One object. */
	sizes[0] = flen;
	set_list(sizes, 1);
	err = jitrows_read(rd, NULL, DESC, &sig, NULL, &j, &st);
	CHECK(err == 0 && jitrows_count(j) == 1 && st.objects == 1 && st.objects_bad == 0 && sig,
	      "one object read with rows (%d, %" PRIu64 " objects, %" PRIu64 " bad)", err, st.objects, st.objects_bad);
	err = jitrows_range(j, LOAD, LOAD + mlen, UNWIND_MAX_ROWS, &rows, &n);
	CHECK(err == 0 && n >= 4, "its rows for the mapping it lies in (%d, %zu rows)", err, n);
	if (!err) {
		bool sorted = true;

		for (size_t i = 1; i < n; i++)
			sorted = sorted && rows[i].pc > rows[i - 1].pc;
		CHECK(sorted && UNWIND_CFA_KIND(rows[n - 1].kinds) == UNWIND_CFA_NONE,
		      "sorted, strictly increasing, ending in a row without CFI");
		r = row_at(rows, n, with_lo);
		CHECK(r && UNWIND_CFA_KIND(r->kinds) == UNWIND_CFA_RSP && r->cfa_off == 8,
		      "the FDE's function: CFA = rsp + 8 at its first instruction");
		r = row_at(rows, n, with_lo + with_size - 2);
		CHECK(r && UNWIND_CFA_KIND(r->kinds) == UNWIND_CFA_RSP && r->cfa_off >= 8,
		      "and a row near its end (cfa %d)", r ? r->cfa_off : -1);
		r = row_at(rows, n, without_lo);
		CHECK(r && UNWIND_CFA_KIND(r->kinds) == UNWIND_CFA_RSP && r->cfa_off == 8,
		      "the function without CFI: a row from its prologue at its start");
		r = row_at(rows, n, without_lo + without_size / 2);
		CHECK(r && UNWIND_CFA_KIND(r->kinds) == UNWIND_CFA_RSP && r->cfa_off > 8,
		      "and in its body the frame its pushes made (cfa rsp + %d)", r ? r->cfa_off : -1);
		r = row_at(rows, n, without_lo + without_size);
		CHECK(!r || UNWIND_CFA_KIND(r->kinds) == UNWIND_CFA_NONE || r->pc == without_lo + without_size,
		      "nothing claimed past its end");
		free(rows);
	}
	CHECK(jitrows_range(j, LOAD + mlen, LOAD + mlen + 4096, UNWIND_MAX_ROWS, &rows, &n) == -ENOENT,
	      "a mapping holding no object: -ENOENT");
	CHECK(jitrows_range(j, LOAD, LOAD + (4ULL << 30), UNWIND_MAX_ROWS, &rows, &n) == -E2BIG,
	      "a mapping of 4 GiB: -E2BIG (rows keep 32-bit pcs)");
	CHECK(jitrows_range(j, LOAD, LOAD + mlen, 2, &rows, &n) == -E2BIG, "more rows than asked for: -E2BIG");
	/* The list read again, unchanged: the object's rows are kept, not built again; the same rows. */
	{
		struct jitrows_stats st2 = { 0 };
		struct jitrows *again = NULL;
		struct unwind_row *rows2 = NULL;
		size_t n2 = 0;

		err = jitrows_read(rd, NULL, DESC, &sig, j, &again, &st2);
		CHECK(err == 0 && jitrows_count(again) == 1 && st2.objects_kept == 1 && st2.objects == 0 && st2.rows == 0,
		      "read again unchanged: its rows kept, none built (%" PRIu64 " kept, %" PRIu64 " built)",
		      st2.objects_kept, st2.objects);
		if (!err && !jitrows_range(j, LOAD, LOAD + mlen, UNWIND_MAX_ROWS, &rows, &n) &&
		    !jitrows_range(again, LOAD, LOAD + mlen, UNWIND_MAX_ROWS, &rows2, &n2)) {
			CHECK(n == n2 && !memcmp(rows, rows2, n * sizeof(*rows)),
			      "the rows kept are those built, and the list read before keeps its own");
			free(rows);
			free(rows2);
		}
		jitrows_free(again);
		again = NULL;
		/* An image that differs (its code placed 64 bytes on): built, not taken for the one before. */
		memset(&st2, 0, sizeof(st2));
		memcpy(bad, image, flen);
		relocate(bad, 64);
		regions[1].data = bad;
		err = jitrows_read(rd, NULL, DESC, &sig, j, &again, &st2);
		CHECK(err == 0 && st2.objects_kept == 0, "an image that changed is not kept (%" PRIu64 ")", st2.objects_kept);
		regions[1].data = image;
		jitrows_free(again);
	}
	jitrows_free(j);
	j = NULL;

	/* Lies: an image that is not ELF, one whose .eh_frame cannot be read, one spread over 4 GiB. */
	memset(&st, 0, sizeof(st));
	memcpy(bad, image, flen);
	bad[1] = 'X';
	regions[nregions++] = (struct region){ IMAGES + (16ULL << 20), bad, flen };
	sizes[0] = sizes[1] = flen;
	set_list(sizes, 2);
	err = jitrows_read(rd, NULL, DESC, &sig, NULL, &j, &st);
	CHECK(err == 0 && jitrows_count(j) == 1 && st.objects == 1 && st.objects_bad == 1,
	      "not ELF: counted bad, the other object still read (%" PRIu64 " bad)", st.objects_bad);
	jitrows_free(j);
	j = NULL;
	{
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)image;
		uint64_t eh_addr = 0;
		size_t ndx = 0;

		for (int i = 1; i < eh->e_shnum; i++) {
			const Elf64_Shdr *sh = (const Elf64_Shdr *)(image + eh->e_shoff + (size_t)i * sizeof(Elf64_Shdr));
			const Elf64_Shdr *strs = (const Elf64_Shdr *)(image + eh->e_shoff + (size_t)eh->e_shstrndx * sizeof(Elf64_Shdr));

			if (!strcmp(image + strs->sh_offset + sh->sh_name, ".eh_frame")) {
				eh_addr = sh->sh_addr;
				ndx = (size_t)i;
			}
		}
		CHECK(eh_addr != 0, "the image lists its .eh_frame");
		memset(&st, 0, sizeof(st));
		hole = eh_addr;
		set_list(sizes, 1);
		err = jitrows_read(rd, NULL, DESC, &sig, NULL, &j, &st);
		CHECK(err == 0 && jitrows_count(j) == 0 && st.objects_bad == 1,
		      "its .eh_frame unreadable where the image says it was loaded: counted bad");
		jitrows_free(j);
		j = NULL;
		hole = 0;
		memcpy(bad, image, flen);
		((Elf64_Shdr *)(bad + eh->e_shoff + ndx * sizeof(Elf64_Shdr)))->sh_addr += 5ULL << 30;
		regions[1].data = bad;
		memset(&st, 0, sizeof(st));
		err = jitrows_read(rd, NULL, DESC, &sig, NULL, &j, &st);
		CHECK(err == 0 && jitrows_count(j) == 0 && st.objects_bad == 1,
		      "an .eh_frame 5 GiB from its code: counted bad");
		jitrows_free(j);
		j = NULL;
		regions[1].data = image;
	}
	set_list(sizes, 0);
	CHECK(jitrows_read(rd, NULL, DESC, &sig, NULL, &j, &st) == -ENOENT && !j && sig, "an empty list: -ENOENT, signed");
	list.version = 2;
	CHECK(jitrows_read(rd, NULL, DESC, &sig, NULL, &j, &st) == -EINVAL && !j, "a descriptor of version 2: -EINVAL");

	run("rm -rf %s", dir);
	free(file);
	free(mem);
	free(image);
	free(bad);
	return CHECK_EXIT();
}
