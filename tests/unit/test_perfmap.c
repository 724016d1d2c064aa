/* test_perfmap.c - JIT symbols from perf maps: the parser and tables on crafted files, then the symbolizer on
 * live processes (a C fixture with anonymous executable memory, one in its own namespaces, Node.js, Java). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "testutil.h"
#include "symbolize/perfmap.h"
#include "symbolize/symbolizer.h"

#define MAX_KV 16
#define SPAWN_TIMEOUT 120 /* seconds a child may take to say it is ready (a JVM compiling a source file) */
#define NOBODY 65534
#define RUNTIME_SAMPLES 40 /* perf-map entries checked in a real runtime's map */

/* The live fixture: anonymous executable memory ("code", and "named" when the kernel names anonymous
 * mappings), its pids; with "ns" it mounts a tmpfs on /tmp (in its own mount namespace) and writes its own
 * perf map there under its namespace pid. It prints "key value" lines, "END", then waits for stdin to close. */
static const char fixture_src[] =
	"#define _GNU_SOURCE\n"
	"#include <errno.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
	"#include <sys/mman.h>\n#include <sys/mount.h>\n#include <sys/prctl.h>\n#include <unistd.h>\n"
	"#ifndef PR_SET_VMA\n#define PR_SET_VMA 0x53564d41\n#define PR_SET_VMA_ANON_NAME 0\n#endif\n"
	"static long host_pid(void)\n"
	"{\n\tchar line[256];\n\tlong v = 0;\n\tFILE *f = fopen(\"/proc/self/status\", \"r\");\n"
	"\twhile (f && fgets(line, sizeof(line), f))\n"
	"\t\tif (strncmp(line, \"NStgid:\", 7) == 0)\n\t\t\tv = strtol(line + 7, NULL, 10);\n"
	"\tif (f)\n\t\tfclose(f);\n\treturn v;\n}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tsize_t len = 1 << 20, nlen = 1 << 16;\n\tchar buf[64];\n\tFILE *f;\n"
	"\tunsigned char *code = mmap(0, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
	"\tunsigned char *named = mmap(0, nlen, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
	"\tif (code == MAP_FAILED || named == MAP_FAILED)\n\t\treturn 1;\n"
	"\tif (prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)named, nlen, (unsigned long)\"flamed-jit\") != 0)\n"
	"\t\tnamed = 0;\n"
	"\tif (argc > 1 && strcmp(argv[1], \"ns\") == 0) {\n"
	"\t\tif (mount(\"none\", \"/tmp\", \"tmpfs\", 0, \"mode=1777\") != 0) {\n"
	"\t\t\tprintf(\"mountfail %d\\nEND\\n\", errno);\n\t\t\treturn 1;\n\t\t}\n"
	"\t\tsnprintf(buf, sizeof(buf), \"/tmp/perf-%d.map\", (int)getpid());\n"
	"\t\tf = fopen(buf, \"w\");\n"
	"\t\tif (!f || fprintf(f, \"%lx 100 py::ns_func:/app/ns.py\\n\", (unsigned long)code) < 0 || fclose(f) != 0)\n"
	"\t\t\treturn 1;\n"
	"\t}\n"
	"\tprintf(\"code %p\\nnamed %p\\nnspid %d\\nhostpid %ld\\nEND\\n\", (void *)code, (void *)named, (int)getpid(),\n"
	"\t       host_pid());\n"
	"\tfflush(stdout);\n"
	"\twhile (read(0, buf, sizeof(buf)) > 0)\n\t\t;\n"
	"\treturn 0;\n"
	"}\n";

/* A running child: its pid, its stdin (closing it ends the child), the "key value" lines it printed. */
struct child {
	pid_t pid;
	int in_fd;
	size_t n;
	char keys[MAX_KV][32];
	uint64_t vals[MAX_KV];
};

/* Writes (mode "we") or appends (mode "ae") text to path. Returns 0 or -1. */
static int put_file(const char *path, const char *mode, const char *text, size_t len)
{
	FILE *fp = fopen(path, mode);
	int rc;

	if (!fp)
		return -1;
	rc = fwrite(text, 1, len, fp) == len ? 0 : -1;
	if (fclose(fp) != 0)
		rc = -1;
	return rc;
}

/* put_file with a printf format. */
static int put_filef(const char *path, const char *mode, const char *fmt, ...)
{
	char text[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(text))
		return -1;
	return put_file(path, mode, text, (size_t)n);
}

static void on_alarm(int sig)
{
	(void)sig; /* only interrupts a blocked read */
}

/* Reads the child's lines into c until one starts with until (0) or the output ends or times out (-1). */
static int read_until(FILE *fp, const char *until, struct child *c)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	char line[512], key[32];
	int rc = -1;

	sigaction(SIGALRM, &sa, &old); /* no SA_RESTART: fgets returns at the alarm */
	alarm(SPAWN_TIMEOUT);
	while (fgets(line, sizeof(line), fp)) {
		if (strncmp(line, until, strlen(until)) == 0) {
			rc = 0;
			break;
		}
		if (sscanf(line, "%31s", key) == 1 && c->n < MAX_KV) {
			snprintf(c->keys[c->n], sizeof(c->keys[c->n]), "%s", key);
			c->vals[c->n++] = strtoull(line + strlen(key), NULL, 0);
		}
	}
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	return rc;
}

/* Starts argv (as uid when uid >= 0, in directory cwd when not NULL) with pipes on stdin and stdout, and
 * reads its lines until one starts with until. Returns 0 or -1 (the child is then stopped). */
static int spawn(char *const argv[], int uid, const char *cwd, const char *until, struct child *c)
{
	int in[2], out[2], rc;
	FILE *fp;

	memset(c, 0, sizeof(*c));
	c->in_fd = -1;
	if (pipe2(in, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	c->pid = fork();
	if (c->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
			_exit(126);
		if ((cwd && chdir(cwd) < 0) || (uid >= 0 && (setgid((gid_t)uid) < 0 || setuid((uid_t)uid) < 0)))
			_exit(125);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in_fd = in[1];
	fp = c->pid > 0 ? fdopen(out[0], "r") : NULL;
	if (!fp) {
		close(out[0]);
		rc = -1;
	} else {
		rc = read_until(fp, until, c);
		fclose(fp);
	}
	if (rc < 0 && c->pid > 0)
		kill(c->pid, SIGKILL);
	return rc;
}

/* Ends the child (SIGKILL when kill_it, else by closing its stdin) and reaps it. */
static void stop(struct child *c, bool kill_it)
{
	if (c->pid > 0 && kill_it)
		kill(c->pid, SIGKILL);
	if (c->in_fd >= 0)
		close(c->in_fd);
	c->in_fd = -1;
	if (c->pid > 0)
		waitpid(c->pid, NULL, 0);
	c->pid = 0;
}

/* Ends the child by closing its stdin, waiting up to 20 s before SIGKILL (a runtime then cleans up). */
static void stop_gently(struct child *c)
{
	int i;

	if (c->in_fd >= 0)
		close(c->in_fd);
	c->in_fd = -1;
	for (i = 0; c->pid > 0 && i < 200; i++) {
		if (waitpid(c->pid, NULL, WNOHANG) == c->pid) {
			c->pid = 0;
			return;
		}
		usleep(100000);
	}
	stop(c, true);
}

/* The value the child printed for key, or 0. */
static uint64_t val_of(const struct child *c, const char *key)
{
	for (size_t i = 0; i < c->n; i++) {
		if (strcmp(c->keys[i], key) == 0)
			return c->vals[i];
	}
	return 0;
}

/* The host path of pid's perf map. */
static void map_path(pid_t pid, char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/perf-%d.map", (int)pid);
}

/* name as the symbolizer gives it: cut to PERFMAP_MAX_NAME, ';' -> ':', control characters -> '?'. */
static void folded_name(const char *name, char *out, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len && i < PERFMAP_MAX_NAME && name[i]; i++) {
		unsigned char ch = (unsigned char)name[i];

		out[i] = ch == ';' ? ':' : (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
	out[i] = '\0';
}

/* One check: pid's address addr (a return address when ret) is named want, of kind kind; a JIT frame's
 * origin is "[jit]" without a build-id. */
static void expect_frame(struct symbolizer *s, pid_t pid, uint64_t addr, bool ret, const char *want, int kind,
			 const char *what)
{
	char buf[PERFMAP_MAX_NAME + 64];
	struct frame_origin o;
	int got = symbolizer_user_frame(s, (uint32_t)pid, addr, ret, buf, sizeof(buf), &o);
	bool origin_ok = kind != FRAME_JIT || (strcmp(o.module, "[jit]") == 0 && o.build_id[0] == '\0');

	CHECK(got == kind && strcmp(buf, want) == 0 && origin_ok,
	      "%s: 0x%" PRIx64 "%s is \"%.80s\" kind %d (got \"%.80s\", kind %d, module \"%s\")", what, addr,
	      ret ? " (return address)" : "", want, kind, buf, got, o.module);
}

/* ---- the parser ---- */

static void test_parser(void)
{
	static const struct {
		const char *line;
		uint64_t start, size;
		const char *name;
	} good[] = {
		{ "7f0000001000 100 foo\n", 0x7f0000001000, 0x100, "foo" },
		{ "0x7f0000001000 0x100 LazyCompile:*foo bar.js:1", 0x7f0000001000, 0x100, "LazyCompile:*foo bar.js:1" },
		{ "0X7F0000001000 0XaB Interpreter\r\n", 0x7f0000001000, 0xab, "Interpreter" },
		{ "7f0000001000    20     py::f:/x.py\n", 0x7f0000001000, 0x20, "py::f:/x.py" },
		{ "7f0000001000\t20\tname;with;semis  \n", 0x7f0000001000, 0x20, "name;with;semis" },
		{ "  1000 1 lead and  inner  spaces", 0x1000, 1, "lead and  inner  spaces" },
		{ "0 1 zero", 0, 1, "zero" },
		{ "ffffffffffffff00 ff top", 0xffffffffffffff00, 0xff, "top" },
	};
	static const char *const bad[] = {
		"", "\n", "garbage", "1000", "1000 10", "1000 10 ", "1000 10 \t \n", "1000 0 zero-size",
		"zz 10 x", "1000 zz x", "0x 10 x", "1000-10 x", "1000x 10 x", "1000,10 x", "-1000 10 x",
		"ffffffffffffffff 2 wraps", "ffffffffffffff00 100 ends-at-2^64", "11112222333344445 1 seventeen-digits",
		"1000 11112222333344445 x", "0x0x1000 10 x",
	};
	uint64_t start, size;
	const char *name;
	size_t len, i;
	int rc;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		rc = perfmap_parse_line(good[i].line, &start, &size, &name, &len);
		CHECK(rc == 0 && start == good[i].start && size == good[i].size && len == strlen(good[i].name) &&
			      strncmp(name, good[i].name, len) == 0,
		      "parser: good line %zu gives \"%s\" (rc %d, \"%.*s\")", i, good[i].name, rc, rc ? 0 : (int)len,
		      rc ? "" : name);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rc = perfmap_parse_line(bad[i], &start, &size, &name, &len);
		CHECK(rc == -EINVAL, "parser: malformed line %zu \"%.*s\" is refused", i, (int)strcspn(bad[i], "\n"),
		      bad[i]);
	}
}

/* ---- tables on crafted files ---- */

/* Reads path (from where t stopped) into t. Returns perfmap_table_read's result. */
static int read_path(struct perfmap_table *t, const char *path, struct perfmap_stats *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = perfmap_table_read(t, fd, st);
	close(fd);
	return rc;
}

/* Whether path still holds what t read. */
static bool path_unchanged(const struct perfmap_table *t, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool same;

	if (fd < 0)
		return false;
	same = perfmap_table_unchanged(t, fd);
	close(fd);
	return same;
}

/* t names addr want (NULL: nothing). */
static void expect_find(const struct perfmap_table *t, uint64_t addr, const char *want, const char *what)
{
	const char *got = perfmap_table_find(t, addr);

	CHECK(want ? got && strcmp(got, want) == 0 : !got, "table: %s: 0x%" PRIx64 " is %s (got %.60s)", what, addr,
	      want ? want : "nothing", got ? got : "nothing");
}

/* A file of good, malformed and odd lines. */
static void test_table_mixed(const char *dir)
{
	char path[PATH_MAX], *big;
	struct perfmap_stats st = { 0 };
	struct perfmap_table *t = NULL;
	const char *name;
	size_t n = 300000, i;
	FILE *fp;
	int rc;

	snprintf(path, sizeof(path), "%s/mixed.map", dir);
	fp = fopen(path, "we");
	big = malloc(n + 1);
	if (!fp || !big) {
		CHECK(0, "table: write the mixed fixture");
		if (fp)
			fclose(fp);
		free(big);
		return;
	}
	fputs("1000 100 first\n", fp);
	fputs("this is not a perf map line\n", fp);
	fputs("0x2000 0x10 with 0x and  spaces\n", fp);
	fputs("3000 0 zero size\n", fp);
	fputs("4000 10 nul", fp);
	fputc('\0', fp);
	fputs("byte\n", fp);
	fputs("ffffffffffffffff 10 wraps\n", fp);
	fprintf(fp, "5000 10 ");
	for (i = 0; i < 5000; i++)
		fputc('a' + (int)(i % 26), fp);
	fputc('\n', fp);
	memset(big, 'z', n);
	big[n] = '\0';
	fprintf(fp, "6000 10 %s\n", big); /* far longer than a read chunk */
	fputs("7000 10 after the long line\n", fp);
	fprintf(fp, "8000 10 %.*s\xc3\xa9tail\n", PERFMAP_MAX_NAME - 1, big); /* "é" across the cut */
	fputs("9000 10 last", fp);                                            /* no newline yet */
	rc = fclose(fp);
	free(big);
	CHECK(rc == 0, "table: wrote the mixed fixture");
	if (perfmap_table_new(0, &t) < 0) {
		CHECK(0, "table: perfmap_table_new");
		return;
	}
	rc = read_path(t, path, &st);
	CHECK(rc == 0 && perfmap_table_count(t) == 6, "table: 6 symbols from the mixed file (rc %d, %zu)", rc,
	      perfmap_table_count(t));
	CHECK(st.lines_skipped == 4, "table: 4 malformed lines skipped: garbage, size 0, NUL, wrap (%" PRIu64 ")",
	      st.lines_skipped);
	CHECK(st.names_truncated == 3, "table: 3 long names truncated (%" PRIu64 ")", st.names_truncated);
	expect_find(t, 0x1000, "first", "start");
	expect_find(t, 0x10ff, "first", "last byte");
	expect_find(t, 0x1100, NULL, "end");
	expect_find(t, 0xfff, NULL, "below");
	expect_find(t, 0x2008, "with 0x and  spaces", "0x prefix");
	expect_find(t, 0x3000, NULL, "zero size");
	expect_find(t, 0x4000, NULL, "NUL byte");
	expect_find(t, 0x7005, "after the long line", "after a 300000-byte line");
	expect_find(t, 0x9000, NULL, "unfinished last line");
	name = perfmap_table_find(t, 0x5000);
	CHECK(name && strlen(name) == PERFMAP_MAX_NAME && strncmp(name, "abcdefghij", 10) == 0,
	      "table: a 5000-byte name is cut to %d bytes (%zu)", PERFMAP_MAX_NAME, name ? strlen(name) : 0);
	name = perfmap_table_find(t, 0x6000);
	CHECK(name && strlen(name) <= PERFMAP_MAX_NAME && strspn(name, "z") == strlen(name) && strlen(name) > 100,
	      "table: a 300000-byte name is cut (%zu)", name ? strlen(name) : 0);
	name = perfmap_table_find(t, 0x8000);
	CHECK(name && strlen(name) == PERFMAP_MAX_NAME - 1, "table: a cut inside a UTF-8 character backs off (%zu)",
	      name ? strlen(name) : 0);

	CHECK(put_file(path, "ae", "\n", 1) == 0 && path_unchanged(t, path), "table: finishing the last line appends");
	rc = read_path(t, path, &st);
	expect_find(t, 0x9000, "last", "the last line, finished");
	CHECK(rc == 0 && perfmap_table_count(t) == 7, "table: 7 symbols after the append (%zu)", perfmap_table_count(t));
	perfmap_table_free(t);
}

/* Overlapping ranges: the line read last wins. Replacing one start many times keeps one symbol. */
static void test_table_overlap(const char *dir)
{
	struct perfmap_stats st = { 0 };
	struct perfmap_table *t = NULL;
	char path[PATH_MAX];
	FILE *fp;
	int i, rc;

	snprintf(path, sizeof(path), "%s/overlap.map", dir);
	rc = put_filef(path, "we", "5000 100 old\n4f00 300 newer-wider\n5080 10 newest-inner\n"
				   "a000 100 first-at-a000\n");
	if (rc < 0 || perfmap_table_new(0, &t) < 0) {
		CHECK(0, "overlap: fixture");
		return;
	}
	rc = read_path(t, path, &st);
	expect_find(t, 0x5050, "newer-wider", "a later wider symbol covers an older one");
	expect_find(t, 0x5085, "newest-inner", "the latest symbol wins inside");
	expect_find(t, 0x5095, "newer-wider", "past the inner symbol");
	expect_find(t, 0x4f10, "newer-wider", "below the older symbol");
	fp = fopen(path, "ae");
	for (i = 0; fp && i < 100000; i++)
		fprintf(fp, "a000 100 replacement-number-%d\n", i);
	rc = fp ? fclose(fp) : -1;
	CHECK(rc == 0 && read_path(t, path, &st) == 0, "overlap: 100000 lines at one address appended and read");
	expect_find(t, 0xa010, "replacement-number-99999", "the last of 100000 lines at one address");
	CHECK(perfmap_table_count(t) == 4, "overlap: lines at one address keep one symbol (%zu)", perfmap_table_count(t));
	perfmap_table_free(t);
}

/* Limits, empty files, rewritten files, over-long unfinished lines. */
static void test_table_limits(const char *dir)
{
	struct perfmap_stats st = { 0 };
	struct perfmap_table *t = NULL;
	char path[PATH_MAX], *big;
	int i, rc;

	snprintf(path, sizeof(path), "%s/limits.map", dir);
	if (put_file(path, "we", "", 0) < 0 || perfmap_table_new(10, &t) < 0) {
		CHECK(0, "limits: fixture");
		return;
	}
	rc = read_path(t, path, &st);
	CHECK(rc == 0 && perfmap_table_count(t) == 0 && perfmap_table_offset(t) == 0, "limits: an empty file is empty");
	for (i = 0; i < 15; i++)
		put_filef(path, "ae", "%x 10 sym%d\n", 0x1000 + i * 0x10, i);
	rc = read_path(t, path, &st);
	CHECK(rc == 0 && perfmap_table_count(t) == 10 && st.entries_dropped == 5,
	      "limits: a table of 10 keeps 10 of 15 lines and counts 5 dropped (%zu, %" PRIu64 ")",
	      perfmap_table_count(t), st.entries_dropped);
	expect_find(t, 0x1090, "sym9", "the 10th symbol");
	expect_find(t, 0x10a0, NULL, "the 11th symbol, dropped");

	put_filef(path, "we", "%x 10 rewritten-and-longer-than-before-so-the-size-grows-past-the-old-offset\n", 0x1000);
	for (i = 0; i < 8; i++)
		put_filef(path, "ae", "%x 10 again%d\n", 0x2000 + i * 0x10, i);
	CHECK(!path_unchanged(t, path), "limits: a truncated and rewritten file is noticed");
	perfmap_table_free(t);

	/* an unfinished line longer than what is kept is given up; the rest of it is dropped later */
	big = malloc(200001);
	if (!big || perfmap_table_new(0, &t) < 0) {
		free(big);
		CHECK(0, "limits: allocations");
		return;
	}
	memset(big, 'q', 200000);
	big[200000] = '\0';
	memset(&st, 0, sizeof(st));
	rc = put_filef(path, "we", "1000 10 one\n");
	rc = rc ? rc : put_file(path, "ae", "2000 10 ", 8);
	rc = rc ? rc : put_file(path, "ae", big, 200000);
	rc = rc ? rc : read_path(t, path, &st);
	CHECK(rc == 0 && perfmap_table_count(t) == 1 && st.lines_skipped == 1 && perfmap_table_offset(t) > 200000,
	      "limits: an unfinished 200 KB line is skipped (%zu, %" PRIu64 ", offset %" PRIu64 ")",
	      perfmap_table_count(t), st.lines_skipped, perfmap_table_offset(t));
	rc = put_file(path, "ae", big, 1000);
	rc = rc ? rc : put_filef(path, "ae", " its end\n3000 10 three\n");
	rc = rc ? rc : read_path(t, path, &st);
	expect_find(t, 0x3000, "three", "a line after the end of the long one");
	expect_find(t, 0x2000, NULL, "the long line");
	CHECK(rc == 0 && perfmap_table_count(t) == 2 && st.lines_skipped == 1,
	      "limits: its end is dropped, not counted again (%zu, %" PRIu64 ")", perfmap_table_count(t),
	      st.lines_skipped);
	free(big);
	perfmap_table_free(t);
}

/* ---- the symbolizer on a live fixture ---- */

/* Builds the fixture into dir/fixture. Returns 0 or -1. */
static int build_fixture(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/fixture.c", dir);
	if (put_file(path, "we", fixture_src, sizeof(fixture_src) - 1) < 0)
		return -1;
	return run_quiet("cd '%s' && cc -O0 -o fixture fixture.c", dir) == 0 ? 0 : -1;
}

/* Starts the fixture (as uid when >= 0). Returns 0 or -1 (checked). */
static int start_fixture(const char *dir, int uid, struct child *c)
{
	char exe[PATH_MAX];
	char *argv[] = { exe, NULL };

	snprintf(exe, sizeof(exe), "%s/fixture", dir);
	if (spawn(argv, uid, NULL, "END", c) < 0 || !val_of(c, "code")) {
		CHECK(0, "fixture: started and printed its code address");
		stop(c, true);
		return -1;
	}
	return 0;
}

/* The lines CPython 3.12 writes with -X perf (one trampoline per Python function) for code at base. */
static int write_cpython_map(const char *path, uint64_t base)
{
	return put_filef(path, "we",
			 "%" PRIx64 " 40 py::<module>:/srv/app/main.py\n"
			 "%" PRIx64 " 40 py::handle_request:/srv/app/server.py\n"
			 "%" PRIx64 "  40  py::Parser.parse:/srv/app/parse.py\n"
			 "%" PRIx64 " 40 py::weird;name:/srv/app/x.py\n"
			 "%" PRIx64 " 40 py::ctl\001char:/srv/app/y.py\n",
			 base, base + 0x40, base + 0x80, base + 0xc0, base + 0x100);
}

/* CPython's format, appends, rewrites, a dead process. */
static void test_cpython(const char *dir)
{
	struct symbolizer_stats st;
	struct symbolizer *s = NULL;
	char path[PATH_MAX];
	struct child c;
	uint64_t base, named;
	pid_t pid;

	if (start_fixture(dir, -1, &c) < 0)
		return;
	base = val_of(&c, "code");
	named = val_of(&c, "named");
	map_path(c.pid, path, sizeof(path));
	if (write_cpython_map(path, base) < 0 || symbolizer_new(NULL, &s) < 0) {
		CHECK(0, "cpython: perf map written, symbolizer created");
		goto out;
	}
	expect_frame(s, c.pid, base, false, "py::<module>:/srv/app/main.py", FRAME_JIT, "cpython");
	expect_frame(s, c.pid, base + 0x41, true, "py::handle_request:/srv/app/server.py", FRAME_JIT, "cpython");
	expect_frame(s, c.pid, base + 0xbf, false, "py::Parser.parse:/srv/app/parse.py", FRAME_JIT, "cpython");
	expect_frame(s, c.pid, base + 0xc1, false, "py::weird:name:/srv/app/x.py", FRAME_JIT, "cpython: ';' cleaned");
	expect_frame(s, c.pid, base + 0x101, false, "py::ctl?char:/srv/app/y.py", FRAME_JIT, "cpython: control cleaned");
	expect_frame(s, c.pid, base + 0x140, false, "[unknown]", FRAME_UNKNOWN, "cpython: past the last symbol");
	expect_frame(s, c.pid, base + 0x1000, false, "[unknown]", FRAME_UNKNOWN, "cpython: not in the map yet");

	/* appended lines are read at the next flush, from where reading stopped */
	put_filef(path, "ae", "%" PRIx64 " 80 py::late:/srv/app/late.py\n%" PRIx64 " 80 py::later:/srv/app/late.py\n",
		  base + 0x1000, base + 0x1080);
	expect_frame(s, c.pid, base + 0x1000, false, "[unknown]", FRAME_UNKNOWN, "append: same flush");
	symbolizer_begin_flush(s);
	expect_frame(s, c.pid, base + 0x1001, false, "py::late:/srv/app/late.py", FRAME_JIT, "append: next flush");
	expect_frame(s, c.pid, base + 0x10ff, false, "py::later:/srv/app/late.py", FRAME_JIT, "append: next flush");
	expect_frame(s, c.pid, base + 0x80, false, "py::Parser.parse:/srv/app/parse.py", FRAME_JIT, "append: old kept");
	put_filef(path, "ae", "%" PRIx64 " 80 py::unfinished", base + 0x2000);
	symbolizer_begin_flush(s);
	expect_frame(s, c.pid, base + 0x2000, false, "[unknown]", FRAME_UNKNOWN, "append: an unfinished line waits");
	put_filef(path, "ae", ":/srv/app/u.py\n");
	symbolizer_begin_flush(s);
	expect_frame(s, c.pid, base + 0x2000, false, "py::unfinished:/srv/app/u.py", FRAME_JIT, "append: finished");
	symbolizer_get_stats(s, &st);
	CHECK(st.perfmap_files_loaded == 1 && st.jit_hits == 9 && st.perfmap_symbols == 8 && st.user_hits == 9,
	      "cpython: appends read in place: 1 file loaded, 9 JIT hits, 8 symbols (%" PRIu64 ", %" PRIu64
	      ", %" PRIu64 ")", st.perfmap_files_loaded, st.jit_hits, st.perfmap_symbols);

	/* the runtime writes the file again from its start (a JVM's Compiler.perfmap does) */
	put_filef(path, "we", "%" PRIx64 " 40 py::rewritten_with_a_longer_name:/srv/app/new.py\n", base);
	symbolizer_begin_flush(s);
	expect_frame(s, c.pid, base, false, "py::rewritten_with_a_longer_name:/srv/app/new.py", FRAME_JIT,
		     "rewrite: read from the start");
	expect_frame(s, c.pid, base + 0x1000, false, "[unknown]", FRAME_UNKNOWN, "rewrite: old symbols gone");

	if (named) { /* [anon:flamed-jit] */
		put_filef(path, "ae", "%" PRIx64 " 1000 named_region_code\n", named);
		symbolizer_begin_flush(s);
		expect_frame(s, c.pid, named + 0x10, false, "named_region_code", FRAME_JIT, "[anon:name] mapping");
	} else {
		SKIP("[anon:name] mapping", "the kernel cannot name anonymous mappings (PR_SET_VMA_ANON_NAME)");
	}

	/* the process exits: what was read stays */
	pid = c.pid;
	stop(&c, true);
	symbolizer_begin_flush(s);
	expect_frame(s, pid, base + 0x10, false, "py::rewritten_with_a_longer_name:/srv/app/new.py", FRAME_JIT,
		     "dead process: kept");
	unlink(path);
out:
	symbolizer_free(s);
	stop(&c, true);
	unlink(path);
}

/* The cache's bounds: symbols over all processes, and processes. */
static void test_cache_bounds(const char *dir)
{
	struct perfmap_cache_opts o = { .max_total = 3 };
	struct perfmap_cache *c = NULL;
	struct perfmap_stats st;
	char path[2][PATH_MAX];
	struct child k[2];
	uint64_t base[2];
	const char *name;
	int i;

	if (start_fixture(dir, -1, &k[0]) < 0)
		return;
	if (start_fixture(dir, -1, &k[1]) < 0) {
		stop(&k[0], true);
		return;
	}
	for (i = 0; i < 2; i++) {
		base[i] = val_of(&k[i], "code");
		map_path(k[i].pid, path[i], sizeof(path[i]));
		put_filef(path[i], "we", "%" PRIx64 " 10 proc%d_a\n%" PRIx64 " 10 proc%d_b\n", base[i], i,
			  base[i] + 0x10, i);
	}
	if (perfmap_cache_new(&o, &c) == 0) {
		name = perfmap_cache_find(c, (uint32_t)k[0].pid, base[0] + 0x11);
		CHECK(name && strcmp(name, "proc0_b") == 0, "cache: the first process is named (%s)", name ? name : "-");
		name = perfmap_cache_find(c, (uint32_t)k[1].pid, base[1] + 1);
		CHECK(name && strcmp(name, "proc1_a") == 0, "cache: the second process is named (%s)", name ? name : "-");
		perfmap_cache_get_stats(c, &st);
		CHECK(st.processes == 1 && st.symbols == 2 && st.files_loaded == 2,
		      "cache: 3 symbols at most: the older table is dropped (%" PRIu64 ", %" PRIu64 ")", st.processes,
		      st.symbols);
		name = perfmap_cache_find(c, (uint32_t)k[0].pid, base[0] + 1);
		perfmap_cache_get_stats(c, &st);
		CHECK(name && strcmp(name, "proc0_a") == 0 && st.files_loaded == 3 && st.processes == 1,
		      "cache: a dropped table is read again when needed (%" PRIu64 ")", st.files_loaded);
		perfmap_cache_free(c);
	}
	o.max_total = 0;
	o.max_processes = 1;
	if (perfmap_cache_new(&o, &c) == 0) {
		for (i = 0; i < 4; i++)
			perfmap_cache_find(c, (uint32_t)k[i % 2].pid, base[i % 2]);
		perfmap_cache_get_stats(c, &st);
		CHECK(st.processes == 1 && st.files_loaded == 4, "cache: 1 process at a time (%" PRIu64 ", %" PRIu64 ")",
		      st.processes, st.files_loaded);
		for (i = 0; i < 6; i++)
			perfmap_cache_begin_flush(c);
		perfmap_cache_get_stats(c, &st);
		CHECK(st.processes == 0 && st.symbols == 0, "cache: a process idle for 6 flushes is dropped");
		perfmap_cache_free(c);
	}
	for (i = 0; i < 2; i++) {
		stop(&k[i], true);
		unlink(path[i]);
	}
}

/* Expects the rejected counter to be want. */
static void expect_rejected(struct symbolizer *s, uint64_t want, const char *what)
{
	struct symbolizer_stats st;

	symbolizer_get_stats(s, &st);
	CHECK(st.perfmap_files_rejected == want, "ownership: %s: %" PRIu64 " files rejected (%" PRIu64 ")", what, want,
	      st.perfmap_files_rejected);
}

/* Perf maps of the wrong owner, writable by others, symlinks and FIFOs are ignored. */
static void test_ownership(const char *dir)
{
	struct symbolizer *s = NULL;
	char path[PATH_MAX], real[PATH_MAX + 8];
	const char *good = "py::trusted:/srv/app/t.py";
	struct child c;
	uint64_t base;

	if (start_fixture(dir, -1, &c) < 0)
		return;
	base = val_of(&c, "code");
	map_path(c.pid, path, sizeof(path));
	snprintf(real, sizeof(real), "%s.real", path);
	if (put_filef(path, "we", "%" PRIx64 " 100 %s\n", base, good) < 0 || chmod(path, 0644) < 0 ||
	    symbolizer_new(NULL, &s) < 0) {
		CHECK(0, "ownership: fixture");
		goto out;
	}
	if (chown(path, NOBODY, NOBODY) == 0) {
		expect_frame(s, c.pid, base + 8, false, "[unknown]", FRAME_UNKNOWN,
			     "ownership: nobody's map, root process");
		expect_rejected(s, 1, "another user's file");
		symbolizer_begin_flush(s);
		expect_frame(s, c.pid, base + 8, false, "[unknown]", FRAME_UNKNOWN, "ownership: still refused");
		expect_rejected(s, 1, "one file counted once");
	} else {
		CHECK(0, "ownership: chown to nobody");
	}
	if (chown(path, 0, 0) == 0 && chmod(path, 0666) == 0) {
		symbolizer_begin_flush(s);
		expect_frame(s, c.pid, base + 8, false, "[unknown]", FRAME_UNKNOWN, "ownership: world-writable map");
		expect_rejected(s, 2, "world-writable");
	}
	if (chmod(path, 0644) == 0) {
		symbolizer_begin_flush(s);
		expect_frame(s, c.pid, base + 8, false, good, FRAME_JIT, "ownership: fixed, then used");
	}
	if (rename(path, real) == 0 && symlink(real, path) == 0) {
		symbolizer_begin_flush(s);
		expect_frame(s, c.pid, base + 8, false, "[unknown]", FRAME_UNKNOWN, "ownership: a symlink is refused");
		expect_rejected(s, 3, "symlink");
	}
	if (unlink(path) == 0 && mkfifo(path, 0644) == 0) {
		symbolizer_begin_flush(s);
		expect_frame(s, c.pid, base + 8, false, "[unknown]", FRAME_UNKNOWN, "ownership: a FIFO is refused");
		expect_rejected(s, 4, "FIFO");
	}
out:
	symbolizer_free(s);
	stop(&c, true);
	unlink(path);
	unlink(real);
}

/* A process running as nobody: its own and root's perf maps are used, another user's is not. */
static void test_ownership_user(const char *dir)
{
	struct symbolizer *s = NULL;
	char path[PATH_MAX];
	struct child c;
	uint64_t base;

	if (chmod(dir, 0755) < 0 || start_fixture(dir, NOBODY, &c) < 0)
		return;
	base = val_of(&c, "code");
	map_path(c.pid, path, sizeof(path));
	if (put_filef(path, "we", "%" PRIx64 " 100 nobodys_code\n", base) < 0 || chown(path, NOBODY, NOBODY) < 0 ||
	    symbolizer_new(NULL, &s) < 0) {
		CHECK(0, "ownership (nobody): fixture");
		goto out;
	}
	expect_frame(s, c.pid, base + 8, false, "nobodys_code", FRAME_JIT, "ownership: nobody's map, nobody's process");
	if (chown(path, 0, 0) == 0) {
		symbolizer_begin_flush(s);
		expect_frame(s, c.pid, base + 8, false, "nobodys_code", FRAME_JIT, "ownership: root's map is trusted");
	}
	if (chown(path, 1234, 1234) == 0) {
		symbolizer_begin_flush(s);
		expect_frame(s, c.pid, base + 8, false, "[unknown]", FRAME_UNKNOWN,
			     "ownership: uid 1234's map, nobody's process");
		expect_rejected(s, 1, "a third user's file");
	}
out:
	symbolizer_free(s);
	stop(&c, true);
	unlink(path);
}

/* A process in its own pid and mount namespaces writes /tmp/perf-NSPID.map in its own /tmp. */
static void test_namespace(const char *dir)
{
	char exe[PATH_MAX], host[PATH_MAX];
	char *argv[] = { "unshare", "--pid", "--fork", "--mount", "--kill-child", exe, "ns", NULL };
	struct symbolizer *s = NULL;
	uint64_t base, nspid, hostpid;
	struct child c;

	snprintf(exe, sizeof(exe), "%s/fixture", dir);
	if (spawn(argv, -1, NULL, "END", &c) < 0 || val_of(&c, "mountfail") || !val_of(&c, "code")) {
		SKIP("namespace", "unshare --pid --fork --mount could not run the fixture (no CAP_SYS_ADMIN here?)");
		stop(&c, true);
		return;
	}
	base = val_of(&c, "code");
	nspid = val_of(&c, "nspid");
	hostpid = val_of(&c, "hostpid");
	map_path((pid_t)hostpid, host, sizeof(host));
	CHECK(nspid != hostpid && hostpid > 0, "namespace: the fixture is pid %" PRIu64 " inside, %" PRIu64 " outside",
	      nspid, hostpid);
	CHECK(access(host, F_OK) < 0, "namespace: no perf map of that pid in our /tmp");
	if (symbolizer_new(NULL, &s) < 0) {
		CHECK(0, "namespace: symbolizer_new");
		goto out;
	}
	expect_frame(s, (pid_t)hostpid, base + 0x10, false, "py::ns_func:/app/ns.py", FRAME_JIT,
		     "namespace: /proc/PID/root/tmp/perf-NSPID.map");
	/* a perf map under the host pid in our /tmp is only the fallback */
	if (put_filef(host, "we", "%" PRIx64 " 100 host_decoy\n", base) == 0) {
		symbolizer_begin_flush(s);
		expect_frame(s, (pid_t)hostpid, base + 0x10, false, "py::ns_func:/app/ns.py", FRAME_JIT,
			     "namespace: the process's own /tmp comes first");
	}
out:
	symbolizer_free(s);
	stop(&c, true);
	unlink(host);
}

/* ---- real runtimes ---- */

/* A perf-map entry as the test itself reads it. */
struct entry {
	uint64_t start, size;
	char *name;
};

/* Reads the complete lines of a perf map (an independent, simple reader). Returns the count; *out freed
 * with free_entries. */
static size_t read_entries(const char *path, struct entry **out)
{
	struct entry *v = NULL, *nv;
	size_t n = 0, cap = 0, len;
	char *line = NULL;
	size_t lcap = 0;
	unsigned long long a, b;
	int off;
	FILE *fp = fopen(path, "re");

	*out = NULL;
	if (!fp)
		return 0;
	while (getline(&line, &lcap, fp) > 0) {
		len = strlen(line);
		if (len == 0 || line[len - 1] != '\n' || sscanf(line, "%llx %llx %n", &a, &b, &off) != 2 || b == 0)
			continue;
		while (len > 0 && strchr("\r\n\t ", line[len - 1]))
			line[--len] = '\0';
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n].start = a;
		v[n].size = b;
		v[n].name = strdup(line + off);
		if (v[n].name)
			n++;
	}
	free(line);
	fclose(fp);
	*out = v;
	return n;
}

static void free_entries(struct entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

/* Executable mappings of a process with no file behind them. */
struct regions {
	size_t n;
	uint64_t lo[256], hi[256];
};

/* Reads pid's executable mappings with no file (no path, or "[anon:...]") into r. */
static void read_anon_exec(pid_t pid, struct regions *r)
{
	char path[64], line[1024], perms[8];
	unsigned long long lo, hi, off, ino;
	unsigned maj, min;
	int n = 0;
	FILE *fp;

	r->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fp = fopen(path, "re");
	while (fp && r->n < 256 && fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &maj, &min, &ino, &n) < 7)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (perms[2] == 'x' && ino == 0 && (line[n] == '\0' || strncmp(line + n, "[anon:", 6) == 0)) {
			r->lo[r->n] = lo;
			r->hi[r->n++] = hi;
		}
	}
	if (fp)
		fclose(fp);
}

static bool in_regions(const struct regions *r, uint64_t addr)
{
	for (size_t i = 0; i < r->n; i++) {
		if (addr >= r->lo[i] && addr < r->hi[i])
			return true;
	}
	return false;
}

/* The name of the last entry covering addr (the one a runtime wrote last), or NULL. */
static const char *last_covering(const struct entry *v, size_t n, uint64_t addr)
{
	const char *last = NULL;

	for (size_t j = 0; j < n; j++) {
		if (addr >= v[j].start && addr - v[j].start < v[j].size)
			last = v[j].name;
	}
	return last;
}

/* Of pid's perf-map entries in anonymous executable memory, every one whose name holds hot and up to
 * RUNTIME_SAMPLES others spread over the file: symbolizer_user on START+1 gives the name of the last line
 * covering it (normally that entry's own), as FRAME_JIT. */
static void check_runtime_map(pid_t pid, const char *what, const char *hot)
{
	struct symbolizer *s = NULL;
	struct regions r;
	struct entry *v;
	char path[PATH_MAX], want[PERFMAP_MAX_NAME + 8], label[128];
	size_t n, i, anon = 0, step, seen = 0, checked = 0, hot_seen = 0, own = 0;
	const char *last;

	map_path(pid, path, sizeof(path));
	n = read_entries(path, &v);
	read_anon_exec(pid, &r);
	for (i = 0; i < n; i++)
		anon += in_regions(&r, v[i].start + 1);
	CHECK(n > 0 && anon >= 5, "%s: %s has %zu entries, %zu in anonymous executable memory", what, path, n, anon);
	if (anon == 0 || symbolizer_new(NULL, &s) < 0) {
		free_entries(v, n);
		return;
	}
	step = anon / RUNTIME_SAMPLES ? anon / RUNTIME_SAMPLES : 1;
	for (i = 0; i < n; i++) {
		bool is_hot = strstr(v[i].name, hot) != NULL;

		if (!in_regions(&r, v[i].start + 1) || (seen++ % step && !is_hot))
			continue;
		last = last_covering(v, n, v[i].start + 1);
		own += last == v[i].name;
		folded_name(last, want, sizeof(want));
		snprintf(label, sizeof(label), "%s: entry %zu", what, i);
		expect_frame(s, pid, v[i].start + 1, false, want, FRAME_JIT, label);
		checked++;
		hot_seen += is_hot;
	}
	CHECK(checked >= 5 && own * 2 >= checked, "%s: %zu entries checked, %zu named by their own line", what, checked,
	      own);
	CHECK(hot_seen > 0, "%s: the hot function %s is among them (%zu)", what, hot, hot_seen);
	symbolizer_free(s);
	free_entries(v, n);
}

static void test_node(const char *dir)
{
	static const char script[] =
		"function flamedHotLoop(n) { let s = 0; for (let i = 0; i < n; i++) s += i % 7; return s; }\n"
		"let t = 0;\n"
		"for (let k = 0; k < 300; k++) t += flamedHotLoop(100000);\n"
		"function spin() { t += flamedHotLoop(100000); setImmediate(spin); }\n"
		"process.stdin.on('end', () => process.exit(0));\n"
		"process.stdin.resume();\n"
		"console.log('ready ' + process.pid + ' ' + (t > 0));\n"
		"spin();\n";
	char *argv[] = { "node", "--perf-basic-prof", "--interpreted-frames-native-stack", "-e", (char *)script, NULL };
	char path[PATH_MAX];
	struct child c;

	if (access("/usr/bin/node", X_OK) < 0 && run_quiet("command -v node >/dev/null 2>&1") != 0) {
		SKIP("node", "node is not installed");
		return;
	}
	if (spawn(argv, -1, dir, "ready", &c) < 0) { /* V8 leaves isolate-*.log in its directory */
		CHECK(0, "node: started and printed ready");
		stop(&c, true);
		return;
	}
	check_runtime_map(c.pid, "node", "flamedHotLoop");
	map_path(c.pid, path, sizeof(path));
	stop_gently(&c);
	unlink(path);
}

static void test_java(const char *dir)
{
	static const char src[] =
		"public class FlamedHot {\n"
		"    static long flamedSpin(long n) { long s = 0; for (long i = 0; i < n; i++) s += i % 7; return s; }\n"
		"    public static void main(String[] args) throws Exception {\n"
		"        long t = 0;\n"
		"        for (int k = 0; k < 3000; k++) t += flamedSpin(100000);\n"
		"        Thread th = new Thread(() -> { long u = 0; while (true) u += flamedSpin(100000); });\n"
		"        th.setDaemon(true);\n"
		"        th.start();\n"
		"        System.out.println(\"ready \" + ProcessHandle.current().pid() + \" \" + (t > 0));\n"
		"        System.out.flush();\n"
		"        while (System.in.read() >= 0) { }\n"
		"        System.exit(0);\n"
		"    }\n"
		"}\n";
	char file[PATH_MAX], out[PATH_MAX], map[PATH_MAX], sock[64];
	char *argv[] = { "java", file, NULL };
	struct child c;
	int rc;

	if (run_quiet("command -v java >/dev/null 2>&1 && command -v jcmd >/dev/null 2>&1") != 0) {
		SKIP("java", "java or jcmd is not installed");
		return;
	}
	snprintf(file, sizeof(file), "%s/FlamedHot.java", dir);
	snprintf(out, sizeof(out), "%s/jcmd.out", dir);
	if (put_file(file, "we", src, sizeof(src) - 1) < 0 || spawn(argv, -1, dir, "ready", &c) < 0) {
		CHECK(0, "java: started and printed ready");
		stop(&c, true);
		return;
	}
	map_path(c.pid, map, sizeof(map));
	rc = run_quiet("jcmd %d Compiler.perfmap >'%s' 2>&1", (int)c.pid, out);
	if (rc != 0 || run_quiet("grep -qiE 'unknown|not supported|exception' '%s'", out) == 0 || access(map, F_OK) < 0) {
		SKIP("java", "jcmd PID Compiler.perfmap did not write /tmp/perf-PID.map (this JDK lacks it?)");
	} else {
		check_runtime_map(c.pid, "java", "flamedSpin");
	}
	snprintf(sock, sizeof(sock), "/tmp/.java_pid%d", (int)c.pid);
	stop_gently(&c);
	unlink(map);
	unlink(sock); /* jcmd's attach socket, left behind when the JVM had to be killed */
}

int main(void)
{
	char dir[] = "/tmp/test_perfmap.XXXXXX";

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return CHECK_EXIT();
	}
	test_parser();
	test_table_mixed(dir);
	test_table_overlap(dir);
	test_table_limits(dir);
	if (run_quiet("cc --version >/dev/null 2>&1") != 0) {
		SKIP("live fixtures", "no C compiler: apt-get install gcc");
	} else if (build_fixture(dir) < 0) {
		CHECK(0, "fixture: built with cc");
	} else {
		test_cpython(dir);
		test_cache_bounds(dir);
		if (geteuid() != 0) {
			SKIP("ownership", "needs root (chown)");
			SKIP("namespace", "needs root (unshare --pid --mount)");
		} else {
			test_ownership(dir);
			test_ownership_user(dir);
			test_namespace(dir);
		}
	}
	test_node(dir);
	test_java(dir);
	run_quiet("rm -rf -- '%s'", dir);
	return CHECK_EXIT();
}
