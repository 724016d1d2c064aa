/* test_pidcache.c - the per-process table under the symbolizer's caches: entries found by pid, the
 * least recently used evicted at the bound, idle ones dropped at a flush, each released once. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "util/pidcache.h"

struct item {
	struct pidcache_entry e;
	int payload;
};

static int released[64];

static void release(struct pidcache_entry *e, void *ctx)
{
	(void)ctx;
	if (e->pid < 64)
		released[e->pid]++;
}

int main(void)
{
	struct pidcache c;
	struct item *a, *b;
	int total = 0;

	CHECK(pidcache_init(&c, 0, sizeof(struct item), release, NULL) == -EINVAL, "a table of 0 entries is refused");
	CHECK(pidcache_init(&c, 4, 1, release, NULL) == -EINVAL, "an entry smaller than pidcache_entry is refused");
	CHECK(pidcache_init(&c, 3, sizeof(struct item), release, NULL) == 0, "a table of 3 entries");

	a = (struct item *)pidcache_get(&c, 1);
	CHECK(a && a->e.pid == 1 && a->payload == 0, "get creates a zeroed entry for pid 1");
	a->payload = 7;
	b = (struct item *)pidcache_get(&c, 1);
	CHECK(b == a && b->payload == 7, "get finds it again, as it was left");
	CHECK(pidcache_find(&c, 2) == NULL, "find does not create pid 2");
	pidcache_get(&c, 2);
	pidcache_get(&c, 3);
	pidcache_get(&c, 1); /* 1 is now the most recent: 2 the oldest */
	pidcache_get(&c, 4);
	CHECK(c.count == 3, "the bound holds: 3 entries (%zu)", c.count);
	CHECK(pidcache_find(&c, 2) == NULL && released[2] == 1, "the least recently used (pid 2) was evicted and released once");
	CHECK(pidcache_find(&c, 1) && pidcache_find(&c, 3) && pidcache_find(&c, 4), "pids 1, 3 and 4 stay");

	/* Flushes: an entry not looked up for 2 flushes goes at the start of the next. */
	pidcache_begin_flush(&c, 2);
	pidcache_get(&c, 4);
	pidcache_begin_flush(&c, 2);
	CHECK(pidcache_find(&c, 1) == NULL && pidcache_find(&c, 3) == NULL && pidcache_find(&c, 4),
	      "idle for 2 flushes: pids 1 and 3 dropped, pid 4 (used in the last) kept");
	CHECK(released[1] == 1 && released[3] == 1, "each dropped entry released once");

	/* Many pids through a small table: the same slots reused, nothing lost or kept twice. */
	int added = 0;
	for (uint32_t pid = 10; pid < 60; pid++)
		added += pidcache_get(&c, pid) != NULL;
	CHECK(added == 50, "50 more pids added (%d)", added);
	CHECK(c.count == 3 && pidcache_find(&c, 57) && pidcache_find(&c, 58) && pidcache_find(&c, 59),
	      "after 50 pids the 3 newest are held");
	pidcache_fini(&c);
	for (int i = 0; i < 64; i++)
		total += released[i];
	CHECK(total == 4 + 50, "each of the 54 entries made released exactly once, at eviction, drop or fini (%d)", total);
	CHECK(c.buckets == NULL, "fini frees the table");
	return CHECK_EXIT();
}
