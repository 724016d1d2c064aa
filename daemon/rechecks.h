/* rechecks.h - new processes whose mappings the daemon reads again shortly after their first report
 * (the first read may come before the dynamic loader mapped their libraries; the last, before a runtime
 * mapped its jitdump file: samples named after the process exited, deferred ones, find it there): one
 * ring per round, in due order, and the images whose rechecks are queued already. What a read does is
 * main.c's. */
#ifndef FLAMED_RECHECKS_H
#define FLAMED_RECHECKS_H

#include <stdbool.h>
#include <stdint.h>

#define RECHECK_MAX 1024 /* processes waiting for one round; more drop the oldest (counted) */
#define RECHECK_ROUNDS 3
#define RECHECK_CHAINED 256

struct rechecks {
	struct recheck_ring {
		struct {
			uint32_t pid;
			double due; /* monotonic seconds */
		} e[RECHECK_MAX];
		unsigned head, count;
	} ring[RECHECK_ROUNDS];
	/* Program images whose rechecks were queued lately, by pid, direct-mapped: the BPF program
	 * reports a new process at up to three of its first samples, and one chain of rechecks serves all. */
	struct {
		uint32_t pid;
		uint64_t token; /* process_event.token: the image */
	} chained[RECHECK_CHAINED];
	uint64_t taken;   /* rechecks whose time came */
	uint64_t dropped; /* rechecks dropped at a ring's bound */
};

/* Queues pid for round (0 to RECHECK_ROUNDS - 1; later ones are ignored), due after its delay from now. */
void rechecks_queue(struct rechecks *r, uint32_t pid, unsigned round, double now);

/* Whether pid's image token has its rechecks queued already (a later report of it). */
bool rechecks_chained(const struct rechecks *r, uint32_t pid, uint64_t token);

/* Notes that pid's image token has its rechecks queued. */
void rechecks_chain(struct rechecks *r, uint32_t pid, uint64_t token);

/* Takes the next recheck due by now, the earlier rounds first: its pid and round. False: none due. */
bool rechecks_next(struct rechecks *r, double now, uint32_t *pid, unsigned *round);

/* The poll timeout (ms) to the next recheck due, -1 for none. */
int rechecks_timeout(const struct rechecks *r, double now);

#endif
