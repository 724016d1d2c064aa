/* onesec.c - a second of CPU time (or argv[1] seconds) under main -> outer -> middle -> spin, built
 * without frame pointers: the short process whose first samples come before flamed has its tables. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void spin(void)
{
	for (unsigned long i = 0; i < 20000; i++)
		sink += i * 2654435761u;
}

__attribute__((noinline)) void middle(double end)
{
	struct timespec ts;

	do {
		spin();
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

__attribute__((noinline)) void outer(double seconds)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	middle(ts.tv_sec + ts.tv_nsec / 1e9 + seconds);
	sink++;
}

int main(int argc, char **argv)
{
	outer(argc > 1 ? atof(argv[1]) : 1.0);
	return 0;
}
