/* churn.c - stack and process churn: forks short-lived processes (named churn), each running a few
 * threads (named churn-wN) that walk call chains chosen by a seeded generator (depth 3-10 through 16
 * step functions, picked through a table of function pointers), so nearly every sample has a stack
 * never seen before and processes and threads come and go all the time. Prints what it did and its
 * children's CPU seconds.
 * Usage: churn [-r PROCS_PER_SEC] [-t THREADS] [-l LIFE_MS] [-j MAX_ALIVE] [-s SEED] SECONDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STEPS 16
#define MAX_DEPTH 10

static volatile unsigned long sink;

static struct {
	double procs_per_sec;
	unsigned threads, life_ms, max_alive;
	uint64_t seed;
} opt = { .procs_per_sec = 40, .threads = 3, .life_ms = 60, .max_alive = 2, .seed = 1 };

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* xorshift64*: the chains are a function of the seed and the thread's start. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* splitmix64: a well-mixed, non-zero start state from any seed. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x ? x : 1;
}

/* The leaf: about 200 microseconds of work. */
__attribute__((noinline)) void churn_leaf(void)
{
	for (unsigned long i = 0; i < 60000; i++)
		sink += i * 2654435761u;
}

typedef void (*step_fn)(const uint8_t *path, int depth);
static step_fn steps[STEPS];

/* stepN: calls the step path[0] names (or the leaf at depth 0); the work after the call keeps it
 * out of a tail call, so every step keeps its frame. */
#define STEP(n)                                                                                    \
	__attribute__((noinline)) void step##n(const uint8_t *path, int depth)                    \
	{                                                                                          \
		if (depth == 0)                                                                    \
			churn_leaf();                                                              \
		else                                                                               \
			steps[path[0]](path + 1, depth - 1);                                       \
		sink += n;                                                                         \
	}
STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)
STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15)

static step_fn steps[STEPS] = {
	step0, step1, step2, step3, step4, step5, step6, step7,
	step8, step9, step10, step11, step12, step13, step14, step15,
};

/* Walks chains (a new one each time) for life_ms. */
static void *worker(void *arg)
{
	uint64_t s = mix((uintptr_t)arg);
	double end = now_sec() + opt.life_ms / 1e3;
	uint8_t path[MAX_DEPTH + 1];
	char name[16];

	snprintf(name, sizeof(name), "churn-w%u", (unsigned)(next_rand(&s) % 1000));
	pthread_setname_np(pthread_self(), name);
	while (now_sec() < end) {
		int depth = 3 + (int)(next_rand(&s) % (MAX_DEPTH - 2));

		for (int i = 0; i <= depth; i++)
			path[i] = (uint8_t)(next_rand(&s) % STEPS);
		steps[path[0]](path + 1, depth - 1);
	}
	return NULL;
}

/* One short-lived process: threads workers, then exit (its own thread keeps the name "churn"). */
static void child(uint64_t seed)
{
	pthread_t t[64];
	unsigned n = 0;

	for (unsigned i = 0; i < opt.threads && n < 64; i++)
		if (pthread_create(&t[n], NULL, worker, (void *)(uintptr_t)(seed + i)) == 0)
			n++;
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	_exit(0);
}

int main(int argc, char **argv)
{
	unsigned long procs = 0;
	unsigned alive = 0;
	double seconds, start, next;
	struct rusage ru;
	uint64_t s, cs;
	int c;

	while ((c = getopt(argc, argv, "r:t:l:j:s:")) != -1) {
		switch (c) {
		case 'r': opt.procs_per_sec = atof(optarg); break;
		case 't': opt.threads = (unsigned)atoi(optarg); break;
		case 'l': opt.life_ms = (unsigned)atoi(optarg); break;
		case 'j': opt.max_alive = (unsigned)atoi(optarg); break;
		case 's': opt.seed = strtoull(optarg, NULL, 0); break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || (seconds = atof(argv[optind])) <= 0 || opt.procs_per_sec <= 0 ||
	    !opt.threads || !opt.max_alive)
		goto usage;
	s = mix(opt.seed);
	start = next = now_sec();
	while (now_sec() < start + seconds) {
		pid_t pid;

		while (alive && waitpid(-1, NULL, alive >= opt.max_alive ? 0 : WNOHANG) > 0)
			alive--;
		if (now_sec() < next) {
			usleep(1000);
			continue;
		}
		next += 1 / opt.procs_per_sec;
		cs = next_rand(&s);
		pid = fork();
		if (pid == 0)
			child(cs);
		if (pid > 0) {
			alive++;
			procs++;
		}
	}
	while (alive && wait(NULL) > 0)
		alive--;
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("processes %lu threads %lu cpu_seconds %.3f\n", procs, procs * opt.threads,
	       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
usage:
	fprintf(stderr, "usage: churn [-r PROCS_PER_SEC] [-t THREADS] [-l LIFE_MS] [-j MAX_ALIVE] [-s SEED] SECONDS\n");
	return 2;
}
