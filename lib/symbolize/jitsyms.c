/* jitsyms.c - JIT code's symbols by address (see jitsyms.h): appended, sorted at the first lookup after. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/jitsyms.h"

#define OVERLAP_SCAN 16 /* symbols starting below addr looked at for one holding it (nested, reused) */

struct jsym {
	uint64_t start, end;
	uint64_t stamp; /* when the code was made, in its JIT's clock (0: unknown) */
	uint32_t name;  /* offset in the pool */
	uint32_t seq;   /* order of addition: the newest of overlapping ones wins */
};

struct jitsyms {
	struct jsym *syms;
	size_t n, cap, max;
	char *pool;
	size_t pool_len, pool_cap, pool_max;
	bool sorted;
	uint32_t checked;     /* symbols (by seq) looked at for code they replaced */
	uint64_t replaced_at; /* the newest stamp of those that replaced other code (UINT64_MAX: unknown) */
};

int jitsyms_new(size_t max_symbols, size_t max_name_bytes, struct jitsyms **out)
{
	struct jitsyms *t = calloc(1, sizeof(*t));

	*out = t;
	if (!t)
		return -ENOMEM;
	t->max = max_symbols;
	t->pool_max = max_name_bytes;
	t->sorted = true;
	return 0;
}

/* The capacity (from first, doubled) that holds need. */
static size_t grown(size_t cap, size_t need, size_t first)
{
	size_t c = cap ? cap : first;

	while (c < need)
		c *= 2;
	return c;
}

int jitsyms_add(struct jitsyms *t, uint64_t start, uint64_t size, const char *name, size_t len)
{
	return jitsyms_add_at(t, start, size, 0, name, len);
}

int jitsyms_add_at(struct jitsyms *t, uint64_t start, uint64_t size, uint64_t stamp, const char *name, size_t len)
{
	const char *nul = memchr(name, '\0', len);

	if (nul)
		len = (size_t)(nul - name);
	if (len > JITSYMS_MAX_NAME - 1)
		len = JITSYMS_MAX_NAME - 1;
	if (!size || start + size < start || t->n >= t->max || t->n >= UINT32_MAX ||
	    t->pool_len + len + 1 > t->pool_max || t->pool_len + len + 1 > UINT32_MAX)
		return 1;
	if (t->n + 1 > t->cap) {
		size_t cap = grown(t->cap, t->n + 1, 64);
		struct jsym *s = realloc(t->syms, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		t->syms = s;
		t->cap = cap;
	}
	if (t->pool_len + len + 1 > t->pool_cap) {
		size_t cap = grown(t->pool_cap, t->pool_len + len + 1, 4096);
		char *p = realloc(t->pool, cap);

		if (!p)
			return -ENOMEM;
		t->pool = p;
		t->pool_cap = cap;
	}
	memcpy(t->pool + t->pool_len, name, len);
	t->pool[t->pool_len + len] = '\0';
	t->syms[t->n] = (struct jsym){ start, start + size, stamp, (uint32_t)t->pool_len, (uint32_t)t->n };
	t->n++;
	t->pool_len += len + 1;
	t->sorted = false;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct jsym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The index of the first symbol starting past addr (t sorted). */
static size_t first_past(const struct jitsyms *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether s was added over older code of another name (a symbol added before it whose range meets its
 * own), and is not the same code logged again (an older one of its range and name); among the
 * OVERLAP_SCAN symbols starting nearest below its end. */
static bool replaces(const struct jitsyms *t, const struct jsym *s)
{
	size_t hi = first_past(t, s->end - 1);
	bool other = false;

	for (size_t i = hi; i > 0 && hi - i < OVERLAP_SCAN; i--) {
		const struct jsym *x = &t->syms[i - 1];
		bool same_name;

		if (x->seq >= s->seq || x->end <= s->start || x->start >= s->end)
			continue;
		same_name = !strcmp(t->pool + x->name, t->pool + s->name);
		if (same_name && x->start == s->start && x->end == s->end)
			return false;
		other |= !same_name;
	}
	return other;
}

/* Sorts t by start after additions, and takes the new symbols' replacements into replaced_at. */
static void sort(struct jitsyms *t)
{
	if (t->sorted)
		return;
	qsort(t->syms, t->n, sizeof(*t->syms), by_start);
	t->sorted = true;
	for (size_t i = 0; i < t->n; i++) {
		const struct jsym *s = &t->syms[i];
		uint64_t at = s->stamp ? s->stamp : UINT64_MAX;

		if (s->seq >= t->checked && at > t->replaced_at && replaces(t, s))
			t->replaced_at = at;
	}
	t->checked = (uint32_t)t->n;
}

uint64_t jitsyms_replaced_at(struct jitsyms *t)
{
	if (!t)
		return 0;
	sort(t);
	return t->replaced_at;
}

const char *jitsyms_find(struct jitsyms *t, uint64_t addr)
{
	return jitsyms_find_before(t, addr, 0);
}

/* Whether a, holding the address looked up, names it better than b (NULL: none yet): made by before
 * (0: any time), the newest of those; else, when none was, the earliest (the code closest to the time). */
static bool better(const struct jsym *a, const struct jsym *b, uint64_t before)
{
	bool a_in = !before || a->stamp <= before, b_in;

	if (!b)
		return true;
	b_in = !before || b->stamp <= before;
	if (a_in != b_in)
		return a_in;
	return a_in ? a->seq > b->seq : a->stamp < b->stamp;
}

const char *jitsyms_find_before(struct jitsyms *t, uint64_t addr, uint64_t before)
{
	const struct jsym *best = NULL;
	size_t lo;

	if (!t || !t->n)
		return NULL;
	sort(t);
	lo = first_past(t, addr);
	for (size_t i = lo; i > 0 && lo - i < OVERLAP_SCAN; i--) {
		const struct jsym *s = &t->syms[i - 1];

		if (addr < s->end && better(s, best, before))
			best = s;
	}
	return best ? t->pool + best->name : NULL;
}

size_t jitsyms_count(const struct jitsyms *t)
{
	return t ? t->n : 0;
}

void jitsyms_free(struct jitsyms *t)
{
	if (!t)
		return;
	free(t->syms);
	free(t->pool);
	free(t);
}
