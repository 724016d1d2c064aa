/* burn.c - the bench workload: a CPU burner doing fixed units of work under a walk of FANOUT^DEPTH distinct call chains; prints its units per second. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NODES_MAX 16         /* distinct functions a chain is made of */
#define DEPTH_MAX 8
#define UNIT_ITERATIONS 20000 /* one unit of work: a few microseconds */
#define CLOCK_EVERY 64       /* units between clock reads */

struct walk {
	uint64_t rng;
	unsigned fanout;
	uint64_t units;
	volatile uint64_t sink;
};

typedef uint64_t (*node_fn)(struct walk *w, unsigned depth);

/* The leaf: one unit of work, always the same amount. */
static __attribute__((noinline)) uint64_t spin_unit(struct walk *w)
{
	uint64_t x = w->rng;

	for (unsigned i = 0; i < UNIT_ITERATIONS; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	w->sink = x;
	w->units++;
	return x & 1;
}

static uint64_t next_rand(struct walk *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

#define DECLARE_NODE(n) static uint64_t node_##n(struct walk *w, unsigned depth);
DECLARE_NODE(0) DECLARE_NODE(1) DECLARE_NODE(2) DECLARE_NODE(3) DECLARE_NODE(4) DECLARE_NODE(5)
DECLARE_NODE(6) DECLARE_NODE(7) DECLARE_NODE(8) DECLARE_NODE(9) DECLARE_NODE(10) DECLARE_NODE(11)
DECLARE_NODE(12) DECLARE_NODE(13) DECLARE_NODE(14) DECLARE_NODE(15)

static const node_fn nodes[NODES_MAX] = {
	node_0, node_1, node_2, node_3, node_4, node_5, node_6, node_7,
	node_8, node_9, node_10, node_11, node_12, node_13, node_14, node_15,
};

/* Inlined into every node, so that each node calls the next one itself (a frame per node). */
static inline __attribute__((always_inline)) uint64_t visit(struct walk *w, unsigned depth)
{
	if (!depth)
		return spin_unit(w);
	return nodes[next_rand(w) % w->fanout](w, depth - 1);
}

/* Each node adds its number after the call, so the call is never a tail call. */
#define DEFINE_NODE(n)                                                                             \
	static __attribute__((noinline)) uint64_t node_##n(struct walk *w, unsigned depth)          \
	{                                                                                          \
		return visit(w, depth) + n;                                                        \
	}
DEFINE_NODE(0) DEFINE_NODE(1) DEFINE_NODE(2) DEFINE_NODE(3) DEFINE_NODE(4) DEFINE_NODE(5)
DEFINE_NODE(6) DEFINE_NODE(7) DEFINE_NODE(8) DEFINE_NODE(9) DEFINE_NODE(10) DEFINE_NODE(11)
DEFINE_NODE(12) DEFINE_NODE(13) DEFINE_NODE(14) DEFINE_NODE(15)

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Walks chains of depth frames until seconds have passed; returns the elapsed seconds. */
static __attribute__((noinline)) double run(struct walk *w, unsigned depth, double seconds)
{
	double start = now_sec(), now = start;
	uint64_t sum = 0;

	while (now - start < seconds) {
		for (unsigned i = 0; i < CLOCK_EVERY; i++)
			sum += visit(w, depth);
		now = now_sec();
	}
	w->sink += sum;
	return now - start;
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: burn [--fanout N (1-%d, default 4)] [--depth N (0-%d, default 4)] SECONDS\n"
		   "Burns one CPU for SECONDS, then prints \"units_per_second X\".\n", NODES_MAX, DEPTH_MAX);
	return rc;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "fanout", required_argument, NULL, 'f' },
		{ "depth", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct walk w = { .fanout = 4 };
	unsigned depth = 4;
	double seconds, elapsed;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'f' && parse_uint(optarg, 1, NODES_MAX, &w.fanout) == 0)
			continue;
		if (c == 'd' && parse_uint(optarg, 0, DEPTH_MAX, &depth) == 0)
			continue;
		return usage(c == 'h' ? stdout : stderr, c == 'h' ? 0 : 2);
	}
	if (optind != argc - 1)
		return usage(stderr, 2);
	seconds = strtod(argv[optind], &end);
	if (end == argv[optind] || *end || !(seconds > 0 && seconds <= 86400))
		return usage(stderr, 2);
	w.rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
	elapsed = run(&w, depth, seconds);
	if (printf("units_per_second %.1f\n", w.units / elapsed) < 0 || fflush(stdout) != 0)
		return 1;
	return 0;
}
