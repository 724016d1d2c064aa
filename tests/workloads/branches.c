/* branches.c - a CPU burner with a known chain: main -> run -> alpha|beta -> leaf_spin, alpha burning
 * 3 units of work for every 2 of beta's. With --syscalls it instead spends its time in write(2) to
 * /dev/null under main -> run_syscalls, so kernel frames show up. Prints its CPU seconds at exit. */
#include <fcntl.h>
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

__attribute__((noinline)) void leaf_spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 2654435761u;
}

__attribute__((noinline)) void alpha(unsigned long n)
{
	leaf_spin(3 * n);
}

__attribute__((noinline)) void beta(unsigned long n)
{
	leaf_spin(2 * n);
}

__attribute__((noinline)) void run(double seconds)
{
	double end = clock_sec(CLOCK_MONOTONIC) + seconds;

	while (clock_sec(CLOCK_MONOTONIC) < end) {
		alpha(200000);
		beta(200000);
	}
}

__attribute__((noinline)) void run_syscalls(double seconds)
{
	static char buf[65536];
	double end = clock_sec(CLOCK_MONOTONIC) + seconds;
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		exit(1);
	while (clock_sec(CLOCK_MONOTONIC) < end)
		for (int i = 0; i < 100; i++)
			if (write(fd, buf, sizeof(buf)) < 0)
				exit(1);
	close(fd);
}

int main(int argc, char **argv)
{
	int syscalls = argc > 2 && !strcmp(argv[1], "--syscalls");
	double seconds = argc > 1 ? atof(argv[argc - 1]) : 5;

	if (seconds <= 0) {
		fprintf(stderr, "usage: branches [--syscalls] SECONDS\n");
		return 2;
	}
	if (syscalls)
		run_syscalls(seconds);
	else
		run(seconds);
	printf("cpu_seconds %.3f\n", clock_sec(CLOCK_PROCESS_CPUTIME_ID));
	return 0;
}
