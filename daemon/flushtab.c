/* flushtab.c - one flush's entries in an arena, found by hash (see flushtab.h). */
#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "flushtab.h"

int flushtab_init(struct flushtab *t, unsigned max_entries, size_t max_bytes)
{
	memset(t, 0, sizeof(*t));
	if (!max_entries || !max_bytes)
		return -EINVAL;
	t->nslots = 16;
	while (t->nslots < 2 * (size_t)max_entries)
		t->nslots *= 2;
	t->slots = calloc(t->nslots, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	t->max_entries = max_entries;
	t->max_bytes = max_bytes;
	return 0;
}

void flushtab_reset(struct flushtab *t)
{
	if (t->count)
		memset(t->slots, 0, t->nslots * sizeof(*t->slots));
	t->count = t->used = 0;
}

void *flushtab_find(const struct flushtab *t, uint64_t hash, bool (*same)(const void *entry, const void *key),
		    const void *key)
{
	for (size_t i = hash & (t->nslots - 1);; i = (i + 1) & (t->nslots - 1)) {
		void *e = t->slots[i];

		if (!e || same(e, key))
			return e;
	}
}

int flushtab_add(struct flushtab *t, uint64_t hash, size_t bytes, void **out)
{
	size_t i;

	bytes = (bytes + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
	if (t->count >= t->max_entries || bytes > t->max_bytes - t->used)
		return -ENOSPC;
	if (!t->arena && !(t->arena = malloc(t->max_bytes)))
		return -ENOMEM;
	for (i = hash & (t->nslots - 1); t->slots[i]; i = (i + 1) & (t->nslots - 1))
		;
	*out = t->slots[i] = t->arena + t->used;
	t->used += bytes;
	t->count++;
	return 0;
}

size_t flushtab_str_bytes(const char *s)
{
	return (s ? strlen(s) : 0) + 1;
}

const char *flushtab_copy_str(char **at, const char *s)
{
	size_t n = strlen(s ? s : "") + 1;
	char *dst = memcpy(*at, s ? s : "", n);

	*at += n;
	return dst;
}

void flushtab_fini(struct flushtab *t)
{
	free(t->arena);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
