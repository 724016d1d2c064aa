/* test_debugfetch.c - debug files asked of debuginfod servers, without a server (a loopback port nothing
 * listens on; the real server is in tests/integration/test_debuginfod.sh): a build-id that is not one
 * refused (no path outside the cache), a file in the cache found and an empty one (libdebuginfod's
 * memory of a miss) not, an unreachable server's answer counted and remembered, the queue's bound, the
 * cache's bound kept by deleting the least recently used. And the namer of stored frames
 * (latenames.c): this test's own binary, given as a debug file by build-id, names its functions. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "elf/debugfetch.h"
#include "elf/elf_file.h"
#include "symbolize/latenames.h"

static char dir[PATH_MAX] = "/tmp/flamed-debugfetch.XXXXXX";

#define ID_A "aa00000000000000000000000000000000000001"
#define ID_B "bb00000000000000000000000000000000000002"
#define ID_C "cc00000000000000000000000000000000000003"

/* Writes size bytes as CACHE/ID/debuginfo, its modification time age seconds ago. */
static void put_file(const char *cache, const char *id, size_t size, int age)
{
	char path[PATH_MAX + 64];
	struct timespec t[2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", cache, id);
	mkdir(cache, 0700);
	mkdir(path, 0700);
	strcat(path, "/debuginfo");
	f = fopen(path, "w");
	for (size_t i = 0; f && i < size; i++)
		fputc('x', f);
	if (f)
		fclose(f);
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age;
	t[1] = t[0];
	utimensat(AT_FDCWD, path, t, 0);
}

static bool exists(const char *cache, const char *id)
{
	char path[2 * PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/debuginfo", cache, id);
	return access(path, F_OK) == 0;
}

/* A loopback URL where nothing listens: a port bound, then closed. */
static void dead_url(char *url, size_t cap)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &len);
	close(fd);
	snprintf(url, cap, "http://127.0.0.1:%u", ntohs(a.sin_port));
}

static void test_fetch(void)
{
	char cache[PATH_MAX + 16], url[64], path[PATH_MAX];
	struct debugfetch_opts o = { .urls = url, .cache_dir = cache, .max_bytes = 3000, .max_queue = 2,
				     .timeout_s = 2 };
	struct debugfetch_stats st;
	struct debugfetch *d = NULL;
	int err, i;

	snprintf(cache, sizeof(cache), "%s/cache", dir);
	dead_url(url, sizeof(url));
	put_file(cache, ID_A, 1000, 300);
	put_file(cache, ID_B, 1500, 200);
	put_file(cache, ID_C, 0, 100); /* a miss remembered by libdebuginfod */
	CHECK(debugfetch_new(&(struct debugfetch_opts){ .urls = "", .cache_dir = cache, .max_bytes = 1 }, &d) == -EINVAL &&
		      debugfetch_new(&(struct debugfetch_opts){ .urls = url, .cache_dir = cache }, &d) == -EINVAL,
	      "no URL, or no bound: -EINVAL");
	err = debugfetch_new(&o, &d);
	CHECK(err == 0, "a fetcher on %s (%d)", url, err);
	if (err)
		return;
	debugfetch_get_stats(d, &st);
	CHECK(st.files == 2 && st.bytes == 2500, "the cache's files counted, the empty one not (%lu files, %lu bytes)",
	      (unsigned long)st.files, (unsigned long)st.bytes);
	CHECK(debugfetch_path(d, ID_A, path, sizeof(path)) == 0 && strstr(path, ID_A "/debuginfo"),
	      "a cached file is found: %s", path);
	CHECK(debugfetch_path(d, "../../etc/passwd", path, sizeof(path)) == -EINVAL &&
		      debugfetch_path(d, "AB00", path, sizeof(path)) == -EINVAL &&
		      debugfetch_path(d, "abc", path, sizeof(path)) == -EINVAL &&
		      debugfetch_path(d, "", path, sizeof(path)) == -EINVAL,
	      "not a build-id (a path, upper case, odd, empty): -EINVAL");
	CHECK(debugfetch_path(d, ID_A, path, 8) == -ENAMETOOLONG, "a path buffer too short: -ENAMETOOLONG");
	/* ID_C's empty file is no debug file: asked for, and the dead server fails it */
	err = debugfetch_path(d, ID_C, path, sizeof(path));
	CHECK(err == -EAGAIN, "a build-id not cached is asked for: -EAGAIN (%d)", err);
	for (i = 0; i < 200; i++) {
		debugfetch_get_stats(d, &st);
		if (st.failed + st.missed >= 1)
			break;
		usleep(50 * 1000);
	}
	CHECK(st.failed + st.missed == 1 && st.fetched == 0 && st.fetching == 0,
	      "the unreachable server's answer is counted (failed %lu, missed %lu)", (unsigned long)st.failed,
	      (unsigned long)st.missed);
	err = debugfetch_path(d, ID_C, path, sizeof(path));
	CHECK(err == -ENOENT, "and remembered: asked again, -ENOENT without a request (%d)", err);
	debugfetch_free(d);

	/* The queue's bound: the worker is slowed by nothing here, so fill it faster than it drains by
	 * asking for many at once; what does not fit is dropped and counted. */
	o.max_queue = 1;
	err = debugfetch_new(&o, &d);
	for (i = 0; !err && i < 64; i++) {
		char id[41];

		snprintf(id, sizeof(id), "dd%038x", i);
		debugfetch_path(d, id, path, sizeof(path));
	}
	debugfetch_get_stats(d, &st);
	CHECK(!err && st.dropped >= 1, "a full queue drops what is asked and counts it (%lu dropped of 64)",
	      (unsigned long)st.dropped);
	debugfetch_free(d);

	/* The bound: a smaller one deletes the least recently used (ID_B is older than ID_A, which the
	 * lookup above touched) */
	o.max_bytes = 1200;
	o.max_queue = 0;
	put_file(cache, ID_B, 1500, 200);
	err = debugfetch_new(&o, &d);
	debugfetch_get_stats(d, &st);
	CHECK(!err && exists(cache, ID_A) && !exists(cache, ID_B) && st.files == 1 && st.bytes == 1000 &&
		      st.too_big + st.evicted == 1,
	      "over the bound, the least recently used file is deleted (files %lu, bytes %lu)",
	      (unsigned long)st.files, (unsigned long)st.bytes);
	debugfetch_free(d);
	debugfetch_free(NULL);
}

static __attribute__((noinline)) int late_target(int x)
{
	return x * 3 + 1;
}

/* This binary's build-id, in hex. */
static int self_build_id(char *hex, size_t cap)
{
	uint8_t id[ELF_BUILD_ID_MAX];
	struct elf_file *f;
	int n;

	if (elf_file_open("/proc/self/exe", &f) < 0)
		return -1;
	n = elf_file_build_id(f, id, sizeof(id));
	elf_file_free(f);
	for (int i = 0; i < n && (size_t)(2 * i + 2) < cap; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	return n > 0 ? 0 : -1;
}

static void test_latenames(void)
{
	char id[2 * ELF_BUILD_ID_MAX + 1], debug_dir[PATH_MAX + 16], sub[PATH_MAX + 64], link[PATH_MAX + 256];
	char exe[PATH_MAX], buf[256];
	struct latenames_stats st;
	struct latenames *l = NULL;
	Dl_info info;
	uint64_t vaddr;
	ssize_t n;
	int err;

	if (self_build_id(id, sizeof(id)) < 0 || !dladdr((void *)late_target, &info) ||
	    (n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) < 0) {
		SKIP("latenames", "this test binary has no build-id");
		return;
	}
	exe[n] = '\0';
	vaddr = (uint64_t)((uintptr_t)late_target - (uintptr_t)info.dli_fbase); /* PIE: the first segment at 0 */
	snprintf(debug_dir, sizeof(debug_dir), "%s/debug", dir);
	err = latenames_new(&(struct latenames_opts){ .debug_dir = debug_dir }, &l);
	CHECK(err == 0, "a namer of stored frames (%d)", err);
	if (err)
		return;
	CHECK(latenames_name(l, "/x/self", id, vaddr, buf, sizeof(buf)) == -ENOENT, "no debug file yet: -ENOENT");
	snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", debug_dir, id);
	mkdir(debug_dir, 0700);
	snprintf(link, sizeof(link), "%s/.build-id", debug_dir);
	mkdir(link, 0700);
	mkdir(sub, 0700);
	snprintf(link, sizeof(link), "%s/%s.debug", sub, id + 2);
	CHECK(symlink(exe, link) == 0, "this binary given as its own debug file: %s", link);
	CHECK(latenames_name(l, "/x/self", id, vaddr, buf, sizeof(buf)) == -ENOENT,
	      "a miss is remembered for a minute: still -ENOENT");
	latenames_free(l);
	l = NULL;
	latenames_new(&(struct latenames_opts){ .debug_dir = debug_dir, .max_files = 1 }, &l);
	err = latenames_name(l, "/x/self", id, vaddr, buf, sizeof(buf));
	CHECK(err == 0 && !strcmp(buf, "late_target"), "named from the debug file: %s (%d)", err ? "" : buf, err);
	CHECK(latenames_name(l, "/x/self", "00ff", vaddr, buf, sizeof(buf)) == -ENOENT &&
		      latenames_name(l, "/x/self", "x", vaddr, buf, sizeof(buf)) == -ENOENT,
	      "another build-id, or none: -ENOENT");
	err = latenames_name(l, "/x/self", id, vaddr, buf, 5);
	CHECK(err == 0 && !strcmp(buf, "late"), "a short buffer: cut, NUL-terminated (%s)", buf);
	latenames_get_stats(l, &st);
	CHECK(st.named == 2 && st.loaded == 2 && st.evicted >= 1,
	      "counted: 2 named, 2 files read (one slot: read again after another build-id), evicted %lu",
	      (unsigned long)st.evicted);
	latenames_free(l);
	latenames_free(NULL);
	CHECK(late_target(1) == 4, "(the target runs)");
}

int main(void)
{
	char cmd[PATH_MAX + 16];

	if (!mkdtemp(dir)) {
		printf("FAIL: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	test_fetch();
	test_latenames();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return CHECK_EXIT();
}
