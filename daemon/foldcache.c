/* foldcache.c - one flush's folded stacks by raw stack, in one arena emptied per flush (see foldcache.h). */
#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "foldcache.h"
#include "util/hash.h"

/* One stack in the arena: its frames, then every string they and its text point at. */
struct entry {
	struct fold_key key;
	struct folded f;
	int64_t stack_id; /* f.stack_id's */
	struct store_frame frames[];
};

struct foldcache {
	struct entry **slots; /* open addressing; twice max_entries, a power of two */
	size_t nslots, count;
	unsigned max_entries;
	char *arena;          /* max_bytes, allocated at the first put; its pages stay once touched */
	size_t used, max_bytes;
	struct foldcache_stats st;
};

int foldcache_new(unsigned max_entries, size_t max_bytes, struct foldcache **out)
{
	struct foldcache *c;

	if (!max_entries || !max_bytes)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->nslots = 16;
	while (c->nslots < 2 * (size_t)max_entries)
		c->nslots *= 2;
	c->slots = calloc(c->nslots, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return -ENOMEM;
	}
	c->max_entries = max_entries;
	c->max_bytes = max_bytes;
	*out = c;
	return 0;
}

void foldcache_reset(struct foldcache *c)
{
	if (c->count)
		memset(c->slots, 0, c->nslots * sizeof(*c->slots));
	c->count = c->used = 0;
}

static size_t slot_of(const struct foldcache *c, const struct fold_key *k)
{
	uint64_t v[3] = { (uint64_t)k->pid << 32 | k->flags, k->ustack ^ k->sec, k->kstack };

	return hash_words(v, 3) & (c->nslots - 1);
}

static bool same(const struct fold_key *a, const struct fold_key *b)
{
	return a->pid == b->pid && a->flags == b->flags && a->ustack == b->ustack && a->kstack == b->kstack &&
	       a->sec == b->sec;
}

const struct folded *foldcache_get(struct foldcache *c, const struct fold_key *k)
{
	for (size_t i = slot_of(c, k);; i = (i + 1) & (c->nslots - 1)) {
		struct entry *e = c->slots[i];

		if (!e)
			break;
		if (same(&e->key, k)) {
			c->st.hits++;
			return &e->f;
		}
	}
	c->st.misses++;
	return NULL;
}

/* Copies s to *at and returns where it went; *at moves past it. */
static const char *copy_str(char **at, const char *s)
{
	size_t n = strlen(s) + 1;
	char *dst = memcpy(*at, s, n);

	*at += n;
	return dst;
}

/* s, or "" for NULL. */
static const char *str(const char *s)
{
	return s ? s : "";
}

int foldcache_put(struct foldcache *c, const struct fold_key *k, const struct folded *f, const struct folded **kept)
{
	size_t bytes = sizeof(struct entry) + f->nframes * sizeof(struct store_frame) + strlen(f->text) + 1, i;
	struct entry *e;
	char *at;

	for (unsigned j = 0; j < f->nframes; j++)
		bytes += strlen(f->frames[j].name) + strlen(str(f->frames[j].module)) +
			 strlen(str(f->frames[j].build_id)) + strlen(str(f->frames[j].file)) + 4;
	bytes = (bytes + alignof(struct entry) - 1) & ~(alignof(struct entry) - 1);
	if (c->count >= c->max_entries || bytes > c->max_bytes - c->used) {
		c->st.full++;
		return -ENOSPC;
	}
	if (!c->arena && !(c->arena = malloc(c->max_bytes)))
		return -ENOMEM;
	e = (struct entry *)(c->arena + c->used);
	c->used += bytes;
	e->key = *k;
	at = (char *)&e->frames[f->nframes];
	e->f.text = copy_str(&at, f->text);
	for (unsigned j = 0; j < f->nframes; j++) {
		e->frames[j] = (struct store_frame){ .start_line = f->frames[j].start_line, .line = f->frames[j].line };
		e->frames[j].name = copy_str(&at, f->frames[j].name);
		e->frames[j].module = copy_str(&at, str(f->frames[j].module));
		e->frames[j].build_id = copy_str(&at, str(f->frames[j].build_id));
		e->frames[j].file = copy_str(&at, str(f->frames[j].file));
	}
	e->f.frames = e->frames;
	e->f.nframes = f->nframes;
	e->stack_id = 0;
	e->f.stack_id = &e->stack_id;
	for (i = slot_of(c, k); c->slots[i]; i = (i + 1) & (c->nslots - 1))
		;
	c->slots[i] = e;
	c->count++;
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
	free(c->arena);
	free(c->slots);
	free(c);
}
