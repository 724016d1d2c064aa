/* test_foldcache.c - the per-flush cache of folded stacks: copies kept by raw stack, found again,
 * emptied at a reset, and bounded by entries and bytes (what does not fit is counted, not kept). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "foldcache.h"

static const struct store_frame frames[] = {
	{ .name = "main", .module = "/usr/bin/app", .build_id = "ab12" },
	{ .name = "work", .module = "/usr/bin/app", .build_id = "ab12" },
	{ .name = "vfs_read_[k]", .module = "[kernel]", .build_id = NULL },
};

static void test_found_again(void)
{
	struct foldcache *c;
	struct fold_key k = { .pid = 42, .flags = 0, .ustack = 0x1234, .kstack = 0x99 }, other = k;
	char text[] = "main;work;vfs_read_[k]";
	struct folded f = { .text = text, .frames = frames, .nframes = 3 };
	const struct folded *got;
	struct foldcache_stats st;

	CHECK(foldcache_new(16, 1 << 20, &c) == 0, "found: created");
	CHECK(foldcache_get(c, &k) == NULL, "found: nothing before a put");
	const struct folded *kept = NULL;

	CHECK(foldcache_put(c, &k, &f, &kept) == 0, "found: put");
	text[0] = 'X'; /* the cache holds a copy */
	got = foldcache_get(c, &k);
	CHECK(got && got == kept && got->stack_id && *got->stack_id == 0,
	      "found: the copy put is the one found, with a stack id of its own, 0 until the store sets it");
	CHECK(got && !strcmp(got->text, "main;work;vfs_read_[k]") && got->nframes == 3 &&
		      !strcmp(got->frames[1].name, "work") && !strcmp(got->frames[2].module, "[kernel]") &&
		      !strcmp(got->frames[2].build_id, "") && !strcmp(got->frames[0].build_id, "ab12"),
	      "found: a copy of the text and frames (a NULL build-id as \"\")");
	other.kstack = 0x98;
	CHECK(foldcache_get(c, &other) == NULL, "found: another kernel stack is another entry");
	other = k;
	other.pid = 43;
	CHECK(foldcache_get(c, &other) == NULL, "found: another process is another entry");
	foldcache_reset(c);
	CHECK(foldcache_get(c, &k) == NULL, "found: gone after a reset");
	foldcache_get_stats(c, &st);
	CHECK(st.hits == 1 && st.misses == 4, "found: 1 hit, 4 misses counted (%llu, %llu)",
	      (unsigned long long)st.hits, (unsigned long long)st.misses);
	foldcache_free(c);
}

static void test_bounds(void)
{
	struct foldcache *c;
	struct folded f = { .text = "main;work", .frames = frames, .nframes = 2 };
	struct foldcache_stats st;
	int kept = 0, err = 0;

	CHECK(foldcache_new(0, 1, &c) == -EINVAL && foldcache_new(1, 0, &c) == -EINVAL, "bounds: zero refused");
	CHECK(foldcache_new(8, 1 << 20, &c) == 0, "bounds: 8 entries");
	for (uint64_t i = 0; i < 20; i++) {
		struct fold_key k = { .pid = 1, .ustack = i + 1 };

		err = foldcache_put(c, &k, &f, NULL);
		kept += err == 0;
	}
	foldcache_get_stats(c, &st);
	CHECK(kept == 8 && err == -ENOSPC && st.full == 12, "bounds: 8 kept, 12 counted as not fitting (%d, %llu)",
	      kept, (unsigned long long)st.full);
	for (uint64_t i = 0; i < 8; i++) {
		struct fold_key k = { .pid = 1, .ustack = i + 1 };
		const struct folded *got = foldcache_get(c, &k);

		if (!got || strcmp(got->text, "main;work"))
			err = 1;
	}
	CHECK(err != 1, "bounds: the 8 kept are found");
	foldcache_reset(c);
	CHECK(foldcache_put(c, &(struct fold_key){ .pid = 2 }, &f, NULL) == 0, "bounds: room again after a reset");
	foldcache_free(c);
	CHECK(foldcache_new(100, 64, &c) == 0, "bytes: 64 bytes");
	CHECK(foldcache_put(c, &(struct fold_key){ .pid = 3 }, &f, NULL) == -ENOSPC, "bytes: a stack over the bytes refused");
	foldcache_free(c);
	foldcache_free(NULL);
}

int main(void)
{
	test_found_again();
	test_bounds();
	return CHECK_EXIT();
}
