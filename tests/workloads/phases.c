/* phases.c - a two-thread workload whose profile changes over time, for the dashboard test: the thread
 * named "worker" spins in crunch -> crunch_leaf for SPIN seconds, idles IDLE seconds, then writes to
 * /dev/null in write_loop for SYSCALLS seconds (kernel frames); the main thread meanwhile runs
 * housekeeping about a fifth of the time. Usage: phases [SPIN IDLE SYSCALLS] (default 4 2 3). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static atomic_int done;
static double spin_s = 4, idle_s = 2, syscalls_s = 3;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void crunch_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 2654435761u;
}

__attribute__((noinline)) void crunch(double seconds)
{
	double end = now() + seconds;

	while (now() < end)
		crunch_leaf(2000000);
}

/* write(2) through a frame of our own: libc's write keeps no frame pointer, so a walk from inside it
 * skips its caller's frame; this way the skipped one is write_chunk and write_loop shows. */
__attribute__((noinline)) ssize_t write_chunk(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len);
}

__attribute__((noinline)) void write_loop(double seconds)
{
	static char buf[65536];
	double end = now() + seconds;
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		exit(1);
	while (now() < end)
		for (int i = 0; i < 100; i++)
			if (write_chunk(fd, buf, sizeof(buf)) < 0)
				exit(1);
	close(fd);
}

__attribute__((noinline)) void housekeeping_leaf(double seconds)
{
	double end = now() + seconds;

	while (now() < end)
		for (int i = 0; i < 100000; i++)
			sink++;
}

/* The main thread's light load: 20 ms of work every 100 ms until the worker is done. */
__attribute__((noinline)) void housekeeping(void)
{
	const struct timespec pause = { 0, 80 * 1000 * 1000 };

	while (!atomic_load(&done)) {
		housekeeping_leaf(0.02);
		nanosleep(&pause, NULL);
	}
}

static void *worker_main(void *arg)
{
	struct timespec idle = { (time_t)idle_s, (long)((idle_s - (time_t)idle_s) * 1e9) };

	(void)arg;
	crunch(spin_s);
	nanosleep(&idle, NULL);
	write_loop(syscalls_s);
	atomic_store(&done, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc == 4) {
		spin_s = atof(argv[1]), idle_s = atof(argv[2]), syscalls_s = atof(argv[3]);
	} else if (argc != 1) {
		fprintf(stderr, "usage: phases [SPIN IDLE SYSCALLS]\n");
		return 2;
	}
	if (spin_s < 0 || idle_s < 0 || syscalls_s < 0 || pthread_create(&t, NULL, worker_main, NULL)) {
		fprintf(stderr, "phases: bad durations or no thread\n");
		return 1;
	}
	pthread_setname_np(t, "worker");
	housekeeping();
	pthread_join(t, NULL);
	return 0;
}
