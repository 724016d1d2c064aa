/* waits.c - a thread whose waits are known, for the off-CPU tests: the thread named "waiter" repeats
 * BURN ms of CPU time in burn_leaf, a nanosleep of SLEEP ms in nap_leaf, and a read of a pipe in
 * pipe_leaf that a second thread ("feeder") answers PIPE ms later; for SECONDS in all. Prints the time
 * it spent in each, measured (the burn in its CPU time and in wall time, the waits in wall time), at
 * the end: a cpu-clock sample lands in time a hypervisor stole from the thread, which its CPU time does
 * not count, so what a profile sees of the burn lies between the two.
 * With GO, the main thread first burns in prelude_leaf until the file GO exists, and the waiter is a
 * thread started then: a test can see the process known to flamed (its stacks walked whole) before
 * the measured waits begin, and the waiter's whole life is the measured loop.
 * Usage: waits SECONDS [BURN SLEEP PIPE [GO]] (ms; default 100 200 300). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static int to_waiter[2], to_feeder[2];
static long burn_ms = 100, sleep_ms = 200, pipe_ms = 300;

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* This thread's CPU time: a burn is measured in it, so time spent waiting for a CPU on a busy machine
 * (neither running nor blocked) is not counted as burning. */
static double cpu_now(void)
{
	return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static void nap(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

__attribute__((noinline)) void burn_leaf(long ms)
{
	double end = cpu_now() + ms / 1e3;

	while (cpu_now() < end)
		for (int i = 0; i < 10000; i++)
			sink += i * 2654435761u;
}

__attribute__((noinline)) void nap_leaf(long ms)
{
	nap(ms);
	__asm__ volatile("" ::: "memory"); /* keeps the call from becoming a tail call */
}

__attribute__((noinline)) void pipe_leaf(void)
{
	char c = 'w';

	if (write(to_feeder[1], &c, 1) != 1 || read(to_waiter[0], &c, 1) != 1)
		exit(1);
	__asm__ volatile("" ::: "memory");
}

/* Answers each request PIPE ms later; ends when the request pipe closes. */
static void *feeder(void *arg)
{
	char c;

	(void)arg;
	pthread_setname_np(pthread_self(), "feeder");
	while (read(to_feeder[0], &c, 1) == 1) {
		nap(pipe_ms);
		if (write(to_waiter[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

static double seconds, spent[3], burn_wall;

/* The measured loop, in the thread named "waiter". */
static void *waiter(void *arg)
{
	double end, t, w;

	(void)arg;
	pthread_setname_np(pthread_self(), "waiter");
	printf("pid %d tid %d\n", getpid(), gettid());
	fflush(stdout);
	end = now() + seconds;
	while (now() < end) {
		t = cpu_now();
		w = now();
		burn_leaf(burn_ms);
		spent[0] += cpu_now() - t;
		burn_wall += now() - w;
		t = now();
		nap_leaf(sleep_ms);
		spent[1] += now() - t;
		t = now();
		pipe_leaf();
		spent[2] += now() - t;
	}
	return NULL;
}

/* Burns CPU time, 10 ms at a time, until the file GO exists. */
__attribute__((noinline)) void prelude_leaf(const char *go)
{
	while (access(go, F_OK) != 0)
		burn_leaf(10);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	pthread_t f, w;

	if (argc != 2 && argc != 5 && argc != 6) {
		fprintf(stderr, "usage: waits SECONDS [BURN SLEEP PIPE [GO]]\n");
		return 2;
	}
	seconds = atof(argv[1]);
	if (argc >= 5) {
		burn_ms = atol(argv[2]);
		sleep_ms = atol(argv[3]);
		pipe_ms = atol(argv[4]);
	}
	if (pipe(to_waiter) || pipe(to_feeder) || pthread_create(&f, NULL, feeder, NULL))
		return 1;
	if (argc == 6) {
		printf("pid %d\n", getpid());
		fflush(stdout);
		prelude_leaf(argv[5]);
		if (pthread_create(&w, NULL, waiter, NULL) || pthread_join(w, NULL))
			return 1;
	} else {
		waiter(NULL);
	}
	close(to_feeder[1]);
	pthread_join(f, NULL);
	printf("burn %.3f s\nburn_wall %.3f s\nsleep %.3f s\npipe %.3f s\n", spent[0], burn_wall, spent[1],
	       spent[2]);
	return 0;
}
