/* storm.c - the off-CPU bench workload: two processes bounce one byte over a pair of pipes as fast as
 * they can, each blocking in read() between turns; prints the round trips per second. Usage: storm SECONDS */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads one byte from in and writes it to out until in ends; returns the bytes bounced. */
static unsigned long bounce(int in, int out)
{
	unsigned long n = 0;
	char c;

	while (read(in, &c, 1) == 1) {
		if (write(out, &c, 1) != 1)
			break;
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	int ping[2], pong[2];
	double seconds = argc > 1 ? atof(argv[1]) : 0, start, end;
	unsigned long trips = 0;
	char c = 'x';
	pid_t child;

	if (argc != 2 || seconds <= 0) {
		fprintf(stderr, "usage: storm SECONDS\n");
		return 2;
	}
	if (pipe(ping) || pipe(pong)) {
		perror("storm: pipe");
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("storm: fork");
		return 1;
	}
	if (child == 0) {
		close(ping[1]);
		close(pong[0]);
		bounce(ping[0], pong[1]);
		_exit(0);
	}
	close(ping[0]);
	close(pong[1]);
	start = now();
	end = start + seconds;
	while (1) {
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) {
			perror("storm: bounce");
			return 1;
		}
		if (++trips % 1024 == 0 && now() >= end)
			break;
	}
	end = now();
	close(ping[1]);
	waitpid(child, NULL, 0);
	printf("round_trips_per_second %.0f\n", trips / (end - start));
	return 0;
}
