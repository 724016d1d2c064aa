/* asmkern.c - a C chain over two assembly kernels without call frame information (asmkern.S):
 * main -> run -> sub_driver -> asm_sub_kernel and run -> push_driver -> asm_push_kernel, half the time
 * each, for SECONDS (default 3). Built without frame pointers, so only unwind tables lead out of the
 * kernels to their callers. Usage: asmkern [SECONDS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

long asm_sub_kernel(long rounds);
long asm_push_kernel(long rounds);
static volatile long sink;

__attribute__((noinline)) void sub_driver(void)
{
	sink += asm_sub_kernel(2000000);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void push_driver(void)
{
	sink += asm_push_kernel(2000000);
	__asm__ volatile("" ::: "memory");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void run(double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		sub_driver();
		push_driver();
	}
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	run(argc > 1 ? atof(argv[1]) : 3.0);
	printf("%ld\n", sink);
	return 0;
}
