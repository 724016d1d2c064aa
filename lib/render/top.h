/* top.h - functions ranked by self samples (as the leaf) and total samples (anywhere in the stack). */
#ifndef FLAMED_RENDER_TOP_H
#define FLAMED_RENDER_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "render/unit.h"

struct top;

struct top_entry {
	const char *name;
	uint64_t self;   /* samples where it is the leaf */
	uint64_t total;  /* samples where it is anywhere in the stack, counted once per stack */
};

/* Creates an empty table holding up to max_functions names (0: 1,000,000; more are counted in
 * top_dropped). Returns 0 or -ENOMEM. */
int top_new(size_t max_functions, struct top **out);

/* Adds count samples of folded ("a;b;c", root first, without the process name).
 * Returns 0, -EINVAL or -ENOMEM. */
int top_add(struct top *t, const char *folded, uint64_t count);

/* Sorts by self, then total, then name, and returns the entries; *n is their number. The pointer
 * stays valid until top_free(). */
const struct top_entry *top_sorted(struct top *t, size_t *n);

/* Samples added in all. */
uint64_t top_samples(const struct top *t);

/* Frames not counted because the table was full. */
uint64_t top_dropped(const struct top *t);

/* Writes the first limit entries (0: all) as an aligned table with percentages (tty; counts in samples,
 * or times as unit_amount writes them) or as tab-separated "self total name" lines (bare numbers).
 * Returns 0 or -EIO. */
int render_top_text(FILE *out, struct top *t, size_t limit, bool tty, enum unit unit);

/* Writes {"unit": "samples"|"microseconds", "total": N, "dropped": N, "functions": [{"name", "self",
 * "total"}, ...]}. Returns 0 or -EIO. */
int render_top_json(FILE *out, struct top *t, size_t limit, enum unit unit);

/* Frees; NULL is safe. */
void top_free(struct top *t);

#endif
