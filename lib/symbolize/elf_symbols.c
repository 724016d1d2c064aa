/* elf_symbols.c - copies the function symbols of an ELF file into an address-sorted table and looks them up. */
#include "symbolize/elf_symbols.h"

#include "elf/elf_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LOOKBACK 8 /* symbols tried before the nearest one, for functions that enclose others */

/* One kept symbol: [start, end) and the offset of its name in the table's name pool. */
struct elf_sym {
	uint64_t start, end;
	uint32_t name;
};

struct elf_symtab {
	struct elf_sym *syms;
	size_t n;
	char *names;
	size_t names_bytes;
	uint64_t dropped;
};

/* A symbol as read, its name still in libelf's memory. */
struct raw_sym {
	uint64_t addr, size;
	const char *name;
	unsigned rank; /* 0 global, 1 weak, 2 other: which of several symbols at one address is kept */
};

/* A growable array of raw symbols. */
struct raw_list {
	struct raw_sym *v;
	size_t n, cap;
	uint64_t dropped;
};

static unsigned bind_rank(unsigned char info)
{
	switch (GELF_ST_BIND(info)) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

/* Leading underscores of a name: aliases with fewer are the public ones ("malloc", not "__libc_malloc"). */
static size_t underscores(const char *name)
{
	return strspn(name, "_");
}

/* Whether name is one of glibc's internal aliases (__GI___clone3 for __clone3): the name its own calls
 * bind to, never the one a user knows. */
static bool internal_alias(const char *name)
{
	return strncmp(name, "__GI_", 5) == 0;
}

/* Orders by address; at one address the sized symbol, then one that is not glibc's internal alias, then
 * the one with fewer leading underscores, then global before weak before local, then the smallest name
 * comes first. */
static int raw_cmp(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;
	size_t ux, uy;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if ((x->size == 0) != (y->size == 0))
		return x->size ? -1 : 1;
	if (internal_alias(x->name) != internal_alias(y->name))
		return internal_alias(x->name) ? 1 : -1;
	ux = underscores(x->name);
	uy = underscores(y->name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Appends one symbol; past ELF_MAX_SYMBOLS it only counts it. Returns 0 or -ENOMEM. */
static int raw_push(struct raw_list *l, const struct raw_sym *s)
{
	struct raw_sym *v;
	size_t cap;

	if (l->n >= ELF_MAX_SYMBOLS) {
		l->dropped++;
		return 0;
	}
	if (l->n == l->cap) {
		cap = l->cap ? l->cap * 2 : 256;
		v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *s;
	return 0;
}

/* Finds the symbol section and checks it and its string table. Returns 0, -ENOENT or -EINVAL. */
static int symbol_section(const struct elf_file *f, bool dynamic, Elf_Data **data, size_t *strndx)
{
	GElf_Shdr sh, strsh;
	Elf_Scn *scn, *strscn;
	Elf_Data *strdata;

	if (elf_file_find_section(f, dynamic ? SHT_DYNSYM : SHT_SYMTAB, &scn, &sh) < 0)
		return -ENOENT;
	if (elf_file_section(f, sh.sh_link, &strscn, &strsh) < 0 || strsh.sh_type != SHT_STRTAB)
		return -EINVAL;
	if (elf_file_section_data(f, strscn, &strsh, &strdata) < 0)
		return -EINVAL;
	if (elf_file_section_data(f, scn, &sh, data) < 0)
		return -EINVAL;
	*strndx = sh.sh_link;
	return 0;
}

/* Reads the function symbols of data (names in section strndx) into l. Returns 0 or -ENOMEM. */
static int read_functions(const struct elf_file *f, Elf_Data *data, size_t strndx, struct raw_list *l)
{
	bool thumb = elf_file_machine(f) == EM_ARM;
	struct raw_sym r;
	GElf_Sym sym;
	unsigned type;
	int i, err;

	for (i = 1; gelf_getsym(data, i, &sym); i++) {
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_value == 0 || sym.st_shndx == SHN_UNDEF)
			continue;
		r.name = elf_file_string(f, strndx, sym.st_name);
		if (!r.name || !r.name[0])
			continue;
		r.addr = thumb ? sym.st_value & ~(uint64_t)1 : sym.st_value;
		r.size = sym.st_size;
		r.rank = bind_rank(sym.st_info);
		err = raw_push(l, &r);
		if (err)
			return err;
		if (i == INT32_MAX)
			break;
	}
	return 0;
}

/* Sorts l, keeps one symbol per address and returns how many are kept (at the front of l->v). */
static size_t sort_unique(struct raw_list *l)
{
	size_t i, k = 0;

	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), raw_cmp);
	for (i = 0; i < l->n; i++) {
		if (k > 0 && l->v[k - 1].addr == l->v[i].addr)
			continue;
		l->v[k++] = l->v[i];
	}
	return k;
}

/* Bytes of name kept: at most ELF_MAX_NAME, and not a symbol version ("clock_gettime@@GLIBC_2.17"). */
static size_t kept_len(const char *name)
{
	size_t len = strnlen(name, ELF_MAX_NAME);
	const char *at = len > 1 ? memchr(name + 1, '@', len - 1) : NULL;

	return at ? (size_t)(at - name) : len;
}

/* Copies the n sorted symbols of raw into t (names into one pool). Returns 0 or -ENOMEM. */
static int fill_table(const struct raw_sym *raw, size_t n, struct elf_symtab *t)
{
	size_t i, len, pos = 0, total = 0;

	for (i = 0; i < n; i++)
		total += kept_len(raw[i].name) + 1;
	t->syms = calloc(n, sizeof(*t->syms));
	t->names = malloc(total);
	t->names_bytes = total;
	if (!t->syms || !t->names)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		len = kept_len(raw[i].name);
		memcpy(t->names + pos, raw[i].name, len);
		t->names[pos + len] = '\0';
		t->syms[i].name = (uint32_t)pos; /* total <= ELF_MAX_SYMBOLS * (ELF_MAX_NAME + 1) < 4 GiB */
		t->syms[i].start = raw[i].addr;
		if (raw[i].size)
			t->syms[i].end = raw[i].addr + raw[i].size < raw[i].addr ? UINT64_MAX : raw[i].addr + raw[i].size;
		else
			t->syms[i].end = i + 1 < n ? raw[i + 1].addr : raw[i].addr;
		pos += len + 1;
	}
	t->n = n;
	return 0;
}

int elf_symtab_load(const struct elf_file *f, bool dynamic, struct elf_symtab **out)
{
	struct raw_list l = { 0 };
	struct elf_symtab *t = NULL;
	Elf_Data *data;
	size_t strndx, n;
	int err;

	err = symbol_section(f, dynamic, &data, &strndx);
	if (err)
		goto out;
	err = read_functions(f, data, strndx, &l);
	if (err)
		goto out;
	n = sort_unique(&l);
	err = -ENOENT;
	if (n == 0)
		goto out;
	err = -ENOMEM;
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out;
	t->dropped = l.dropped;
	err = fill_table(l.v, n, t);
	if (err)
		goto out;
	*out = t;
	t = NULL;
out:
	elf_symtab_free(t);
	free(l.v);
	return err;
}

void elf_symtab_free(struct elf_symtab *t)
{
	if (!t)
		return;
	free(t->syms);
	free(t->names);
	free(t);
}

const char *elf_symtab_lookup(const struct elf_symtab *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->n, mid, i;

	while (lo < hi) { /* lo: the first symbol starting above vaddr */
		mid = lo + (hi - lo) / 2;
		if (t->syms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i > 0 && lo - i < LOOKBACK; i--) {
		if (vaddr < t->syms[i - 1].end)
			return t->names + t->syms[i - 1].name;
	}
	return NULL;
}

size_t elf_symtab_bytes(const struct elf_symtab *t)
{
	return t ? sizeof(*t) + t->n * sizeof(*t->syms) + t->names_bytes : 0;
}

size_t elf_symtab_count(const struct elf_symtab *t)
{
	return t->n;
}

uint64_t elf_symtab_dropped(const struct elf_symtab *t)
{
	return t->dropped;
}
