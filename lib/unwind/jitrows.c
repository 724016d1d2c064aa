/* jitrows.c - unwind rows for JIT code registered with the GDB JIT interface (see jitrows.h).
 *
 * An object's image is read for its section headers alone: where its code and its .eh_frame were
 * loaded. The .eh_frame the JIT relocated is then read from the process, and cfi.c compacts it as it
 * would a binary's: it is given a small ELF file made here (one executable PT_LOAD spanning the object,
 * the .eh_frame at its place in it), with addresses made relative to the object's first page, so
 * pc-relative pointers keep their meaning and rows fit their 32-bit pcs. */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "unwind/cfi.h"
#include "unwind/jitrows.h"
#include "unwind/prologue.h"

#ifndef SHT_X86_64_UNWIND
#define SHT_X86_64_UNWIND 0x70000001 /* LLVM's type for .eh_frame on x86-64 */
#endif

/* One object: rows with pcs relative to base; lo and hi the first and last row's address; image_key and
 * image_len its image's (a GDB JIT object's: 0 for a jitdump file's code). */
struct object {
	uint64_t base, lo, hi;
	struct unwind_row *rows;
	size_t n;
	uint64_t image_key;
	size_t image_len;
};

struct jitrows {
	struct object *o;
	size_t n, cap;
};

/* Where an object's code and .eh_frame were loaded, and its functions, from its image. */
struct layout {
	uint64_t code_lo, code_hi; /* every allocated executable section */
	uint64_t eh_addr, eh_size; /* 0: no .eh_frame */
	Elf64_Sym *funcs;          /* function symbols, st_value their load address (malloc'd) */
	size_t nfuncs;
};

/* Whether the string at off of the string table tab (size bytes) is exactly want. */
static bool name_is(const unsigned char *tab, uint64_t size, uint64_t off, const char *want)
{
	size_t len = strlen(want) + 1;

	return off < size && size - off >= len && !memcmp(tab + off, want, len);
}

/* Whether [off, off + size) lies in len bytes. */
static bool inside(uint64_t off, uint64_t size, size_t len)
{
	return off <= len && size <= len - off;
}

/* The function symbols of the image's symbol table sym (section headers at shdrs, shnum of them) into
 * l->funcs, at their load addresses (an ET_REL image's values are relative to their sections, which the
 * JIT placed at their sh_addr). Returns 0 or -ENOMEM. */
static int image_funcs(const unsigned char *image, size_t len, const Elf64_Ehdr *eh, const Elf64_Shdr *sym,
		       struct layout *l)
{
	size_t count = sym->sh_size / sizeof(Elf64_Sym);

	if (sym->sh_entsize != sizeof(Elf64_Sym) || !inside(sym->sh_offset, sym->sh_size, len) || count < 2)
		return 0;
	if (count > JITROWS_MAX_FUNCS)
		count = JITROWS_MAX_FUNCS;
	if (!(l->funcs = malloc(count * sizeof(*l->funcs))))
		return -ENOMEM;
	for (size_t i = 1; i < count; i++) {
		Elf64_Sym s;
		Elf64_Shdr sec;

		memcpy(&s, image + sym->sh_offset + i * sizeof(s), sizeof(s));
		if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || !s.st_size || s.st_shndx == SHN_UNDEF ||
		    s.st_shndx >= eh->e_shnum)
			continue;
		memcpy(&sec, image + eh->e_shoff + (size_t)s.st_shndx * sizeof(sec), sizeof(sec));
		if (!(sec.sh_flags & SHF_EXECINSTR))
			continue;
		if (eh->e_type == ET_REL)
			s.st_value += sec.sh_addr;
		if (s.st_value < l->code_lo || s.st_value > l->code_hi || s.st_size > l->code_hi - s.st_value)
			continue;
		l->funcs[l->nfuncs++] = s;
	}
	return 0;
}

/* Reads the section headers of image (len bytes) into *l (l->funcs to be freed). Returns 0, -ENOENT (no
 * code), -EINVAL (malformed) or -ENOMEM. */
static int image_layout(const unsigned char *image, size_t len, struct layout *l)
{
	Elf64_Ehdr eh;
	Elf64_Shdr str, sh, sym = { 0 };

	*l = (struct layout){ .code_lo = UINT64_MAX };
	if (len < sizeof(eh))
		return -EINVAL;
	memcpy(&eh, image, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 || eh.e_shentsize != sizeof(sh) ||
	    !eh.e_shnum || eh.e_shnum > JITROWS_MAX_SECTIONS || eh.e_shstrndx >= eh.e_shnum ||
	    !inside(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(sh), len))
		return -EINVAL;
	memcpy(&str, image + eh.e_shoff + (size_t)eh.e_shstrndx * sizeof(sh), sizeof(str));
	if (str.sh_type != SHT_STRTAB || !inside(str.sh_offset, str.sh_size, len))
		return -EINVAL;
	for (size_t i = 1; i < eh.e_shnum; i++) {
		memcpy(&sh, image + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type == SHT_SYMTAB && !sym.sh_type)
			sym = sh;
		if (!sh.sh_addr || !sh.sh_size || sh.sh_type == SHT_NOBITS)
			continue;
		if (sh.sh_addr + sh.sh_size < sh.sh_addr)
			return -EINVAL;
		if ((sh.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) == (SHF_ALLOC | SHF_EXECINSTR)) {
			if (sh.sh_addr < l->code_lo)
				l->code_lo = sh.sh_addr;
			if (sh.sh_addr + sh.sh_size > l->code_hi)
				l->code_hi = sh.sh_addr + sh.sh_size;
		} else if ((sh.sh_type == SHT_PROGBITS || sh.sh_type == SHT_X86_64_UNWIND) && !l->eh_addr &&
			   name_is(image + str.sh_offset, str.sh_size, sh.sh_name, ".eh_frame")) {
			l->eh_addr = sh.sh_addr;
			l->eh_size = sh.sh_size;
		}
	}
	if (l->code_lo == UINT64_MAX)
		return -ENOENT;
	if (l->eh_size > JITROWS_MAX_EH_FRAME || l->code_hi - l->code_lo > JITROWS_MAX_CODE)
		return -EINVAL;
	return sym.sh_type ? image_funcs(image, len, &eh, &sym, l) : 0;
}

/* The file build_rows makes: headers, section names, then the .eh_frame, the code, the symbols, and the
 * section headers, each 8-aligned. */
#define NAMES_AT (sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr))
static const char names[] = "\0.eh_frame\0.shstrtab\0.text\0.symtab\0.strtab";
enum { SEC_EH = 1, SEC_NAMES, SEC_TEXT, SEC_SYMTAB, SEC_STRTAB, SECTIONS };
#define ALIGN8(x) (((x) + 7) & ~(size_t)7)

/* The rows of an object whose .eh_frame (eh, l->eh_size bytes; NULL: none) and code (code, NULL when
 * unread) were loaded at l's addresses, all made relative to base: its FDEs' rows, and rows from the
 * prologues of the functions they leave out (prologue.c). Returns 0, -ENOENT (no rows), -ENOMEM or
 * cfi_build's and prologue_fill's errors. */
static int build_rows(const struct layout *l, const void *eh, const void *code, uint64_t base,
		      struct unwind_row **rows, size_t *n)
{
	size_t eh_at = ALIGN8(NAMES_AT + sizeof(names)), code_size = code ? l->code_hi - l->code_lo : 0;
	size_t code_at = ALIGN8(eh_at + (eh ? l->eh_size : 0)), sym_at = ALIGN8(code_at + code_size);
	size_t nsyms = code ? l->nfuncs + 1 : 0, shoff = ALIGN8(sym_at + nsyms * sizeof(Elf64_Sym));
	size_t total = shoff + SECTIONS * sizeof(Elf64_Shdr);
	unsigned char *buf = calloc(1, total);
	Elf64_Ehdr hdr = { .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			   .e_phoff = sizeof(Elf64_Ehdr), .e_shoff = shoff, .e_ehsize = sizeof(Elf64_Ehdr),
			   .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1, .e_shentsize = sizeof(Elf64_Shdr),
			   .e_shnum = SECTIONS, .e_shstrndx = SEC_NAMES };
	Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = code_at,
			  .p_vaddr = l->code_lo - base, .p_filesz = code_size, .p_memsz = l->code_hi - l->code_lo,
			  .p_align = 1 };
	Elf64_Shdr sh[SECTIONS] = {
		[SEC_EH] = { .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
			     .sh_addr = eh ? l->eh_addr - base : 0, .sh_offset = eh_at, .sh_size = eh ? l->eh_size : 0,
			     .sh_addralign = 8 },
		[SEC_NAMES] = { .sh_name = 11, .sh_type = SHT_STRTAB, .sh_offset = NAMES_AT, .sh_size = sizeof(names),
				.sh_addralign = 1 },
		[SEC_TEXT] = { .sh_name = 21, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			       .sh_addr = l->code_lo - base, .sh_offset = code_at, .sh_size = code_size,
			       .sh_addralign = 1 },
		[SEC_SYMTAB] = { .sh_name = 27, .sh_type = SHT_SYMTAB, .sh_offset = sym_at,
				 .sh_size = nsyms * sizeof(Elf64_Sym), .sh_link = SEC_STRTAB, .sh_info = 1,
				 .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) },
		[SEC_STRTAB] = { .sh_name = 35, .sh_type = SHT_STRTAB, .sh_offset = NAMES_AT, .sh_size = 1,
				 .sh_addralign = 1 },
	};
	struct elf_file *ef;
	int fd, err = -ENOENT, added;

	if (!buf)
		return -ENOMEM;
	memcpy(hdr.e_ident, ELFMAG, SELFMAG);
	hdr.e_ident[EI_CLASS] = ELFCLASS64;
	hdr.e_ident[EI_DATA] = ELFDATA2LSB;
	hdr.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), &ph, sizeof(ph));
	memcpy(buf + NAMES_AT, names, sizeof(names));
	if (eh)
		memcpy(buf + eh_at, eh, l->eh_size);
	if (code)
		memcpy(buf + code_at, code, code_size);
	for (size_t i = 1; i < nsyms; i++) {
		Elf64_Sym s = { .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), .st_shndx = SEC_TEXT,
				.st_value = l->funcs[i - 1].st_value - base, .st_size = l->funcs[i - 1].st_size };

		memcpy(buf + sym_at + i * sizeof(s), &s, sizeof(s));
	}
	memcpy(buf + shoff, sh, sizeof(sh));
	fd = elf_file_memfd("flamed-jitrows", buf, total);
	free(buf);
	if (fd < 0)
		return fd;
	*rows = NULL;
	*n = 0;
	if (eh && (err = cfi_build(fd, -1, UNWIND_MAX_ROWS, rows, n, NULL)) && err != -ENOENT) {
		close(fd);
		return err;
	}
	if (nsyms > 1 && !elf_file_from_fd(fd, &ef)) { /* takes fd */
		added = prologue_fill_ex(ef, rows, n, UNWIND_MAX_ROWS, PROLOGUE_EPILOGUE_INSIDE);
		elf_file_free(ef);
		if (added < 0 && added != -E2BIG) {
			free(*rows);
			return added;
		}
		if (added > 0)
			err = 0;
	} else if (nsyms <= 1) {
		close(fd);
	}
	if (err)
		free(*rows);
	return err;
}

struct reading {
	struct jitrows *j;
	struct jitrows *prev; /* the list's objects as read last: their rows taken over where unchanged */
	size_t next;          /* where in prev the next object is looked for first (the lists keep order) */
	jitlist_read_fn rd;
	void *ctx;
	struct jitrows_stats *st;
};

/* Whether objects o and p share an address. */
static bool overlap(const struct object *o, uint64_t lo, uint64_t hi)
{
	return o->lo <= hi && lo <= o->hi;
}

/* Appends o to j. Returns 0 or -ENOMEM. */
static int append(struct jitrows *j, const struct object *o)
{
	if (j->n == j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 16;
		struct object *grown = realloc(j->o, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		j->o = grown;
		j->cap = cap;
	}
	j->o[j->n++] = *o;
	return 0;
}

/* Adds the object laid out as l, its .eh_frame eh and code read (each NULL when unread), to j, its image
 * known by key and key_len (0: none). With newest, the objects it overlaps go first (their code was
 * freed and the address reused). Counted in st. Returns 0 or -ENOMEM. */
static int add_object(struct jitrows *j, const struct layout *l, const void *eh, const void *code, bool newest,
		      uint64_t key, size_t key_len, struct jitrows_stats *st)
{
	bool fp = false;
	uint64_t base = (l->eh_addr && l->eh_addr < l->code_lo ? l->eh_addr : l->code_lo) & ~0xfffULL;
	uint64_t top = l->code_hi > l->eh_addr + l->eh_size ? l->code_hi : l->eh_addr + l->eh_size;
	struct unwind_row *rows;
	struct object o;
	size_t n;
	int err;

	if (top - base >= 1ULL << 32 || (!newest && j->n == JITROWS_MAX_OBJECTS)) {
		st->objects_bad++;
		return 0;
	}
	err = build_rows(l, eh, code, base, &rows, &n);
	if (err == -ENOMEM)
		return err;
	if (err == -ENOENT || (!err && n < 2)) {
		if (!err)
			free(rows);
		st->objects_without++;
		return 0;
	}
	if (err) {
		st->objects_bad++;
		return 0;
	}
	/* Code given by a jitdump file that keeps a frame pointer is walked by it, as before: V8's (its
	 * records reach the file late, and rows of freed code must not stand for new code at its place). */
	for (size_t i = 0; newest && i < n && !fp; i++)
		fp = UNWIND_CFA_KIND(rows[i].kinds) == UNWIND_CFA_RBP;
	if (fp) {
		free(rows);
		st->objects_fp++;
		return 0;
	}
	o = (struct object){ .base = base, .lo = base + rows[0].pc, .hi = base + rows[n - 1].pc, .rows = rows, .n = n,
			     .image_key = key, .image_len = key_len };
	for (size_t i = 0; newest && i < j->n;) {
		if (overlap(&j->o[i], o.lo, o.hi)) {
			free(j->o[i].rows);
			j->o[i] = j->o[--j->n];
			st->objects_replaced++;
		} else {
			i++;
		}
	}
	if (j->n == JITROWS_MAX_OBJECTS) {
		free(rows);
		st->objects_bad++;
		return 0;
	}
	err = append(j, &o);
	if (err) {
		free(rows);
		return err;
	}
	st->objects++;
	st->rows += n;
	return 0;
}

/* Copies into *out the object of r->prev whose image was key and len bytes long, with a copy of its
 * rows; prev is left as it was (a read that fails keeps it). Looked for from where the last one was
 * found: a list read again has the same objects in the same order, new ones first. Returns 0, -ENOENT
 * (none) or -ENOMEM. */
static int copy_kept(struct reading *r, uint64_t key, size_t len, struct object *out)
{
	const struct jitrows *prev = r->prev;

	for (size_t k = 0; prev && k < prev->n; k++) {
		size_t i = (r->next + k) % prev->n;
		const struct object *o = &prev->o[i];

		if (o->image_len != len || o->image_key != key)
			continue;
		*out = *o;
		out->rows = malloc(o->n * sizeof(*o->rows));
		if (!out->rows)
			return -ENOMEM;
		memcpy(out->rows, o->rows, o->n * sizeof(*o->rows));
		r->next = i + 1;
		return 0;
	}
	return -ENOENT;
}

/* FNV-1a over an image's bytes: what tells an object read again from another at its place. */
static uint64_t image_key(const unsigned char *b, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

/* jitlist_image_fn: one object's rows into r->j. Only running out of memory stops the walk. */
static int each_image(void *ctx, const void *image, size_t len)
{
	struct reading *r = ctx;
	void *eh = NULL, *code = NULL;
	uint64_t key = image_key(image, len);
	struct object kept;
	struct layout l;
	int err;

	/* Unchanged since the list was read last (the same image, so the same code at the same place):
	 * its rows as built then. */
	err = r->j->n < JITROWS_MAX_OBJECTS ? copy_kept(r, key, len, &kept) : -ENOENT;
	if (err != -ENOENT) {
		if (!err && (err = append(r->j, &kept)))
			free(kept.rows);
		r->st->objects_kept += !err;
		return err;
	}
	err = image_layout(image, len, &l);
	if (err == -ENOMEM)
		goto out;
	if (err == -ENOENT) {
		r->st->objects_without++;
		err = 0;
		goto out;
	}
	if (err) {
		r->st->objects_bad++;
		err = 0;
		goto out;
	}
	err = -ENOMEM;
	if ((l.eh_addr && !(eh = malloc(l.eh_size))) || (l.nfuncs && !(code = malloc(l.code_hi - l.code_lo))))
		goto out;
	if (eh && r->rd(r->ctx, l.eh_addr, eh, l.eh_size)) {
		r->st->objects_bad++; /* listed, but not where it says it was loaded */
		err = 0;
		goto out;
	}
	if (code && r->rd(r->ctx, l.code_lo, code, l.code_hi - l.code_lo)) {
		free(code);
		code = NULL; /* its prologues unread: its FDEs alone */
	}
	err = add_object(r->j, &l, eh, code, false, key, len, r->st);
out:
	free(eh);
	free(code);
	free(l.funcs);
	return err;
}

int jitrows_new(struct jitrows **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

int jitrows_add(struct jitrows *j, uint64_t code, uint64_t size, uint64_t eh_addr, const void *eh, size_t eh_size,
		struct jitrows_stats *st)
{
	struct layout l = { .code_lo = code, .code_hi = code + size, .eh_addr = eh_addr, .eh_size = eh_size };

	if (!size || code + size < code || !eh_size || eh_size > JITROWS_MAX_EH_FRAME || eh_addr + eh_size < eh_addr) {
		st->objects_bad++;
		return 0;
	}
	return add_object(j, &l, eh, NULL, true, 0, 0, st);
}

void jitrows_free(struct jitrows *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n; i++)
		free(j->o[i].rows);
	free(j->o);
	free(j);
}

int jitrows_read(jitlist_read_fn rd, void *ctx, uint64_t desc, uint64_t *sig, struct jitrows *prev,
		 struct jitrows **out, struct jitrows_stats *st)
{
	struct reading r = { .prev = prev, .rd = rd, .ctx = ctx, .st = st };
	int err;

	*out = NULL;
	if (jitrows_new(&r.j))
		return -ENOMEM;
	err = jitlist_walk(rd, ctx, desc, each_image, &r, sig, &st->list);
	if (err) {
		jitrows_free(r.j);
		return err;
	}
	*out = r.j;
	return 0;
}

size_t jitrows_count(const struct jitrows *j)
{
	return j ? j->n : 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct object *x = *(const struct object *const *)a, *y = *(const struct object *const *)b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int jitrows_range(const struct jitrows *j, uint64_t start, uint64_t end, size_t max_rows, struct unwind_row **rows,
		  size_t *n)
{
	const struct object **in;
	struct unwind_row *out;
	size_t nin = 0, total = 0, k = 0;

	if (end <= start || end - start >= 1ULL << 32)
		return -E2BIG;
	if (!j || !j->n)
		return -ENOENT;
	if (!(in = malloc(j->n * sizeof(*in))))
		return -ENOMEM;
	for (size_t i = 0; i < j->n; i++)
		if (j->o[i].lo >= start && j->o[i].hi <= end) {
			in[nin++] = &j->o[i];
			total += j->o[i].n;
		}
	if (!nin || total > max_rows) {
		free(in);
		return nin ? -E2BIG : -ENOENT;
	}
	qsort(in, nin, sizeof(*in), by_lo);
	if (!(out = malloc(total * sizeof(*out)))) {
		free(in);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nin; i++) {
		const struct object *o = in[i];

		if (k && out[k - 1].pc >= o->lo - start) {
			/* the end of the object before may be where this one starts; anything more overlaps */
			if (out[k - 1].pc != o->lo - start || UNWIND_CFA_KIND(out[k - 1].kinds) != UNWIND_CFA_NONE)
				continue;
			k--;
		}
		for (size_t r = 0; r < o->n; r++) {
			out[k] = o->rows[r];
			out[k++].pc = (uint32_t)(o->base + o->rows[r].pc - start);
		}
	}
	free(in);
	*rows = out;
	*n = k;
	return 0;
}
