/* inlines.c - finds the inlined calls at an address by walking a compile unit's DIE tree with libdw. */
#include "symbolize/inlines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEBUG_DIR "/usr/lib/debug"
#define MAX_SPANS 8           /* sections names may point into: four per file, main and dwz */
#define MAX_BUILD_ID 64       /* bytes */
#define CU_OVERHEAD 1024      /* estimated libdw bytes per unit (Dwarf_CU, part of its abbreviations) */
#define BACKTRACK 8           /* ranges below the nearest one also tried, when that one ends before vaddr */
#define MAX_DIE_RANGES 65536  /* dwarf_ranges results read of one DIE, empty ones too */
#define MAX_NEST 16           /* namespaces within namespaces looked into when indexing */

/* [lo, hi) and what it belongs to: a unit's index in units[], or a function's DIE offset. */
struct range {
	uint64_t lo, hi, val;
};

/* Ranges sorted by start. */
struct table {
	struct range *v;
	size_t n, cap;
};

/* A compile unit and, from the first lookup in it on, the address ranges of its functions. */
struct unit {
	Dwarf_Off die;
	struct table fns;
	int state; /* 0: not indexed yet, 1: indexed, or the -errno indexing ended with */
};

/* A section that can hold names: .debug_str, .debug_line_str, .debug_info (DW_FORM_string), .debug_types. */
struct span {
	uintptr_t start;
	size_t len;
};

/* One ELF file and libdw's handle on it. */
struct dwfile {
	int fd;
	Elf *elf;
	Dwarf *dw;
	size_t bytes; /* its .debug_* sections, uncompressed */
};

struct inlines {
	struct dwfile main, alt;
	struct table cus;     /* the units' ranges; val indexes units */
	struct unit *units;
	size_t nunits, ucap, seen, nranges;
	struct span spans[MAX_SPANS];
	int nspans;
};

/* The walk of one lookup: the inlined-subroutine DIEs on the path to pc, outermost first. */
struct walk {
	uint64_t pc;
	unsigned visits;
	int n;
	Dwarf_Die chain[INLINES_MAX_DEPTH];
};

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The name of section scn, or NULL. */
static const char *section_name(Elf *elf, size_t shstrndx, Elf_Scn *scn, GElf_Shdr *shdr)
{
	if (!gelf_getshdr(scn, shdr))
		return NULL;
	return elf_strptr(elf, shstrndx, shdr->sh_name);
}

/* The uncompressed size of DWARF section scn. Returns 0 or -EINVAL (corrupt compression header). */
static int dwarf_section_size(Elf_Scn *scn, const GElf_Shdr *shdr, const char *name, uint64_t *size)
{
	GElf_Chdr chdr;
	ssize_t n;

	*size = shdr->sh_size;
	if (shdr->sh_flags & SHF_COMPRESSED) {
		if (!gelf_getchdr(scn, &chdr))
			return -EINVAL;
		*size = chdr.ch_size;
	} else if (starts_with(name, ".zdebug_")) {
		n = dwelf_scn_gnu_compressed_size(scn);
		if (n < 0)
			return -EINVAL;
		*size = (uint64_t)n;
	}
	return 0;
}

/* Sums the .debug_* sections of elf (a file of file_size bytes) into *bytes. Returns 0, -ENOENT (no
 * .debug_info with data), -EFBIG (over INLINES_MAX_DWARF) or -EINVAL (a section outside the file). */
static int measure_dwarf(Elf *elf, uint64_t file_size, size_t *bytes)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *name;
	uint64_t size, total = 0;
	size_t shstrndx;
	bool info = false;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn))) {
		name = section_name(elf, shstrndx, scn, &shdr);
		if (!name)
			return -EINVAL;
		if (shdr.sh_type == SHT_NOBITS || shdr.sh_size == 0 ||
		    (!starts_with(name, ".debug_") && !starts_with(name, ".zdebug_")))
			continue;
		if (shdr.sh_offset > file_size || shdr.sh_size > file_size - shdr.sh_offset ||
		    dwarf_section_size(scn, &shdr, name, &size) < 0)
			return -EINVAL;
		if (size > INLINES_MAX_DWARF || total + size > INLINES_MAX_DWARF)
			return -EFBIG;
		total += size;
		info |= strcmp(name, ".debug_info") == 0 || strcmp(name, ".zdebug_info") == 0;
	}
	if (!info)
		return -ENOENT;
	*bytes = (size_t)total;
	return 0;
}

/* Reads the ELF file on fd (owned by f from here on) and opens its DWARF. Returns 0 or -errno; on
 * failure f still owns what it holds, for dwfile_close. */
static int dwfile_open(struct dwfile *f, int fd)
{
	GElf_Ehdr ehdr;
	struct stat st;
	size_t shnum;
	uint64_t size;
	int err;

	f->fd = fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	size = (uint64_t)st.st_size;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	f->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &ehdr))
		return -EINVAL;
	shnum = ehdr.e_shnum ? ehdr.e_shnum : 1; /* 0: the count is in section header 0 */
	if (ehdr.e_shoff && (ehdr.e_shoff > size || shnum * ehdr.e_shentsize > size - ehdr.e_shoff))
		return -EINVAL; /* the section header table must lie inside the file */
	err = measure_dwarf(f->elf, size, &f->bytes);
	if (err)
		return err;
	f->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	return f->dw ? 0 : -EINVAL;
}

static void dwfile_close(struct dwfile *f)
{
	if (f->dw)
		dwarf_end(f->dw);
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	f->dw = NULL;
	f->elf = NULL;
	f->fd = -1;
}

/* Opens path read-only, without blocking on a FIFO. Returns the descriptor, -EINVAL (not a regular file)
 * or -errno. */
static int open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* Opens path as the dwz common file when its build-id is id (len bytes). Returns 0 or -errno. */
static int try_alt(struct inlines *in, const char *path, const void *id, ssize_t len)
{
	const void *got;
	int fd = open_regular(path), err;

	if (fd < 0)
		return fd;
	err = dwfile_open(&in->alt, fd);
	if (!err && (dwelf_elf_gnu_build_id(in->alt.elf, &got) != len || memcmp(got, id, (size_t)len) != 0))
		err = -ENOENT;
	if (err)
		dwfile_close(&in->alt);
	return err;
}

/* Writes DIR/.build-id/xx/rest.debug for build-id id into buf. Returns 0 or -ENAMETOOLONG. */
static int build_id_path(char *buf, size_t cap, const char *dir, int dirlen, const uint8_t *id, ssize_t len)
{
	char hex[2 * MAX_BUILD_ID + 1];
	ssize_t i;
	int n;

	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	n = snprintf(buf, cap, "%.*s/.build-id/%.2s/%s.debug", dirlen, dir, hex, hex + 2);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* Writes candidate i (0..3) for the dwz common file into buf: NAME beside path, the .build-id directory
 * path lies in, NAME when absolute, DEBUG_DIR/.build-id. Returns 0, -ENOENT (candidate i does not apply)
 * or -ENAMETOOLONG. */
static int alt_candidate(int i, const char *path, const char *name, const uint8_t *id, ssize_t len, char *buf,
			 size_t cap)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	const char *bid = path ? strstr(path, "/.build-id/") : NULL;
	int n;

	switch (i) {
	case 0:
		if (name[0] == '/' || !path)
			return -ENOENT;
		if (slash)
			n = snprintf(buf, cap, "%.*s/%s", (int)(slash - path), path, name);
		else
			n = snprintf(buf, cap, "%s", name); /* path is in the working directory */
		return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
	case 1:
		return bid ? build_id_path(buf, cap, path, (int)(bid - path), id, len) : -ENOENT;
	case 2:
		if (name[0] != '/')
			return -ENOENT;
		n = snprintf(buf, cap, "%s", name);
		return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
	default:
		return build_id_path(buf, cap, DEBUG_DIR, (int)strlen(DEBUG_DIR), id, len);
	}
}

/* Finds the dwz common file named by .gnu_debugaltlink and hands it to libdw. Not finding it is no
 * error. Returns 0 or -ENOMEM. */
static int open_alt(struct inlines *in, const char *path)
{
	const char *name;
	const void *id;
	char buf[PATH_MAX];
	ssize_t len = dwelf_dwarf_gnu_debugaltlink(in->main.dw, &name, &id);
	int i, err;

	if (len < 3 || len > MAX_BUILD_ID)
		return 0;
	for (i = 0; i < 4; i++) {
		if (alt_candidate(i, path, name, id, len, buf, sizeof(buf)) < 0)
			continue;
		err = try_alt(in, buf, id, len);
		if (err == -ENOMEM)
			return err;
		if (!err) {
			dwarf_setalt(in->main.dw, in->alt.dw);
			return 0;
		}
	}
	return 0;
}

/* Adds the sections of elf that names can point into to in->spans. */
static void add_spans(struct inlines *in, Elf *elf)
{
	static const char *const names[] = { "debug_str", "debug_line_str", "debug_info", "debug_types" };
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr shdr;
	const char *name;
	size_t shstrndx, i;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return;
	while ((scn = elf_nextscn(elf, scn)) && in->nspans < MAX_SPANS) {
		name = section_name(elf, shstrndx, scn, &shdr);
		if (!name || shdr.sh_type == SHT_NOBITS)
			continue;
		if (starts_with(name, ".zdebug_"))
			name += 2; /* "debug_..." */
		else if (starts_with(name, ".debug_"))
			name += 1;
		else
			continue;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			if (strcmp(name, names[i]) != 0)
				continue;
			data = elf_getdata(scn, NULL);
			if (data && data->d_buf && data->d_size) {
				in->spans[in->nspans].start = (uintptr_t)data->d_buf;
				in->spans[in->nspans++].len = data->d_size;
			}
		}
	}
}

/* Appends [lo, hi) -> val to t, unless the handle holds INLINES_MAX_RANGES ranges already.
 * Returns 0 or -ENOMEM. */
static int add_range(struct inlines *in, struct table *t, uint64_t lo, uint64_t hi, uint64_t val)
{
	struct range *v;
	size_t cap;

	if (in->nranges >= INLINES_MAX_RANGES)
		return 0;
	if (t->n == t->cap) {
		cap = t->cap ? 2 * t->cap : 16;
		v = reallocarray(t->v, cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = (struct range){ .lo = lo, .hi = hi, .val = val };
	in->nranges++;
	return 0;
}

/* Appends the non-empty address ranges of die, mapped to val. Unreadable ones end the list.
 * Returns 0 or -ENOMEM. */
static int add_die_ranges(struct inlines *in, struct table *t, Dwarf_Die *die, uint64_t val)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	unsigned reads = 0;
	int err;

	while (++reads <= MAX_DIE_RANGES && (off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		err = add_range(in, t, lo, hi, val);
		if (err)
			return err;
	}
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static void table_sort(struct table *t)
{
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), range_cmp);
}

/* The range of t covering pc, or NULL. */
static const struct range *table_find(const struct table *t, uint64_t pc)
{
	size_t lo = 0, hi = t->n, mid, i;

	while (lo < hi) { /* the first range starting above pc */
		mid = lo + (hi - lo) / 2;
		if (t->v[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i > 0 && lo - i < BACKTRACK; i--) {
		if (pc < t->v[i - 1].hi)
			return &t->v[i - 1];
	}
	return NULL;
}

/* Adds the unit whose DIE is cudie when it has address ranges. Returns 0 or -ENOMEM. */
static int add_unit(struct inlines *in, Dwarf_Die *cudie)
{
	struct unit *u;
	size_t cap, before = in->cus.n;
	int err;

	if (in->nunits == in->ucap) {
		cap = in->ucap ? 2 * in->ucap : 64;
		u = reallocarray(in->units, cap, sizeof(*u));
		if (!u)
			return -ENOMEM;
		in->units = u;
		in->ucap = cap;
	}
	err = add_die_ranges(in, &in->cus, cudie, in->nunits);
	if (!err && in->cus.n > before)
		in->units[in->nunits++] = (struct unit){ .die = dwarf_dieoffset(cudie) };
	return err;
}

/* Reads every compile unit's address ranges into the sorted unit table, until a corrupt unit header
 * or INLINES_MAX_RANGES. Returns 0 or -ENOMEM. */
static int read_units(struct inlines *in)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	Dwarf_Die cudie;
	uint8_t type;
	int err;

	while (in->nranges < INLINES_MAX_RANGES &&
	       dwarf_get_units(in->main.dw, cu, &next, &version, &type, &cudie, NULL) == 0) {
		cu = next;
		in->seen++;
		if (type != DW_UT_compile)
			continue;
		err = add_unit(in, &cudie);
		if (err)
			return err;
	}
	table_sort(&in->cus);
	return 0;
}

int inlines_open_fd(int fd, const char *path, struct inlines **out)
{
	struct inlines *in;
	int err;

	if (fd < 0)
		return -EBADF;
	in = calloc(1, sizeof(*in));
	if (!in) {
		close(fd);
		return -ENOMEM;
	}
	in->alt.fd = -1;
	err = dwfile_open(&in->main, fd);
	if (!err)
		err = open_alt(in, path);
	if (!err)
		err = read_units(in);
	if (err)
		goto fail;
	add_spans(in, in->main.elf);
	if (in->alt.elf)
		add_spans(in, in->alt.elf);
	*out = in;
	return 0;
fail:
	inlines_free(in);
	return err;
}

int inlines_open(const char *path, struct inlines **out)
{
	int fd = open_regular(path);

	if (fd < 0)
		return fd;
	return inlines_open_fd(fd, path, out);
}

void inlines_free(struct inlines *in)
{
	size_t i;

	if (!in)
		return;
	dwfile_close(&in->main); /* before the dwz file, which it may still refer to */
	dwfile_close(&in->alt);
	for (i = 0; i < in->nunits; i++)
		free(in->units[i].fns.v);
	free(in->units);
	free(in->cus.v);
	free(in);
}

size_t inlines_bytes(const struct inlines *in)
{
	size_t i, n;

	if (!in)
		return 0;
	n = sizeof(*in) + in->cus.cap * sizeof(struct range) + in->ucap * sizeof(struct unit);
	for (i = 0; i < in->nunits; i++)
		n += in->units[i].fns.cap * sizeof(struct range);
	return n + in->main.bytes + in->alt.bytes + in->seen * CU_OVERHEAD;
}

size_t inlines_ranges(const struct inlines *in)
{
	return in->nranges;
}

/* Adds the ranges of the functions among parent's children, and inside namespaces among them, to t.
 * Returns 0, -EINVAL (corrupt tree), -E2BIG (over INLINES_MAX_INDEX_VISITS DIEs) or -ENOMEM. */
static int index_children(struct inlines *in, struct table *t, Dwarf_Die *parent, int nest, unsigned *visits)
{
	Dwarf_Die child;
	int rc, tag;

	rc = dwarf_child(parent, &child);
	if (rc != 0)
		return rc < 0 ? -EINVAL : 0;
	do {
		if (++*visits > INLINES_MAX_INDEX_VISITS)
			return -E2BIG;
		tag = dwarf_tag(&child);
		rc = 0;
		if ((tag == DW_TAG_namespace || tag == DW_TAG_module) && nest < MAX_NEST)
			rc = index_children(in, t, &child, nest + 1, visits);
		else if (tag == DW_TAG_subprogram)
			rc = add_die_ranges(in, t, &child, dwarf_dieoffset(&child));
		if (rc < 0)
			return rc;
	} while ((rc = dwarf_siblingof(&child, &child)) == 0);
	return rc < 0 ? -EINVAL : 0;
}

/* Builds u's function table, once. Returns 0 or -errno. */
static int index_unit(struct inlines *in, struct unit *u)
{
	Dwarf_Die cudie;
	unsigned visits = 0;
	int err;

	if (u->state)
		return u->state < 0 ? u->state : 0;
	if (!dwarf_offdie(in->main.dw, u->die, &cudie))
		err = -EINVAL;
	else
		err = index_children(in, &u->fns, &cudie, 0, &visits);
	if (err) { /* nothing half-built is kept; -ENOMEM may pass next time */
		in->nranges -= u->fns.n;
		free(u->fns.v);
		u->fns = (struct table){ 0 };
		u->state = err == -ENOMEM ? 0 : err;
		return err;
	}
	table_sort(&u->fns);
	u->state = 1;
	return 0;
}

/* A DIE whose address ranges nest the scopes inside it. */
static bool is_scope(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block;
}

static int descend(struct walk *w, Dwarf_Die *parent, int depth);

/* Goes into die when it is a scope holding w->pc, noting an inlined call (a real function starts the
 * chain anew). Returns 1 when it holds pc, 0 when not, or -errno. */
static int visit(struct walk *w, Dwarf_Die *die, int depth)
{
	int tag = dwarf_tag(die), rc;

	if (!is_scope(tag) || dwarf_haspc(die, w->pc) != 1)
		return 0; /* unreadable ranges count as not holding pc */
	if (tag == DW_TAG_subprogram)
		w->n = 0;
	else if (tag == DW_TAG_inlined_subroutine)
		w->chain[w->n++] = *die; /* at most one per level, and depth < INLINES_MAX_DEPTH */
	rc = descend(w, die, depth + 1);
	return rc < 0 ? rc : 1;
}

/* Looks through the children of parent for the scope holding w->pc and goes down into it.
 * Returns 1 when found, 0 when not, -EINVAL (corrupt tree) or -E2BIG (a bound was reached). */
static int descend(struct walk *w, Dwarf_Die *parent, int depth)
{
	Dwarf_Die child;
	int rc;

	if (depth >= INLINES_MAX_DEPTH)
		return -E2BIG;
	rc = dwarf_child(parent, &child);
	if (rc != 0)
		return rc < 0 ? -EINVAL : 0;
	do {
		if (++w->visits > INLINES_MAX_VISITS)
			return -E2BIG;
		rc = visit(w, &child, depth);
		if (rc != 0)
			return rc;
		rc = dwarf_siblingof(&child, &child);
	} while (rc == 0);
	return rc < 0 ? -EINVAL : 0;
}

/* s, when it points into a name section and ends there. */
static const char *checked(const struct inlines *in, const char *s)
{
	uintptr_t p = (uintptr_t)s;
	int i;

	for (i = 0; s && i < in->nspans; i++) {
		if (p >= in->spans[i].start && p - in->spans[i].start < in->spans[i].len)
			return memchr(s, '\0', in->spans[i].len - (p - in->spans[i].start)) ? s : NULL;
	}
	return NULL;
}

/* The name of an inlined call: DW_AT_name, else a linkage name, through its abstract origin. */
static const char *call_name(const struct inlines *in, Dwarf_Die *die)
{
	static const unsigned attrs[] = { DW_AT_name, DW_AT_linkage_name, DW_AT_MIPS_linkage_name };
	Dwarf_Attribute mem;
	const char *s;
	size_t i;

	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		s = checked(in, dwarf_formstring(dwarf_attr_integrate(die, attrs[i], &mem)));
		if (s && s[0])
			return s;
	}
	return INLINES_UNKNOWN;
}

int inlines_at(struct inlines *in, uint64_t vaddr, const char **names, int max)
{
	const struct range *r;
	struct unit *u;
	Dwarf_Die die;
	struct walk w;
	int i, first, rc;

	if (max < 0 || (max > 0 && !names))
		return -EINVAL;
	r = table_find(&in->cus, vaddr);
	if (!r || max == 0)
		return 0;
	u = &in->units[r->val];
	rc = index_unit(in, u);
	if (rc < 0)
		return rc;
	r = table_find(&u->fns, vaddr);
	if (!r)
		return 0;
	if (!dwarf_offdie(in->main.dw, r->val, &die))
		return -EINVAL;
	w.pc = vaddr;
	w.visits = 0;
	w.n = 0;
	rc = visit(&w, &die, 0);
	if (rc < 0)
		return rc;
	first = w.n > max ? w.n - max : 0;
	for (i = first; i < w.n; i++)
		names[i - first] = call_name(in, &w.chain[i]);
	return w.n - first;
}
