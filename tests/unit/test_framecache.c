/* test_framecache.c - the per-flush cache of named user frames: copies kept by (pid, how, value), found
 * again, emptied at a reset, and bounded by entries and bytes (what does not fit is counted, not kept). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "framecache.h"

static void test_found_again(void)
{
	char name[] = "work", module[] = "/usr/bin/app", inl[] = "helper";
	struct named_frame f = { .kind = FRAME_USER, .name = name, .module = module, .build_id = "ab12",
				 .file = NULL, .ninlined = 1, .inlined = { inl } };
	struct frame_key k = { .pid = 42, .how = 1, .value = 0x401234 }, other = k;
	struct framecache_stats st;
	const struct named_frame *got;
	struct framecache *c;

	CHECK(framecache_new(16, 1 << 20, &c) == 0, "found: created");
	CHECK(framecache_get(c, &k) == NULL, "found: nothing before a put");
	CHECK(framecache_put(c, &k, &f) == 0, "found: put");
	name[0] = module[0] = inl[0] = 'X'; /* the cache holds copies */
	got = framecache_get(c, &k);
	CHECK(got && got->kind == FRAME_USER && !strcmp(got->name, "work") && !strcmp(got->module, "/usr/bin/app") &&
		      !strcmp(got->build_id, "ab12") && !strcmp(got->file, "") && got->ninlined == 1 &&
		      !strcmp(got->inlined[0], "helper"),
	      "found: a copy of the name, origin and inlined names (a NULL file as \"\")");
	other.how = 0;
	CHECK(framecache_get(c, &other) == NULL, "found: the same address reached another way is another entry");
	other = k;
	other.pid = 43;
	CHECK(framecache_get(c, &other) == NULL, "found: another process is another entry");
	other = k;
	other.value++;
	CHECK(framecache_get(c, &other) == NULL, "found: another value is another entry");
	framecache_reset(c);
	CHECK(framecache_get(c, &k) == NULL, "found: gone after a reset");
	framecache_get_stats(c, &st);
	CHECK(st.hits == 1 && st.misses == 5, "found: 1 hit, 5 misses counted (%llu, %llu)",
	      (unsigned long long)st.hits, (unsigned long long)st.misses);
	framecache_free(c);
}

static void test_runtime_frame(void)
{
	struct named_frame f = { .kind = 100, .name = "tooth (pyspin.py)", .module = "", .build_id = "",
				 .file = "/usr/lib/pyspin.py", .start_line = 10, .line = 12,
				 .ninlined = SYMBOLIZER_MAX_INLINED + 5 };
	struct frame_key k = { .pid = 7, .value = 0xc0de };
	const struct named_frame *got;
	struct framecache *c;

	for (int i = 0; i < SYMBOLIZER_MAX_INLINED; i++)
		f.inlined[i] = "x";
	CHECK(framecache_new(4, 1 << 16, &c) == 0, "runtime: created");
	CHECK(framecache_put(c, &k, &f) == 0, "runtime: put");
	got = framecache_get(c, &k);
	CHECK(got && got->kind == 100 && !strcmp(got->file, "/usr/lib/pyspin.py") && got->start_line == 10 &&
		      got->line == 12 && got->ninlined == SYMBOLIZER_MAX_INLINED,
	      "runtime: its kind, file and lines kept; inlined names at most SYMBOLIZER_MAX_INLINED");
	framecache_free(c);
}

static void test_bounds(void)
{
	struct named_frame f = { .kind = FRAME_USER, .name = "main", .module = "/usr/bin/app" };
	struct framecache_stats st;
	struct framecache *c;
	int kept = 0, err = 0;

	CHECK(framecache_new(0, 1, &c) == -EINVAL && framecache_new(1, 0, &c) == -EINVAL, "bounds: zero refused");
	CHECK(framecache_new(8, 1 << 20, &c) == 0, "bounds: 8 entries");
	for (uint64_t i = 0; i < 20; i++) {
		err = framecache_put(c, &(struct frame_key){ .pid = 1, .value = i + 1 }, &f);
		kept += err == 0;
	}
	framecache_get_stats(c, &st);
	CHECK(kept == 8 && err == -ENOSPC && st.full == 12, "bounds: 8 kept, 12 counted as not fitting (%d, %llu)",
	      kept, (unsigned long long)st.full);
	for (uint64_t i = 0; i < 8; i++) {
		const struct named_frame *got = framecache_get(c, &(struct frame_key){ .pid = 1, .value = i + 1 });

		if (!got || strcmp(got->name, "main"))
			err = 1;
	}
	CHECK(err != 1, "bounds: the 8 kept are found");
	framecache_reset(c);
	CHECK(framecache_put(c, &(struct frame_key){ .pid = 2 }, &f) == 0, "bounds: room again after a reset");
	framecache_free(c);
	CHECK(framecache_new(100, 64, &c) == 0, "bytes: 64 bytes");
	CHECK(framecache_put(c, &(struct frame_key){ .pid = 3 }, &f) == -ENOSPC, "bytes: a frame over the bytes refused");
	framecache_free(c);
	framecache_free(NULL);
}

int main(void)
{
	test_found_again();
	test_runtime_frame();
	test_bounds();
	return CHECK_EXIT();
}
