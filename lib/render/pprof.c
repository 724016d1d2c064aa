/* pprof.c - encodes stacks as a gzip-compressed pprof Profile: interned strings, one Mapping,
 * Function and Location per distinct binary and function, packed by protobuf-c, gzipped by zlib. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZLIB_CONST
#include <zlib.h>

#include "lib/render/pprof.pb-c.h"
#include "util/hash.h"
#include "render/pprof.h"

#define TABLE_MIN_CAP 64 /* first capacity of each table; they double as needed */
#define PY_KEY (1ULL << 62) /* in a function's key: a Python file's index, not a module's */
#define LABELS 5            /* labels a sample has at most: comm, pid, unit, container, cgroup */

/* The string table: strs[0] is "", every other entry is distinct. Entries point into the caller's
 * stacks except repaired copies of invalid UTF-8 (owned[i]), which are freed with the table. */
struct strtab {
	char **strs;
	bool *owned;
	size_t n, cap;
	size_t *slots; /* open addressing, 2 * cap of them: index + 1, 0 when empty */
};

/* Distinct pairs of numbers, each given the id (1-based) of its first appearance. */
struct pair {
	uint64_t a, b;
};
struct idtab {
	struct pair *keys; /* keys[id - 1] */
	size_t n, cap;
	size_t *slots;     /* open addressing, 2 * cap of them: id, 0 when empty */
};

/* Everything one render allocates; all of it is freed by build_free. */
struct build {
	struct strtab strs;
	struct idtab maps;  /* (filename, build_id) string indices */
	struct idtab funcs; /* (name, module) string indices; a Python frame's (name, file | PY_KEY) */
	int64_t *func_file, *func_start; /* by function id - 1: its file name, first line (Python) */
	int64_t *func_system;            /* by function id - 1: its name as the binary has it (0: its name) */
	size_t func_cap;
	struct idtab locs;  /* (function id, mapping id | line << 32) */
	int64_t s_comm, s_pid, s_unit, s_container, s_cgroup;

	Perftools__Profiles__Sample *samples, **sample_ptrs;
	uint64_t *loc_ids; /* every sample's location ids, one run per sample */
	int64_t *values;   /* two per sample */
	Perftools__Profiles__Label *labels, **label_ptrs; /* LABELS per sample */
	Perftools__Profiles__Mapping *map_msgs, **map_ptrs;
	Perftools__Profiles__Function *func_msgs, **func_ptrs;
	Perftools__Profiles__Location *loc_msgs, **loc_ptrs;
	Perftools__Profiles__Line *lines, **line_ptrs;
	Perftools__Profiles__ValueType types[2], *type_ptrs[2], period_type;
	unsigned ntypes;   /* sample types: 2 (samples, cpu) or 1 (a time) */
	uint8_t *packed;
};

/* calloc that never answers NULL for a successful zero-length request. */
static void *alloc_array(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static uint64_t hash_str(const char *s)
{
	return hash_bytes(HASH_FNV_OFFSET, s, strlen(s));
}

static uint64_t hash_pair(uint64_t a, uint64_t b)
{
	uint64_t v[2] = { a, b };

	return hash_words(v, 2);
}

/* Length of the well-formed UTF-8 sequence s starts with, 0 when it starts none. Never reads past
 * the terminating NUL (a NUL fails every continuation test). */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		lo = s[0] == 0xe0 ? 0xa0 : 0x80; /* no overlong forms */
		hi = s[0] == 0xed ? 0x9f : 0xbf; /* no surrogates */
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		lo = s[0] == 0xf0 ? 0x90 : 0x80;
		hi = s[0] == 0xf4 ? 0x8f : 0xbf; /* nothing above U+10FFFF */
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

static bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t len = utf8_seq(p);

		if (!len)
			return false;
		p += len;
	}
	return true;
}

/* A copy of s with every byte that is not part of well-formed UTF-8 replaced by U+FFFD (protobuf
 * strings must be UTF-8, and a process name cut at 15 bytes often splits a character). NULL when out
 * of memory. */
static char *utf8_repair(const char *s)
{
	size_t len = strlen(s);
	const unsigned char *p = (const unsigned char *)s;
	char *copy, *o;

	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	copy = malloc(3 * len + 1);
	if (!copy)
		return NULL;
	for (o = copy; *p;) {
		size_t seq = utf8_seq(p);

		if (seq) {
			memcpy(o, p, seq);
			o += seq;
			p += seq;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
		}
	}
	*o = '\0';
	return copy;
}

/* The slot of string s in t: where it is, or the empty slot where it belongs. */
static size_t *strtab_slot(const struct strtab *t, const char *s)
{
	size_t mask = 2 * t->cap - 1;

	for (size_t i = hash_str(s) & mask;; i = (i + 1) & mask)
		if (!t->slots[i] || !strcmp(t->strs[t->slots[i] - 1], s))
			return &t->slots[i];
}

/* Doubles the capacity (or sets the first) and re-indexes. Returns 0 or -ENOMEM. */
static int strtab_grow(struct strtab *t)
{
	size_t cap = t->cap ? 2 * t->cap : TABLE_MIN_CAP;
	char **strs;
	bool *owned;
	size_t *slots;

	if (cap > SIZE_MAX / 2 / sizeof(*slots))
		return -ENOMEM;
	strs = reallocarray(t->strs, cap, sizeof(*strs));
	if (!strs)
		return -ENOMEM;
	t->strs = strs;
	owned = reallocarray(t->owned, cap, sizeof(*owned));
	if (!owned)
		return -ENOMEM;
	t->owned = owned;
	slots = calloc(2 * cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	for (size_t i = 0; i < t->n; i++)
		*strtab_slot(t, t->strs[i]) = i + 1;
	return 0;
}

/* Adds s (copied when it must be repaired) unless it is there. */
static int strtab_add(struct strtab *t, const char *s, int64_t *idx)
{
	char *copy = NULL;
	size_t *slot;

	if (!utf8_valid(s)) {
		copy = utf8_repair(s);
		if (!copy)
			return -ENOMEM;
		s = copy;
	}
	if (t->n == t->cap && strtab_grow(t) < 0) {
		free(copy);
		return -ENOMEM;
	}
	slot = strtab_slot(t, s);
	if (*slot) {
		free(copy); /* an earlier string repaired to the same text */
	} else {
		t->strs[t->n] = (char *)s; /* protobuf-c's string_table is char ** but only read */
		t->owned[t->n] = copy != NULL;
		*slot = ++t->n;
	}
	*idx = (int64_t)(*slot - 1);
	return 0;
}

/* The string table index of s (NULL counts as ""), adding it when new. Returns 0 or -ENOMEM. */
static int strtab_intern(struct strtab *t, const char *s, int64_t *idx)
{
	return strtab_add(t, s ? s : "", idx);
}

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->owned[i])
			free(t->strs[i]);
	free(t->strs);
	free(t->owned);
	free(t->slots);
}

static size_t *idtab_slot(const struct idtab *t, uint64_t a, uint64_t b)
{
	size_t mask = 2 * t->cap - 1;

	for (size_t i = hash_pair(a, b) & mask;; i = (i + 1) & mask) {
		const struct pair *k = t->slots[i] ? &t->keys[t->slots[i] - 1] : NULL;

		if (!k || (k->a == a && k->b == b))
			return &t->slots[i];
	}
}

static int idtab_grow(struct idtab *t)
{
	size_t cap = t->cap ? 2 * t->cap : TABLE_MIN_CAP;
	struct pair *keys;
	size_t *slots;

	if (cap > SIZE_MAX / 2 / sizeof(*slots))
		return -ENOMEM;
	keys = reallocarray(t->keys, cap, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	t->keys = keys;
	slots = calloc(2 * cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	for (size_t i = 0; i < t->n; i++)
		*idtab_slot(t, t->keys[i].a, t->keys[i].b) = i + 1;
	return 0;
}

/* The id of (a, b), giving it the next id when new. Returns 0 or -ENOMEM. */
static int idtab_get(struct idtab *t, uint64_t a, uint64_t b, uint64_t *id)
{
	size_t *slot;

	if (t->n == t->cap && idtab_grow(t) < 0)
		return -ENOMEM;
	slot = idtab_slot(t, a, b);
	if (!*slot) {
		t->keys[t->n] = (struct pair){ a, b };
		*slot = ++t->n;
	}
	*id = *slot;
	return 0;
}

static void idtab_free(struct idtab *t)
{
	free(t->keys);
	free(t->slots);
}

static void build_free(struct build *b)
{
	strtab_free(&b->strs);
	idtab_free(&b->maps);
	idtab_free(&b->funcs);
	free(b->func_file);
	free(b->func_system);
	free(b->func_start);
	idtab_free(&b->locs);
	free(b->samples);
	free(b->sample_ptrs);
	free(b->loc_ids);
	free(b->values);
	free(b->labels);
	free(b->label_ptrs);
	free(b->map_msgs);
	free(b->map_ptrs);
	free(b->func_msgs);
	free(b->func_ptrs);
	free(b->loc_msgs);
	free(b->loc_ptrs);
	free(b->lines);
	free(b->line_ptrs);
	free(b->packed);
}

/* Fills in one ValueType from two strings. */
static int value_type(struct build *b, const char *type, const char *unit, Perftools__Profiles__ValueType *vt)
{
	perftools__profiles__value_type__init(vt);
	if (strtab_intern(&b->strs, type, &vt->type) < 0 || strtab_intern(&b->strs, unit, &vt->unit) < 0)
		return -ENOMEM;
	return 0;
}

/* The string table with "" first, the sample and period types, and the label keys. */
static int build_init(struct build *b, const char *time_type)
{
	int64_t empty;
	int err;

	if (strtab_intern(&b->strs, "", &empty) < 0)
		return -ENOMEM;
	b->ntypes = time_type ? 1 : 2;
	if (time_type)
		err = value_type(b, time_type, "nanoseconds", &b->types[0]) ?:
		      value_type(b, time_type, "nanoseconds", &b->period_type);
	else
		err = value_type(b, "samples", "count", &b->types[0]) ?:
		      value_type(b, "cpu", "nanoseconds", &b->types[1]) ?:
		      value_type(b, "cpu", "nanoseconds", &b->period_type);
	if (err || strtab_intern(&b->strs, "comm", &b->s_comm) < 0 || strtab_intern(&b->strs, "pid", &b->s_pid) < 0 ||
	    strtab_intern(&b->strs, "unit", &b->s_unit) < 0 || strtab_intern(&b->strs, "container", &b->s_container) < 0 ||
	    strtab_intern(&b->strs, "cgroup", &b->s_cgroup) < 0)
		return -ENOMEM;
	b->type_ptrs[0] = &b->types[0];
	b->type_ptrs[1] = &b->types[1];
	return 0;
}

/* Interns the first len bytes of s as a string of its own (copied: s holds more). */
static int strtab_intern_len(struct strtab *t, const char *s, size_t len, int64_t *idx)
{
	char *copy = strndup(s, len);
	int64_t before = (int64_t)t->n;
	int err;

	if (!copy)
		return -ENOMEM;
	err = strtab_add(t, copy, idx);
	if (err || *idx < before || t->owned[*idx]) /* there already (or a repaired copy of it) */
		free(copy);
	else
		t->owned[*idx] = true;
	return err;
}

/* Makes room for function id in the arrays kept by function. */
static int func_room(struct build *b, uint64_t id)
{
	size_t cap = b->func_cap ? 2 * b->func_cap : TABLE_MIN_CAP;
	int64_t **arrays[] = { &b->func_file, &b->func_start, &b->func_system };

	if (id <= b->func_cap)
		return 0;
	while (cap < id)
		cap *= 2;
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		int64_t *a = reallocarray(*arrays[i], cap, sizeof(*a));

		if (!a)
			return -ENOMEM;
		memset(a + b->func_cap, 0, (cap - b->func_cap) * sizeof(*a));
		*arrays[i] = a;
	}
	b->func_cap = cap;
	return 0;
}

/* Records function id's file and first line (a Python function's). */
static int func_source(struct build *b, uint64_t id, int64_t file, int start)
{
	if (func_room(b, id) < 0)
		return -ENOMEM;
	b->func_file[id - 1] = file;
	b->func_start[id - 1] = start;
	return 0;
}

/* Records function id's name as the binary has it (a demangled function's), the first one seen. */
static int func_system(struct build *b, uint64_t id, const char *system_name)
{
	int64_t s;

	if (!system_name || !system_name[0])
		return 0;
	if (func_room(b, id) < 0 || strtab_intern(&b->strs, system_name, &s) < 0)
		return -ENOMEM;
	if (!b->func_system[id - 1])
		b->func_system[id - 1] = s;
	return 0;
}

/* The location id of a Python frame: a Function (QUALNAME, its file, its first line) and a Location per
 * line it ran. */
static int python_location(struct build *b, const struct pprof_frame *f, uint64_t *loc_id)
{
	const char *cut = strrchr(f->name, '(');
	size_t len = cut && cut > f->name + 1 && cut[-1] == ' ' ? (size_t)(cut - 1 - f->name) : strlen(f->name);
	int64_t name, file;
	uint64_t func_id;

	if (strtab_intern_len(&b->strs, f->name, len, &name) < 0 || strtab_intern(&b->strs, f->file, &file) < 0 ||
	    idtab_get(&b->funcs, (uint64_t)name, (uint64_t)file | PY_KEY, &func_id) < 0 ||
	    func_source(b, func_id, file, f->start_line > 0 ? f->start_line : 0) < 0 ||
	    idtab_get(&b->locs, func_id, (uint64_t)(f->line > 0 ? f->line : 0) << 32, loc_id) < 0)
		return -ENOMEM;
	return 0;
}

/* The location id of one frame, adding its strings, mapping, function and location when new. A frame
 * with no module has no mapping; one Location per (function, mapping), so per (module, name) as long
 * as a module path comes with a single build-id. */
static int frame_location(struct build *b, const struct pprof_frame *f, uint64_t *loc_id)
{
	int64_t name, module, build_id;
	uint64_t map_id = 0, func_id;

	if (f->file && f->file[0])
		return python_location(b, f, loc_id);
	if (strtab_intern(&b->strs, f->name, &name) < 0 || strtab_intern(&b->strs, f->module, &module) < 0 ||
	    strtab_intern(&b->strs, f->build_id, &build_id) < 0)
		return -ENOMEM;
	if (module && idtab_get(&b->maps, (uint64_t)module, (uint64_t)build_id, &map_id) < 0)
		return -ENOMEM;
	if (idtab_get(&b->funcs, (uint64_t)name, (uint64_t)module, &func_id) < 0 ||
	    func_system(b, func_id, f->system_name) < 0 || idtab_get(&b->locs, func_id, map_id, loc_id) < 0)
		return -ENOMEM;
	return 0;
}

/* CPU samples: count, saturated to int64; times the period (negative counts as 0), saturated too.
 * A time (ntypes 1): count microseconds as nanoseconds, saturated. */
static void sample_values(uint64_t count, int64_t period_ns, unsigned ntypes, int64_t *values)
{
	int64_t c = count > INT64_MAX ? INT64_MAX : (int64_t)count, cpu;

	if (ntypes == 1) {
		values[0] = __builtin_mul_overflow(c, INT64_C(1000), &cpu) ? INT64_MAX : cpu;
		return;
	}
	if (period_ns < 0)
		period_ns = 0;
	if (__builtin_mul_overflow(c, period_ns, &cpu))
		cpu = INT64_MAX;
	values[0] = c;
	values[1] = cpu;
}

/* Adds the string label key=v to s when v is set and not "". */
static int string_label(struct build *b, size_t first, Perftools__Profiles__Sample *s, int64_t key, const char *v)
{
	Perftools__Profiles__Label *l = &b->labels[first + s->n_label];

	if (!v || !v[0])
		return 0;
	perftools__profiles__label__init(l);
	l->key = key;
	if (strtab_intern(&b->strs, v, &l->str) < 0)
		return -ENOMEM;
	b->label_ptrs[first + s->n_label++] = l;
	return 0;
}

/* The "comm" label (when comm is set), the "pid" label (when pid >= 0), and "unit", "container" and
 * "cgroup" where set. Labels are LABELS slots of b->labels starting at first. */
static int sample_labels(struct build *b, const struct pprof_stack *st, size_t first,
			 Perftools__Profiles__Sample *s)
{
	s->label = &b->label_ptrs[first];
	if (string_label(b, first, s, b->s_comm, st->comm) < 0)
		return -ENOMEM;
	if (st->pid >= 0) {
		Perftools__Profiles__Label *l = &b->labels[first + s->n_label];

		perftools__profiles__label__init(l);
		l->key = b->s_pid;
		l->num = st->pid;
		b->label_ptrs[first + s->n_label++] = l;
	}
	if (string_label(b, first, s, b->s_unit, st->unit) < 0 ||
	    string_label(b, first, s, b->s_container, st->container) < 0 ||
	    string_label(b, first, s, b->s_cgroup, st->cgroup) < 0)
		return -ENOMEM;
	return 0;
}

/* Allocates the per-sample arrays: n samples, their total frame count of location ids. */
static int alloc_samples(struct build *b, const struct pprof_stack *stacks, size_t n)
{
	size_t total = 0;

	for (size_t i = 0; i < n; i++)
		if (stacks[i].frames && __builtin_add_overflow(total, (size_t)stacks[i].nframes, &total))
			return -ENOMEM;
	if (n > SIZE_MAX / LABELS)
		return -ENOMEM;
	b->samples = alloc_array(n, sizeof(*b->samples));
	b->sample_ptrs = alloc_array(n, sizeof(*b->sample_ptrs));
	b->loc_ids = alloc_array(total, sizeof(*b->loc_ids));
	b->values = alloc_array(2 * n, sizeof(*b->values));
	b->labels = alloc_array(LABELS * n, sizeof(*b->labels));
	b->label_ptrs = alloc_array(LABELS * n, sizeof(*b->label_ptrs));
	if (!b->samples || !b->sample_ptrs || !b->loc_ids || !b->values || !b->labels || !b->label_ptrs)
		return -ENOMEM;
	return 0;
}

/* One Sample per stack, in input order, interning everything its frames and labels name. */
static int build_samples(struct build *b, const struct pprof_stack *stacks, size_t n, int64_t period_ns)
{
	size_t off = 0;

	if (alloc_samples(b, stacks, n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct pprof_stack *st = &stacks[i];
		Perftools__Profiles__Sample *s = &b->samples[i];
		unsigned nframes = st->frames ? st->nframes : 0;

		perftools__profiles__sample__init(s);
		s->location_id = &b->loc_ids[off];
		for (unsigned j = 0; j < nframes; j++)
			if (frame_location(b, &st->frames[j], &b->loc_ids[off + s->n_location_id++]) < 0)
				return -ENOMEM;
		off += nframes;
		s->value = &b->values[2 * i];
		s->n_value = b->ntypes;
		sample_values(st->count, period_ns, b->ntypes, s->value);
		if (sample_labels(b, st, LABELS * i, s) < 0)
			return -ENOMEM;
		b->sample_ptrs[i] = s;
	}
	return 0;
}

static int build_mappings(struct build *b)
{
	size_t n = b->maps.n;

	b->map_msgs = alloc_array(n, sizeof(*b->map_msgs));
	b->map_ptrs = alloc_array(n, sizeof(*b->map_ptrs));
	if (!b->map_msgs || !b->map_ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		Perftools__Profiles__Mapping *m = &b->map_msgs[i];

		perftools__profiles__mapping__init(m);
		m->id = i + 1;
		m->filename = (int64_t)b->maps.keys[i].a;
		m->build_id = (int64_t)b->maps.keys[i].b;
		m->has_functions = 1;
		b->map_ptrs[i] = m;
	}
	return 0;
}

static int build_functions(struct build *b)
{
	size_t n = b->funcs.n;

	b->func_msgs = alloc_array(n, sizeof(*b->func_msgs));
	b->func_ptrs = alloc_array(n, sizeof(*b->func_ptrs));
	if (!b->func_msgs || !b->func_ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		Perftools__Profiles__Function *f = &b->func_msgs[i];

		perftools__profiles__function__init(f);
		f->id = i + 1;
		f->name = (int64_t)b->funcs.keys[i].a;
		f->system_name = i < b->func_cap && b->func_system[i] ? b->func_system[i] : f->name;
		if (i < b->func_cap && (b->funcs.keys[i].b & PY_KEY)) {
			f->filename = b->func_file[i];
			f->start_line = b->func_start[i];
		}
		b->func_ptrs[i] = f;
	}
	return 0;
}

/* One Location per (function, mapping) with a single Line and no address; a Python one's Line has the
 * line it ran. */
static int build_locations(struct build *b)
{
	size_t n = b->locs.n;

	b->loc_msgs = alloc_array(n, sizeof(*b->loc_msgs));
	b->loc_ptrs = alloc_array(n, sizeof(*b->loc_ptrs));
	b->lines = alloc_array(n, sizeof(*b->lines));
	b->line_ptrs = alloc_array(n, sizeof(*b->line_ptrs));
	if (!b->loc_msgs || !b->loc_ptrs || !b->lines || !b->line_ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		Perftools__Profiles__Location *l = &b->loc_msgs[i];

		perftools__profiles__line__init(&b->lines[i]);
		b->lines[i].function_id = b->locs.keys[i].a;
		b->lines[i].line = (int64_t)(b->locs.keys[i].b >> 32);
		b->line_ptrs[i] = &b->lines[i];
		perftools__profiles__location__init(l);
		l->id = i + 1;
		l->mapping_id = b->locs.keys[i].b & 0xffffffffu;
		l->n_line = 1;
		l->line = &b->line_ptrs[i];
		b->loc_ptrs[i] = l;
	}
	return 0;
}

/* Points the Profile at everything built. */
static void assemble(struct build *b, size_t n, const struct pprof_info *info, Perftools__Profiles__Profile *p)
{
	p->n_sample_type = b->ntypes;
	p->sample_type = b->type_ptrs;
	p->n_sample = n;
	p->sample = b->sample_ptrs;
	p->n_mapping = b->maps.n;
	p->mapping = b->map_ptrs;
	p->n_location = b->locs.n;
	p->location = b->loc_ptrs;
	p->n_function = b->funcs.n;
	p->function = b->func_ptrs;
	p->n_string_table = b->strs.n;
	p->string_table = b->strs.strs;
	p->time_nanos = info->time_unix_ns;
	p->duration_nanos = info->duration_ns;
	p->period_type = &b->period_type;
	p->period = info->period_ns;
}

/* Runs deflate until it has consumed avail_in (or finished, with Z_FINISH), writing what it makes. */
static int deflate_out(z_stream *z, int flush, FILE *out)
{
	unsigned char buf[16384];
	int zerr;

	do {
		size_t have;

		z->next_out = buf;
		z->avail_out = sizeof(buf);
		zerr = deflate(z, flush);
		if (zerr == Z_STREAM_ERROR)
			return -EIO;
		have = sizeof(buf) - z->avail_out;
		if (have && fwrite(buf, 1, have, out) != have)
			return -EIO;
	} while (flush == Z_FINISH ? zerr != Z_STREAM_END : z->avail_out == 0);
	return 0;
}

/* Writes data gzip-compressed to out. Returns 0, -ENOMEM or -EIO. */
static int write_gzip(FILE *out, const uint8_t *data, size_t len)
{
	z_stream z;
	int err = 0, zerr;

	memset(&z, 0, sizeof(z));
	zerr = deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	if (zerr != Z_OK)
		return zerr == Z_MEM_ERROR ? -ENOMEM : -EIO;
	z.next_in = data;
	while (!err && len > UINT_MAX) { /* avail_in is an unsigned int */
		z.avail_in = UINT_MAX;
		len -= UINT_MAX;
		err = deflate_out(&z, Z_NO_FLUSH, out);
	}
	if (!err) {
		z.avail_in = (uInt)len;
		err = deflate_out(&z, Z_FINISH, out);
	}
	deflateEnd(&z);
	if (!err && (fflush(out) == EOF || ferror(out)))
		err = -EIO;
	return err;
}

/* Packs the Profile and writes it gzipped. */
static int write_profile(struct build *b, const Perftools__Profiles__Profile *p, FILE *out)
{
	size_t len = perftools__profiles__profile__get_packed_size(p);

	b->packed = malloc(len ? len : 1);
	if (!b->packed)
		return -ENOMEM;
	if (perftools__profiles__profile__pack(p, b->packed) != len)
		return -EIO;
	return write_gzip(out, b->packed, len);
}

/* Builds the whole Profile in memory, then packs and gzips it to out (see pprof.h). Samples keep the
 * input order, one per stack. Returns 0, -ENOMEM, -EIO, or -EINVAL for NULL stacks with n > 0. */
int render_pprof(FILE *out, const struct pprof_stack *stacks, size_t n, const struct pprof_info *info)
{
	static const struct pprof_info no_info;
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct build b;
	int err;

	if (!out)
		return -EIO;
	if (!stacks && n)
		return -EINVAL;
	if (!info)
		info = &no_info;
	memset(&b, 0, sizeof(b));
	err = build_init(&b, info->time_type);
	if (!err)
		err = build_samples(&b, stacks, n, info->period_ns);
	if (!err)
		err = build_mappings(&b);
	if (!err)
		err = build_functions(&b);
	if (!err)
		err = build_locations(&b);
	if (!err) {
		assemble(&b, n, info, &p);
		err = write_profile(&b, &p, out);
	}
	build_free(&b);
	return err;
}
