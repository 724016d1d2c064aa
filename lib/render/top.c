/* top.c - counts self and total samples per function name over folded stacks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "render/json.h"
#include "render/top.h"

#define DEFAULT_MAX_FUNCTIONS 1000000

struct slot {
	struct top_entry e;
	uint64_t hash;
	uint64_t seen_in;  /* the last stack that counted it in total (once per stack) */
};

struct top {
	struct slot *slots;     /* open addressing; e.name NULL: empty */
	size_t cap, n, max;
	struct top_entry *sorted;
	uint64_t samples, dropped, stack_seq;
};

int top_new(size_t max_functions, struct top **out)
{
	struct top *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->max = max_functions ? max_functions : DEFAULT_MAX_FUNCTIONS;
	t->cap = 256;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

static int grow(struct top *t)
{
	size_t cap = t->cap * 2;
	struct slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slots[i].e.name)
			continue;
		size_t j = t->slots[i].hash & (cap - 1);
		while (slots[j].e.name)
			j = (j + 1) & (cap - 1);
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

/* The slot of name[0..len), created when missing; NULL when full (-ENOSPC) or out of memory. */
static struct slot *lookup(struct top *t, const char *name, size_t len, int *err)
{
	uint64_t h = hash_bytes(HASH_FNV_OFFSET, name, len);
	size_t i = h & (t->cap - 1);
	char *copy;

	for (; t->slots[i].e.name; i = (i + 1) & (t->cap - 1))
		if (t->slots[i].hash == h && !strncmp(t->slots[i].e.name, name, len) && !t->slots[i].e.name[len])
			return &t->slots[i];
	if (t->n >= t->max) {
		*err = -ENOSPC;
		return NULL;
	}
	copy = strndup(name, len);
	if (!copy) {
		*err = -ENOMEM;
		return NULL;
	}
	t->slots[i].e.name = copy;
	t->slots[i].hash = h;
	t->n++;
	if (t->n * 2 > t->cap) {
		if (grow(t)) {
			*err = -ENOMEM;
			return NULL;
		}
		return lookup(t, name, len, err);
	}
	return &t->slots[i];
}

int top_add(struct top *t, const char *folded, uint64_t count)
{
	struct slot *leaf = NULL;
	int err = 0;

	if (!folded || !folded[0] || !count)
		return -EINVAL;
	t->stack_seq++;
	for (const char *p = folded; *p;) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		struct slot *s = len ? lookup(t, p, len, &err) : NULL;

		if (len && !s) {
			if (err != -ENOSPC)
				return err;
			t->dropped += count;
		}
		if (s && s->seen_in != t->stack_seq) {
			s->seen_in = t->stack_seq;
			s->e.total += count;
		}
		leaf = s;
		p += len + (e ? 1 : 0);
	}
	if (leaf)
		leaf->e.self += count;
	t->samples += count;
	free(t->sorted); /* stale */
	t->sorted = NULL;
	return 0;
}

static int by_self(const void *a, const void *b)
{
	const struct top_entry *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

const struct top_entry *top_sorted(struct top *t, size_t *n)
{
	*n = 0;
	if (!t->sorted) {
		t->sorted = malloc((t->n ? t->n : 1) * sizeof(*t->sorted));
		if (!t->sorted)
			return NULL;
		size_t k = 0;
		for (size_t i = 0; i < t->cap; i++)
			if (t->slots[i].e.name)
				t->sorted[k++] = t->slots[i].e;
		qsort(t->sorted, k, sizeof(*t->sorted), by_self);
	}
	*n = t->n;
	return t->sorted;
}

uint64_t top_samples(const struct top *t)
{
	return t->samples;
}

uint64_t top_dropped(const struct top *t)
{
	return t->dropped;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0.0;
}

/* A table cell: the bare count (samples), or the time as unit_amount writes it. */
static const char *cell(char *buf, uint64_t v, enum unit unit)
{
	if (unit == UNIT_MICROS)
		return unit_amount(buf, v, unit);
	snprintf(buf, UNIT_BUF, "%llu", (unsigned long long)v);
	return buf;
}

int render_top_text(FILE *out, struct top *t, size_t limit, bool tty, enum unit unit)
{
	char a[UNIT_BUF], b[UNIT_BUF];
	size_t n;
	const struct top_entry *e = top_sorted(t, &n);

	if (!e)
		return -ENOMEM;
	if (limit && limit < n)
		n = limit;
	if (tty)
		fprintf(out, "%11s %7s %11s %7s  %s\n", "SELF", "SELF%", "TOTAL", "TOTAL%", "FUNCTION");
	for (size_t i = 0; i < n; i++) {
		if (tty)
			fprintf(out, "%11s %6.2f%% %11s %6.2f%%  %s\n", cell(a, e[i].self, unit),
				pct(e[i].self, t->samples), cell(b, e[i].total, unit),
				pct(e[i].total, t->samples), e[i].name);
		else
			fprintf(out, "%llu\t%llu\t%s\n", (unsigned long long)e[i].self,
				(unsigned long long)e[i].total, e[i].name);
	}
	return ferror(out) ? -EIO : 0;
}

int render_top_json(FILE *out, struct top *t, size_t limit, enum unit unit)
{
	size_t n;
	const struct top_entry *e = top_sorted(t, &n);

	if (!e)
		return -ENOMEM;
	if (limit && limit < n)
		n = limit;
	fprintf(out, "{\"unit\":\"%s\",\"total\":%llu,\"dropped\":%llu,\"functions\":[", unit_name(unit),
		(unsigned long long)t->samples,
		(unsigned long long)t->dropped);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",{\"name\":" : "{\"name\":", out);
		json_write_string(out, e[i].name);
		fprintf(out, ",\"self\":%llu,\"total\":%llu}", (unsigned long long)e[i].self,
			(unsigned long long)e[i].total);
	}
	fputs("]}\n", out);
	return ferror(out) ? -EIO : 0;
}

void top_free(struct top *t)
{
	if (!t)
		return;
	for (size_t i = 0; t->slots && i < t->cap; i++)
		free((char *)t->slots[i].e.name);
	free(t->slots);
	free(t->sorted);
	free(t);
}
