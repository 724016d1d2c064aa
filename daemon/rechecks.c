/* rechecks.c - new processes' mappings read again shortly: the rounds' rings (see rechecks.h). */
#include "rechecks.h"

static const unsigned delays_ms[RECHECK_ROUNDS] = { 3, 15, 250 };

void rechecks_queue(struct rechecks *r, uint32_t pid, unsigned round, double now)
{
	struct recheck_ring *q;
	unsigned at;

	if (round >= RECHECK_ROUNDS)
		return;
	q = &r->ring[round];
	if (q->count == RECHECK_MAX) { /* the oldest dropped */
		q->head = (q->head + 1) % RECHECK_MAX;
		q->count--;
		r->dropped++;
	}
	at = (q->head + q->count) % RECHECK_MAX;
	q->e[at].pid = pid;
	q->e[at].due = now + delays_ms[round] / 1e3;
	q->count++;
}

bool rechecks_chained(const struct rechecks *r, uint32_t pid, uint64_t token)
{
	return r->chained[pid % RECHECK_CHAINED].pid == pid && r->chained[pid % RECHECK_CHAINED].token == token;
}

void rechecks_chain(struct rechecks *r, uint32_t pid, uint64_t token)
{
	r->chained[pid % RECHECK_CHAINED].pid = pid;
	r->chained[pid % RECHECK_CHAINED].token = token;
}

bool rechecks_next(struct rechecks *r, double now, uint32_t *pid, unsigned *round)
{
	for (unsigned i = 0; i < RECHECK_ROUNDS; i++) {
		struct recheck_ring *q = &r->ring[i];

		if (q->count && q->e[q->head].due <= now) {
			*pid = q->e[q->head].pid;
			*round = i;
			q->head = (q->head + 1) % RECHECK_MAX;
			q->count--;
			r->taken++;
			return true;
		}
	}
	return false;
}

int rechecks_timeout(const struct rechecks *r, double now)
{
	double next = -1;

	for (unsigned i = 0; i < RECHECK_ROUNDS; i++) {
		const struct recheck_ring *q = &r->ring[i];

		if (q->count && (next < 0 || q->e[q->head].due < next))
			next = q->e[q->head].due;
	}
	return next < 0 ? -1 : (int)((next - now) * 1e3) + 1;
}
