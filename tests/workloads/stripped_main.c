/* stripped_main.c - a CPU burner whose functions have names only in its debug files: the test builds it
 * and its library (tests/workloads/stripped_lib.c, libstripped.so) with build-ids, keeps their debug
 * files apart (objcopy --only-keep-debug) and strips both (strip --strip-all), so the static functions
 * below and the library's sl_hash_rounds are left unnamed unless a profiler gets the debug files. For
 * SECONDS (argv[1], default 10) it burns about half its time in main -> sm_spin_outer -> sm_spin_inner
 * and half in main -> sl_work -> sl_hash_rounds (the library). Prints its CPU seconds at exit. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

unsigned long sl_work(unsigned long n); /* stripped_lib.c */

static volatile unsigned long sink;

static double clock_sec(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static __attribute__((noinline, noclone)) unsigned long sm_spin_inner(unsigned long n)
{
	unsigned long acc = n;

	for (unsigned long i = 0; i < n; i++)
		acc = acc * 2654435761u + (acc >> 13);
	return acc;
}

/* Uses the result after the call, so the call stays a call (sm_spin_outer stays on the stack). */
static __attribute__((noinline, noclone)) void sm_spin_outer(void)
{
	sink += sm_spin_inner(200000) ^ sink;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	double end = clock_sec(CLOCK_MONOTONIC) + seconds;

	while (clock_sec(CLOCK_MONOTONIC) < end) {
		sm_spin_outer();
		sink += sl_work(200000);
	}
	printf("cpu_seconds %.3f\n", clock_sec(CLOCK_PROCESS_CPUTIME_ID));
	return 0;
}
