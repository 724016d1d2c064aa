/* kallsyms.c - reads the kernel's text symbols from /proc/kallsyms and finds the one holding an address. */
#include "symbolize/kallsyms.h"
#include "util/textparse.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE 4096
#define END_MARKER "_etext" /* end of the core kernel's text: addresses from here on are not in a function */

/* One symbol; name is an offset into the name pool. */
struct ksym {
	uint64_t addr;
	uint32_t name;
	uint8_t rank; /* which of several symbols at one address is kept: T, W, t, w */
};

struct kallsyms {
	struct ksym *syms;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
};

/* The rank of a text symbol type, or -1 for other types. */
static int type_rank(char type)
{
	switch (type) {
	case 'T':
		return 0;
	case 'W':
		return 1;
	case 't':
		return 2;
	case 'w':
		return 3;
	default:
		return -1;
	}
}

int kallsyms_parse_line(char *line, uint64_t *addr, char *type, const char **name)
{
	const char *p = line;
	size_t len;

	if (text_parse_uint(&p, 16, 16, addr) < 0 || p[0] != ' ' || !p[1] || p[1] == ' ' || p[1] == '\n' || p[2] != ' ')
		return -EINVAL;
	*type = p[1];
	p += 3;
	len = strcspn(p, " \t\r\n");
	if (len == 0)
		return -EINVAL;
	if (len > KALLSYMS_MAX_NAME)
		len = KALLSYMS_MAX_NAME;
	line[(p - line) + len] = '\0';
	*name = p;
	return 0;
}

/* Appends a symbol (name copied). Returns 0 or -ENOMEM. */
static int add_symbol(struct kallsyms *k, uint64_t addr, int rank, const char *name)
{
	size_t len = strlen(name) + 1, cap;
	struct ksym *s;
	char *p;

	if (k->n == k->cap) {
		cap = k->cap ? k->cap * 2 : 4096;
		s = realloc(k->syms, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		k->syms = s;
		k->cap = cap;
	}
	if (k->names_cap - k->names_len < len) {
		cap = k->names_cap ? k->names_cap * 2 : 65536;
		p = realloc(k->names, cap);
		if (!p)
			return -ENOMEM;
		k->names = p;
		k->names_cap = cap;
	}
	memcpy(k->names + k->names_len, name, len);
	k->syms[k->n].addr = addr;
	k->syms[k->n].rank = (uint8_t)rank;
	k->syms[k->n].name = (uint32_t)k->names_len; /* KALLSYMS_MAX * (KALLSYMS_MAX_NAME + 1) < 4 GiB */
	k->names_len += len;
	k->n++;
	return 0;
}

/* Reads the next line of fp (its newline dropped) into buf of cap bytes. Returns its length, or -1 at
 * the end of fp; *ok is false for a line that does not fit or holds a NUL byte (its text is not to be
 * used; the next line starts after its newline all the same). */
static int read_line(FILE *fp, char *buf, size_t cap, bool *ok)
{
	size_t n = 0;
	int c;

	*ok = true;
	while ((c = getc_unlocked(fp)) != EOF && c != '\n') {
		if (c == '\0' || n + 1 >= cap)
			*ok = false;
		else
			buf[n++] = (char)c;
	}
	buf[n] = '\0';
	return c == EOF && n == 0 && *ok ? -1 : (int)n;
}

/* Reads the lines of fp into k. Returns 0 or -errno. */
static int read_symbols(FILE *fp, struct kallsyms *k)
{
	char line[MAX_LINE], type;
	const char *name;
	uint64_t addr;
	int rank, err;
	bool ok;

	while (read_line(fp, line, sizeof(line), &ok) >= 0) {
		if (!ok || kallsyms_parse_line(line, &addr, &type, &name) < 0 || addr == 0)
			continue;
		rank = type_rank(type);
		if (rank < 0)
			continue;
		if (k->n >= KALLSYMS_MAX)
			break;
		err = add_symbol(k, addr, rank, name);
		if (err)
			return err;
	}
	return ferror(fp) ? -EIO : 0;
}

/* Orders by address, then type rank (T, W, t, w), then file order (so the result is deterministic). */
static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Sorts by address and keeps one symbol per address. */
static void sort_unique(struct kallsyms *k)
{
	size_t i, n = 0;

	if (k->n > 1)
		qsort(k->syms, k->n, sizeof(*k->syms), ksym_cmp);
	for (i = 0; i < k->n; i++) {
		if (n > 0 && k->syms[n - 1].addr == k->syms[i].addr)
			continue;
		k->syms[n++] = k->syms[i];
	}
	k->n = n;
}

int kallsyms_load(const char *path, struct kallsyms **out)
{
	struct kallsyms *k;
	FILE *fp;
	int err;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	fp = fopen(path, "re");
	if (!fp) {
		err = -errno;
		goto fail;
	}
	err = read_symbols(fp, k);
	fclose(fp);
	if (err)
		goto fail;
	sort_unique(k);
	*out = k;
	return 0;
fail:
	kallsyms_free(k);
	return err;
}

void kallsyms_free(struct kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k);
}

const char *kallsyms_lookup(const struct kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n, mid;
	const struct ksym *s;
	const char *name;

	while (lo < hi) { /* lo: the first symbol above addr */
		mid = lo + (hi - lo) / 2;
		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	s = &k->syms[lo - 1];
	name = k->names + s->name;
	if (addr - s->addr >= KALLSYMS_MAX_SPAN || strcmp(name, END_MARKER) == 0)
		return NULL;
	return name;
}

size_t kallsyms_count(const struct kallsyms *k)
{
	return k->n;
}
