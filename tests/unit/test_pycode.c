/* test_pycode.c - py_code_read on crafted memory (str kinds, bad objects, cuts), then on code objects of live
 * CPython 3.8 to 3.15 processes read through process_vm_readv. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "syspython.h"
#include "testutil.h"
#include "python/pycode.h"
#include "python/pyelf.h"
#include "elf/elf_file.h"

#define MIN_MINOR 8
#define MAX_MINOR 15
#define MAX_COMPILED 12 /* the last minor version whose layout is compiled in; later ones publish theirs */
#define MAX_INTERPS 32
#define MAX_CODES 16
#define SPAWN_TIMEOUT 60 /* seconds the child may take to say it is ready */
#define MAX_READS 7      /* a code object: its header, two per str, two for the line table */

/* ---- crafted memory ---- */

#define FAKE_BASE 0x7f0000000000ull
#define FAKE_SIZE (PY_LINES_MAX + 0x2000)
#define AT_NAME 0x200   /* where the crafted code object's strings and bytes are, from FAKE_BASE */
#define AT_FILE 0x600
#define AT_LINES 0xa00
#define FAKE_TYPE 0x55550000ull

/* An address space: size bytes at base; reads outside it fault; fail forces an error. */
struct fake {
	uint64_t base;
	uint8_t *mem;
	size_t size;
	int fail;
	unsigned reads;
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = ctx;

	f->reads++;
	if (f->fail)
		return f->fail;
	if (addr < f->base || addr - f->base > f->size || len > f->size - (addr - f->base))
		return -EFAULT;
	memcpy(buf, f->mem + (addr - f->base), len);
	return 0;
}

static void put_u64(struct fake *f, size_t off, uint64_t v)
{
	memcpy(f->mem + off, &v, sizeof(v));
}

/* A str object at off: length code points of kind bytes each (data), with state (kind added), its data
 * where layout l puts it (after PyASCIIObject when ascii, else after PyCompactUnicodeObject). */
static void put_str(struct fake *f, const struct py_layout *l, size_t off, unsigned state, unsigned kind,
		    int64_t length, const void *data, size_t size)
{
	state |= kind << 2;
	put_u64(f, off + l->str_length, (uint64_t)length);
	memcpy(f->mem + off + l->str_state, &state, sizeof(state));
	memcpy(f->mem + off + ((state & 0x40) ? l->str_ascii_size : l->str_compact_size), data, size);
}

/* A code object at FAKE_BASE with an ASCII name, a kind-1 file and a 2-byte line table. */
static void put_code(struct fake *f, const struct py_layout *l)
{
	uint16_t name = l->code_qualname != PY_NO_OFFSET ? l->code_qualname : l->code_name;
	int first = 77;

	memset(f->mem, 0, f->size);
	put_u64(f, l->object_type, FAKE_TYPE);
	memcpy(f->mem + l->code_firstlineno, &first, sizeof(first));
	put_u64(f, name, FAKE_BASE + AT_NAME);
	put_u64(f, l->code_filename, FAKE_BASE + AT_FILE);
	put_u64(f, l->code_linetable, FAKE_BASE + AT_LINES);
	put_str(f, l, AT_NAME, 0x60, 1, 13, "Engine.gear_a", 13); /* compact, ascii */
	put_str(f, l, AT_FILE, 0x20, 1, 6, "/\xfcn.py", 6);       /* compact, kind 1: "/ün.py" */
	put_u64(f, AT_LINES + l->bytes_size, 2);
	memcpy(f->mem + AT_LINES + l->bytes_data, "\x81\x05", 2);
}

/* Reads the crafted code object; the result, its strings in c. */
static int read_fake(struct fake *f, const struct py_layout *l, uint64_t type, struct py_code *c)
{
	return py_code_read(l, type, fake_read, f, f->base, c);
}

/* A valid str at AT_NAME of kind with length code points data gives want. */
static void expect_name(struct fake *f, const struct py_layout *l, unsigned state, unsigned kind, int64_t length,
			const void *data, size_t size, const char *want, const char *what)
{
	struct py_code c;
	int rc;

	put_code(f, l);
	put_str(f, l, AT_NAME, state, kind, length, data, size);
	rc = read_fake(f, l, FAKE_TYPE, &c);
	CHECK(rc == 0 && strcmp(c.name, want) == 0, "crafted 3.%u: %s (rc %d, \"%s\")", l->minor, what, rc,
	      rc == 0 ? c.name : "");
	py_code_release(&c);
}

/* A str at AT_NAME that is not one py_code_read takes (-EINVAL). */
static void expect_bad_name(struct fake *f, const struct py_layout *l, unsigned state, unsigned kind,
			    int64_t length, const char *what)
{
	struct py_code c;
	int rc;

	put_code(f, l);
	put_str(f, l, AT_NAME, state, kind, length, "abc", 3);
	rc = read_fake(f, l, FAKE_TYPE, &c);
	CHECK(rc == -EINVAL && c.lines == NULL, "crafted 3.%u: %s is -EINVAL (%d)", l->minor, what, rc);
	py_code_release(&c);
}

static void test_crafted_strings(struct fake *f, const struct py_layout *l)
{
	static const uint16_t k2[] = { '/', 0xd800, 'x', 0, 0x540d, 0xdfff };
	static const uint32_t k4[] = { 0x1f600, 0x110000, 'a', 0xd83d, 0x20000 };
	uint32_t smileys[100];
	char want[PY_NAME_MAX], many[PY_NAME_MAX];

	expect_name(f, l, 0x20, 2, 6, k2, sizeof(k2), "/\xef\xbf\xbdx\xef\xbf\xbd\xe5\x90\x8d\xef\xbf\xbd",
		    "kind 2: surrogates and NUL become U+FFFD");
	expect_name(f, l, 0x20, 4, 5, k4, sizeof(k4), "\xf0\x9f\x98\x80\xef\xbf\xbd" "a\xef\xbf\xbd\xf0\xa0\x80\x80",
		    "kind 4: past U+10FFFF and surrogates become U+FFFD");
	expect_name(f, l, 0x60, 1, 3, "a\xe9z", 3, "a\xef\xbf\xbdz", "an ASCII string's byte 0xe9 becomes U+FFFD");
	expect_name(f, l, 0x63, 1, 0, "", 0, "", "an empty (interned) string");
	for (size_t i = 0; i < 100; i++)
		smileys[i] = 0x1f600;
	for (size_t i = 0; i < 63; i++)
		memcpy(want + 4 * i, "\xf0\x9f\x98\x80", 4);
	want[252] = '\0';
	expect_name(f, l, 0x20, 4, 100, smileys, sizeof(smileys), want,
		    "100 4-byte characters are cut to 63 (252 bytes) at a character");
	memset(many, 'q', sizeof(many));
	memset(want, 'q', PY_NAME_MAX - 1);
	want[PY_NAME_MAX - 1] = '\0';
	expect_name(f, l, 0x60, 1, PY_STR_MAX, many, sizeof(many), want,
		    "PY_STR_MAX code points: the first 255 kept");
	expect_bad_name(f, l, 0x40, 1, 3, "a string not compact");
	expect_bad_name(f, l, 0x20, 3, 3, "kind 3");
	expect_bad_name(f, l, 0x20, 0, 3, "kind 0 (wchar_t, a legacy string)");
	expect_bad_name(f, l, 0x60, 2, 3, "ASCII with kind 2");
	expect_bad_name(f, l, 0x20, 1, -1, "length -1");
	expect_bad_name(f, l, 0x20, 1, PY_STR_MAX + 1, "PY_STR_MAX + 1 code points");
}

static void test_crafted_objects(struct fake *f, const struct py_layout *l)
{
	struct py_code c;
	int rc;

	put_code(f, l);
	f->reads = 0;
	rc = read_fake(f, l, FAKE_TYPE, &c);
	CHECK(rc == 0 && strcmp(c.name, "Engine.gear_a") == 0 && strcmp(c.file, "/\xc3\xbcn.py") == 0 &&
		      c.firstlineno == 77 && c.nlines == 2 && c.lines && memcmp(c.lines, "\x81\x05", 2) == 0 &&
		      !c.lines_cut && f->reads <= MAX_READS,
	      "crafted 3.%u: a code object: name, kind-1 file after the compact header, line, table, %u reads "
	      "(rc %d)", l->minor, f->reads, rc);
	py_code_release(&c);
	py_code_release(&c);
	CHECK(c.lines == NULL && c.nlines == 0, "crafted 3.%u: released twice", l->minor);
	rc = read_fake(f, l, 0, &c);
	CHECK(rc == 0, "crafted 3.%u: code_type 0 is not checked (%d)", l->minor, rc);
	py_code_release(&c);
	rc = read_fake(f, l, FAKE_TYPE + 8, &c);
	CHECK(rc == -EINVAL, "crafted 3.%u: another type is -EINVAL (%d)", l->minor, rc);

	put_u64(f, AT_LINES + l->bytes_size, 0);
	rc = read_fake(f, l, FAKE_TYPE, &c);
	CHECK(rc == 0 && !c.lines && c.nlines == 0 && !c.lines_cut, "crafted 3.%u: an empty table (%d)", l->minor,
	      rc);
	put_u64(f, AT_LINES + l->bytes_size, (uint64_t)-1);
	rc = read_fake(f, l, FAKE_TYPE, &c);
	CHECK(rc == -EINVAL && !c.lines, "crafted 3.%u: a bytes object of size -1 is -EINVAL (%d)", l->minor, rc);
	put_u64(f, AT_LINES + l->bytes_size, PY_LINES_MAX + 1);
	rc = read_fake(f, l, FAKE_TYPE, &c);
	CHECK(rc == 0 && c.nlines == PY_LINES_MAX && c.lines_cut, "crafted 3.%u: a table of PY_LINES_MAX + 1 is cut "
	      "(%d, %zu)", l->minor, rc, c.nlines);
	py_code_release(&c);
	put_u64(f, AT_LINES + l->bytes_size, INT64_MAX);
	rc = read_fake(f, l, FAKE_TYPE, &c);
	CHECK(rc == 0 && c.nlines == PY_LINES_MAX && c.lines_cut, "crafted 3.%u: a table of 2^63 - 1 is cut (%d)",
	      l->minor, rc);
	py_code_release(&c);

	put_code(f, l);
	put_u64(f, l->code_filename, UINT64_MAX - 8);
	rc = read_fake(f, l, FAKE_TYPE, &c);
	CHECK(rc == -EFAULT, "crafted 3.%u: a str at 2^64 - 9 (its header wraps) is -EFAULT (%d)", l->minor, rc);
	put_u64(f, l->code_filename, 0);
	rc = read_fake(f, l, FAKE_TYPE, &c);
	CHECK(rc == -EFAULT, "crafted 3.%u: a NULL file is -EFAULT (%d)", l->minor, rc);
	put_code(f, l);
	put_u64(f, l->code_linetable, FAKE_BASE + FAKE_SIZE - 8);
	rc = read_fake(f, l, FAKE_TYPE, &c);
	CHECK(rc == -EFAULT && !c.lines, "crafted 3.%u: a bytes object across the end of memory is -EFAULT (%d)",
	      l->minor, rc);
	rc = py_code_read(l, FAKE_TYPE, fake_read, f, UINT64_MAX - 16, &c);
	CHECK(rc == -EFAULT, "crafted 3.%u: a code object at 2^64 - 17 is -EFAULT (%d)", l->minor, rc);
	put_code(f, l);
	f->fail = -ESRCH;
	rc = read_fake(f, l, FAKE_TYPE, &c);
	f->fail = 0;
	CHECK(rc == -ESRCH, "crafted 3.%u: the read's -ESRCH passes through (%d)", l->minor, rc);
}

static void test_crafted(void)
{
	struct fake f = { .base = FAKE_BASE, .size = FAKE_SIZE };

	f.mem = malloc(f.size);
	if (!f.mem) {
		CHECK(0, "crafted: malloc");
		return;
	}
	for (unsigned minor = MIN_MINOR; minor <= MAX_COMPILED; minor++) {
		const struct py_layout *l = py_layout_find(3, minor);

		CHECK(l != NULL, "crafted: a layout for 3.%u", minor);
		if (!l)
			continue;
		test_crafted_objects(&f, l);
		test_crafted_strings(&f, l);
	}
	free(f.mem);
}

/* ---- live processes ---- */

/* An interpreter found here. */
struct interp {
	char path[PATH_MAX];
	unsigned minor;
};

/* Adds the interpreters matching pattern (python3.minor binaries) to list, once each by real path. */
static void add_glob(const char *pattern, unsigned minor, struct interp *list, size_t *n)
{
	char real[PATH_MAX], other[PATH_MAX];
	glob_t g;

	if (glob(pattern, 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc && *n < MAX_INTERPS; i++) {
		bool seen = false;

		if (access(g.gl_pathv[i], X_OK) != 0 || !realpath(g.gl_pathv[i], real))
			continue;
		for (size_t j = 0; j < *n && !seen; j++)
			seen = realpath(list[j].path, other) && strcmp(other, real) == 0;
		if (seen)
			continue;
		snprintf(list[*n].path, sizeof(list[*n].path), "%s", g.gl_pathv[i]);
		list[(*n)++].minor = minor;
	}
	globfree(&g);
}

/* Every CPython 3.8 to 3.15 here: the system's python3 first (a SKIP where its version is not one of
 * them), the others in /usr/bin, pyenv's builds ($PYENV_ROOT, /root/.pyenv). A minor version with none is
 * said in a comment. Returns how many were found. */
static size_t find_interps(struct interp *list)
{
	const char *root = getenv("PYENV_ROOT");
	char pattern[PATH_MAX];
	struct system_python py;
	size_t n = 0;

	if (system_python_under_test(&py, MIN_MINOR, MAX_MINOR) == 0)
		add_glob(py.path, py.minor, list, &n);
	for (unsigned minor = MIN_MINOR; minor <= MAX_MINOR; minor++) {
		size_t found = 0;

		snprintf(pattern, sizeof(pattern), "/usr/bin/python3.%u", minor);
		add_glob(pattern, minor, list, &n);
		if (root && *root) {
			snprintf(pattern, sizeof(pattern), "%s/versions/3.%u.*/bin/python3.%u", root, minor, minor);
			add_glob(pattern, minor, list, &n);
		}
		snprintf(pattern, sizeof(pattern), "/root/.pyenv/versions/3.%u.*/bin/python3.%u", minor, minor);
		add_glob(pattern, minor, list, &n);
		for (size_t i = 0; i < n; i++)
			found += list[i].minor == minor;
		if (!found)
			printf("# python3.%u: not installed here, not tested\n", minor);
	}
	return n;
}

#define LATIN1_NAME "\xc3\xbcn\xc3\xaf" "code"            /* ünïcode: a str of kind 1, not ASCII */
#define UCS2_NAME LATIN1_NAME "_\xe5\x90\x8d\xe5\x89\x8d" /* ünïcode_名前: kind 2 */
#define UCS4_NAME "\xf0\xa0\x80\x80_astral"                /* 𠀀_astral (U+20000): kind 4 */

/* The live script (its own file name is not ASCII): defines code objects, prints "version M N",
 * "ft 0|1" (a free-threaded build), "type ID" (the code type), "func ID" (a function object), one "code
 * LABEL ID FIRSTLINENO TABLE_LEN CRC NAME_HEX FILE_HEX" per code object (CRC: crc32 of the table's first
 * PY_LINES_MAX bytes; NAME and FILE: what py_code_read should give before any cut, UTF-8 in hex), then
 * "READY", and waits for its stdin to close. */
static const char live_py[] =
	"import sys, sysconfig, types, zlib\n"
	"V = sys.version_info\n"
	"class Engine:\n"
	"    def gear_a(self):\n"
	"        x = 1\n"
	"        return x + 2\n"
	"def " LATIN1_NAME "():\n"
	"    return 1\n"
	"def " UCS2_NAME "():\n"
	"    return 2\n"
	"def " UCS4_NAME "():\n"
	"    return 3\n"
	"def outer():\n"
	"    def inner():\n"
	"        return 4\n"
	"    return inner\n"
	"def fix(s):\n"
	"    return ''.join('\\ufffd' if 0xd800 <= ord(c) < 0xe000 or c == '\\0' else c for c in s).encode()\n"
	"def made(name, file, body='    return 0\\n'):\n"
	"    ns = {}\n"
	"    exec(compile('def ' + name + '():\\n' + body, file, 'exec'), ns)\n"
	"    return ns[name]\n"
	"long_fn = made('\\u00e9' * 150 + '\\u540d', __file__)\n"
	"deep_fn = made('deep', '/' + '/'.join(['\\u00fc\\u540d' * 40] * 6) + '/deep.py')\n"
	"surr_fn = made('surr', '/tmp/x\\udcff\\ud800y.py')\n"
	"max_fn = made('maxf', 'm' * 65536)\n"
	"huge_fn = made('hugef', 'h' * 65537)\n"
	"big_fn = made('big', __file__, '    x = 1\\n' * 40000)\n"
	"fns = [('gear_a', Engine.gear_a), ('latin1', " LATIN1_NAME "), ('ucs2', " UCS2_NAME "),\n"
	"       ('ucs4', " UCS4_NAME "), ('inner', outer()), ('long', long_fn), ('deep', deep_fn),\n"
	"       ('surr', surr_fn), ('max', max_fn), ('huge', huge_fn), ('big', big_fn)]\n"
	"print('version %d %d' % (V[0], V[1]))\n"
	"print('ft %d' % bool(sysconfig.get_config_var('Py_GIL_DISABLED')))\n"
	"print('type %d' % id(types.CodeType))\n"
	"print('func %d' % id(Engine.gear_a))\n"
	"for label, f in fns:\n"
	"    co = f.__code__\n"
	"    t = co.co_lnotab if V < (3, 10) else co.co_linetable\n"
	"    name = co.co_qualname if V >= (3, 11) else co.co_name\n"
	"    print('code %s %d %d %d %d %s %s' % (label, id(co), co.co_firstlineno, len(t), zlib.crc32(t[:65536]),\n"
	"          fix(name).hex(), fix(co.co_filename).hex()))\n"
	"print('READY', flush=True)\n"
	"sys.stdin.read()\n";

/* What the live script said about one code object. */
struct want_code {
	char label[16];
	uint64_t addr;
	int firstlineno;
	size_t table_len;
	unsigned long crc;
	char name[PY_STR_MAX * 4 + 1]; /* UTF-8, before any cut */
	char file[PY_STR_MAX * 4 + 1];
};

/* The running script and what it printed. */
struct live {
	pid_t pid;
	int in_fd;
	unsigned major, minor;
	int ft;
	uint64_t code_type, func;
	size_t ncodes;
	struct want_code codes[MAX_CODES];
};

/* Decodes hex (up to a space, a newline or the end) into out (size bytes), NUL-terminated. */
static int unhex_str(const char *hex, char *out, size_t size)
{
	size_t n = strcspn(hex, " \n");

	if (n % 2 || n / 2 >= size)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (char)v;
	}
	out[n / 2] = '\0';
	return 0;
}

/* Parses one "code ..." line into w. Returns 0 or -1. */
static int parse_code(const char *line, struct want_code *w)
{
	int name_at = 0, file_at = 0;

	if (sscanf(line, "code %15s %" SCNu64 " %d %zu %lu %n%*s %n", w->label, &w->addr, &w->firstlineno,
		   &w->table_len, &w->crc, &name_at, &file_at) != 5 || !name_at || !file_at)
		return -1;
	return unhex_str(line + name_at, w->name, sizeof(w->name)) < 0 ||
			       unhex_str(line + file_at, w->file, sizeof(w->file)) < 0
		       ? -1
		       : 0;
}

static void on_alarm(int sig)
{
	(void)sig; /* only interrupts a blocked read */
}

/* Reads the script's lines into lv until "READY" (0) or the end or a timeout (-1). */
static int read_live(FILE *fp, struct live *lv)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	size_t cap = 2 * (PY_STR_MAX * 4 * 2 + 256);
	char *line = malloc(cap);
	int rc = -1;

	if (!line)
		return -1;
	sigaction(SIGALRM, &sa, &old); /* no SA_RESTART: fgets returns at the alarm */
	alarm(SPAWN_TIMEOUT);
	while (fgets(line, (int)cap, fp)) {
		if (strncmp(line, "READY", 5) == 0) {
			rc = 0;
			break;
		}
		if (sscanf(line, "version %u %u", &lv->major, &lv->minor) == 2 || sscanf(line, "ft %d", &lv->ft) == 1)
			continue;
		if (sscanf(line, "type %" SCNu64, &lv->code_type) == 1 || sscanf(line, "func %" SCNu64, &lv->func) == 1)
			continue;
		if (lv->ncodes < MAX_CODES && parse_code(line, &lv->codes[lv->ncodes]) == 0)
			lv->ncodes++;
		else
			printf("# unexpected line from the script: %.100s\n", line);
	}
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	free(line);
	return rc;
}

/* Starts python on script with pipes on its stdin and stdout and reads what it says. Returns 0 or -1 (the
 * child is then stopped). */
static int spawn_live(const char *python, const char *script, struct live *lv)
{
	int in[2], out[2], rc = -1;
	FILE *fp;

	lv->in_fd = -1;
	if (pipe2(in, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	lv->pid = fork();
	if (lv->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
			_exit(126);
		execl(python, python, script, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	lv->in_fd = in[1];
	fp = lv->pid > 0 ? fdopen(out[0], "r") : NULL;
	if (!fp)
		close(out[0]);
	else
		rc = read_live(fp, lv);
	if (fp)
		fclose(fp);
	if (rc < 0 && lv->pid > 0)
		kill(lv->pid, SIGKILL);
	return rc;
}

/* Ends the script by closing its stdin (SIGKILL after 10 s) and reaps it. */
static void stop_live(struct live *lv)
{
	if (lv->in_fd >= 0)
		close(lv->in_fd);
	lv->in_fd = -1;
	for (int i = 0; lv->pid > 0 && i < 100; i++) {
		if (waitpid(lv->pid, NULL, WNOHANG) == lv->pid)
			lv->pid = 0;
		else
			usleep(100000);
	}
	if (lv->pid > 0) {
		kill(lv->pid, SIGKILL);
		waitpid(lv->pid, NULL, 0);
	}
	lv->pid = 0;
}

/* A process being read: its pid and the reads made. */
struct proc_ctx {
	pid_t pid;
	unsigned reads;
};

/* The read callback over process_vm_readv: a short read is a fault. */
static int proc_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct proc_ctx *p = ctx;
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	p->reads++;
	n = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* s cut as py_code_read cuts into size bytes: the longest prefix of whole UTF-8 characters that fits with
 * its NUL. */
static void utf8_cut(const char *s, char *out, size_t size)
{
	size_t n = strlen(s);

	if (n >= size) {
		n = size - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--; /* s[n] continues a character: it would be cut */
	}
	memcpy(out, s, n);
	out[n] = '\0';
}

/* Reads one code object of the script and checks every field against what it printed. */
static void check_code(const struct live *lv, const struct py_layout *l, const struct want_code *w)
{
	struct proc_ctx p = { .pid = lv->pid };
	char name[PY_NAME_MAX], file[PY_FILE_MAX], shown[4][48]; /* shown: the strings cut for the message */
	struct py_code c;
	size_t n = w->table_len < PY_LINES_MAX ? w->table_len : PY_LINES_MAX;
	unsigned long crc;
	int rc;

	rc = py_code_read(l, lv->code_type, proc_read, &p, w->addr, &c);
	if (strcmp(w->label, "huge") == 0) {
		CHECK(rc == -EINVAL, "python3.%u: %s: a file name of PY_STR_MAX + 1 code points is -EINVAL (%d)",
		      lv->minor, w->label, rc);
		py_code_release(&c);
		return;
	}
	utf8_cut(w->name, name, sizeof(name));
	utf8_cut(w->file, file, sizeof(file));
	crc = crc32(0, c.lines, (uInt)c.nlines);
	utf8_cut(name, shown[0], sizeof(shown[0]));
	utf8_cut(file, shown[1], sizeof(shown[1]));
	utf8_cut(c.name, shown[2], sizeof(shown[2]));
	utf8_cut(c.file, shown[3], sizeof(shown[3]));
	CHECK(rc == 0 && strcmp(c.name, name) == 0 && strcmp(c.file, file) == 0 &&
		      c.firstlineno == w->firstlineno && c.nlines == n && (n == 0) == (c.lines == NULL) && crc == w->crc &&
		      c.lines_cut == (w->table_len > PY_LINES_MAX) && p.reads <= MAX_READS,
	      "python3.%u: %s: \"%s\" (%zu bytes) in \"%s\" (%zu bytes) line %d, table %zu bytes%s, %u reads "
	      "(rc %d: \"%s\", \"%s\", line %d, %zu bytes)",
	      lv->minor, w->label, shown[0], strlen(name), shown[1], strlen(file), w->firstlineno, w->table_len,
	      w->table_len > PY_LINES_MAX ? " (cut)" : "", p.reads, rc, shown[2], shown[3], c.firstlineno, c.nlines);
	py_code_release(&c);
}

/* The other answers: a wrong type, not a code object, an unmapped address, a process gone. */
static void check_errors(struct live *lv, const struct py_layout *l)
{
	struct proc_ctx p = { .pid = lv->pid };
	uint64_t gear = lv->codes[0].addr;
	struct py_code c;
	int rc;

	rc = py_code_read(l, lv->code_type + 8, proc_read, &p, gear, &c);
	CHECK(rc == -EINVAL, "python3.%u: another code_type is -EINVAL (%d)", lv->minor, rc);
	rc = py_code_read(l, lv->code_type, proc_read, &p, lv->func, &c);
	CHECK(rc == -EINVAL, "python3.%u: a function object is not a code object: -EINVAL (%d)", lv->minor, rc);
	rc = py_code_read(l, lv->code_type, proc_read, &p, 16, &c);
	CHECK(rc == -EFAULT, "python3.%u: address 16 is -EFAULT (%d)", lv->minor, rc);
	rc = py_code_read(l, 0, proc_read, &p, 0xffff800000000000ull, &c);
	CHECK(rc == -EFAULT, "python3.%u: a kernel address is -EFAULT (%d)", lv->minor, rc);
	stop_live(lv);
	rc = py_code_read(l, lv->code_type, proc_read, &p, gear, &c);
	CHECK(rc == -ESRCH || rc == -EFAULT, "python3.%u: after the process exited: -ESRCH or -EFAULT (%d)",
	      lv->minor, rc);
}

/* The layout of the interpreter at path as the daemon finds it: compiled in, or (3.13+) read from
 * its _Py_DebugOffsets, in the binary or in the libpython3.MINOR beside it (pyenv's). NULL: none. */
static const struct py_layout *layout_of(const char *path, unsigned minor, struct py_layout *out)
{
	char lib[PATH_MAX + 64];
	const char *slash = strrchr(path, '/');
	struct py_binary b;
	struct elf_file *f;
	int err = -ENOENT;

	if (minor <= MAX_COMPILED)
		return py_layout_find(3, minor);
	if (elf_file_open(path, &f) == 0) {
		err = py_elf_inspect(f, NULL, &b);
		elf_file_free(f);
	}
	if (err == -ENOENT && slash) {
		snprintf(lib, sizeof(lib), "%.*s/../lib/libpython3.%u.so.1.0", (int)(slash - path), path, minor);
		if (elf_file_open(lib, &f) == 0) {
			err = py_elf_inspect(f, NULL, &b);
			elf_file_free(f);
		}
	}
	if (err)
		return NULL;
	*out = b.layout;
	return out;
}

static void test_live(const struct interp *in, const char *script)
{
	struct live *lv = calloc(1, sizeof(*lv));
	struct py_layout read;
	const struct py_layout *l = layout_of(in->path, in->minor, &read);
	bool labels_ok;

	if (!lv) {
		CHECK(0, "python3.%u: calloc", in->minor);
		return;
	}
	if (spawn_live(in->path, script, lv) < 0 || lv->major != 3 || lv->minor != in->minor) {
		CHECK(0, "python3.%u (%s): the script started and said what it defined", in->minor, in->path);
		stop_live(lv);
		free(lv);
		return;
	}
	if (lv->ft) {
		printf("# python3.%u (%s): a free-threaded build, another layout: not tested\n", in->minor,
		       in->path);
		stop_live(lv);
		free(lv);
		return;
	}
	labels_ok = lv->ncodes == 11 && strcmp(lv->codes[0].label, "gear_a") == 0;
	CHECK(labels_ok && l && lv->code_type && lv->func,
	      "python3.%u (%s): pid %d defined %zu code objects, layout %s", in->minor, in->path, (int)lv->pid,
	      lv->ncodes, l ? "found" : "missing");
	for (size_t i = 0; labels_ok && l && i < lv->ncodes; i++)
		check_code(lv, l, &lv->codes[i]);
	if (labels_ok && l)
		check_errors(lv, l);
	stop_live(lv);
	free(lv);
}

int main(void)
{
	char dir[] = "/tmp/test_pycode.XXXXXX", script[PATH_MAX];
	struct interp interps[MAX_INTERPS];
	size_t n;

	test_crafted();
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return CHECK_EXIT();
	}
	/* mödule_名前_𠀀.py: a file name of kind 4 */
	snprintf(script, sizeof(script), "%s/m\xc3\xb6" "dule_\xe5\x90\x8d\xe5\x89\x8d_\xf0\xa0\x80\x80.py", dir);
	CHECK(write_file(script, live_py, sizeof(live_py) - 1) == 0, "wrote the live script");
	n = find_interps(interps);
	for (size_t i = 0; i < n; i++)
		test_live(&interps[i], script);
	run_quiet("rm -rf -- '%s'", dir);
	return CHECK_EXIT();
}
