/* store_meta.c - what the daemon records about how its samples were taken: the CPU sampling period,
 * which turns CPU samples into time for wall-clock queries read later (flamectl --db). */
#include <errno.h>
#include <stdbool.h>

#include "store/store_impl.h"

#define PERIOD_KEY "cpu_period_us"
#define PERIOD_MAX 1000000 /* one sample a second */

int store_set_cpu_period(struct store *st, int64_t us)
{
	if (us < 1 || us > PERIOD_MAX)
		return store_set_err(st, -EINVAL, "a CPU sampling period of %lld us: wants 1..%d", (long long)us,
				     PERIOD_MAX);
	if (st->mode != STORE_READ_WRITE || !st->meta_put)
		return store_set_err(st, -EROFS, "cannot record the sampling period: the store is read-only");
	sqlite3_bind_text(st->meta_put, 1, PERIOD_KEY, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st->meta_put, 2, us);
	return store_run(st, st->meta_put, "cannot record the sampling period");
}

int store_cpu_period(struct store *st, int64_t *us)
{
	bool found = false;
	int64_t v = 0;
	int err = store_sql_int(st, "SELECT value FROM meta WHERE key = '" PERIOD_KEY "'", &v, &found);

	if (err)
		return err;
	if (!found)
		return -ENOENT;
	if (v < 1 || v > PERIOD_MAX)
		return store_set_err(st, -EIO, "the recorded CPU sampling period (%lld us) is out of 1..%d", (long long)v,
				     PERIOD_MAX);
	*us = v;
	return 0;
}
