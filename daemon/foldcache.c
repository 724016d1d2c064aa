/* foldcache.c - one flush's folded stacks by raw stack, in a table of the flush (flushtab.h; see
 * foldcache.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "flushtab.h"
#include "foldcache.h"
#include "util/hash.h"

/* One stack in the table: its frames, then every string they and its text point at. */
struct entry {
	struct fold_key key;
	struct folded f;
	int64_t stack_id; /* f.stack_id's */
	struct store_frame frames[];
};

struct foldcache {
	struct flushtab t;
	struct foldcache_stats st;
};

int foldcache_new(unsigned max_entries, size_t max_bytes, struct foldcache **out)
{
	struct foldcache *c = calloc(1, sizeof(*c));
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

void foldcache_reset(struct foldcache *c)
{
	flushtab_reset(&c->t);
}

static uint64_t hash_of(const struct fold_key *k)
{
	uint64_t v[3] = { (uint64_t)k->pid << 32 | k->flags, k->ustack ^ k->sec, k->kstack };

	return hash_words(v, 3);
}

static bool same(const void *entry, const void *key)
{
	const struct fold_key *a = &((const struct entry *)entry)->key, *b = key;

	return a->pid == b->pid && a->flags == b->flags && a->ustack == b->ustack && a->kstack == b->kstack &&
	       a->sec == b->sec;
}

const struct folded *foldcache_get(struct foldcache *c, const struct fold_key *k)
{
	struct entry *e = flushtab_find(&c->t, hash_of(k), same, k);

	if (e) {
		c->st.hits++;
		return &e->f;
	}
	c->st.misses++;
	return NULL;
}

int foldcache_put(struct foldcache *c, const struct fold_key *k, const struct folded *f, const struct folded **kept)
{
	size_t bytes = sizeof(struct entry) + f->nframes * sizeof(struct store_frame) + flushtab_str_bytes(f->text);
	struct entry *e;
	char *at;
	int err;

	for (unsigned j = 0; j < f->nframes; j++)
		bytes += flushtab_str_bytes(f->frames[j].name) + flushtab_str_bytes(f->frames[j].module) +
			 flushtab_str_bytes(f->frames[j].build_id) + flushtab_str_bytes(f->frames[j].file);
	err = flushtab_add(&c->t, hash_of(k), bytes, (void **)&e);
	if (err) {
		c->st.full += err == -ENOSPC;
		return err;
	}
	e->key = *k;
	at = (char *)&e->frames[f->nframes];
	e->f.text = flushtab_copy_str(&at, f->text);
	for (unsigned j = 0; j < f->nframes; j++) {
		e->frames[j] = (struct store_frame){ .start_line = f->frames[j].start_line, .line = f->frames[j].line };
		e->frames[j].name = flushtab_copy_str(&at, f->frames[j].name);
		e->frames[j].module = flushtab_copy_str(&at, f->frames[j].module);
		e->frames[j].build_id = flushtab_copy_str(&at, f->frames[j].build_id);
		e->frames[j].file = flushtab_copy_str(&at, f->frames[j].file);
	}
	e->f.frames = e->frames;
	e->f.nframes = f->nframes;
	e->stack_id = 0;
	e->f.stack_id = &e->stack_id;
	if (kept)
		*kept = &e->f;
	return 0;
}

void foldcache_get_stats(const struct foldcache *c, struct foldcache_stats *out)
{
	*out = c->st;
}

void foldcache_free(struct foldcache *c)
{
	if (!c)
		return;
	flushtab_fini(&c->t);
	free(c);
}
