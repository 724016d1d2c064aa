/* short.c - lives about 30 ms (or argv[1] seconds), burning CPU under main -> burn -> spin, then exits:
 * the process a profiler that reads /proc only at flush time never names, and whose first samples come
 * before its unwind tables are built. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void spin(void)
{
	for (unsigned long i = 0; i < 20000; i++)
		sink += i * 2654435761u;
}

__attribute__((noinline)) void burn(double seconds)
{
	struct timespec ts;
	double end;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + seconds;
	do {
		spin();
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

int main(int argc, char **argv)
{
	burn(argc > 1 ? atof(argv[1]) : 0.03);
	return 0;
}
