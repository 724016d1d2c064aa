/* nofp.c - a CPU burner for unwinding without frame pointers: built -O2 -fomit-frame-pointer, its chain
 * main -> middle -> left|right -> leaf_work has no frame pointer anywhere, and leaf_work sets up no frame
 * at all. left burns 3 units of work for every 1 of right's. It first spins for half a second in
 * warm_up -> warm_spin (so a profiler has time to load its tables), then for SECONDS in the chain.
 * With --deep it burns under 200 recursive calls of deep() instead; with --dlopen LIB, in LIB's
 * lib_outer (tests/workloads/nofplib.c), loaded after warm_up. With NOFP_GO=FILE in its environment,
 * warm_up lasts until FILE exists (at most 60 s): a test can see the process walked whole first. Prints
 * its CPU seconds in the chain at exit. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double clock_sec(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long leaf_work(unsigned long n)
{
	unsigned long acc = n;

	for (unsigned long i = 0; i < n; i++)
		acc = acc * 2654435761u + (acc >> 13);
	return acc;
}

/* Each uses the result after the call, so the call cannot become a jump that leaves it off the stack. */
__attribute__((noinline)) unsigned long left(unsigned long n)
{
	return leaf_work(3 * n) ^ n;
}

__attribute__((noinline)) unsigned long right(unsigned long n)
{
	return leaf_work(n) ^ (n << 1);
}

__attribute__((noinline)) void middle(double seconds)
{
	double end = clock_sec(CLOCK_MONOTONIC) + seconds;

	while (clock_sec(CLOCK_MONOTONIC) < end) {
		sink += left(100000);
		sink += right(100000);
	}
}

__attribute__((noinline)) unsigned long warm_spin(unsigned long n)
{
	unsigned long acc = n;

	for (unsigned long i = 0; i < n; i++)
		acc = acc * 40503u + (acc >> 11);
	return acc;
}

/* Its own leaf: samples taken before a profiler has the tables (frame pointers then name only the leaf)
 * are not mistaken for the chain's. Until the file go exists, where go is not NULL (at most 60 s). */
__attribute__((noinline)) void warm_up(double seconds, const char *go)
{
	double end = clock_sec(CLOCK_MONOTONIC) + (go ? 60 : seconds);

	while (clock_sec(CLOCK_MONOTONIC) < end && !(go && access(go, F_OK) == 0))
		sink += warm_spin(1000) + 1;
}

/* Recurses depth times, then burns for seconds: a stack deeper than a profiler keeps. */
__attribute__((noinline)) unsigned long deep(int depth, double seconds)
{
	double end;
	unsigned long r = 0;

	if (depth > 0) {
		r = deep(depth - 1, seconds);
		sink += r; /* a side effect after the call: it stays a real call, not a loop */
		return r ^ (unsigned long)depth;
	}
	for (end = clock_sec(CLOCK_MONOTONIC) + seconds; clock_sec(CLOCK_MONOTONIC) < end;)
		r += leaf_work(100000);
	return r;
}

/* Loads lib and burns in its lib_outer for seconds. */
__attribute__((noinline)) static int burn_in_library(const char *lib, double seconds)
{
	void *h = dlopen(lib, RTLD_NOW);
	unsigned long (*outer)(unsigned long);
	double end;

	if (!h) {
		fprintf(stderr, "nofp: %s\n", dlerror());
		return 1;
	}
	*(void **)&outer = dlsym(h, "lib_outer");
	if (!outer)
		return 1;
	for (end = clock_sec(CLOCK_MONOTONIC) + seconds; clock_sec(CLOCK_MONOTONIC) < end;)
		sink += outer(100000) + 1;
	return 0;
}

int main(int argc, char **argv)
{
	int is_deep = argc > 2 && !strcmp(argv[1], "--deep");
	double seconds = argc > 1 ? atof(argv[argc - 1]) : 5, t0;

	if (seconds <= 0) {
		fprintf(stderr, "usage: nofp [--deep | --dlopen LIB] SECONDS\n");
		return 2;
	}
	warm_up(0.5, getenv("NOFP_GO"));
	if (argc > 3 && !strcmp(argv[1], "--dlopen")) {
		int rc = burn_in_library(argv[2], seconds);

		sink += rc; /* not a tail call: main keeps its frame */
		return rc;
	}
	if (is_deep) {
		sink += deep(200, seconds);
		return 0;
	}
	t0 = clock_sec(CLOCK_PROCESS_CPUTIME_ID);
	middle(seconds);
	printf("cpu_seconds %.3f\n", clock_sec(CLOCK_PROCESS_CPUTIME_ID) - t0);
	return 0;
}
