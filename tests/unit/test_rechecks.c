/* test_rechecks.c - the rounds of new processes' reads again (daemon/rechecks.c): due in order, the
 * earlier rounds first, the oldest dropped at a ring's bound (counted), later reports of a chained image
 * told apart from another image under the same pid. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "rechecks.h"

int main(void)
{
	struct rechecks *r = calloc(1, sizeof(*r));
	uint32_t pid = 0;
	unsigned round = 9;

	if (!r) {
		CHECK(0, "calloc");
		return CHECK_EXIT();
	}
	CHECK(!rechecks_next(r, 100.0, &pid, &round) && rechecks_timeout(r, 100.0) == -1, "empty: none due, no timeout");
	rechecks_queue(r, 10, 0, 100.0);  /* due at 100.003 */
	rechecks_queue(r, 11, 2, 100.0);  /* due at 100.250 */
	rechecks_queue(r, 12, 3, 100.0);  /* past the last round: ignored */
	CHECK(rechecks_timeout(r, 100.0) >= 3 && rechecks_timeout(r, 100.0) <= 4,
	      "the timeout reaches the first due (3 ms, rounded up: %d)",
	      rechecks_timeout(r, 100.0));
	CHECK(!rechecks_next(r, 100.001, &pid, &round), "not due before its delay");
	CHECK(rechecks_next(r, 100.01, &pid, &round) && pid == 10 && round == 0, "due after 3 ms: pid 10, round 0");
	rechecks_queue(r, 10, 1, 100.01);  /* due at 100.025 */
	CHECK(rechecks_next(r, 100.3, &pid, &round) && pid == 10 && round == 1, "the earlier round first");
	CHECK(rechecks_next(r, 100.3, &pid, &round) && pid == 11 && round == 2, "then the last round's");
	CHECK(!rechecks_next(r, 1000.0, &pid, &round) && r->taken == 3, "nothing else (3 taken: %llu)",
	      (unsigned long long)r->taken);
	for (uint32_t i = 0; i < RECHECK_MAX + 5; i++)
		rechecks_queue(r, 1000 + i, 1, 200.0);
	CHECK(r->dropped == 5 && rechecks_next(r, 300.0, &pid, &round) && pid == 1005,
	      "a full ring drops its oldest, counted (%llu; next %u)", (unsigned long long)r->dropped, pid);
	CHECK(!rechecks_chained(r, 7, 1), "an image not chained");
	rechecks_chain(r, 7, 1);
	CHECK(rechecks_chained(r, 7, 1) && !rechecks_chained(r, 7, 2) && !rechecks_chained(r, 7 + RECHECK_CHAINED, 1),
	      "chained: that image of that pid only");
	free(r);
	return CHECK_EXIT();
}
