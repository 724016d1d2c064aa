/* jitreuse.c - a JIT that frees its code and loads other code at the same address, writing a jitdump
 * file as perf's JITs do (jit-PID.dump in the working directory, mapped executable so that a profiler
 * finds it): "jit_first" is loaded and runs for SECONDS, then "jit_second" is loaded at the same address
 * and runs for SECONDS. Each CODE_LOAD record is written when its code is loaded, timed with
 * CLOCK_MONOTONIC as perf's readers expect. Prints "done" at the end, then stays HOLD seconds (idle, its
 * file still mapped) for its samples to be named while it lives.
 * Usage: jitreuse SECONDS [HOLD] */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void put(int fd, const void *b, size_t n)
{
	if (write(fd, b, n) != (ssize_t)n) {
		perror("jitreuse: write");
		exit(1);
	}
}

/* Writes the CODE_LOAD record of name's n bytes of code at addr. */
static void load_record(int fd, const char *name, uint64_t addr, const unsigned char *code, uint64_t n,
			uint64_t index)
{
	struct {
		uint32_t id, total_size;
		uint64_t timestamp;
		uint32_t pid, tid;
		uint64_t vma, code_addr, code_size, code_index;
	} r = { 0, (uint32_t)(sizeof(r) + strlen(name) + 1 + n), now_ns(), (uint32_t)getpid(),
		(uint32_t)syscall(SYS_gettid), addr, addr, n, index };

	put(fd, &r, sizeof(r));
	put(fd, name, strlen(name) + 1);
	put(fd, code, n);
}

int main(int argc, char **argv)
{
	/* count(n): rax = 0; do rax += step; while (rax < n); return rax. No call, no frame. */
	unsigned char code[] = { 0x31, 0xc0, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x39, 0xf8, 0x72, 0xf7, 0xc3 };
	const char *names[2] = { "jit_first", "jit_second" };
	struct {
		uint32_t magic, version, total_size, elf_mach, pad1, pid;
		uint64_t timestamp, flags;
	} h = { 0x4A695444, 1, sizeof(h), EM_X86_64, 0, (uint32_t)getpid(), now_ns(), 0 };
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	long page = sysconf(_SC_PAGESIZE);
	volatile uint64_t sink = 0;
	char path[64];
	unsigned char *mem;
	void *marker;
	int fd;

	snprintf(path, sizeof(path), "jit-%d.dump", (int)getpid());
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror("jitreuse: open");
		return 1;
	}
	put(fd, &h, sizeof(h));
	marker = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	mem = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (marker == MAP_FAILED || mem == MAP_FAILED) {
		perror("jitreuse: mmap");
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		uint64_t (*count)(uint64_t) = (uint64_t (*)(uint64_t))(void *)mem;
		uint64_t end;

		code[5] = (unsigned char)(i + 1); /* the second steps by 2: other code */
		if (mprotect(mem, (size_t)page, PROT_READ | PROT_WRITE))
			return 1;
		memcpy(mem, code, sizeof(code));
		if (mprotect(mem, (size_t)page, PROT_READ | PROT_EXEC))
			return 1;
		load_record(fd, names[i], (uint64_t)(uintptr_t)mem, code, sizeof(code), (uint64_t)i);
		end = now_ns() + (uint64_t)(seconds * 1e9);
		while (now_ns() < end)
			sink += count(2000000);
	}
	printf("done %llu\n", (unsigned long long)sink);
	fflush(stdout);
	sleep(argc > 2 ? (unsigned)atoi(argv[2]) : 0);
	return 0;
}
