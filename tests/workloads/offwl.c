/* offwl.c - an off-CPU workload with a known split: each cycle burns 0.2 s, then sleeps 0.6 s in nap()
 * (clock_nanosleep) and waits 0.3 s in wait_pipe() on a pipe a child writes to; five cycles. Off CPU it
 * spends 3.0 s asleep and 1.5 s waiting on the pipe: 2:1, from the first cycle.
 *
 *     offwl [CYCLES] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void burn(double s)
{
	double end = now() + s;
	volatile unsigned long x = 0;

	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x += i;
}

__attribute__((noinline)) void nap(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/* Waits s seconds for a byte a child writes after that long. */
__attribute__((noinline)) void wait_pipe(double s)
{
	int fd[2];
	char c = 0;
	pid_t pid;

	if (pipe(fd))
		exit(1);
	pid = fork();
	if (pid == 0) {
		struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (time_t)s) * 1e9) };

		nanosleep(&ts, NULL);
		if (write(fd[1], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	if (read(fd[0], &c, 1) != 1)
		exit(1);
	waitpid(pid, NULL, 0);
	close(fd[0]);
	close(fd[1]);
}

__attribute__((noinline)) void cycle(void)
{
	burn(0.2);
	nap(0.6);
	wait_pipe(0.3);
}

int main(int argc, char **argv)
{
	int cycles = argc > 1 ? atoi(argv[1]) : 5;

	for (int i = 0; i < cycles; i++)
		cycle();
	return 0;
}
