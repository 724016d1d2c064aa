/* jitlist.c - the GDB JIT interface's list of in-memory objects in a process (see jitlist.h).
 *
 * The interface (gdb's "JIT Compilation Interface"): a global struct jit_descriptor { uint32_t version
 * (1); uint32_t action_flag; struct jit_code_entry *relevant_entry, *first_entry; } heads a doubly linked
 * list of struct jit_code_entry { next_entry, prev_entry; const char *symfile_addr; uint64_t
 * symfile_size; }, each naming one ELF image the JIT keeps in memory. A JIT registers an object by
 * linking it in (at the head, for LLVM) and calling __jit_debug_register_code. */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "elf/elf_file.h"
#include "elf/jitlist.h"
#include "elf/mapped.h"

#define MAX_BINARIES 1024 /* binaries whose JITLIST_SYMBOL (or its absence) is remembered */

struct jit_descriptor {
	uint32_t version, action;
	uint64_t relevant, first;
};

struct jit_entry {
	uint64_t next, prev, symfile, size;
};

int jitlist_read_process(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = (pid_t)(uintptr_t)ctx;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (got < 0)
		return -errno;
	return (size_t)got == len ? 0 : -EFAULT;
}

static uint64_t signature(const struct jit_descriptor *d)
{
	return (d->first * 0x9e3779b97f4a7c15ULL ^ d->relevant) | 1; /* never 0: 0 is "unreadable" */
}

uint64_t jitlist_signature(jitlist_read_fn rd, void *ctx, uint64_t desc)
{
	struct jit_descriptor d;

	return rd(ctx, desc, &d, sizeof(d)) || d.version != 1 ? 0 : signature(&d);
}

int jitlist_walk(jitlist_read_fn rd, void *ctx, uint64_t desc, jitlist_image_fn each, void *each_ctx,
		 uint64_t *sig, struct jitlist_stats *st)
{
	struct jit_descriptor d;
	uint64_t addr, prev = 0, bytes = 0;
	unsigned entries = 0;
	void *buf = NULL;
	int err = 0;

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
	for (addr = d.first; addr && !err; entries++) {
		struct jit_entry e;

		if (entries == JITLIST_MAX_ENTRIES) {
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
		if (e.size > JITLIST_MAX_OBJECT || bytes + e.size > JITLIST_MAX_BYTES) {
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
		err = each(each_ctx, buf, e.size);
	}
	free(buf);
	return err;
}

/* ---- where the descriptor is ---- */

/* A binary looked at for JITLIST_SYMBOL: where it is (vaddr 0: not there) and its segments. */
struct jitbin {
	uint64_t dev, inode;
	uint64_t vaddr;
	struct elf_segment segs[ELF_MAX_SEGMENTS];
	size_t nsegs;
};

struct jitlist_finder {
	struct jitbin *bins;
	size_t nbins, next_bin;
};

int jitlist_finder_new(struct jitlist_finder **out)
{
	struct jitlist_finder *f = calloc(1, sizeof(*f));

	*out = NULL;
	if (!f || !(f->bins = calloc(MAX_BINARIES, sizeof(*f->bins)))) {
		free(f);
		return -ENOMEM;
	}
	*out = f;
	return 0;
}

void jitlist_finder_free(struct jitlist_finder *f)
{
	if (!f)
		return;
	free(f->bins);
	free(f);
}

/* The binary mapped at m: looked at once (by device and inode), then remembered. NULL: unreadable. */
static const struct jitbin *binary_of(struct jitlist_finder *c, uint32_t pid, const struct procmap *m)
{
	struct bin_source src = bin_source_of(pid, m);
	char root[BIN_ROOT_LEN];
	struct elf_file *f;
	struct jitbin *b;
	GElf_Sym sym;
	int fd, nsegs;

	for (size_t i = 0; i < c->nbins; i++)
		if (c->bins[i].dev == src.dev && c->bins[i].inode == m->inode)
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
	b->dev = src.dev;
	b->inode = m->inode;
	if (!elf_file_symbol(f, true, JITLIST_SYMBOL, &sym) || !elf_file_symbol(f, false, JITLIST_SYMBOL, &sym))
		b->vaddr = sym.st_value;
	nsegs = elf_file_segments(f, b->segs, ELF_MAX_SEGMENTS);
	b->nsegs = nsegs > 0 ? (size_t)nsegs : 0;
	elf_file_free(f);
	return b;
}

uint64_t jitlist_find(struct jitlist_finder *f, uint32_t pid, const struct procmap *maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct procmap *m = &maps[i];
		const struct jitbin *b;
		uint64_t vaddr;

		if (!m->path || m->path[0] != '/' || !m->inode)
			continue;
		b = binary_of(f, pid, m);
		if (b && b->vaddr && !elf_segments_vaddr(b->segs, b->nsegs, m->offset, m->exec, &vaddr))
			return m->start - vaddr + b->vaddr;
	}
	return 0;
}
