/* framecache.c - one flush's named user frames by (pid, how, value), in one arena emptied per flush (see
 * framecache.h). */
#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "framecache.h"
#include "util/hash.h"

/* One frame in the arena: its key and name, then the strings the name points at. */
struct entry {
	struct frame_key key;
	struct named_frame f;
};

struct framecache {
	struct entry **slots; /* open addressing; twice max_entries, a power of two */
	size_t nslots, count;
	unsigned max_entries;
	char *arena;          /* max_bytes, allocated at the first put; its pages stay once touched */
	size_t used, max_bytes;
	struct framecache_stats st;
};

int framecache_new(unsigned max_entries, size_t max_bytes, struct framecache **out)
{
	struct framecache *c;

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

void framecache_reset(struct framecache *c)
{
	if (c->count)
		memset(c->slots, 0, c->nslots * sizeof(*c->slots));
	c->count = c->used = 0;
}

static size_t slot_of(const struct framecache *c, const struct frame_key *k)
{
	uint64_t v[2] = { (uint64_t)k->pid << 32 | k->how, k->value };

	return hash_words(v, 2) & (c->nslots - 1);
}

const struct named_frame *framecache_get(struct framecache *c, const struct frame_key *k)
{
	for (size_t i = slot_of(c, k);; i = (i + 1) & (c->nslots - 1)) {
		const struct entry *e = c->slots[i];

		if (!e)
			break;
		if (e->key.pid == k->pid && e->key.how == k->how && e->key.value == k->value) {
			c->st.hits++;
			return &e->f;
		}
	}
	c->st.misses++;
	return NULL;
}

/* s, or "" for NULL. */
static const char *str(const char *s)
{
	return s ? s : "";
}

/* Copies s (NULL: "") to *at and returns where it went; *at moves past it. */
static const char *copy_str(char **at, const char *s)
{
	size_t n = strlen(str(s)) + 1;
	char *dst = memcpy(*at, str(s), n);

	*at += n;
	return dst;
}

int framecache_put(struct framecache *c, const struct frame_key *k, const struct named_frame *f)
{
	int ninlined = f->ninlined < 0 ? 0 : f->ninlined > SYMBOLIZER_MAX_INLINED ? SYMBOLIZER_MAX_INLINED : f->ninlined;
	size_t bytes = sizeof(struct entry) + strlen(str(f->name)) + strlen(str(f->module)) +
		       strlen(str(f->build_id)) + strlen(str(f->file)) + 4, i;
	struct entry *e;
	char *at;

	for (int j = 0; j < ninlined; j++)
		bytes += strlen(str(f->inlined[j])) + 1;
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
	at = (char *)(e + 1);
	e->f = (struct named_frame){ .kind = f->kind, .start_line = f->start_line, .line = f->line,
				     .ninlined = ninlined };
	e->f.name = copy_str(&at, f->name);
	e->f.module = copy_str(&at, f->module);
	e->f.build_id = copy_str(&at, f->build_id);
	e->f.file = copy_str(&at, f->file);
	for (int j = 0; j < ninlined; j++)
		e->f.inlined[j] = copy_str(&at, f->inlined[j]);
	for (i = slot_of(c, k); c->slots[i]; i = (i + 1) & (c->nslots - 1))
		;
	c->slots[i] = e;
	c->count++;
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
	free(c->arena);
	free(c->slots);
	free(c);
}
