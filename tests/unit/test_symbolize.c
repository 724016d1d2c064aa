/* test_symbolize.c - the symbolizer: ELF fixtures built with cc and run here, separate debug files, kallsyms,
 * and the parsers fed malformed, truncated and corrupted input. */
#include <elf.h>
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "testutil.h"
#include "elf/debuginfo.h"
#include "elf/elf_file.h"
#include "symbolize/elf_symbols.h"
#include "symbolize/kallsyms.h"
#include "elf/procmaps.h"
#include "symbolize/symbolizer.h"

#define MAX_ADDRS 16
#define INSIDE 4 /* bytes into a function: still inside it at -O0 */

/* The fixture programs. VARIANT makes each build's code (and build-id) differ; WITH_LIB links libfixlib.so;
 * argv[1], when given, is a library to dlopen whose strip_addrs() is called. Each prints "name address"
 * lines, then "END", then waits for its stdin to close. */
static const char app_src[] =
	"#include <dlfcn.h>\n"
	"#include <stdio.h>\n"
	"#include <unistd.h>\n"
	"#define NOINLINE __attribute__((noinline))\n"
	"extern void fixlib_addrs(void **out);\n"
	"static volatile int sink;\n"
	"static NOINLINE int app_static_func(int x)\n"
	"{\n\tint i;\n\tfor (i = 0; i < x; i++)\n\t\tsink += i * VARIANT;\n\treturn sink;\n}\n"
	"NOINLINE int app_global_func(int x)\n"
	"{\n\tint i;\n\tfor (i = 0; i < x; i++)\n\t\tsink ^= i;\n\treturn sink + app_static_func(x);\n}\n"
	"static void print3(const char *a, const char *b, const char *c, void **v)\n"
	"{\n\tprintf(\"%s %p\\n%s %p\\n%s %p\\n\", a, v[0], b, v[1], c, v[2]);\n}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tvoid *v[3];\n\tchar buf[16];\n"
	"\tprintf(\"app_static_func %p\\n\", (void *)app_static_func);\n"
	"\tprintf(\"app_global_func %p\\n\", (void *)app_global_func);\n"
	"\tprintf(\"main %p\\n\", (void *)main);\n"
	"#ifdef WITH_LIB\n"
	"\tfixlib_addrs(v);\n"
	"\tprint3(\"fixlib_alpha\", \"fixlib_beta\", \"fixlib_hidden\", v);\n"
	"#endif\n"
	"\tif (argc > 1) {\n"
	"\t\tvoid *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);\n"
	"\t\tvoid (*fn)(void **) = h ? (void (*)(void **))dlsym(h, \"strip_addrs\") : 0;\n"
	"\t\tif (fn) {\n\t\t\tfn(v);\n\t\t\tprint3(\"strip_alpha\", \"strip_beta\", \"strip_hidden\", v);\n\t\t}\n"
	"\t}\n"
	"\tprintf(\"END\\n\");\n\tfflush(stdout);\n"
	"\twhile (read(0, buf, sizeof(buf)) > 0)\n\t\t;\n"
	"\treturn app_global_func(0);\n"
	"}\n";

/* A library whose functions are named PREFIX_alpha, PREFIX_hidden (static), PREFIX_beta; PREFIX_addrs
 * returns their addresses as the library itself sees them. */
static const char lib_fmt[] =
	"#define NOINLINE __attribute__((noinline))\n"
	"static volatile int sink;\n"
	"NOINLINE int %1$s_alpha(int x)\n{\n\tint i;\n\tfor (i = 0; i < x; i++)\n\t\tsink += i;\n\treturn sink;\n}\n"
	"static NOINLINE int %1$s_hidden(int x)\n"
	"{\n\tint i;\n\tfor (i = 0; i < x; i++)\n\t\tsink -= i;\n\treturn sink;\n}\n"
	"NOINLINE int %1$s_beta(int x)\n{\n\tint i;\n\tfor (i = 0; i < x; i++)\n\t\tsink ^= i;\n"
	"\treturn sink + %1$s_hidden(x);\n}\n"
	"void %1$s_addrs(void **out)\n{\n\tout[0] = (void *)%1$s_alpha;\n\tout[1] = (void *)%1$s_beta;\n"
	"\tout[2] = (void *)%1$s_hidden;\n}\n";

static const char kallsyms_fixture[] =
	"0000000000000000 A fixed_percpu_data\n"
	"ffffffff81000000 T _stext\n"
	"ffffffff81000100 t local_func\n"
	"ffffffff81000200 W weak_func\n"
	"ffffffff81000300 D some_data\n"
	"ffffffff81000400 T _etext\n"
	"this line is garbage\n"
	"ffffffff8100zz00 T bad_address\n"
	"ffffffff81000500\n"
	"ffffffffc0000000 t mod_func\t[mymod]\n"
	"ffffffffc0000000 T mod_alias\t[mymod]\n";

static const char odd_names[] =
	"ffffffff81000000 T semi;colon\n"
	"ffffffff81000100 T ctl\001x\n"
	"ffffffff81000200 T _etext\n";

/* A running fixture: its pid, its stdin (closing it ends the child), the addresses it printed. */
struct child {
	pid_t pid;
	int in_fd;
	size_t n;
	char names[MAX_ADDRS][32];
	uint64_t addrs[MAX_ADDRS];
};

/* The value nm prints for symbol name in file, or 0. */
static uint64_t nm_value(const char *file, const char *name)
{
	char cmd[PATH_MAX + 32], line[512], sym[256], type;
	unsigned long long v, found = 0;
	FILE *fp;

	snprintf(cmd, sizeof(cmd), "nm -- '%s' 2>/dev/null", file);
	fp = popen(cmd, "re");
	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%llx %c %255s", &v, &type, sym) == 3 && strcmp(sym, name) == 0)
			found = v;
	}
	pclose(fp);
	return found;
}

/* Starts exe (with arg, may be NULL) and reads the addresses it prints. Returns 0 or -1. */
static int spawn(const char *exe, const char *arg, struct child *c)
{
	unsigned long long a;
	char line[128], name[32];
	int in[2], out[2];
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
		execl(exe, exe, arg, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in_fd = in[1];
	fp = fdopen(out[0], "r");
	if (c->pid < 0 || !fp) {
		if (fp)
			fclose(fp);
		else
			close(out[0]);
		close(in[1]);
		return -1;
	}
	while (fgets(line, sizeof(line), fp) && strncmp(line, "END", 3) != 0) {
		if (sscanf(line, "%31s %llx", name, &a) == 2 && c->n < MAX_ADDRS) {
			snprintf(c->names[c->n], sizeof(c->names[c->n]), "%s", name);
			c->addrs[c->n++] = a;
		}
	}
	fclose(fp);
	return 0;
}

/* Ends the child: SIGKILL when kill is set, else by closing its stdin; then reaps it. */
static void stop(struct child *c, bool kill_it)
{
	if (c->pid <= 0)
		return;
	if (kill_it)
		kill(c->pid, SIGKILL);
	if (c->in_fd >= 0)
		close(c->in_fd);
	c->in_fd = -1;
	waitpid(c->pid, NULL, 0);
	c->pid = 0;
}

/* The address the child printed for name, or 0. */
static uint64_t addr_of(const struct child *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (strcmp(c->names[i], name) == 0)
			return c->addrs[i];
	}
	return 0;
}

/* One check: pid's address addr (a return address when ret) is named want, of kind kind. */
static void expect_user(struct symbolizer *s, pid_t pid, uint64_t addr, bool ret, const char *want, int kind,
			const char *what)
{
	char buf[256];
	int got = symbolizer_user(s, (uint32_t)pid, addr, ret, buf, sizeof(buf));

	CHECK(got == kind && strcmp(buf, want) == 0, "%s: 0x%" PRIx64 "%s is %s (got \"%s\", kind %d)", what, addr,
	      ret ? " (return address)" : "", want, buf, got);
}

/* Checks that the function name of child c is found at its start, inside it, and as a return address. */
static void expect_function(struct symbolizer *s, const struct child *c, const char *name, const char *what)
{
	uint64_t a = addr_of(c, name);
	char label[128];

	CHECK(a != 0, "%s: the fixture printed the address of %s", what, name);
	if (!a)
		return;
	snprintf(label, sizeof(label), "%s: %s", what, name);
	expect_user(s, c->pid, a, false, name, FRAME_USER, label);
	expect_user(s, c->pid, a + INSIDE, false, name, FRAME_USER, label);
	expect_user(s, c->pid, a + 1, true, name, FRAME_USER, label);
}

/* ---- parsers ---- */

static void test_procmaps_parser(void)
{
	static const char *const bad[] = {
		"", "\n", "garbage", "55d4c2a00000 r-xp 00000000 08:01 1 /x",
		"2000-1000 r-xp 00000000 08:01 1 /x", "1000-1000 r-xp 00000000 08:01 1 /x",
		"1000-2000 rxp 00000000 08:01 1 /x", "1000-2000 r-xq 00000000 08:01 1 /x",
		"1000-2000 r-xp 00000000 0801 1 /x", "1000-2000 r-xp zz 08:01 1 /x",
		"11112222333344445-2000 r-xp 0 08:01 1 /x", "1000-2000 r-xp 0 08:01 /x",
		"1000-2000 r-xp 0 08:01 123abc /x", "1000-2000 r-xp 0 08:01 99999999999999999999999 /x",
		"1000-", "1000-2000", "1000-2000 r-xp", "-1000-2000 r-xp 0 08:01 1 /x",
	};
	char line[256], *huge;
	struct procmap m;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "%s", bad[i]);
		CHECK(procmaps_parse_line(line, &m) == -EINVAL, "procmaps: malformed line %zu \"%.*s\" is refused", i,
		      (int)strcspn(bad[i], "\n"), bad[i]);
	}
	huge = malloc(20000);
	if (huge) {
		memset(huge, 'f', 19999);
		huge[19999] = '\0';
		CHECK(procmaps_parse_line(huge, &m) == -EINVAL, "procmaps: a 20000-character line is refused");
		free(huge);
	}

	snprintf(line, sizeof(line), "%s",
		 "55d4c2a00000-55d4c2a01000 r-xp 00001000 fd:01 1234567   /usr/bin/my prog (deleted)\n");
	rc = procmaps_parse_line(line, &m);
	CHECK(rc == 0 && m.start == 0x55d4c2a00000 && m.end == 0x55d4c2a01000 && m.offset == 0x1000 &&
		      m.dev_major == 0xfd && m.dev_minor == 1 && m.inode == 1234567 && m.exec && m.deleted && m.path &&
		      strcmp(m.path, "/usr/bin/my prog") == 0,
	      "procmaps: a path with a space and \" (deleted)\" is parsed");
	snprintf(line, sizeof(line), "7ffd1c3f5000-7ffd1c3f7000 r-xp 00000000 00:00 0                  [vdso]\n");
	rc = procmaps_parse_line(line, &m);
	CHECK(rc == 0 && m.exec && !m.deleted && m.inode == 0 && m.path && strcmp(m.path, "[vdso]") == 0,
	      "procmaps: [vdso] is parsed");
	snprintf(line, sizeof(line), "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n");
	rc = procmaps_parse_line(line, &m);
	CHECK(rc == 0 && !m.exec && !m.path, "procmaps: an anonymous mapping has no path");
}

static void test_procmaps_file(const char *dir)
{
	static const char maps[] =
		"00400000-00401000 r--p 00000000 08:01 10 /bin/a\n"
		"00401000-00402000 r-xp 00001000 08:01 10 /bin/a\n"
		"bad line here\n"
		"7f0000000000-7f0000001000 rwxp 00000000 00:00 0 \n"
		"00300000-00301000 r-xp 00000000 08:01 11 /lib/b.so\n"
		"00500000-00501000 r-xp 00000000 08:01 12\n";
	struct procmap *m = NULL;
	char path[PATH_MAX];
	size_t n = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/maps", dir);
	if (write_file(path, maps, sizeof(maps) - 1) < 0) {
		SKIP("procmaps: file", "cannot write the fixture");
		return;
	}
	rc = procmaps_read_file(path, &m, &n);
	CHECK(rc == 0 && n == 4, "procmaps: a file with a bad line gives its 4 executable mappings (got %d, %zu)", rc, n);
	CHECK(rc == 0 && n == 4 && m[0].start == 0x300000 && m[1].start == 0x401000 && m[2].start == 0x500000 &&
		      !m[2].path && m[3].start == 0x7f0000000000,
	      "procmaps: the mappings are sorted by address");
	procmaps_free(m, n);
	snprintf(path, sizeof(path), "%s/no-such-maps", dir);
	CHECK(procmaps_read_file(path, &m, &n) == -ENOENT, "procmaps: a missing file is -ENOENT");
}

/* A copy of /bin/true at path mapped executable (a page of it): the mapping, or MAP_FAILED; unlinked
 * after the mapping with unlink_after (a deleted file's mapping). */
static void *map_copy_of_true(const char *path, bool unlink_after)
{
	char cmd[2 * PATH_MAX];
	void *mem = MAP_FAILED;
	int fd;

	snprintf(cmd, sizeof(cmd), "cp /bin/true %s", path);
	fd = run(cmd) == 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		mem = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		close(fd);
		if (unlink_after)
			unlink(path);
	}
	return mem;
}

/* The same mappings from a live process (read with PROCMAP_QUERY where the kernel has it) as from a
 * copy of its maps file's text (a plain file: parsed line by line); with a deleted file's mapping. */
static void test_procmaps_query(const char *dir)
{
	char path[PATH_MAX], copy[PATH_MAX], cmd[3 * PATH_MAX];
	struct procmap *live = NULL, *text = NULL;
	size_t nlive = 0, ntext = 0, nread, same = 0, deleted = 0;
	void *mem;

	snprintf(path, sizeof(path), "%s/gone.bin", dir);
	mem = map_copy_of_true(path, true);
	CHECK(mem != MAP_FAILED, "procmaps: a deleted file mapped executable");
	snprintf(copy, sizeof(copy), "%s/maps.copy", dir);
	snprintf(cmd, sizeof(cmd), "cat /proc/%d/maps > %s", (int)getpid(), copy);
	CHECK(procmaps_read((uint32_t)getpid(), &live, &nlive) == 0 && run(cmd) == 0 &&
	      procmaps_read_file(copy, &text, &ntext) == 0, "procmaps: read live and from a copy of the text");
	/* The text ends with the kernel's [vsyscall] page, which is no mapping of the process's own (no call
	 * of a program lands there since vsyscall=xonly emulates them in the kernel). */
	nread = ntext;
	if (ntext && text[ntext - 1].path && !strcmp(text[ntext - 1].path, "[vsyscall]") &&
	    !(nlive && live[nlive - 1].path && !strcmp(live[nlive - 1].path, "[vsyscall]")))
		ntext--;
	CHECK(nlive == ntext && nlive > 2, "procmaps: as many executable mappings live as in the text (%zu, %zu)",
	      nlive, ntext);
	for (size_t i = 0; i < nlive && i < ntext; i++) {
		const struct procmap *a = &live[i], *b = &text[i];

		same += a->start == b->start && a->end == b->end && a->offset == b->offset && a->inode == b->inode &&
			a->dev_major == b->dev_major && a->dev_minor == b->dev_minor && a->exec && b->exec &&
			a->deleted == b->deleted && !a->path == !b->path && (!a->path || !strcmp(a->path, b->path));
		deleted += a->deleted && a->path && !strcmp(a->path, path);
	}
	CHECK(same == nlive && nlive, "procmaps: each the same, path and all (%zu of %zu)", same, nlive);
	CHECK(deleted == 1, "procmaps: the deleted file's mapping has its path, marked deleted (%zu)", deleted);
	procmaps_free(live, nlive);
	procmaps_free(text, nread);
	if (mem != MAP_FAILED)
		munmap(mem, 4096);
}

/* A snapshot says whether it found the process's mappings other than its snapshot before: at its first,
 * yes; again at once, no; after an executable file was mapped, yes; a flush's read between does not
 * count (what was handed on is what the snapshots read). */
static void test_snapshot_changed(const char *dir)
{
	struct symbolizer *s = NULL;
	char path[PATH_MAX], name[256];
	uint32_t pid = (uint32_t)getpid();
	void *mem;
	bool first, again, mapped, after_flush;

	if (symbolizer_new(NULL, &s) < 0) {
		CHECK(0, "snapshot: symbolizer_new");
		return;
	}
	first = symbolizer_snapshot(s, pid, 0) == 0 && symbolizer_maps_changed(s);
	again = symbolizer_snapshot(s, pid, 0) == 0 && !symbolizer_maps_changed(s);
	snprintf(path, sizeof(path), "%s/mapped.bin", dir);
	mem = map_copy_of_true(path, false);
	symbolizer_begin_flush(s);
	symbolizer_user(s, pid, (uint64_t)(uintptr_t)mem, false, name, sizeof(name)); /* the flush's read: sees it */
	mapped = mem != MAP_FAILED && symbolizer_snapshot(s, pid, 0) == 0 && symbolizer_maps_changed(s);
	after_flush = symbolizer_snapshot(s, pid, 0) == 0 && !symbolizer_maps_changed(s);
	CHECK(first, "snapshot: the first read is a change");
	CHECK(again, "snapshot: read again at once, unchanged");
	CHECK(mapped, "snapshot: a file mapped executable since is a change, though a flush read it between");
	CHECK(after_flush, "snapshot: and read again, unchanged");
	if (mem != MAP_FAILED)
		munmap(mem, 4096);
	symbolizer_free(s);
}

/* The maps file a snapshot holds open (PROCCACHE_KEEP_FD) serves the next snapshots of the process without
 * an open: the mappings as they are then; a file mapped since is seen. PROCCACHE_CLOSE_FD closes it after
 * its read, PROCCACHE_FRESH opens the file again. Held for a program image: after the process's execve
 * the held file reads nothing, and the file is opened again (the new program's mappings). At most
 * PROCCACHE_MAX_FDS are held. */
static void test_snapshot_held(const char *dir)
{
	struct symbolizer *s = NULL;
	struct symbolizer_stats st;
	uint32_t pid = (uint32_t)getpid();
	char path[PATH_MAX], buf[16];
	void *mem;
	bool first, reused, mapped, closed, fresh, execd = false, bounded;
	int go[2], pfd;
	pid_t child = -1;

	if (symbolizer_new(NULL, &s) < 0) {
		CHECK(0, "held: symbolizer_new");
		return;
	}
	first = symbolizer_snapshot(s, pid, PROCCACHE_FRESH | PROCCACHE_KEEP_FD) == 0;
	symbolizer_get_stats(s, &st);
	first = first && st.maps_reads.opens == 1 && st.maps_reads.fds_held == 1;
	reused = symbolizer_snapshot(s, pid, PROCCACHE_KEEP_FD) == 0 && !symbolizer_maps_changed(s);
	symbolizer_get_stats(s, &st);
	reused = reused && st.maps_reads.opens == 1 && st.maps_reads.fd_reads == 1;
	snprintf(path, sizeof(path), "%s/held.bin", dir);
	mem = map_copy_of_true(path, false);
	mapped = mem != MAP_FAILED && symbolizer_snapshot(s, pid, PROCCACHE_CLOSE_FD) == 0 && symbolizer_maps_changed(s);
	symbolizer_get_stats(s, &st);
	mapped = mapped && st.maps_reads.opens == 1 && st.maps_reads.fd_reads == 2;
	closed = st.maps_reads.fds_held == 0 && symbolizer_snapshot(s, pid, 0) == 0;
	symbolizer_get_stats(s, &st);
	closed = closed && st.maps_reads.opens == 2 && st.maps_reads.fds_held == 0;
	fresh = symbolizer_snapshot(s, pid, PROCCACHE_KEEP_FD) == 0 &&
		symbolizer_snapshot(s, pid, PROCCACHE_FRESH | PROCCACHE_KEEP_FD) == 0;
	symbolizer_get_stats(s, &st);
	fresh = fresh && st.maps_reads.opens == 4 && st.maps_reads.fds_held == 1;
	CHECK(first, "held: the first snapshot opens the maps file and holds it");
	CHECK(reused, "held: the next reads by it, unchanged, no open");
	CHECK(mapped, "held: a file mapped since is seen by the held file (%" PRIu64 " reads by it)", st.maps_reads.fd_reads);
	CHECK(closed, "held: closed after the read that said so; the next one opens the file");
	CHECK(fresh, "held: PROCCACHE_FRESH opens the file again, holding the new one");

	/* A child that execs /bin/sleep once told: its held file was its first image's. */
	if (pipe(go) == 0 && (child = fork()) == 0) {
		close(go[1]);
		if (read(go[0], buf, 1) == 1)
			execl("/bin/sleep", "sleep", "5", (char *)NULL);
		_exit(127);
	}
	if (child > 0) {
		const struct procmap *m;
		size_t n = 0;
		char exe[PATH_MAX], link[64];
		ssize_t len;

		close(go[0]);
		(void)symbolizer_snapshot(s, (uint32_t)child, PROCCACHE_FRESH | PROCCACHE_KEEP_FD);
		symbolizer_get_stats(s, &st);
		uint64_t opens = st.maps_reads.opens;
		if (write(go[1], "x", 1) == 1)
			for (int i = 0; i < 200; i++) { /* until it runs sleep */
				snprintf(link, sizeof(link), "/proc/%d/exe", (int)child);
				len = readlink(link, exe, sizeof(exe) - 1);
				if (len > 0 && (exe[len] = '\0', strstr(exe, "sleep")))
					break;
				usleep(10000);
			}
		usleep(20000);
		/* A recheck of the image reported first (the held file's): gone, it is not read again. */
		(void)symbolizer_snapshot(s, (uint32_t)child, PROCCACHE_KEEP_FD);
		bool kept = !symbolizer_maps_changed(s);
		symbolizer_get_stats(s, &st);
		CHECK(kept && st.maps_reads.opens == opens,
		      "held: a recheck after the process's execve reads its held file, finds the image gone and opens "
		      "nothing (%" PRIu64 " opens more), the table kept", st.maps_reads.opens - opens);
		/* The new image's first report: its file opened again. */
		execd = symbolizer_snapshot(s, (uint32_t)child, PROCCACHE_FRESH | PROCCACHE_KEEP_FD) == 0 &&
			symbolizer_maps_changed(s);
		m = symbolizer_maps(s, (uint32_t)child, &n);
		bool has_sleep = false;
		for (size_t i = 0; m && i < n; i++)
			has_sleep |= m[i].path && strstr(m[i].path, "sleep") != NULL;
		symbolizer_get_stats(s, &st);
		CHECK(execd && has_sleep && st.maps_reads.opens == opens + 1,
		      "held: the new image's first report opens its file again: sleep's mappings (%zu, %" PRIu64
		      " opens more)", n, st.maps_reads.opens - opens);
		close(go[1]);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}

	/* The bound: more processes than it, each held. */
	pid_t kids[PROCCACHE_MAX_FDS + 6];
	int nkids = 0;

	for (int i = 0; i < PROCCACHE_MAX_FDS + 6; i++) {
		pid_t k = fork();

		if (k == 0) {
			pause();
			_exit(0);
		}
		if (k > 0)
			kids[nkids++] = k;
	}
	pfd = 0;
	for (int i = 0; i < nkids; i++)
		pfd += symbolizer_snapshot(s, (uint32_t)kids[i], PROCCACHE_FRESH | PROCCACHE_KEEP_FD) == 0;
	symbolizer_get_stats(s, &st);
	bounded = pfd == nkids && st.maps_reads.fds_held == PROCCACHE_MAX_FDS && st.maps_reads.fds_full >= 6;
	CHECK(bounded, "held: at most %d files held (%" PRIu64 " held, %" PRIu64 " not for the bound, of %d processes read)",
	      PROCCACHE_MAX_FDS, st.maps_reads.fds_held, st.maps_reads.fds_full, pfd);
	for (int i = 0; i < nkids; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	if (mem != MAP_FAILED)
		munmap(mem, 4096);
	symbolizer_free(s);
}

/* ---- kallsyms ---- */

static void expect_kernel(struct symbolizer *s, uint64_t addr, const char *want, int kind)
{
	char buf[128];
	int got = symbolizer_kernel(s, addr, buf, sizeof(buf));

	CHECK(got == kind && strcmp(buf, want) == 0, "kallsyms: 0x%" PRIx64 " is %s (got \"%s\", kind %d)", addr, want,
	      buf, got);
}

static void test_kallsyms_fixture(const char *dir)
{
	struct symbolizer_opts o = { 0 };
	struct symbolizer *s = NULL;
	struct symbolizer_stats st;
	struct kallsyms *k = NULL;
	char path[PATH_MAX];
	FILE *fp;
	int rc, i;

	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	if (write_file(path, kallsyms_fixture, sizeof(kallsyms_fixture) - 1) < 0) {
		SKIP("kallsyms: fixture", "cannot write the fixture");
		return;
	}
	rc = kallsyms_load(path, &k);
	CHECK(rc == 0 && kallsyms_count(k) == 5, "kallsyms: the fixture holds 5 text symbols (got %zu)",
	      rc == 0 ? kallsyms_count(k) : 0);
	kallsyms_free(k);

	char modules[PATH_MAX];
	snprintf(modules, sizeof(modules), "%s/modules", dir);
	write_file(modules, "mod 16384 0 - Live 0xffffffffc0000000\n", 38);
	o.modules_path = modules;
	o.kallsyms_path = path;
	rc = symbolizer_new(&o, &s);
	CHECK(rc == 0, "kallsyms: symbolizer_new with the fixture");
	if (rc)
		return;
	expect_kernel(s, 0xffffffff81000000ull, "_stext", FRAME_KERNEL);
	expect_kernel(s, 0xffffffff81000150ull, "local_func", FRAME_KERNEL);
	expect_kernel(s, 0xffffffff81000350ull, "weak_func", FRAME_KERNEL); /* the data symbol is not text */
	expect_kernel(s, 0xffffffff80000000ull, "[unknown]", FRAME_UNKNOWN); /* below the first symbol */
	expect_kernel(s, 0xffffffff81000500ull, "[unknown]", FRAME_UNKNOWN); /* past _etext */
	expect_kernel(s, 0xffffffffc0000010ull, "mod_alias", FRAME_KERNEL);  /* T wins over t at one address */
	expect_kernel(s, 0xffffffffc2000000ull, "[unknown]", FRAME_UNKNOWN); /* far past the last symbol */
	symbolizer_get_stats(s, &st);
	CHECK(st.kernel_hits == 4 && st.kernel_misses == 3, "kallsyms: stats count 4 hits, 3 misses");

	/* a module loaded later is named once kallsyms is re-read: after misses, every 30 flushes */
	fp = fopen(path, "ae");
	rc = fp ? fputs("ffffffffc1000000 t late_func\t[late]\n", fp) : -1;
	if (fp && fclose(fp) != 0)
		rc = -1;
	CHECK(rc >= 0, "kallsyms: appended a late module to the fixture");
	for (i = 0; i < 29; i++)
		symbolizer_begin_flush(s);
	expect_kernel(s, 0xffffffffc1000010ull, "[unknown]", FRAME_UNKNOWN);
	symbolizer_begin_flush(s);
	expect_kernel(s, 0xffffffffc1000010ull, "late_func", FRAME_KERNEL);

	/* a module load (seen in the modules file) re-reads kallsyms at the next flush, misses or not */
	fp = fopen(path, "ae");
	rc = fp ? fputs("ffffffffc1100000 t loaded_func\t[loaded]\n", fp) : -1;
	if (fp && fclose(fp) != 0)
		rc = -1;
	symbolizer_begin_flush(s);
	char kname[64];
	symbolizer_kernel(s, 0xffffffffc1100010ull, kname, sizeof(kname));
	CHECK(strcmp(kname, "loaded_func") != 0, "kallsyms: a module not yet in the modules file is not read (%s)", kname);
	write_file(modules, "mod 16384 0 - Live 0xffffffffc0000000\nloaded 16384 0 - Live 0xffffffffc1100000\n", 78);
	symbolizer_begin_flush(s);
	expect_kernel(s, 0xffffffffc1100010ull, "loaded_func", FRAME_KERNEL);
	/* a reference count changing in the modules file is no module load: nothing to do */
	write_file(modules, "mod 16384 3 - Live 0xffffffffc0000000\nloaded 16384 1 - Live 0xffffffffc1100000\n", 78);
	symbolizer_begin_flush(s);
	symbolizer_free(s);

	/* names are made safe for folded lines, and truncated to the buffer */
	snprintf(path, sizeof(path), "%s/kallsyms-odd", dir);
	rc = write_file(path, odd_names, sizeof(odd_names) - 1);
	s = NULL;
	if (rc == 0)
		rc = symbolizer_new(&o, &s);
	CHECK(rc == 0, "kallsyms: symbolizer_new with odd names");
	if (rc == 0) {
		char small[6];

		expect_kernel(s, 0xffffffff81000000ull, "semi:colon", FRAME_KERNEL);
		expect_kernel(s, 0xffffffff81000100ull, "ctl?x", FRAME_KERNEL);
		rc = symbolizer_kernel(s, 0xffffffff81000000ull, small, sizeof(small));
		CHECK(rc == FRAME_KERNEL && strcmp(small, "semi:") == 0, "kallsyms: a name is truncated to the buffer");
		rc = symbolizer_kernel(s, 0xffffffff81000000ull, small, 0);
		CHECK(rc == FRAME_KERNEL, "kallsyms: a zero-length buffer is left alone");
	}
	symbolizer_free(s);

	/* A line holding a NUL byte is dropped, and only it: the line after it is read. */
	static const char nul_line[] = "ffffffff81000000 T bro\0ken\n"
				       "ffffffff81000100 T after_nul\n"
				       "ffffffff81000200 T _etext\n";
	snprintf(path, sizeof(path), "%s/kallsyms-nul", dir);
	rc = write_file(path, nul_line, sizeof(nul_line) - 1);
	if (rc == 0)
		rc = kallsyms_load(path, &k);
	CHECK(rc == 0 && kallsyms_count(k) == 2, "kallsyms: a line with a NUL byte is dropped (%zu symbols, want 2)",
	      rc == 0 ? kallsyms_count(k) : 0);
	if (rc == 0) {
		const char *got = kallsyms_lookup(k, 0xffffffff81000100ull);

		CHECK(got && strcmp(got, "after_nul") == 0, "kallsyms: the line after a NUL byte is read (got %s)",
		      got ? got : "nothing");
	}
	kallsyms_free(k);
	k = NULL;

	snprintf(path, sizeof(path), "%s/kallsyms-hidden", dir);
	rc = write_file(path, "0000000000000000 T _stext\n0000000000000000 T schedule\n", 52);
	s = NULL;
	if (rc == 0)
		rc = symbolizer_new(&o, &s);
	CHECK(rc == 0, "kallsyms: hidden (all-zero) addresses still give a symbolizer");
	if (rc == 0)
		expect_kernel(s, 0xffffffff81000000ull, "[unknown]", FRAME_UNKNOWN);
	symbolizer_free(s);

	snprintf(path, sizeof(path), "%s/no-such-kallsyms", dir);
	s = NULL;
	rc = symbolizer_new(&o, &s);
	CHECK(rc == -ENOENT && !s, "kallsyms: an explicit missing kallsyms file is -ENOENT");
}

static void test_kallsyms_real(void)
{
	char line[512], name[256], type;
	unsigned long long a, found = 0;
	struct symbolizer *s = NULL;
	FILE *fp = fopen("/proc/kallsyms", "re");

	if (!fp) {
		SKIP("kallsyms: schedule", "no /proc/kallsyms");
		return;
	}
	while (!found && fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && (type == 'T' || type == 't') &&
		    strcmp(name, "schedule") == 0)
			found = a;
	}
	fclose(fp);
	if (!found) {
		SKIP("kallsyms: schedule", "addresses hidden (not root, or kernel.kptr_restrict)");
		return;
	}
	if (symbolizer_new(NULL, &s) != 0) {
		CHECK(0, "kallsyms: symbolizer_new with defaults");
		return;
	}
	expect_kernel(s, found, "schedule", FRAME_KERNEL);
	expect_kernel(s, found + 4, "schedule", FRAME_KERNEL);
	symbolizer_free(s);
}

/* ---- ELF reader robustness ---- */

/* Runs every reader on path; only surviving matters. Returns 0 when the file opened, else its error. */
static int read_everything(const char *path)
{
	struct elf_segment segs[ELF_MAX_SEGMENTS];
	uint8_t id[ELF_BUILD_ID_MAX];
	struct elf_symtab *t = NULL;
	struct elf_file *f = NULL;
	char name[256];
	uint32_t crc;
	int rc, i;

	rc = elf_file_open(path, &f);
	if (rc)
		return rc;
	elf_file_build_id(f, id, sizeof(id));
	elf_file_debuglink(f, name, sizeof(name), &crc);
	elf_file_segments(f, segs, ELF_MAX_SEGMENTS);
	for (i = 0; i < 2; i++) {
		if (elf_symtab_load(f, i == 1, &t) == 0) {
			elf_symtab_lookup(t, 0x1000);
			elf_symtab_lookup(t, 0x1139);
			elf_symtab_free(t);
		}
	}
	elf_file_free(f);
	return 0;
}

/* Writes the first len bytes of data to dir/name and returns the path in out. */
static int write_copy(const char *dir, const char *name, const void *data, size_t len, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", dir, name);
	return write_file(out, data, len);
}

/* The file offset of the first section header of type sh_type in a 64-bit ELF image, or 0. */
static size_t shdr_offset(const unsigned char *img, size_t len, uint32_t sh_type)
{
	const Elf64_Ehdr *eh = (const void *)img;
	Elf64_Shdr sh;
	size_t i, off;

	if (len < sizeof(*eh) || img[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(sh))
		return 0;
	for (i = 1; i < eh->e_shnum; i++) {
		off = eh->e_shoff + i * sizeof(sh);
		if (off + sizeof(sh) > len)
			return 0;
		memcpy(&sh, img + off, sizeof(sh));
		if (sh.sh_type == sh_type)
			return off;
	}
	return 0;
}

static void test_elf_corrupt(const char *dir, const char *good)
{
	unsigned char *img, *copy;
	struct elf_symtab *t = NULL;
	struct elf_file *f = NULL;
	char path[PATH_MAX];
	uint64_t bad_off = 0x7fffffff0000ull, seed = 12345;
	size_t len = 0, off, i, j, pos;
	int rc;

	img = read_all(good, &len);
	CHECK(img && len > 4096, "elf: read the fixture library (%zu bytes)", len);
	if (!img || len <= 4096) {
		free(img);
		return;
	}
	CHECK(read_everything(good) == 0, "elf: the intact library opens");
	write_copy(dir, "trunc100", img, 100, path, sizeof(path));
	CHECK(elf_file_open(path, &f) < 0, "elf: the first 100 bytes of an ELF file are refused");
	write_copy(dir, "trunchalf", img, len / 2, path, sizeof(path));
	CHECK(elf_file_open(path, &f) < 0, "elf: the first half of an ELF file is refused");
	write_copy(dir, "empty", img, 0, path, sizeof(path));
	CHECK(elf_file_open(path, &f) < 0, "elf: an empty file is refused");
	copy = malloc(len);
	if (!copy) {
		free(img);
		return;
	}
	for (i = 0; i < len; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		copy[i] = (unsigned char)(seed >> 56);
	}
	write_copy(dir, "garbage", copy, len, path, sizeof(path));
	CHECK(elf_file_open(path, &f) < 0, "elf: random bytes are refused");
	CHECK(elf_file_open(dir, &f) == -EINVAL, "elf: a directory is refused");

	off = shdr_offset(img, len, SHT_SYMTAB);
	if (off) {
		memcpy(copy, img, len);
		memcpy(copy + off + offsetof(Elf64_Shdr, sh_offset), &bad_off, sizeof(bad_off));
		write_copy(dir, "badsymtab", copy, len, path, sizeof(path));
		rc = elf_file_open(path, &f);
		CHECK(rc == 0, "elf: a file whose .symtab offset lies still opens");
		if (rc == 0) {
			CHECK(elf_symtab_load(f, false, &t) < 0, "elf: a .symtab lying outside the file is refused");
			elf_file_free(f);
		}
	} else {
		SKIP("elf: lying .symtab", "not a 64-bit ELF fixture");
	}

	for (i = 0; i < 300; i++) { /* corrupt 8 bytes, half of them in the headers */
		memcpy(copy, img, len);
		for (j = 0; j < 8; j++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			pos = (size_t)(seed >> 33) % (j % 2 ? len : 512);
			copy[pos] = (unsigned char)(seed >> 24);
		}
		write_copy(dir, "fuzz", copy, len, path, sizeof(path));
		read_everything(path);
	}
	CHECK(1, "elf: 300 randomly corrupted copies were read without a crash");
	free(copy);
	free(img);
}

/* ---- fixtures ---- */

/* Builds everything into dir. Returns 0, or -1 after a failed command. */
static int build_fixtures(const char *dir)
{
	static const struct {
		const char *name;
		int variant;
	} stripped[] = {
		{ "app_bid", 2 }, { "app_dl", 3 }, { "app_dldot", 4 },
		{ "app_dlglobal", 5 }, { "app_badcrc", 6 }, { "app_mismatch", 7 },
	};
	const char *cc = "cc -O0 -g -fno-omit-frame-pointer -Wl,--build-id";
	char path[PATH_MAX], lib[2048];
	size_t i;
	int n;

	snprintf(path, sizeof(path), "%s/app.c", dir);
	if (write_file(path, app_src, sizeof(app_src) - 1) < 0)
		return -1;
	n = snprintf(lib, sizeof(lib), lib_fmt, "fixlib");
	snprintf(path, sizeof(path), "%s/fixlib.c", dir);
	if (n < 0 || (size_t)n >= sizeof(lib) || write_file(path, lib, (size_t)n) < 0)
		return -1;
	n = snprintf(lib, sizeof(lib), lib_fmt, "strip");
	snprintf(path, sizeof(path), "%s/strip.c", dir);
	if (n < 0 || (size_t)n >= sizeof(lib) || write_file(path, lib, (size_t)n) < 0)
		return -1;
	if (run("cd %s && %s -fPIC -shared -o libfixlib.so fixlib.c", dir, cc) ||
	    run("cd %s && %s -fPIC -shared -o libstrip_full.so strip.c && cp libstrip_full.so libstrip.so && "
		"strip --strip-all libstrip.so", dir, cc) ||
	    run("cd %s && %s -fPIE -pie -DVARIANT=1 -DWITH_LIB -o app app.c -L. -lfixlib -Wl,-rpath,%s", dir, cc, dir))
		return -1;
	for (i = 0; i < sizeof(stripped) / sizeof(stripped[0]); i++) {
		if (run("cd %s && %s -fPIE -pie -DVARIANT=%d -o %s app.c && objcopy --only-keep-debug %s %s.debug && "
			"strip --strip-all %s", dir, cc, stripped[i].variant, stripped[i].name, stripped[i].name,
			stripped[i].name, stripped[i].name))
			return -1;
	}
	/* (b) .gnu_debuglink: next to the binary, in .debug/, under DEBUG_DIR/DIR/; one with a bad CRC, and one
	 * whose CRC is right but whose file is another build (its build-id differs) */
	if (run("cd %s && objcopy --add-gnu-debuglink=app_dl.debug app_dl", dir) ||
	    run("cd %s && objcopy --add-gnu-debuglink=app_dldot.debug app_dldot && mkdir -p .debug && "
		"mv app_dldot.debug .debug/", dir) ||
	    run("cd %s && objcopy --add-gnu-debuglink=app_dlglobal.debug app_dlglobal && mkdir -p ./%s && "
		"mv app_dlglobal.debug ./%s/", dir, dir, dir) ||
	    run("cd %s && objcopy --add-gnu-debuglink=app_badcrc.debug app_badcrc && echo x >> app_badcrc.debug", dir) ||
	    run("cd %s && cp app_dl.debug app_mismatch.debug && objcopy --add-gnu-debuglink=app_mismatch.debug "
		"app_mismatch", dir))
		return -1;
	return 0;
}

/* (a) Moves app_bid.debug to DIR/.build-id/xx/rest.debug. Returns 0 or -1. */
static int place_build_id(const char *dir)
{
	char path[PATH_MAX], hex[2 * ELF_BUILD_ID_MAX + 1];
	uint8_t id[ELF_BUILD_ID_MAX];
	struct elf_file *f = NULL;
	int len, i;

	snprintf(path, sizeof(path), "%s/app_bid", dir);
	if (elf_file_open(path, &f) < 0)
		return -1;
	len = elf_file_build_id(f, id, sizeof(id));
	elf_file_free(f);
	CHECK(len == 20, "elf: the build-id of the stripped fixture is 20 bytes (got %d)", len);
	if (len < 2)
		return -1;
	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	return run("cd %s && mkdir -p .build-id/%.2s && mv app_bid.debug .build-id/%.2s/%s.debug", dir, hex, hex,
		   hex + 2) ? -1 : 0;
}

/* ---- the symbolizer on live processes ---- */

/* The origin of a function's address is the binary's path and its build-id, as readelf reads it. */
static void check_origin(struct symbolizer *s, const struct child *c, const char *path, const char *func)
{
	struct frame_origin o;
	char name[128], cmd[PATH_MAX + 64], want[160] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' | sed -n 's/.*Build ID: //p'", path);
	p = popen(cmd, "r");
	if (p) {
		if (!fgets(want, sizeof(want), p))
			want[0] = '\0';
		want[strcspn(want, "\n")] = '\0';
		pclose(p);
	}
	symbolizer_user_frame(s, (uint32_t)c->pid, addr_of(c, func), false, name, sizeof(name), &o);
	CHECK(!strcmp(o.module, path), "origin: %s is in %s (got '%s')", func, path, o.module);
	CHECK(want[0] && !strcmp(o.build_id, want), "origin: build-id of %s is %s (got '%s')", path, want, o.build_id);
}

static void test_unstripped(const char *dir)
{
	struct symbolizer_opts o = { .debug_dir = dir };
	struct symbolizer_stats st;
	struct symbolizer *s = NULL;
	char exe[PATH_MAX], lib[PATH_MAX], full[PATH_MAX], want[128];
	uint64_t hidden, a;
	struct child c;
	pid_t pid;
	int i;

	snprintf(exe, sizeof(exe), "%s/app", dir);
	snprintf(lib, sizeof(lib), "%s/libstrip.so", dir);
	snprintf(full, sizeof(full), "%s/libstrip_full.so", dir);
	if (spawn(exe, lib, &c) < 0 || c.n < 9) {
		CHECK(0, "live: the fixture ran and printed 9 addresses (got %zu)", c.n);
		stop(&c, true);
		return;
	}
	if (symbolizer_new(&o, &s) < 0) {
		CHECK(0, "live: symbolizer_new");
		stop(&c, true);
		return;
	}
	expect_function(s, &c, "app_static_func", "PIE .symtab");
	expect_function(s, &c, "app_global_func", "PIE .symtab");
	expect_function(s, &c, "main", "PIE .symtab");
	expect_function(s, &c, "fixlib_alpha", "library .symtab");
	expect_function(s, &c, "fixlib_beta", "library .symtab");
	expect_function(s, &c, "fixlib_hidden", "library .symtab");
	expect_function(s, &c, "strip_alpha", "stripped library .dynsym");
	expect_function(s, &c, "strip_beta", "stripped library .dynsym");

	hidden = nm_value(full, "strip_hidden");
	a = addr_of(&c, "strip_hidden");
	CHECK(hidden && a, "stripped library: nm knows strip_hidden at 0x%" PRIx64, hidden);
	snprintf(want, sizeof(want), "libstrip.so+0x%" PRIx64, hidden);
	expect_user(s, c.pid, a, false, want, FRAME_UNKNOWN, "stripped library: a static function");
	snprintf(want, sizeof(want), "libstrip.so+0x%" PRIx64, hidden + INSIDE);
	expect_user(s, c.pid, a + INSIDE, false, want, FRAME_UNKNOWN, "stripped library: the offset is the ELF address");

	expect_user(s, c.pid, 0x10, false, "[unknown]", FRAME_UNKNOWN, "no mapping");
	expect_user(s, 0x7ffffff0, addr_of(&c, "main"), false, "[unknown]", FRAME_UNKNOWN, "no such process");
	symbolizer_get_stats(s, &st);
	CHECK(st.user_hits == 24 && st.processes_cached == 2 && st.binaries_cached >= 3 && st.debug_files_found == 0,
	      "live: stats (hits %" PRIu64 ", processes %" PRIu64 ", binaries %" PRIu64 ")", st.user_hits,
	      st.processes_cached, st.binaries_cached);

	check_origin(s, &c, exe, "main");
	check_origin(s, &c, lib, "strip_alpha");

	/* the stripped library is written over in place (same inode) by its unstripped build: the cache
	 * notices at the next flush and reads .symtab */
	a = addr_of(&c, "strip_hidden");
	if (run("cp '%s' '%s'", full, lib) == 0) {
		snprintf(want, sizeof(want), "libstrip.so+0x%" PRIx64, hidden);
		expect_user(s, c.pid, a, false, want, FRAME_UNKNOWN, "library rewritten in place, same flush");
		symbolizer_begin_flush(s);
		expect_user(s, c.pid, a, false, "strip_hidden", FRAME_USER, "library rewritten in place, next flush");
	} else {
		CHECK(0, "live: cp over the mapped library");
	}

	/* the process dies: its table is kept across a flush, then dropped after 6 idle flushes */
	pid = c.pid;
	a = addr_of(&c, "main");
	stop(&c, true);
	expect_user(s, pid, a, false, "main", FRAME_USER, "dead process, same flush");
	symbolizer_begin_flush(s);
	expect_user(s, pid, a, false, "main", FRAME_USER, "dead process, next flush: the old table is kept");
	for (i = 0; i < 5; i++)
		symbolizer_begin_flush(s);
	symbolizer_get_stats(s, &st);
	CHECK(st.processes_cached == 1, "live: the process idle for 6 flushes is dropped, the other kept (%" PRIu64 ")",
	      st.processes_cached);
	symbolizer_begin_flush(s);
	symbolizer_get_stats(s, &st);
	CHECK(st.processes_cached == 0, "live: then the other one too (%" PRIu64 ")", st.processes_cached);
	symbolizer_free(s);
}

/* The stripped fixtures, in build order; the first four find their debug file. */
static const char *const stripped_names[] = { "app_bid", "app_dl", "app_dldot", "app_dlglobal", "app_badcrc",
					      "app_mismatch" };
#define N_STRIPPED (sizeof(stripped_names) / sizeof(stripped_names[0]))

/* Starts every stripped fixture. Returns 0, or -1 (all stopped) when one fails. */
static int spawn_stripped(const char *dir, struct child *c)
{
	char exe[PATH_MAX];
	size_t i, j;

	for (i = 0; i < N_STRIPPED; i++) {
		snprintf(exe, sizeof(exe), "%s/%s", dir, stripped_names[i]);
		if (spawn(exe, NULL, &c[i]) < 0 || c[i].n < 3) {
			CHECK(0, "stripped: %s ran and printed 3 addresses", stripped_names[i]);
			for (j = 0; j <= i; j++)
				stop(&c[j], true);
			return -1;
		}
	}
	return 0;
}

static void test_stripped(const char *dir)
{
	struct symbolizer_opts o = { .debug_dir = dir };
	static const char *const how[] = { "build-id directory", "debuglink next to the binary", "debuglink in .debug/",
					   "debuglink under DEBUG_DIR/DIR/" };
	struct child c[N_STRIPPED];
	struct symbolizer_stats st;
	struct symbolizer *s = NULL;
	char dbg[PATH_MAX], want[128];
	size_t i;

	if (spawn_stripped(dir, c) < 0)
		return;
	if (symbolizer_new(&o, &s) < 0) {
		CHECK(0, "stripped: symbolizer_new");
		goto out;
	}
	for (i = 0; i < 4; i++) {
		snprintf(dbg, sizeof(dbg), "%s/%s", dir, stripped_names[i]);
		CHECK(nm_value(dbg, "app_static_func") == 0, "stripped: %s has no symbol of its own for app_static_func",
		      stripped_names[i]);
		expect_function(s, &c[i], "app_static_func", how[i]);
		expect_function(s, &c[i], "app_global_func", how[i]);
		expect_function(s, &c[i], "main", how[i]);
	}
	/* 3. the debug file with a wrong CRC is refused: the address is named by file, at its ELF address */
	snprintf(dbg, sizeof(dbg), "%s/app_badcrc.debug", dir);
	snprintf(want, sizeof(want), "app_badcrc+0x%" PRIx64, nm_value(dbg, "app_static_func"));
	expect_user(s, c[4].pid, addr_of(&c[4], "app_static_func"), false, want, FRAME_UNKNOWN,
		    "debuglink with a wrong CRC is refused");
	snprintf(dbg, sizeof(dbg), "%s/app_mismatch.debug", dir);
	snprintf(want, sizeof(want), "app_mismatch+0x%" PRIx64, nm_value(dbg, "app_static_func"));
	expect_user(s, c[5].pid, addr_of(&c[5], "app_static_func"), false, want, FRAME_UNKNOWN,
		    "debuglink to another build (right CRC, other build-id) is refused");
	symbolizer_get_stats(s, &st);
	CHECK(st.debug_files_found == 4, "stripped: 4 debug files found (%" PRIu64 ")", st.debug_files_found);
	symbolizer_free(s);

	/* limits: one process and one binary at a time still name everything right */
	o.max_processes = 1;
	o.max_binaries = 1;
	if (symbolizer_new(&o, &s) < 0) {
		CHECK(0, "limits: symbolizer_new");
		goto out;
	}
	for (i = 0; i < 8; i++)
		expect_user(s, c[i % 2].pid, addr_of(&c[i % 2], i % 4 < 2 ? "main" : "app_static_func"), false,
			    i % 4 < 2 ? "main" : "app_static_func", FRAME_USER, "limits: alternating processes");
	symbolizer_get_stats(s, &st);
	CHECK(st.processes_cached == 1 && st.binaries_cached == 1 && st.binaries_evicted == 7,
	      "limits: 1 process, 1 binary cached, 7 evictions (%" PRIu64 ", %" PRIu64 ", %" PRIu64 ")",
	      st.processes_cached, st.binaries_cached, st.binaries_evicted);
	symbolizer_free(s);

	/* a byte bound one binary's symbols fill: within one flush both binaries stay (evicting the one the
	 * next frame needs would load it again, frame after frame), counted over the bound; from flush to
	 * flush each other binary evicts the last */
	o.max_processes = 0;
	o.max_binaries = 0;
	o.max_symbol_bytes = 1;
	if (symbolizer_new(&o, &s) < 0) {
		CHECK(0, "byte limit: symbolizer_new");
		goto out;
	}
	for (i = 0; i < 4; i++)
		expect_user(s, c[i % 2].pid, addr_of(&c[i % 2], "app_static_func"), false, "app_static_func",
			    FRAME_USER, "byte limit, one flush: names stay right");
	symbolizer_get_stats(s, &st);
	CHECK(st.binaries_cached == 2 && st.binaries_evicted == 0 && st.binaries_over_bound == 1,
	      "byte limit, one flush: both binaries kept, 1 load over the bound, no eviction (%" PRIu64 ", %" PRIu64
	      ", %" PRIu64 ")", st.binaries_cached, st.binaries_over_bound, st.binaries_evicted);
	for (i = 0; i < 4; i++) {
		symbolizer_begin_flush(s);
		expect_user(s, c[i % 2].pid, addr_of(&c[i % 2], "app_static_func"), false, "app_static_func",
			    FRAME_USER, "byte limit, a flush each: names stay right");
	}
	symbolizer_get_stats(s, &st);
	CHECK(st.binaries_cached == 1 && st.binaries_evicted == 4 && st.symbol_bytes > 0,
	      "byte limit, a flush each: 1 binary cached, 4 evictions, %" PRIu64 " bytes held (%" PRIu64 ", %" PRIu64 ")",
	      st.symbol_bytes, st.binaries_cached, st.binaries_evicted);
	symbolizer_free(s);
	o.max_symbol_bytes = 64 << 20;
	if (symbolizer_new(&o, &s) == 0) {
		for (i = 0; i < 4; i++)
			expect_user(s, c[i % 2].pid, addr_of(&c[i % 2], "app_static_func"), false, "app_static_func",
				    FRAME_USER, "byte limit: roomy");
		symbolizer_get_stats(s, &st);
		CHECK(st.binaries_cached == 2 && st.binaries_evicted == 0,
		      "byte limit: 64 MiB keeps both binaries (%" PRIu64 ", %" PRIu64 " evicted)", st.binaries_cached,
		      st.binaries_evicted);
		symbolizer_free(s);
	}
out:
	for (i = 0; i < N_STRIPPED; i++)
		stop(&c[i], false);
}

/* A process that exited leaves no /proc/PID/root to look for its debug files under: the daemon's own
 * root is tried then, with the same checks (a debug file by build-id is found, a wrong CRC refused). */
static void test_debug_root_gone(const char *dir)
{
	static const char *const names[] = { "app_bid", "app_dl", "app_badcrc" };
	static const int want[] = { 0, 0, -ENOENT };
	char path[PATH_MAX], found[PATH_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct debuginfo_query q = { .root = "/proc/4000000000/root", .debug_dir = dir, .path = path,
					     .found = found, .found_len = sizeof(found) };
		struct elf_file *bin = NULL, *dbg = NULL;
		int err;

		found[0] = '\0';
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		err = elf_file_open(path, &bin);
		q.bin = bin;
		err = err ?: debuginfo_find(&q, &dbg);
		CHECK(err == want[i] && (err || strncmp(found, dir, strlen(dir)) == 0),
		      "debug file of %s with the process's root gone: %d (want %d), %s", names[i], err, want[i],
		      found[0] ? found : "none");
		elf_file_free(dbg);
		elf_file_free(bin);
	}
}

/* Aliases at one address as glibc 2.41's debug file (Debian 13) names its clone3: __clone3 and its
 * internal alias __GI___clone3, both local and sized (by name alone, "__GI___clone3" sorts first): the
 * one a user knows names the frame. */
static void test_internal_alias(const char *dir)
{
	static const char src[] = "\t.text\n"
				  "\t.type __clone3, @function\n"
				  "\t.type __GI___clone3, @function\n"
				  "__clone3:\n__GI___clone3:\n\tnop\n\tret\n"
				  "\t.size __clone3, 2\n\t.size __GI___clone3, 2\n"
				  "\t.section .note.GNU-stack,\"\",@progbits\n";
	char asm_path[PATH_MAX], so[PATH_MAX];
	struct elf_symtab *t = NULL;
	struct elf_file *f = NULL;
	const char *name;
	uint64_t a;

	snprintf(asm_path, sizeof(asm_path), "%s/alias.s", dir);
	snprintf(so, sizeof(so), "%s/libalias.so", dir);
	if (write_file(asm_path, src, sizeof(src) - 1) < 0 ||
	    run_quiet("cc -shared -nostdlib '%s' -o '%s' 2>/dev/null", asm_path, so) != 0) {
		CHECK(0, "alias: the library with __clone3 and __GI___clone3 builds");
		return;
	}
	a = nm_value(so, "__GI___clone3");
	if (!a || elf_file_open(so, &f) < 0 || elf_symtab_load(f, false, &t) < 0) {
		CHECK(0, "alias: its .symtab loads");
		elf_file_free(f);
		return;
	}
	name = elf_symtab_lookup(t, a);
	CHECK(name && !strcmp(name, "__clone3"), "alias: __clone3 names the address, not glibc's __GI___clone3 (%s)",
	      name ? name : "none");
	elf_symtab_free(t);
	elf_file_free(f);
}

int main(void)
{
	char dir[] = "/tmp/test_symbolize.XXXXXX";

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return CHECK_EXIT();
	}
	test_procmaps_parser();
	test_procmaps_file(dir);
	test_procmaps_query(dir);
	test_snapshot_changed(dir);
	test_snapshot_held(dir);
	test_kallsyms_fixture(dir);
	test_kallsyms_real();
	if (run("cc --version >/dev/null 2>&1 && objcopy --version >/dev/null 2>&1 && "
		"strip --version >/dev/null 2>&1 && nm --version >/dev/null 2>&1") != 0) {
		SKIP("ELF fixtures", "cc or binutils (objcopy, strip, nm) missing: apt-get install gcc binutils");
	} else if (build_fixtures(dir) < 0 || place_build_id(dir) < 0) {
		CHECK(0, "fixtures: built with cc and binutils");
	} else {
		char lib[PATH_MAX];

		snprintf(lib, sizeof(lib), "%s/libfixlib.so", dir);
		test_elf_corrupt(dir, lib);
		test_unstripped(dir);
		test_stripped(dir);
		test_debug_root_gone(dir);
		test_internal_alias(dir);
	}
	run("rm -rf -- '%s'", dir);
	return CHECK_EXIT();
}
