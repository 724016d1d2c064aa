/* inlined.c - burns CPU in code inlined twice into one function: main -> host, where host's hot loop
 * is inner_inl's body inlined through outer_inl. With --inline the profile shows
 * host;outer_inl_[i];inner_inl_[i]; without it, host alone. Built -O2 -g with frame pointers. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static inline __attribute__((always_inline)) void inner_inl(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 2654435761u;
}

static inline __attribute__((always_inline)) void outer_inl(unsigned long n)
{
	sink ^= n;
	inner_inl(n);
}

__attribute__((noinline)) void host(double seconds)
{
	struct timespec ts;
	double end;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + seconds;
	do {
		outer_inl(200000);
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

int main(int argc, char **argv)
{
	host(argc > 1 ? atof(argv[1]) : 3);
	return 0;
}
