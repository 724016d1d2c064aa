/* gdbjit.c - JIT function names from the GDB JIT interface's list of in-memory objects (see gdbjit.h).
 *
 * The interface (gdb's "JIT Compilation Interface"): a global struct jit_descriptor { uint32_t version
 * (1); uint32_t action_flag; struct jit_code_entry *relevant_entry, *first_entry; } heads a doubly linked
 * list of struct jit_code_entry { next_entry, prev_entry; const char *symfile_addr; uint64_t
 * symfile_size; }, each naming one ELF image the JIT keeps in memory. A JIT registers an object by
 * linking it in (at the head, for LLVM) and calling __jit_debug_register_code. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "elf/mapped.h"
#include "symbolize/gdbjit.h"
#include "symbolize/jitsyms.h"
#include "util/pidcache.h"

#define POOL_MAX (64u << 20)  /* bytes of names per table; past it symbols are dropped, counted */
#define MAX_BINARIES 1024     /* binaries whose GDBJIT_SYMBOL (or its absence) is remembered */
#define IDLE_FLUSHES 6
#define DEFAULT_PROCESSES 1024

struct jit_descriptor {
	uint32_t version, action;
	uint64_t relevant, first;
};

struct jit_entry {
	uint64_t next, prev, symfile, size;
};

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
	int fd = memfd_create("flamed-gdbjit", MFD_CLOEXEC), err;
	struct elf_file *f;

	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < len;) {
		ssize_t w = write(fd, (const char *)buf + done, len - done);

		if (w <= 0) {
			close(fd);
			return w < 0 ? -errno : -EIO;
		}
		done += (size_t)w;
	}
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

static uint64_t signature(const struct jit_descriptor *d)
{
	return (d->first * 0x9e3779b97f4a7c15ULL ^ d->relevant) | 1; /* never 0: 0 is "unreadable" */
}

uint64_t gdbjit_signature(gdbjit_read_fn rd, void *ctx, uint64_t desc)
{
	struct jit_descriptor d;

	return rd(ctx, desc, &d, sizeof(d)) || d.version != 1 ? 0 : signature(&d);
}

void gdbjit_table_free(struct gdbjit_table *t)
{
	if (!t)
		return;
	jitsyms_free(t->syms);
	free(t);
}

int gdbjit_table_read(gdbjit_read_fn rd, void *ctx, uint64_t desc, struct gdbjit_table **out, uint64_t *sig,
		      struct gdbjit_stats *st)
{
	struct gdbjit_table *t;
	struct jit_descriptor d;
	uint64_t addr, prev = 0, bytes = 0;
	unsigned entries = 0;
	void *buf = NULL;
	int err = 0;

	*out = NULL;
	*sig = 0;
	if ((err = rd(ctx, desc, &d, sizeof(d)))) {
		st->reads_failed++;
		return err;
	}
	if (d.version != 1) {
		st->descriptors_bad++;
		return -EINVAL;
	}
	*sig = signature(&d);
	st->lists_read++;
	if (!d.first)
		return -ENOENT;
	t = calloc(1, sizeof(*t));
	if (!t || jitsyms_new(GDBJIT_MAX_SYMBOLS, POOL_MAX, &t->syms)) {
		free(t);
		return -ENOMEM;
	}
	for (addr = d.first; addr && !err; entries++) {
		struct jit_entry e;

		if (entries == GDBJIT_MAX_ENTRIES) {
			st->lists_cut++;
			break;
		}
		if (rd(ctx, addr, &e, sizeof(e))) {
			st->reads_failed++;
			break;
		}
		/* Each entry's prev is the one before it (0 for the first): a list that loops back breaks
		 * that where it loops, and is cut there. */
		if (e.prev != prev) {
			st->lists_cut++;
			break;
		}
		prev = addr;
		addr = e.next;
		if (!e.size || !e.symfile)
			continue;
		if (e.size > GDBJIT_MAX_OBJECT || bytes + e.size > GDBJIT_MAX_BYTES) {
			st->objects_too_big++;
			continue;
		}
		free(buf);
		buf = malloc(e.size);
		if (!buf) {
			err = -ENOMEM;
			break;
		}
		if (rd(ctx, e.symfile, buf, e.size)) {
			st->reads_failed++;
			continue;
		}
		bytes += e.size;
		err = add_object(t, buf, e.size, st);
	}
	free(buf);
	if (err) {
		gdbjit_table_free(t);
		return err;
	}
	*out = t;
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

/* A binary looked at for GDBJIT_SYMBOL: where it is (vaddr 0: not there) and its segments. */
struct jitbin {
	uint64_t dev, inode;
	uint64_t vaddr;
	struct elf_segment segs[ELF_MAX_SEGMENTS];
	size_t nsegs;
};

struct jitproc {
	struct pidcache_entry e; /* first */
	bool searched, checked;
	uint64_t desc;           /* the descriptor's address; 0: none found */
	uint64_t sig;            /* of the list read into t */
	uint64_t checked_gen;    /* flush in which the descriptor was last looked at */
	struct gdbjit_table *t;
};

struct gdbjit_cache {
	struct pidcache procs;
	struct jitbin *bins;
	size_t nbins, next_bin;
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
	c->bins = calloc(MAX_BINARIES, sizeof(*c->bins));
	if (!c->bins || pidcache_init(&c->procs, max_processes ? max_processes : DEFAULT_PROCESSES,
				      sizeof(struct jitproc), release, NULL)) {
		free(c->bins);
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
	free(c->bins);
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

/* The binary mapped at m: looked at once (by device and inode), then remembered. NULL: unreadable. */
static const struct jitbin *binary_of(struct gdbjit_cache *c, uint32_t pid, const struct procmap *m)
{
	uint64_t dev = (uint64_t)m->dev_major << 32 | m->dev_minor;
	struct bin_source src = { .pid = pid, .start = m->start, .end = m->end, .dev = dev, .inode = m->inode,
				  .path = m->path, .deleted = m->deleted };
	char root[BIN_ROOT_LEN];
	struct elf_file *f;
	struct jitbin *b;
	GElf_Sym sym;
	int fd, nsegs;

	for (size_t i = 0; i < c->nbins; i++)
		if (c->bins[i].dev == dev && c->bins[i].inode == m->inode)
			return &c->bins[i];
	fd = bin_open_mapped(&src, root);
	if (fd < 0 || elf_file_from_fd(fd, &f))
		return NULL;
	if (c->nbins < MAX_BINARIES) {
		b = &c->bins[c->nbins++];
	} else { /* round robin: an old binary is looked at again if needed */
		b = &c->bins[c->next_bin];
		c->next_bin = (c->next_bin + 1) % MAX_BINARIES;
	}
	memset(b, 0, sizeof(*b));
	b->dev = dev;
	b->inode = m->inode;
	if (!elf_file_symbol(f, true, GDBJIT_SYMBOL, &sym) || !elf_file_symbol(f, false, GDBJIT_SYMBOL, &sym))
		b->vaddr = sym.st_value;
	nsegs = elf_file_segments(f, b->segs, ELF_MAX_SEGMENTS);
	b->nsegs = nsegs > 0 ? (size_t)nsegs : 0;
	elf_file_free(f);
	return b;
}

/* The runtime address of pid's descriptor, from the first binary of maps that defines it; 0: none. */
static uint64_t find_descriptor(struct gdbjit_cache *c, uint32_t pid, const struct procmap *maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct procmap *m = &maps[i];
		const struct jitbin *b;
		uint64_t vaddr;

		if (!m->path || m->path[0] != '/' || !m->inode)
			continue;
		b = binary_of(c, pid, m);
		if (b && b->vaddr && !elf_segments_vaddr(b->segs, b->nsegs, m->offset, m->exec, &vaddr))
			return m->start - vaddr + b->vaddr;
	}
	return 0;
}

static int read_process(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = (pid_t)(uintptr_t)ctx;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (got < 0)
		return -errno;
	return (size_t)got == len ? 0 : -EFAULT;
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
	if (!p->searched && maps && n) {
		p->desc = find_descriptor(c, pid, maps, n);
		p->searched = true;
	}
	if (!p->desc)
		return NULL;
	if (!p->checked || p->checked_gen != c->procs.gen) { /* once a flush */
		p->checked = true;
		p->checked_gen = c->procs.gen;
		sig = gdbjit_signature(read_process, ctx, p->desc);
		if (sig && sig != p->sig && !gdbjit_table_read(read_process, ctx, p->desc, &t, &sig, &c->st)) {
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
