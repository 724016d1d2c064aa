/* check.h - the smallest test harness: each check prints PASS/FAIL, tests/run.sh counts them. */
#ifndef FLAMED_CHECK_H
#define FLAMED_CHECK_H

#include <stdio.h>

static int check_failures;

/* CHECK(cond, name_fmt, ...): one named assertion; prints "PASS: name" or "FAIL: name (cond) at file:line". */
#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (cond) {                                                \
			printf("PASS: ");                                  \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
		} else {                                                   \
			check_failures++;                                  \
			printf("FAIL: ");                                  \
			printf(__VA_ARGS__);                               \
			printf(" (%s) at %s:%d\n", #cond, __FILE__, __LINE__); \
		}                                                          \
		fflush(stdout);                                            \
	} while (0)

/* SKIP(name, reason): a check that could not run here, with the reason. */
#define SKIP(name, reason) \
	do { printf("SKIP: %s: %s\n", name, reason); fflush(stdout); } while (0)

/* Exit status for main(): non-zero when any check failed. */
#define CHECK_EXIT() (check_failures ? 1 : 0)

#endif
