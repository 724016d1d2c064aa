/* framecache.c - one flush's named user frames by (pid, how, value), in a table of the flush (flushtab.h;
 * see framecache.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "flushtab.h"
#include "framecache.h"
#include "util/hash.h"

/* One frame in the table: its key and name, then the strings the name points at. */
struct entry {
	struct frame_key key;
	struct named_frame f;
};

struct framecache {
	struct flushtab t;
	struct framecache_stats st;
};

int framecache_new(unsigned max_entries, size_t max_bytes, struct framecache **out)
{
	struct framecache *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	err = flushtab_init(&c->t, max_entries, max_bytes);
	if (err) {
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

void framecache_reset(struct framecache *c)
{
	flushtab_reset(&c->t);
}

static uint64_t hash_of(const struct frame_key *k)
{
	uint64_t v[2] = { (uint64_t)k->pid << 32 | k->how, k->value };

	return hash_words(v, 2);
}

static bool same(const void *entry, const void *key)
{
	const struct frame_key *a = &((const struct entry *)entry)->key, *b = key;

	return a->pid == b->pid && a->how == b->how && a->value == b->value;
}

const struct named_frame *framecache_get(struct framecache *c, const struct frame_key *k)
{
	struct entry *e = flushtab_find(&c->t, hash_of(k), same, k);

	if (e) {
		c->st.hits++;
		return &e->f;
	}
	c->st.misses++;
	return NULL;
}


int framecache_put(struct framecache *c, const struct frame_key *k, const struct named_frame *f)
{
	int ninlined = f->ninlined < 0 ? 0 : f->ninlined > SYMBOLIZER_MAX_INLINED ? SYMBOLIZER_MAX_INLINED : f->ninlined;
	size_t bytes = sizeof(struct entry) + flushtab_str_bytes(f->name) + flushtab_str_bytes(f->module) +
		       flushtab_str_bytes(f->build_id) + flushtab_str_bytes(f->file);
	struct entry *e;
	char *at;
	int err;

	for (int j = 0; j < ninlined; j++)
		bytes += flushtab_str_bytes(f->inlined[j]);
	err = flushtab_add(&c->t, hash_of(k), bytes, (void **)&e);
	if (err) {
		c->st.full += err == -ENOSPC;
		return err;
	}
	e->key = *k;
	at = (char *)(e + 1);
	e->f = (struct named_frame){ .kind = f->kind, .start_line = f->start_line, .line = f->line,
				     .ninlined = ninlined };
	e->f.name = flushtab_copy_str(&at, f->name);
	e->f.module = flushtab_copy_str(&at, f->module);
	e->f.build_id = flushtab_copy_str(&at, f->build_id);
	e->f.file = flushtab_copy_str(&at, f->file);
	for (int j = 0; j < ninlined; j++)
		e->f.inlined[j] = flushtab_copy_str(&at, f->inlined[j]);
	return 0;
}

void framecache_get_stats(const struct framecache *c, struct framecache_stats *out)
{
	*out = c->st;
}

void framecache_free(struct framecache *c)
{
	if (!c)
		return;
	flushtab_fini(&c->t);
	free(c);
}
