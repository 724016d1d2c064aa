/* gdbjit.c - JIT function names from the GDB JIT interface's list of in-memory objects (see gdbjit.h;
 * the list is walked by elf/jitlist.c). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "elf/jitlist.h"
#include "symbolize/gdbjit.h"
#include "symbolize/jitsyms.h"
#include "util/pidcache.h"

#define POOL_MAX (64u << 20)  /* bytes of names per table; past it symbols are dropped, counted */
#define IDLE_FLUSHES 6
#define DEFAULT_PROCESSES 1024

struct gdbjit_table {
	struct jitsyms *syms;
};

/* ---- one list ---- */

static int add_symbol(struct gdbjit_table *t, uint64_t start, uint64_t size, const char *name,
		      struct gdbjit_stats *st)
{
	int r = jitsyms_add(t->syms, start, size, name, strlen(name));

	if (r < 0)
		return r;
	if (r)
		st->symbols_dropped++;
	else
		st->symbols++;
	return 0;
}

/* The function symbols of the ELF image f into t. Returns 0, -EINVAL (no usable symbol table) or
 * -ENOMEM. */
static int add_functions(struct gdbjit_table *t, const struct elf_file *f, struct gdbjit_stats *st)
{
	bool rel = elf_file_type(f) == ET_REL;
	GElf_Shdr shdr, sec;
	Elf_Data *data;
	Elf_Scn *scn, *s2;
	size_t count;
	int err;

	if (elf_file_find_section(f, SHT_SYMTAB, &scn, &shdr) || elf_file_section_data(f, scn, &shdr, &data) ||
	    shdr.sh_entsize != sizeof(Elf64_Sym) || elf_file_class(f) != ELFCLASS64)
		return -EINVAL;
	count = data->d_size / sizeof(Elf64_Sym);
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		uint64_t addr;

		if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size ||
		    sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
			continue;
		name = elf_file_string(f, shdr.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		addr = sym.st_value;
		if (rel) { /* section-relative: the JIT wrote where it loaded each section into sh_addr */
			if (elf_file_section(f, sym.st_shndx, &s2, &sec) || !(sec.sh_flags & SHF_EXECINSTR))
				continue;
			addr += sec.sh_addr;
		}
		if ((err = add_symbol(t, addr, sym.st_size, name, st)))
			return err;
	}
	return 0;
}

/* Parses the image buf[0..len) (copied into a memfd, read as any ELF file) into t. */
static int add_object(struct gdbjit_table *t, const void *buf, size_t len, struct gdbjit_stats *st)
{
	int fd = elf_file_memfd("flamed-gdbjit", buf, len), err;
	struct elf_file *f;

	if (fd < 0)
		return fd;
	if (elf_file_from_fd(fd, &f)) { /* takes fd */
		st->objects_bad++;
		return 0;
	}
	st->objects++;
	err = add_functions(t, f, st);
	elf_file_free(f);
	if (err == -EINVAL) {
		st->objects_bad++;
		err = 0;
	}
	return err;
}

uint64_t gdbjit_signature(gdbjit_read_fn rd, void *ctx, uint64_t desc)
{
	return jitlist_signature(rd, ctx, desc);
}

void gdbjit_table_free(struct gdbjit_table *t)
{
	if (!t)
		return;
	jitsyms_free(t->syms);
	free(t);
}

struct reading {
	struct gdbjit_table *t;
	struct gdbjit_stats *st;
};

static int each_image(void *ctx, const void *image, size_t len)
{
	struct reading *r = ctx;

	return add_object(r->t, image, len, r->st);
}

int gdbjit_table_read(gdbjit_read_fn rd, void *ctx, uint64_t desc, struct gdbjit_table **out, uint64_t *sig,
		      struct gdbjit_stats *st)
{
	struct jitlist_stats ls = { 0 };
	struct reading r = { .st = st };
	int err;

	*out = NULL;
	r.t = calloc(1, sizeof(*r.t));
	if (!r.t || jitsyms_new(GDBJIT_MAX_SYMBOLS, POOL_MAX, &r.t->syms)) {
		free(r.t);
		return -ENOMEM;
	}
	err = jitlist_walk(rd, ctx, desc, each_image, &r, sig, &ls);
	st->lists_read += ls.lists_read;
	st->objects_too_big += ls.objects_too_big;
	st->lists_cut += ls.lists_cut;
	st->reads_failed += ls.reads_failed;
	st->descriptors_bad += ls.descriptors_bad;
	if (err) {
		gdbjit_table_free(r.t);
		return err;
	}
	*out = r.t;
	return 0;
}

const char *gdbjit_table_find(const struct gdbjit_table *t, uint64_t addr)
{
	return t ? jitsyms_find(t->syms, addr) : NULL;
}

size_t gdbjit_table_count(const struct gdbjit_table *t)
{
	return t ? jitsyms_count(t->syms) : 0;
}

/* ---- per process ---- */

struct jitproc {
	struct pidcache_entry e; /* first */
	bool checked;
	size_t searched;         /* mappings when the descriptor was last looked for (0: never) */
	uint64_t desc;           /* the descriptor's address; 0: none found */
	uint64_t sig;            /* of the list read into t */
	uint64_t checked_gen;    /* flush in which the descriptor was last looked at */
	struct gdbjit_table *t;
};

struct gdbjit_cache {
	struct pidcache procs;
	struct jitlist_finder *finder;
	struct gdbjit_stats st;
};

static void release(struct pidcache_entry *e, void *ctx)
{
	(void)ctx;
	gdbjit_table_free(((struct jitproc *)e)->t);
}

int gdbjit_cache_new(unsigned max_processes, struct gdbjit_cache **out)
{
	struct gdbjit_cache *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return -ENOMEM;
	if (jitlist_finder_new(&c->finder) || pidcache_init(&c->procs, max_processes ? max_processes : DEFAULT_PROCESSES,
				      sizeof(struct jitproc), release, NULL)) {
		jitlist_finder_free(c->finder);
		free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

void gdbjit_cache_free(struct gdbjit_cache *c)
{
	if (!c)
		return;
	pidcache_fini(&c->procs);
	jitlist_finder_free(c->finder);
	free(c);
}

void gdbjit_cache_begin_flush(struct gdbjit_cache *c)
{
	pidcache_begin_flush(&c->procs, IDLE_FLUSHES);
}

void gdbjit_cache_keep(struct gdbjit_cache *c, uint32_t pid)
{
	pidcache_keep(&c->procs, pid);
}

const char *gdbjit_cache_find(struct gdbjit_cache *c, uint32_t pid, const struct procmap *maps, size_t n,
			      uint64_t addr)
{
	struct jitproc *p = (struct jitproc *)pidcache_get(&c->procs, pid);
	void *ctx = (void *)(uintptr_t)pid;
	struct gdbjit_table *t;
	uint64_t sig;

	if (!p)
		return NULL;
	/* Looked for again while not found and the process maps more or fewer files than then: a JIT
	 * library loaded since its first JIT-looking frame (ctypes' closures, before llvmlite). */
	if (!p->desc && maps && n && p->searched != n) {
		p->desc = jitlist_find(c->finder, pid, maps, n);
		p->searched = n;
	}
	if (!p->desc)
		return NULL;
	if (!p->checked || p->checked_gen != c->procs.gen) { /* once a flush */
		p->checked = true;
		p->checked_gen = c->procs.gen;
		sig = jitlist_signature(jitlist_read_process, ctx, p->desc);
		if (sig && sig != p->sig && !gdbjit_table_read(jitlist_read_process, ctx, p->desc, &t, &sig, &c->st)) {
			gdbjit_table_free(p->t);
			p->t = t;
			p->sig = sig;
		}
	}
	return gdbjit_table_find(p->t, addr);
}

void gdbjit_cache_get_stats(const struct gdbjit_cache *c, struct gdbjit_stats *out)
{
	*out = c->st;
	out->processes = c->procs.count;
}
