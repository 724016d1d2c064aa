/* stacksnap.h - a real stack to walk, for the unit tests (one per test binary: snap is static): a thread
 * stops in a chain of calls (chain_a, chain_b, chain_c, stop_here) and keeps its registers, a copy of its
 * stack from rsp up to the thread's stack top and glibc's backtrace() of the same point. */
#ifndef FLAMED_STACKSNAP_H
#define FLAMED_STACKSNAP_H

#include <execinfo.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "unwind/stackwalk.h"

#define COPY_MAX (64 * 1024) /* the stack kept: at most this much from the sampled sp */
#define MAX_FRAMES 127

/* What the thread kept where it stopped. */
struct snap {
	struct stackwalk_regs regs;
	uint8_t copy[COPY_MAX];
	size_t len;
	void *bt[MAX_FRAMES]; /* backtrace() from the same function */
	int nbt;
	uint64_t stack_top;   /* the thread's stack ends here */
};

static struct snap snap;
static volatile int sink;

/* Keeps the registers (at the instruction after the lea: rsp and rbp are the same there), the stack from
 * rsp up to the thread's stack top (at most COPY_MAX), and glibc's backtrace. The copy reads the callers'
 * frames, redzones too: byte by byte through volatile, out of AddressSanitizer's sight, as the BPF
 * program reads a stack. */
__attribute__((noinline, no_sanitize_address, unused)) static void stop_here(void)
{
	const volatile uint8_t *stack;
	uint64_t ip, sp, bp;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
	snap.regs = (struct stackwalk_regs){ .ip = ip, .sp = sp, .bp = bp };
	snap.len = snap.stack_top - sp < COPY_MAX ? snap.stack_top - sp : COPY_MAX;
	stack = (const volatile uint8_t *)(uintptr_t)sp;
	for (size_t i = 0; i < snap.len; i++)
		snap.copy[i] = stack[i];
	snap.nbt = backtrace(snap.bt, MAX_FRAMES);
	sink++;
}

/* A chain with frames of several shapes: a big one, one kept in rbp (alloca), a plain one. */
__attribute__((noinline, unused)) static void chain_c(int n)
{
	volatile char big[3000];

	big[n & 1023] = (char)n;
	stop_here();
	sink += big[(n + 1) & 1023];
}

__attribute__((noinline, unused)) static void chain_b(int n)
{
	char *p = __builtin_alloca((size_t)n + 32);

	memset(p, 1, (size_t)n + 32);
	chain_c(n + p[n]);
	sink += p[0];
}

__attribute__((noinline, unused)) static void chain_a(int n)
{
	chain_b(n + 1);
	sink++;
}

static inline void *snap_thread(void *arg)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	(void)arg;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		pthread_attr_getstack(&attr, &addr, &size);
		snap.stack_top = (uint64_t)(uintptr_t)addr + size;
		pthread_attr_destroy(&attr);
	}
	chain_a(40);
	return NULL;
}

/* Runs the thread to its stop. Returns whether it ran and kept a copy. */
static inline bool snap_take(void)
{
	pthread_t t;

	return pthread_create(&t, NULL, snap_thread, NULL) == 0 && pthread_join(t, NULL) == 0 && snap.len > 0;
}

#endif
