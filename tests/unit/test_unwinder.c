/* test_unwinder.c - the unwinder against real BPF maps (root): a process's mappings and biases, rows in
 * the kernel equal to cfi_build's, tables shared by build-id, the byte and process budgets, sweeping
 * exited processes and unused tables, the request thread, tables kept on disk (tablecache.c), a process
 * gone before its request (its mappings read before), a file mapped executable that is no ELF file, and
 * the maps emptied at the end. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>

#include "check.h"
#include "testutil.h"
#include "unwind.h"
#include "unwind/cfi.h"
#include "unwind/unwinder.h"
#include "unwindmaps.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

/* A function of this binary whose address is looked up. */
__attribute__((noinline)) int probe_function(int x)
{
	return x * 3 + 1;
}

/* The mapping of v holding addr, or NULL. */
static const struct unwind_mapping *mapping_of(const struct unwind_proc *v, uint64_t addr)
{
	for (__u32 i = 0; i < v->n && i < UNWIND_MAX_MAPPINGS; i++)
		if (addr >= v->m[i].start && addr < v->m[i].end)
			return &v->m[i];
	return NULL;
}

/* Checks that the kernel's row for addr (in mapping um) is cfi_build's row of file for the same ELF address. */
static void check_row(const struct maps *m, const struct unwind_mapping *um, uint64_t addr, const char *file,
		      const char *what)
{
	struct unwind_row *rows = NULL, got;
	const struct unwind_row *want;
	__u32 inner_id, lo = 0, hi, mid, slot;
	size_t n = 0;
	int fd = open(file, O_RDONLY | O_CLOEXEC), inner = -1, err;

	CHECK(um && um->table != UNWIND_NO_TABLE, "%s: its mapping has a table", what);
	if (!um || um->table == UNWIND_NO_TABLE || fd < 0)
		goto out;
	err = cfi_build(fd, -1, UNWIND_MAX_ROWS, &rows, &n, NULL);
	CHECK(err == 0 && n == um->nrows, "%s: the table has cfi_build's %zu rows (%u)", what, n, um->nrows);
	slot = UNWIND_SLOT(um->table);
	CHECK(um->table >> 16 >= 1 && um->table >> 16 <= UNWIND_MAX_GEN, "%s: the table carries a generation (%u)", what,
	      um->table >> 16);
	if (bpf_map_lookup_elem(m->tables, &slot, &inner_id) == 0)
		inner = bpf_map_get_fd_by_id(inner_id);
	CHECK(inner >= 0, "%s: its inner map is in slot %u", what, slot);
	if (inner < 0 || err)
		goto out;
	/* The BPF side's search: the last row whose pc is <= the ELF address. */
	for (hi = um->nrows; lo + 1 < hi;) {
		mid = lo + (hi - lo) / 2;
		if (bpf_map_lookup_elem(inner, &mid, &got) || got.pc > addr - um->bias)
			hi = mid;
		else
			lo = mid;
	}
	bpf_map_lookup_elem(inner, &lo, &got);
	want = cfi_lookup(rows, n, addr - um->bias);
	CHECK(want && !memcmp(want, &got, sizeof(got)),
	      "%s: the kernel's row for ELF address 0x%" PRIx64 " is cfi_lookup's (pc 0x%x kinds 0x%x)", what,
	      (uint64_t)(addr - um->bias), got.pc, got.kinds);
out:
	free(rows);
	if (inner >= 0)
		close(inner);
	if (fd >= 0)
		close(fd);
}

static int count_entries(int fd)
{
	__u32 key, next;
	int n;

	if (bpf_map_get_next_key(fd, NULL, &key))
		return 0;
	for (n = 1; !bpf_map_get_next_key(fd, &key, &next); n++)
		key = next;
	return n;
}

/* A child that sleeps until killed, run from path. Returns its pid. */
static pid_t sleeper(const char *path)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl(path, path, "--sleep", (char *)NULL);
		_exit(127);
	}
	usleep(200 * 1000); /* let it exec and map its libraries */
	return pid;
}

static void test_self(const struct maps *m)
{
	struct unwinder *u = new_unwinder(m, 16, 8, 64 << 20);
	struct unwind_proc *v = calloc(1, sizeof(*v));
	struct unwinder_stats st;
	__u32 pid = (__u32)getpid();
	bool sorted = true;
	int err;

	if (!u || !v)
		goto out;
	err = unwinder_add(u, pid, 42);
	CHECK(err == 0, "unwinder_add(self) (%d)", err);
	CHECK(bpf_map_lookup_elem(m->procs, &pid, v) == 0, "the process is in the procs map");
	CHECK(v->token == 42 && v->n >= 3, "with its token and its mappings (%u)", v->n);
	for (__u32 i = 1; i < v->n; i++)
		sorted = sorted && v->m[i - 1].end <= v->m[i].start;
	CHECK(sorted, "mappings sorted and disjoint");
	check_row(m, mapping_of(v, (uintptr_t)&probe_function), (uintptr_t)&probe_function, "/proc/self/exe",
		  "this test's probe_function");
	check_row(m, mapping_of(v, (uintptr_t)&getpid), (uintptr_t)&getpid, LIBC, "libc's getpid");
	unwinder_get_stats(u, &st);
	CHECK(st.tables >= 2 && st.table_bytes == st.table_rows * sizeof(struct unwind_row) && st.processes == 1,
	      "stats: %" PRIu64 " tables, %" PRIu64 " bytes, %" PRIu64 " process", st.tables, st.table_bytes,
	      st.processes);
	err = unwinder_add(u, pid, 0);
	CHECK(err == 0 && bpf_map_lookup_elem(m->procs, &pid, v) == 0 && v->token == 42,
	      "adding again with token 0 keeps the token");
	unwinder_get_stats(u, &st);
	CHECK(st.tables_built == st.tables, "adding again builds nothing (%" PRIu64 " built)", st.tables_built);
	CHECK(unwinder_add(u, 0x3fffffff, 1) == -ENOENT, "a pid that does not exist: -ENOENT");
out:
	unwinder_free(u);
	CHECK(count_entries(m->procs) == 0, "unwinder_free empties the procs map");
	free(v);
}

/* A copy of this binary (another file, the same build-id) shares its table. */
static void test_shared_build(const struct maps *m, const char *dir)
{
	struct unwinder *u = new_unwinder(m, 16, 8, 64 << 20);
	struct unwinder_stats a, b;
	char copy[PATH_MAX];
	pid_t child;

	if (!u)
		return;
	snprintf(copy, sizeof(copy), "%s/copy", dir);
	run("cp /proc/%d/exe %s", (int)getpid(), copy);
	unwinder_add(u, (__u32)getpid(), 1);
	unwinder_get_stats(u, &a);
	child = sleeper(copy);
	CHECK(unwinder_add(u, (__u32)child, 2) == 0, "unwinder_add(a copy of this binary)");
	unwinder_get_stats(u, &b);
	CHECK(b.tables == a.tables && b.tables_built == a.tables_built,
	      "the copy shares the table of its build-id: %" PRIu64 " tables before, %" PRIu64 " after", a.tables,
	      b.tables);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unwinder_sweep(u);
	unwinder_get_stats(u, &b);
	CHECK(b.processes == 1 && count_entries(m->procs) == 1, "sweeping forgets the exited process (%" PRIu64 " left)",
	      b.processes);
	unwinder_free(u);
}

static void test_budgets(const struct maps *m)
{
	struct unwinder *u = new_unwinder(m, 16, 1, 1024);
	struct unwind_proc *v = calloc(1, sizeof(*v));
	struct unwinder_stats st;
	__u32 pid = (__u32)getpid();
	bool none = true;

	if (!u || !v)
		goto out;
	CHECK(unwinder_add(u, pid, 7) == 0, "with 1 KiB for tables the process is still added");
	bpf_map_lookup_elem(m->procs, &pid, v);
	for (__u32 i = 0; i < v->n; i++)
		none = none && v->m[i].table == UNWIND_NO_TABLE;
	unwinder_get_stats(u, &st);
	CHECK(none && st.tables == 0 && st.tables_refused >= 2,
	      "no table fits: its mappings have none (frame pointers), %" PRIu64 " refused", st.tables_refused);
	CHECK(unwinder_add(u, (__u32)getppid(), 8) == -ENOSPC, "a second process past max_procs 1: -ENOSPC");
	unwinder_get_stats(u, &st);
	CHECK(st.processes == 1 && st.processes_refused == 1, "counted as refused (%" PRIu64 ")",
	      st.processes_refused);
out:
	unwinder_free(u);
	free(v);
}

/* A table no process uses is kept for unused_s, then dropped at a sweep: here /usr/bin/sleep's, whose
 * process exited. */
static void test_unused(const struct maps *m)
{
	struct unwinder_opts o = { .tables_fd = m->tables, .procs_fd = m->procs, .max_tables = 64, .max_procs = 8,
				   .max_bytes = 64 << 20, .unused_s = 0.3 }; /* room for a sanitizer build's libraries */
	struct unwinder_stats a, b;
	struct unwinder *u = NULL;
	pid_t child;

	CHECK(unwinder_new(&o, &u) == 0, "unwinder_new with unused_s 0.3");
	if (!u)
		return;
	unwinder_add(u, (__u32)getpid(), 1);
	unwinder_get_stats(u, &a);
	child = fork();
	if (child == 0) {
		execl("/usr/bin/sleep", "sleep", "10", (char *)NULL);
		_exit(127);
	}
	usleep(200 * 1000);
	CHECK(unwinder_add(u, (__u32)child, 2) == 0, "unwinder_add(sleep)");
	unwinder_get_stats(u, &b);
	CHECK(b.tables == a.tables + 1, "sleep's table built (%" PRIu64 " tables, %" PRIu64 " before)", b.tables, a.tables);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unwinder_sweep(u);
	unwinder_get_stats(u, &b);
	CHECK(b.tables == a.tables + 1 && b.tables_expired == 0, "swept at once: the unused table is kept");
	usleep(400 * 1000);
	unwinder_sweep(u);
	unwinder_get_stats(u, &b);
	CHECK(b.tables == a.tables && b.tables_expired == 1, "swept after unused_s: it is dropped and counted (%" PRIu64 ")",
	      b.tables_expired);
	unwinder_free(u);
}

/* Tables kept on disk: a first unwinder builds and writes them, a second (a restart) reads them and the
 * kernel's rows are cfi_build's; files damaged on disk are deleted, counted, and the tables built again. */
static void test_cache(const struct maps *m, const char *dir)
{
	struct unwinder_opts o = { .tables_fd = m->tables, .procs_fd = m->procs, .max_tables = 64, .max_procs = 8,
				   .max_bytes = 64 << 20 }; /* room for a sanitizer build's libraries */
	struct unwind_proc *v = calloc(1, sizeof(*v));
	struct unwinder_stats st;
	struct unwinder *u = NULL;
	char path[PATH_MAX];
	__u32 pid = (__u32)getpid();

	snprintf(path, sizeof(path), "%s/cache", dir);
	CHECK(tablecache_open(path, 64 << 20, &o.cache) == 0, "cache: opened");
	if (!o.cache || !v)
		goto out;
	for (int round = 0; round < 3; round++) {
		static const char *const what[] = { "built and written", "read from the cache (a restart)",
						    "damaged on disk: built again" };

		if (round == 2)
			run("for f in %s/*.rows; do printf x | dd of=$f bs=1 seek=300 conv=notrunc status=none; done", path);
		if (unwinder_new(&o, &u))
			break;
		CHECK(unwinder_add(u, pid, 42) == 0 && bpf_map_lookup_elem(m->procs, &pid, v) == 0,
		      "cache, %s: the process is in the procs map", what[round]);
		check_row(m, mapping_of(v, (uintptr_t)&probe_function), (uintptr_t)&probe_function, "/proc/self/exe",
			  "cache: this test's probe_function");
		check_row(m, mapping_of(v, (uintptr_t)&getpid), (uintptr_t)&getpid, LIBC, "cache: libc's getpid");
		unwinder_get_stats(u, &st);
		if (round == 0)
			CHECK(st.cache.hits == 0 && st.cache.stored == st.tables && st.cache.files == st.tables,
			      "cache, %s: %" PRIu64 " tables, %" PRIu64 " written", what[round], st.tables, st.cache.stored);
		else if (round == 1)
			CHECK(st.cache.hits == st.tables && st.cache.stored == st.tables,
			      "cache, %s: %" PRIu64 " tables, %" PRIu64 " read, none written again", what[round], st.tables,
			      st.cache.hits);
		else
			CHECK(st.cache.bad == st.tables && st.cache.stored == 2 * st.tables && st.cache.files == st.tables,
			      "cache, %s: %" PRIu64 " bad, %" PRIu64 " written again", what[round], st.cache.bad, st.tables);
		unwinder_free(u);
		u = NULL;
	}
out:
	unwinder_free(u);
	tablecache_free(o.cache);
	free(v);
}

/* A process gone before its request was done: its entry is written from the mappings read while it
 * lived (its binaries opened by path), kept a few seconds for its deferred samples, then swept. */
static void test_gone(const struct maps *m)
{
	struct unwinder *u = new_unwinder(m, 64, 8, 64 << 20);
	struct unwind_proc *v = calloc(1, sizeof(*v));
	struct procmap *pm = NULL;
	struct unwinder_stats st;
	size_t n = 0;
	__u32 pid, with_table = 0;
	pid_t child;

	if (!u || !v)
		goto out;
	child = fork();
	if (child == 0) {
		execl("/usr/bin/sleep", "sleep", "10", (char *)NULL);
		_exit(127);
	}
	usleep(200 * 1000);
	pid = (__u32)child;
	CHECK(procmaps_read(pid, &pm, &n) == 0 && n > 0, "gone: sleep's mappings read while it runs (%zu)", n);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	CHECK(unwinder_add(u, pid, 7) == -ENOENT, "gone: without its mappings, nothing to read (-ENOENT)");
	CHECK(unwinder_add_maps(u, pid, 7, pm, n, false) == 0 && bpf_map_lookup_elem(m->procs, &pid, v) == 0 && v->token == 7,
	      "gone: with the mappings read before, its entry is written");
	for (__u32 i = 0; i < v->n && i < UNWIND_MAX_MAPPINGS; i++)
		with_table += v->m[i].table != UNWIND_NO_TABLE;
	CHECK(with_table >= 2, "gone: its mappings have tables (sleep's and libc's: %u)", with_table);
	unwinder_get_stats(u, &st);
	CHECK(st.processes_gone == 1, "gone: counted (%" PRIu64 ")", st.processes_gone);
	unwinder_sweep(u);
	CHECK(bpf_map_lookup_elem(m->procs, &pid, v) == 0, "gone: a sweep at once keeps it (its samples may wait)");
	usleep(3200 * 1000);
	unwinder_sweep(u);
	CHECK(bpf_map_lookup_elem(m->procs, &pid, v) != 0, "gone: a sweep 3 s later deletes it");
out:
	procmaps_free(pm, n);
	unwinder_free(u);
	free(v);
}

/* Mappings the caller has just read stand for the unwinder's own read (one read of /proc/PID/maps serves
 * all): a live process given only its first executable mapping is written with that one alone; not
 * current, they are not used while it lives. */
static void test_maps_given(const struct maps *m)
{
	struct unwinder *u = new_unwinder(m, 64, 8, 64 << 20);
	struct unwind_proc *v = calloc(1, sizeof(*v));
	struct procmap *pm = NULL;
	struct unwinder_stats st;
	__u32 pid = (__u32)getpid();
	size_t n = 0;

	if (!u || !v)
		goto out;
	CHECK(procmaps_read(pid, &pm, &n) == 0 && n > 1, "given: this process's mappings read (%zu)", n);
	if (n < 2)
		goto out;
	CHECK(unwinder_add_maps(u, pid, 9, pm, 1, true) == 0 && bpf_map_lookup_elem(m->procs, &pid, v) == 0 &&
	      v->token == 9 && v->n == 1, "given and current: written with the one mapping given (%u)", v->n);
	unwinder_get_stats(u, &st);
	CHECK(st.maps_given == 1 && st.processes_gone == 0, "given: counted (%" PRIu64 "), not gone", st.maps_given);
	CHECK(unwinder_add_maps(u, pid, 9, pm, 1, false) == 0 && bpf_map_lookup_elem(m->procs, &pid, v) == 0 &&
	      v->n > 1, "given, not current: its mappings read live (%u)", v->n);
	unwinder_get_stats(u, &st);
	CHECK(st.maps_given == 1, "not current: not counted as given");
	/* Read again at once: its binaries are known by their mappings' device and inode, not opened. */
	CHECK(unwinder_add(u, pid, 9) == 0 && bpf_map_lookup_elem(m->procs, &pid, v) == 0 && v->n == n,
	      "again at once: the same %zu mappings", n);
	unwinder_get_stats(u, &st);
	CHECK(st.binaries_known >= 2,
	      "again at once: its binaries taken by device and inode (%" PRIu64 ")", st.binaries_known);
	/* Its entry came out as written the time before: not written again. Another image's token is. */
	CHECK(st.entries_unchanged == 1, "again at once: its entry unchanged, not written (%" PRIu64 ")",
	      st.entries_unchanged);
	CHECK(unwinder_add(u, pid, 10) == 0 && bpf_map_lookup_elem(m->procs, &pid, v) == 0 && v->token == 10,
	      "another token: written (%llu)", (unsigned long long)v->token);
	unwinder_get_stats(u, &st);
	CHECK(st.entries_unchanged == 1, "another token: not counted unchanged (%" PRIu64 ")", st.entries_unchanged);
out:
	bpf_map_delete_elem(m->procs, &pid);
	procmaps_free(pm, n);
	unwinder_free(u);
	free(v);
}

static void test_thread(const struct maps *m)
{
	struct unwinder *u = new_unwinder(m, 16, 8, 64 << 20);
	struct unwinder_stats st = { 0 };

	if (!u)
		return;
	unwinder_request(u, (__u32)getpid(), 9);
	unwinder_request(u, (__u32)getpid(), 10); /* merged with the one waiting, or done after it */
	for (int i = 0; i < 1000 && (st.processes == 0 || st.requests_pending); i++) {
		usleep(10 * 1000);
		unwinder_get_stats(u, &st);
	}
	CHECK(st.processes == 1 && st.tables >= 2 && !st.requests_pending,
	      "a request is done by the unwinder's thread: the process, then its tables (%" PRIu64 ")", st.tables);
	unwinder_request_sweep(u);
	unwinder_free(u); /* joins the thread with a sweep perhaps pending */
	CHECK(count_entries(m->procs) == 0, "freed with requests in flight: the maps are empty");
}

/* A mapping at a file offset no segment of its binary holds (past them all: a binary or a mapping that
 * lies) gets no table and is counted, and the process's other mappings keep theirs. */
static void test_unplaced(const struct maps *m, const char *dir)
{
	struct unwinder *u = new_unwinder(m, 16, 8, 64 << 20);
	struct unwind_proc *v = calloc(1, sizeof(*v));
	struct unwinder_stats st;
	const struct unwind_mapping *um;
	char path[PATH_MAX];
	void *at = MAP_FAILED;
	long page = sysconf(_SC_PAGESIZE);
	off_t off;
	int fd = -1;

	snprintf(path, sizeof(path), "%s/padded", dir);
	/* This test's binary with 64 KiB of zeros after its last byte: pages no segment holds. */
	if (!u || !v || run("cp /proc/self/exe %s && head -c 65536 /dev/zero >> %s", path, path))
		goto out;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	off = fd >= 0 ? (lseek(fd, 0, SEEK_END) - 2 * page) / page * page : -1;
	if (off > 0)
		at = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, off);
	CHECK(at != MAP_FAILED, "an executable mapping of the padding at offset %lld", (long long)off);
	if (at == MAP_FAILED)
		goto out;
	CHECK(unwinder_add(u, (__u32)getpid(), 9) == 0 && bpf_map_lookup_elem(m->procs, &(__u32){ (__u32)getpid() }, v) == 0,
	      "unwinder_add(self, with the mapping)");
	um = mapping_of(v, (uintptr_t)at);
	unwinder_get_stats(u, &st);
	CHECK(um && um->table == UNWIND_NO_TABLE && st.mappings_unplaced == 1,
	      "the mapping no segment holds has no table, counted (%" PRIu64 " unplaced)", st.mappings_unplaced);
	um = mapping_of(v, (uintptr_t)&probe_function);
	CHECK(um && um->table != UNWIND_NO_TABLE, "this test's own code keeps its table");
out:
	if (at != MAP_FAILED)
		munmap(at, (size_t)page);
	if (fd >= 0)
		close(fd);
	unwinder_free(u);
	free(v);
}

/* A file mapped executable that is no ELF file (CPython's -X perf_jit maps its jitdump file so), or one
 * with ELF's magic that does not parse, gets no table and is not waited for: the request thread,
 * starting with no table built, builds every binary of the process one turn at a time and then rests,
 * and the process's entry is not left pending. (Such a file once took every turn, so that the binaries
 * mapped above it were never built, and the thread ran on in a loop.) */
static void test_not_elf(const struct maps *m, const char *dir)
{
	struct unwinder *u = new_unwinder(m, 64, 8, 64 << 20);
	struct unwind_proc *v = calloc(1, sizeof(*v));
	struct unwinder_stats st = { 0 };
	const struct unwind_mapping *um;
	__u32 pid = (__u32)getpid();
	char path[PATH_MAX], broken[PATH_MAX];
	void *at = MAP_FAILED, *bat = MAP_FAILED;
	long page = sysconf(_SC_PAGESIZE);
	int fd = -1, bfd = -1, i;

	snprintf(path, sizeof(path), "%s/jit-1.dump", dir);
	snprintf(broken, sizeof(broken), "%s/broken.so", dir);
	if (!u || !v || run("head -c 8192 /dev/urandom > %s && { printf '\\177ELF'; head -c 8188 /dev/urandom; } > %s",
			    path, broken))
		goto out;
	/* Mapped last, so below the libraries: the first of the process's files from there on. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		at = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	bfd = open(broken, O_RDONLY | O_CLOEXEC);
	if (bfd >= 0)
		bat = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, bfd, 0);
	CHECK(at != MAP_FAILED && bat != MAP_FAILED,
	      "not ELF: a page of random bytes, and two of ELF's magic and random bytes, mapped executable");
	if (at == MAP_FAILED || bat == MAP_FAILED)
		goto out;
	unwinder_request(u, pid, 12);
	for (i = 0; i < 2000; i++) {
		usleep(10 * 1000);
		unwinder_get_stats(u, &st);
		if (st.processes == 1 && !st.requests_pending)
			break;
	}
	CHECK(st.processes == 1 && !st.requests_pending,
	      "not ELF: the thread rests within 20 s, all built (%" PRIu64 " tables, %" PRIu64 " requests pending)",
	      st.tables, st.requests_pending);
	CHECK(bpf_map_lookup_elem(m->procs, &pid, v) == 0 && !(v->flags & UNWIND_PROC_PENDING),
	      "not ELF: the process's entry is written, nothing left pending");
	um = mapping_of(v, (uintptr_t)at);
	CHECK(um && um->table == UNWIND_NO_TABLE, "not ELF: the file's mapping has no table");
	um = mapping_of(v, (uintptr_t)bat);
	CHECK(um && um->table == UNWIND_NO_TABLE && st.binaries_without == 1,
	      "not ELF: nor the broken one's, counted without (%" PRIu64 ")", st.binaries_without);
	um = mapping_of(v, (uintptr_t)&printf);
	CHECK(um && um->table != UNWIND_NO_TABLE, "not ELF: libc, mapped above it, has its table");
	um = mapping_of(v, (uintptr_t)&probe_function);
	CHECK(um && um->table != UNWIND_NO_TABLE, "not ELF: this test's own code has its table");
out:
	if (at != MAP_FAILED)
		munmap(at, (size_t)page);
	if (bat != MAP_FAILED)
		munmap(bat, 2 * (size_t)page);
	if (fd >= 0)
		close(fd);
	if (bfd >= 0)
		close(bfd);
	unwinder_free(u);
	free(v);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/test_unwinder.XXXXXX";
	struct maps m;
	int err;

	if (argc > 1 && !strcmp(argv[1], "--sleep")) {
		pause();
		return 0;
	}
	err = make_maps(&m, 16, 8);
	if (err) {
		SKIP("unwinder", "cannot create BPF maps here (needs root or CAP_BPF)");
		return 0;
	}
	if (!mkdtemp(dir))
		return 1;
	test_self(&m);
	test_shared_build(&m, dir);
	close_maps(&m);
	make_maps(&m, 16, 8);
	test_budgets(&m);
	close_maps(&m);
	make_maps(&m, 16, 8);
	test_thread(&m);
	close_maps(&m);
	make_maps(&m, 64, 8);
	test_unused(&m);
	close_maps(&m);
	make_maps(&m, 16, 8);
	test_unplaced(&m, dir);
	close_maps(&m);
	make_maps(&m, 64, 8);
	test_cache(&m, dir);
	close_maps(&m);
	make_maps(&m, 64, 8);
	test_gone(&m);
	close_maps(&m);
	make_maps(&m, 64, 8);
	test_maps_given(&m);
	close_maps(&m);
	make_maps(&m, 64, 8);
	test_not_elf(&m, dir);
	close_maps(&m);
	run("rm -rf %s", dir);
	return CHECK_EXIT();
}
