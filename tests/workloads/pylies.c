/* pylies.c - a process that lies about being CPython 3.11: it exports Py_Version, _PyRuntime and a
 * _PyEval_EvalFrameDefault that spins, and hands the profiler a thread state whose frames are made
 * up, so a test can check the Python walk stays bounded and counts what went wrong.
 *
 *   pylies MODE SECONDS     (build with -rdynamic, so the symbols are in .dynsym)
 *
 * MODE: cycle    two frames, each the other's caller, neither an entry frame: an endless chain
 *       self     a frame that is its own caller
 *       garbage  frames whose code objects are random bytes
 *       unmapped frames whose code object and caller are unmapped addresses
 * Offsets are 3.11's (x86-64): _PyRuntime.interpreters.head 40, interp.threads.head 16, tstate.next 8,
 * .cframe 56, .thread_id 152, cframe.current_frame 8, frame f_code 32, previous 48, prev_instr 56,
 * is_entry 68. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const unsigned long Py_Version = 0x030B07F0; /* 3.11.7 final */
unsigned char _PyRuntime[4096];

static unsigned char interp[256], tstate[512], cframe[64], frames[4][128], garbage[4096];

static void put(unsigned char *at, uint64_t v)
{
	memcpy(at, &v, sizeof(v));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* What the profiler takes for the eval loop: it spins, so samples land in it. */
__attribute__((noinline)) uint64_t _PyEval_EvalFrameDefault(double until)
{
	uint64_t n = 0;

	while (now() < until)
		for (int i = 0; i < 100000; i++)
			n += (uint64_t)i * i;
	return n;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "cycle";
	double seconds = argc > 2 ? atof(argv[2]) : 2;
	uint64_t code = (uint64_t)(uintptr_t)garbage, back0, back1;

	srand(42);
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (unsigned char)rand();
	put(_PyRuntime + 40, (uint64_t)(uintptr_t)interp);
	put(interp + 16, (uint64_t)(uintptr_t)tstate);
	put(tstate + 8, 0); /* the only thread state */
	put(tstate + 56, (uint64_t)(uintptr_t)cframe);
	put(tstate + 152, (uint64_t)pthread_self());
	put(cframe + 8, (uint64_t)(uintptr_t)frames[0]);
	back0 = (uint64_t)(uintptr_t)frames[1];
	back1 = (uint64_t)(uintptr_t)frames[0];
	if (!strcmp(mode, "self")) {
		back0 = (uint64_t)(uintptr_t)frames[0];
	} else if (!strcmp(mode, "unmapped")) {
		code = 0x10;
		back0 = 0x1000;
	} else if (strcmp(mode, "cycle") && strcmp(mode, "garbage")) {
		fprintf(stderr, "pylies: MODE is cycle, self, garbage or unmapped\n");
		return 2;
	}
	if (strcmp(mode, "garbage") && strcmp(mode, "unmapped"))
		code = (uint64_t)(uintptr_t)garbage + 64; /* not a code object either: never named */
	put(frames[0] + 32, code);
	put(frames[0] + 48, back0);
	put(frames[0] + 56, code + 400);
	put(frames[1] + 32, code);
	put(frames[1] + 48, back1);
	put(frames[1] + 56, code + 600);
	printf("%llu\n", (unsigned long long)_PyEval_EvalFrameDefault(now() + seconds) % 7);
	return 0;
}
