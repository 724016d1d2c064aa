/* test_inlines.c - inline chains from DWARF: C and C++ fixtures built here and checked against addr2line -i,
 * separate, compressed and dwz debug files, corrupt input, and libc6-dbg's debug file with its cost measured. */
#include <elf.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "testutil.h"
#include "symbolize/inlines.h"

#define MAX_ADDRS 1024   /* instruction addresses compared per fixture */
#define MAX_CHAIN 8      /* inline levels compared */
#define NAME_LEN 128
#define FIX_PATH 256     /* paths of fixtures in the test directory */
#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define DEBUG_DIR "/usr/lib/debug"
#define LIBC_PROBES 500     /* addresses across libc's .text compared against addr2line */
#define LIBC_LOOKUPS 10000  /* lookups timed */

/* host() calls outer_inl(), which calls inner_inl(); each does work of its own. */
static const char fixture_src[] =
	"#define AI static inline __attribute__((always_inline))\n"
	"static volatile unsigned sink;\n"
	"AI unsigned inner_inl(unsigned x)\n"
	"{\n\tunsigned i, acc = x;\n"
	"\tfor (i = 0; i < (x & 63u); i++)\n\t\tacc = acc * 2654435761u + (acc >> 7);\n"
	"\tsink += acc;\n\treturn acc;\n}\n"
	"AI unsigned outer_inl(unsigned x)\n"
	"{\n\tunsigned a = x ^ 0x5bd1e995u, b;\n"
	"\tsink ^= a * 3u;\n\tb = inner_inl(a);\n\tsink ^= b / 5u;\n\treturn a + b;\n}\n"
	"__attribute__((noinline)) unsigned host(unsigned x)\n"
	"{\n\tunsigned r = x * 7u;\n"
	"\tsink += r;\n\tr += outer_inl(x + sink);\n\tsink -= r >> 3;\n\treturn r;\n}\n"
	"int main(int argc, char **argv)\n"
	"{\n\t(void)argv;\n\treturn (int)(host((unsigned)argc) & 1u);\n}\n";

/* The same in C++: host() in nested namespaces (clang puts its DIE there), a member function, a template. */
static const char fixture_cxx[] =
	"#define AI __attribute__((always_inline))\n"
	"namespace outer {\nnamespace in2 {\n"
	"static volatile unsigned sink;\n"
	"template <typename T> static inline AI T inner_inl(T x)\n"
	"{\n\tT acc = x;\n\tfor (T i = 0; i < (x & 63u); i++)\n\t\tacc = acc * 2654435761u + (acc >> 7);\n"
	"\tsink += acc;\n\treturn acc;\n}\n"
	"struct Box {\n\tunsigned v;\n\tAI unsigned outer_inl(unsigned x)\n"
	"\t{\n\t\tunsigned a = x ^ v, b;\n\t\tsink ^= a * 3u;\n\t\tb = inner_inl<unsigned>(a);\n"
	"\t\tsink ^= b / 5u;\n\t\treturn a + b;\n\t}\n};\n"
	"__attribute__((noinline)) unsigned host(unsigned x)\n"
	"{\n\tBox b{x * 7u};\n\tsink += b.v;\n\tunsigned r = b.outer_inl(x + sink);\n"
	"\tsink -= r >> 3;\n\treturn r;\n}\n}\n}\n"
	"int main(int argc, char **)\n{\n\treturn (int)(outer::in2::host((unsigned)argc) & 1u);\n}\n";
#define CXX_HOST "_ZN5outer3in24hostEj"

/* An inline chain, outermost first. */
struct chain {
	int n;
	char names[MAX_CHAIN][NAME_LEN];
};

/* The instruction addresses of one function and addr2line's chain at each. */
struct probe {
	bool cxx; /* addr2line demangles (-C) and prints qualified names with parameters */
	size_t n;
	uint64_t addr[MAX_ADDRS];
	struct chain want[MAX_ADDRS];
};

/* The address and size nm -S prints for symbol name in file. Returns 0 or -1. */
static int nm_symbol(const char *file, const char *name, uint64_t *addr, uint64_t *size)
{
	char cmd[PATH_MAX + 32], line[512], sym[256], type;
	unsigned long long v, s;
	FILE *fp;
	int rc = -1;

	snprintf(cmd, sizeof(cmd), "nm -S -- '%s' 2>/dev/null", file);
	fp = popen(cmd, "re");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%llx %llx %c %255s", &v, &s, &type, sym) == 4 && strcmp(sym, name) == 0) {
			*addr = v;
			*size = s;
			rc = 0;
		}
	}
	pclose(fp);
	return rc;
}

/* The start addresses of the instructions objdump finds in [lo, hi) of file, appended to p. */
static void instruction_addrs(const char *file, uint64_t lo, uint64_t hi, struct probe *p)
{
	char cmd[PATH_MAX + 128], line[512], colon;
	unsigned long long a;
	FILE *fp;

	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn --start-address=0x%" PRIx64
		 " --stop-address=0x%" PRIx64 " -- '%s' 2>/dev/null", lo, hi, file);
	fp = popen(cmd, "re");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp) && p->n < MAX_ADDRS) {
		if (sscanf(line, " %llx%c", &a, &colon) == 2 && colon == ':' && a >= lo && a < hi)
			p->addr[p->n++] = a;
	}
	pclose(fp);
}

/* Turns addr2line's frames at one address (innermost first, the real function last) into a chain. */
static void frames_to_chain(char frames[][NAME_LEN], int nframes, struct chain *c)
{
	int i;

	c->n = 0;
	for (i = nframes - 2; i >= 0 && c->n < MAX_CHAIN; i--)
		snprintf(c->names[c->n++], NAME_LEN, "%s", frames[i]);
}

/* Asks addr2line -a -i -f for the inline chain at each of p's addresses, from start on, into p->want.
 * Returns 0 or -1. */
static int oracle_batch(const char *file, struct probe *p, size_t start, size_t count)
{
	char *cmd, line[1024], frames[MAX_CHAIN + 1][NAME_LEN];
	size_t i, len = PATH_MAX + 64 + count * 20, off, at = start - 1;
	int nframes = 0, odd = 0;
	FILE *fp;

	cmd = malloc(len);
	if (!cmd)
		return -1;
	off = (size_t)snprintf(cmd, len, "addr2line -a -i -f %s-e '%s'", p->cxx ? "-C " : "", file);
	for (i = start; i < start + count; i++)
		off += (size_t)snprintf(cmd + off, len - off, " 0x%" PRIx64, p->addr[i]);
	fp = popen(cmd, "re");
	free(cmd);
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "0x", 2) == 0 && !odd) {
			if (at >= start)
				frames_to_chain(frames, nframes, &p->want[at]);
			at++;
			nframes = 0;
			continue;
		}
		if (!odd && nframes <= MAX_CHAIN)
			snprintf(frames[nframes++], NAME_LEN, "%.127s", line);
		odd = !odd;
	}
	if (at >= start && at < start + count)
		frames_to_chain(frames, nframes, &p->want[at]);
	return pclose(fp) == 0 && at == start + count - 1 ? 0 : -1;
}

/* addr2line's chains at all of p's addresses. Returns 0 or -1. */
static int oracle(const char *file, struct probe *p)
{
	size_t i, count;

	for (i = 0; i < p->n; i += count) {
		count = p->n - i < 200 ? p->n - i : 200;
		if (oracle_batch(file, p, i, count) < 0)
			return -1;
	}
	return 0;
}

/* Our chain at addr into c. Returns inlines_at's result. */
static int lookup(struct inlines *in, uint64_t addr, struct chain *c)
{
	const char *names[MAX_CHAIN];
	int n = inlines_at(in, addr, names, MAX_CHAIN), i;

	c->n = n > 0 ? n : 0;
	for (i = 0; i < c->n; i++)
		snprintf(c->names[i], NAME_LEN, "%s", names[i]);
	return n;
}

static bool chain_equal(const struct chain *a, const struct chain *b)
{
	int i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++) {
		if (strcmp(a->names[i], b->names[i]) != 0)
			return false;
	}
	return true;
}

/* got equals want; in C++ each of got's names (DW_AT_name) is part of want's (demangled, qualified).
 * binutils 2.40 names a g++ template instance inlined through DW_AT_specification after the enclosing
 * function ("outer::in2::host(unsigned int)"); any name passes there. */
static bool chain_match(const struct chain *got, const struct chain *want, bool cxx)
{
	int i;

	if (!cxx || got->n != want->n)
		return chain_equal(got, want);
	for (i = 0; i < got->n; i++) {
		if (strstr(want->names[i], "::host("))
			continue;
		if (!got->names[i][0] || !strstr(want->names[i], got->names[i]))
			return false;
	}
	return true;
}

/* 0 for [], 1 for [outer_inl...], 2 for [outer_inl..., inner_inl...], else -1. */
static int shape(const struct chain *c)
{
	if (c->n == 0)
		return 0;
	if (strncmp(c->names[0], "outer_inl", 9) != 0 || c->n > 2)
		return -1;
	return c->n == 1 ? 1 : strncmp(c->names[1], "inner_inl", 9) == 0 ? 2 : -1;
}

static void chain_print(const char *what, const struct chain *c)
{
	int i;

	printf("%s [", what);
	for (i = 0; i < c->n; i++)
		printf("%s%s", i ? ", " : "", c->names[i]);
	printf("]");
}

static bool chain_is(const struct chain *c, const char *a, const char *b)
{
	struct chain want = { .n = b ? 2 : a ? 1 : 0 };

	if (a)
		snprintf(want.names[0], NAME_LEN, "%s", a);
	if (b)
		snprintf(want.names[1], NAME_LEN, "%s", b);
	return chain_equal(c, &want);
}

/* Compares our chain at every probed address of the file at path with p->want. Returns the number of
 * addresses that differ, or -1 when the file does not open. Counts the three expected shapes. */
static int compare_file(const char *path, const struct probe *p, int shapes[3])
{
	struct inlines *in = NULL;
	struct chain got;
	size_t i;
	int bad = 0, rc = inlines_open(path, &in);

	if (rc < 0) {
		printf("# inlines_open(%s): %s\n", path, strerror(-rc));
		return -1;
	}
	for (i = 0; i < p->n; i++) {
		rc = lookup(in, p->addr[i], &got);
		if (rc >= 0 && shape(&got) >= 0)
			shapes[shape(&got)]++;
		if (rc >= 0 && chain_match(&got, &p->want[i], p->cxx))
			continue;
		if (bad++ < 5) {
			printf("# 0x%" PRIx64 ": rc %d, ", p->addr[i], rc);
			chain_print("got", &got);
			chain_print(", addr2line", &p->want[i]);
			printf("\n");
		}
	}
	inlines_free(in);
	return bad;
}

/* Probes function sym of the fixture at path: its instruction addresses and addr2line's chains.
 * Returns 0 or -1. */
static int probe_host(const char *path, const char *sym, bool cxx, struct probe *p)
{
	uint64_t addr, size;

	p->n = 0;
	p->cxx = cxx;
	if (nm_symbol(path, sym, &addr, &size) < 0 || size == 0)
		return -1;
	instruction_addrs(path, addr, addr + size, p);
	if (p->n < 8)
		return -1;
	return oracle(path, p);
}

/* Checks the chains in file (what: how it was made) against p, and that all three shapes occur. */
static void check_chains(const char *what, const char *file, const struct probe *p)
{
	int shapes[3] = { 0, 0, 0 }, bad = compare_file(file, p, shapes);

	CHECK(bad == 0, "%s: chains at %zu addresses of host() equal addr2line -i's (%d differ)", what, p->n, bad);
	CHECK(shapes[2] > 0, "%s: [outer_inl, inner_inl] inside inner_inl's body (%d addresses)", what, shapes[2]);
	CHECK(shapes[1] > 0, "%s: [outer_inl] in outer_inl's own code (%d addresses)", what, shapes[1]);
	CHECK(shapes[0] > 0, "%s: [] in host's own code (%d addresses)", what, shapes[0]);
}

/* Builds the fixture with compiler cc and flags, then checks it, its separate debug file, its stripped
 * copy and its compressed copies. */
static void test_fixture(const char *dir, const char *tag, const char *cc, const char *flags, struct probe *p)
{
	struct inlines *in = NULL;
	char bin[FIX_PATH], dbg[FIX_PATH + 16], other[FIX_PATH + 32], what[128];
	int rc;

	snprintf(bin, sizeof(bin), "%s/fix_%s", dir, tag);
	snprintf(dbg, sizeof(dbg), "%s.debug", bin);
	if (run("%s %s -o '%s' '%s/fixture.c'", cc, flags, bin, dir) != 0) {
		CHECK(0, "%s: fixture built with %s %s", tag, cc, flags);
		return;
	}
	if (probe_host(bin, "host", false, p) < 0) {
		CHECK(0, "%s: host() disassembled and looked up with addr2line", tag);
		return;
	}
	check_chains(tag, bin, p);

	if (run("objcopy --only-keep-debug '%s' '%s' && strip -o '%s.stripped' '%s'", bin, dbg, bin, bin) != 0) {
		CHECK(0, "%s: objcopy --only-keep-debug and strip", tag);
		return;
	}
	snprintf(what, sizeof(what), "%s separate .debug", tag);
	check_chains(what, dbg, p);
	snprintf(other, sizeof(other), "%s.stripped", bin);
	rc = inlines_open(other, &in);
	CHECK(rc == -ENOENT, "%s: the stripped binary has no DWARF (-ENOENT, got %d)", tag, rc);
	if (rc == 0)
		inlines_free(in);

	if (run("objcopy --compress-debug-sections=zlib '%s' '%s.z' && "
		"objcopy --compress-debug-sections=zlib-gnu '%s' '%s.zgnu'", dbg, dbg, dbg, dbg) != 0) {
		SKIP("compressed debug sections", "objcopy cannot compress");
		return;
	}
	snprintf(what, sizeof(what), "%s SHF_COMPRESSED", tag);
	snprintf(other, sizeof(other), "%s.z", dbg);
	check_chains(what, other, p);
	snprintf(what, sizeof(what), "%s .zdebug", tag);
	snprintf(other, sizeof(other), "%s.zgnu", dbg);
	check_chains(what, other, p);
}

/* The C++ fixture, built with g++ and clang++ (when there). */
static void test_cxx(const char *dir, struct probe *p)
{
	static const char *const compilers[] = { "g++", "clang++" };
	char src[FIX_PATH], bin[FIX_PATH + 16], what[64];
	size_t i;

	snprintf(src, sizeof(src), "%s/fixture.cc", dir);
	if (write_file(src, fixture_cxx, sizeof(fixture_cxx) - 1) < 0) {
		CHECK(0, "c++: fixture source written");
		return;
	}
	for (i = 0; i < sizeof(compilers) / sizeof(compilers[0]); i++) {
		snprintf(what, sizeof(what), "c++ %s", compilers[i]);
		if (run("%s --version >/dev/null 2>&1", compilers[i]) != 0) {
			SKIP(what, "compiler missing");
			continue;
		}
		snprintf(bin, sizeof(bin), "%s/fixcxx_%zu", dir, i);
		if (run("%s -O2 -g -o '%s' '%s'", compilers[i], bin, src) != 0 ||
		    probe_host(bin, CXX_HOST, true, p) < 0) {
			CHECK(0, "%s: fixture built and probed with addr2line -C", what);
			continue;
		}
		check_chains(what, bin, p);
	}
}

/* An address of p where addr2line says [outer_inl, inner_inl], or 0. */
static uint64_t inner_addr(const struct probe *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		if (chain_is(&p->want[i], "outer_inl", "inner_inl"))
			return p->addr[i];
	}
	return 0;
}

/* The contract's edges: max 0, max 1 (the innermost is kept), NULL names, addresses no unit covers. */
static void test_api(const char *bin, const struct probe *p)
{
	struct inlines *in = NULL;
	const char *names[2];
	uint64_t addr = inner_addr(p);
	int rc = inlines_open(bin, &in), fd;

	CHECK(rc == 0, "api: the fixture opens (%d)", rc);
	if (rc)
		return;
	CHECK(inlines_ranges(in) > 0, "api: the fixture has %zu unit ranges", inlines_ranges(in));
	CHECK(inlines_at(in, addr, names, 0) == 0, "api: max 0 gives 0");
	CHECK(inlines_at(in, addr, NULL, 2) == -EINVAL, "api: NULL names with max 2 is -EINVAL");
	CHECK(inlines_at(in, addr, names, -1) == -EINVAL, "api: a negative max is -EINVAL");
	rc = inlines_at(in, addr, names, 1);
	CHECK(rc == 1 && strcmp(names[0], "inner_inl") == 0, "api: max 1 keeps the innermost (inner_inl)");
	CHECK(inlines_at(in, 0, names, 2) == 0, "api: address 0 has no chain");
	CHECK(inlines_at(in, UINT64_MAX, names, 2) == 0, "api: the last address has no chain");
	CHECK(inlines_bytes(in) > sizeof(void *), "api: inlines_bytes %zu", inlines_bytes(in));
	CHECK(inlines_bytes(NULL) == 0, "api: inlines_bytes(NULL) is 0");
	inlines_free(in);
	inlines_free(NULL);
	fd = open(bin, O_RDONLY | O_CLOEXEC);
	rc = inlines_open_fd(fd, NULL, &in);
	CHECK(rc == 0 && inlines_at(in, addr, names, 2) == 2, "api: inlines_open_fd on an open fixture works");
	inlines_free(rc == 0 ? in : NULL);
	CHECK(inlines_open("/nonexistent/file", &in) == -ENOENT, "api: a missing file is -ENOENT");
	CHECK(inlines_open_fd(-1, NULL, &in) == -EBADF, "api: fd -1 is -EBADF");
}

/* dwz moves the abstract inline functions into a common file named by .gnu_debugaltlink. */
static void test_dwz(const char *dir, struct probe *p)
{
	struct inlines *in = NULL;
	char a[PATH_MAX], b[PATH_MAX];
	const char *names[MAX_CHAIN];
	size_t i;
	int rc, bad = 0, unknown = 0;

	if (run("dwz --version >/dev/null 2>&1") != 0) {
		SKIP("dwz common file", "dwz missing: apt-get install dwz");
		return;
	}
	snprintf(a, sizeof(a), "%s/fix_dwz_a", dir);
	snprintf(b, sizeof(b), "%s/fix_dwz_b", dir);
	if (run("cc -O2 -g -o '%s' '%s/fixture.c' && cc -O2 -g -DEXTRA -o '%s' '%s/fixture.c'", a, dir, b, dir) ||
	    probe_host(a, "host", false, p) < 0 ||
	    run("cd '%s' && dwz -m common.dwz -M common.dwz fix_dwz_a fix_dwz_b", dir) != 0) {
		CHECK(0, "dwz: two fixtures built, probed and given a dwz common file");
		return;
	}
	CHECK(run("readelf -S '%s' | grep -q gnu_debugaltlink", a) == 0, "dwz: the fixture has .gnu_debugaltlink");
	check_chains("dwz", a, p);
	if (run("mv '%s/common.dwz' '%s/common.gone'", dir, dir) != 0)
		return;
	rc = inlines_open(a, &in);
	CHECK(rc == 0, "dwz: without the common file the fixture still opens (%d)", rc);
	for (i = 0; rc == 0 && i < p->n; i++) {
		int n = inlines_at(in, p->addr[i], names, MAX_CHAIN), j;

		for (j = 0; j < n; j++) {
			unknown += strcmp(names[j], INLINES_UNKNOWN) == 0;
			bad += strcmp(names[j], INLINES_UNKNOWN) != 0 && strcmp(names[j], "outer_inl") != 0 &&
			       strcmp(names[j], "inner_inl") != 0;
		}
		bad += n < 0;
	}
	CHECK(rc == 0 && bad == 0, "dwz: without the common file lookups work, names unknown or right (%d odd)", bad);
	CHECK(unknown > 0, "dwz: without the common file, names it held read " INLINES_UNKNOWN " (%d)", unknown);
	inlines_free(in);
}

/* ---- corrupt input ---- */

/* Opens path and looks up every probed address; only surviving matters. Returns inlines_open's result. */
static int read_everything(const char *path, const struct probe *p)
{
	struct inlines *in = NULL;
	const char *names[MAX_CHAIN];
	size_t i;
	int rc = inlines_open(path, &in);

	if (rc < 0)
		return rc;
	for (i = 0; i < p->n; i++)
		inlines_at(in, p->addr[i], names, MAX_CHAIN);
	inlines_at(in, 0, names, MAX_CHAIN);
	inlines_bytes(in);
	inlines_free(in);
	return 0;
}

static int write_copy(const char *dir, const char *name, const void *data, size_t len, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", dir, name);
	return write_file(out, data, len);
}

/* The file offset of the section header named name in a 64-bit ELF image, or 0. */
static size_t shdr_named(const unsigned char *img, size_t len, const char *name)
{
	const Elf64_Ehdr *eh = (const void *)img;
	Elf64_Shdr sh, strs;
	size_t i, off;

	if (len < sizeof(*eh) || img[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(sh) ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(sh) > len || eh->e_shstrndx >= eh->e_shnum)
		return 0;
	memcpy(&strs, img + eh->e_shoff + eh->e_shstrndx * sizeof(sh), sizeof(sh));
	for (i = 1; i < eh->e_shnum; i++) {
		off = eh->e_shoff + i * sizeof(sh);
		memcpy(&sh, img + off, sizeof(sh));
		if (strs.sh_offset + sh.sh_name + strlen(name) + 1 <= len &&
		    strcmp((const char *)img + strs.sh_offset + sh.sh_name, name) == 0)
			return off;
	}
	return 0;
}

/* The file extent of the DWARF sections in img: [*lo, *hi). */
static void dwarf_extent(const unsigned char *img, size_t len, size_t *lo, size_t *hi)
{
	static const char *const names[] = { ".debug_info", ".debug_abbrev", ".debug_str", ".debug_rnglists",
					     ".debug_ranges", ".debug_line_str", ".debug_aranges" };
	Elf64_Shdr sh;
	size_t i, off;

	*lo = len;
	*hi = 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		off = shdr_named(img, len, names[i]);
		if (!off)
			continue;
		memcpy(&sh, img + off, sizeof(sh));
		if (sh.sh_offset < *lo)
			*lo = sh.sh_offset;
		if (sh.sh_offset + sh.sh_size > *hi && sh.sh_offset + sh.sh_size <= len)
			*hi = sh.sh_offset + sh.sh_size;
	}
	if (*hi <= *lo) {
		*lo = 0;
		*hi = len;
	}
}

static uint64_t next_rand(uint64_t *seed)
{
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	return *seed >> 24;
}

/* Overwrites 8 random bytes of copy (a copy of img), most of them inside [lo, hi). */
static void corrupt(unsigned char *copy, const unsigned char *img, size_t len, size_t lo, size_t hi, uint64_t *seed)
{
	size_t j, pos;

	memcpy(copy, img, len);
	for (j = 0; j < 8; j++) {
		pos = j == 0 ? next_rand(seed) % len : lo + next_rand(seed) % (hi - lo);
		copy[pos] = (unsigned char)next_rand(seed);
	}
}

/* Reads rounds corrupted copies of img in a child process (under valgrind, its errors count too).
 * Returns true when the child exited 0. */
static bool fuzz(const char *dir, const char *name, const unsigned char *img, size_t len, const struct probe *p,
		 int rounds)
{
	unsigned char *copy = malloc(len);
	char path[PATH_MAX];
	size_t lo, hi;
	uint64_t seed = 0x1234567 + len;
	pid_t pid;
	int i, status;

	if (!copy)
		return false;
	dwarf_extent(img, len, &lo, &hi);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		for (i = 0; i < rounds; i++) {
			corrupt(copy, img, len, lo, hi, &seed);
			write_copy(dir, name, copy, len, path, sizeof(path));
			read_everything(path, p);
		}
		free(copy);
		_exit(0);
	}
	free(copy);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return false;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	printf("# reading %s/%s failed (exit status %d, signal %d); kept as /tmp/test_inlines.crash\n", dir, name,
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	run("cp '%s/%s' /tmp/test_inlines.crash", dir, name);
	return false;
}

/* Sets the 64-bit field at off of a copy of img to v and opens it. Returns inlines_open's result. */
static int open_patched(const char *dir, const unsigned char *img, size_t len, size_t off, uint64_t v)
{
	unsigned char *copy = malloc(len);
	struct inlines *in = NULL;
	char path[PATH_MAX];
	int rc;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, img, len);
	memcpy(copy + off, &v, sizeof(v));
	write_copy(dir, "patched", copy, len, path, sizeof(path));
	free(copy);
	rc = inlines_open(path, &in);
	inlines_free(in);
	return rc;
}

/* Huge section sizes are refused before anything is read. */
static void test_sizes(const char *dir, const char *dbg, const char *zdbg)
{
	unsigned char *img;
	Elf64_Shdr sh;
	size_t len = 0, off;
	int rc;

	img = read_all(dbg, &len);
	off = img ? shdr_named(img, len, ".debug_info") : 0;
	if (off) {
		rc = open_patched(dir, img, len, off + offsetof(Elf64_Shdr, sh_size), 1ull << 40);
		CHECK(rc == -EINVAL, "corrupt: a 1 TiB .debug_info (past the end of the file) is -EINVAL (%d)", rc);
		rc = open_patched(dir, img, len, off + offsetof(Elf64_Shdr, sh_offset), 1ull << 40);
		CHECK(rc == -EINVAL, "corrupt: a .debug_info starting past the end of the file is -EINVAL (%d)", rc);
		rc = open_patched(dir, img, len, offsetof(Elf64_Ehdr, e_shoff), len - 64);
		CHECK(rc == -EINVAL, "corrupt: a section header table running past the end is -EINVAL (%d)", rc);
	}
	free(img);
	img = read_all(zdbg, &len);
	off = img ? shdr_named(img, len, ".debug_info") : 0;
	if (off) {
		memcpy(&sh, img + off, sizeof(sh));
		CHECK(sh.sh_flags & SHF_COMPRESSED, "corrupt: the compressed copy has SHF_COMPRESSED .debug_info");
		rc = open_patched(dir, img, len, sh.sh_offset + offsetof(Elf64_Chdr, ch_size), 1ull << 40);
		CHECK(rc == -EFBIG, "corrupt: a .debug_info inflating to 1 TiB is -EFBIG (%d)", rc);
	}
	free(img);
}

static void test_corrupt(const char *dir, const char *dbg, const char *zdbg, const struct probe *p)
{
	struct inlines *in = NULL;
	unsigned char *img, *copy;
	char path[PATH_MAX];
	size_t len = 0, i, cuts[] = { 0, 64, 100, 4096, 0, 0, 0 };
	uint64_t seed = 99;
	int rc, bad = 0;

	img = read_all(dbg, &len);
	CHECK(img && len > 4096, "corrupt: read the separate debug file (%zu bytes)", len);
	if (!img || len <= 4096) {
		free(img);
		return;
	}
	cuts[4] = len / 2;
	cuts[5] = len - 64;
	cuts[6] = len - 1;
	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_copy(dir, "trunc", img, cuts[i], path, sizeof(path));
		rc = inlines_open(path, &in);
		bad += rc != -EINVAL;
		if (rc != -EINVAL)
			printf("# truncated to %zu bytes: %d\n", cuts[i], rc);
		inlines_free(rc == 0 ? in : NULL);
	}
	CHECK(bad == 0, "corrupt: copies truncated to 0, 64, 100, 4096, half, all but 64 and 1 bytes are -EINVAL");
	copy = malloc(len);
	if (copy) {
		for (i = 0; i < len; i++)
			copy[i] = (unsigned char)next_rand(&seed);
		write_copy(dir, "garbage", copy, len, path, sizeof(path));
		CHECK(inlines_open(path, &in) == -EINVAL, "corrupt: random bytes are -EINVAL");
		memcpy(copy, img, 64); /* an ELF header over garbage */
		write_copy(dir, "garbage2", copy, len, path, sizeof(path));
		CHECK(inlines_open(path, &in) == -EINVAL, "corrupt: an ELF header over random bytes is -EINVAL");
		free(copy);
	}
	CHECK(inlines_open(dir, &in) == -EINVAL, "corrupt: a directory is -EINVAL");
	test_sizes(dir, dbg, zdbg);
	CHECK(fuzz(dir, "fuzz", img, len, p, 1000), "corrupt: 1000 copies with 8 bytes changed (mostly DWARF) read "
						      "without a crash");
	free(img);
	img = read_all(zdbg, &len);
	if (img)
		CHECK(fuzz(dir, "zfuzz", img, len, p, 200),
		      "corrupt: 200 corrupted copies with compressed DWARF read without a crash");
	free(img);
}

/* ---- libc6-dbg ---- */

/* The path of libc's separate debug file by build-id, into buf. Returns 0 or -1. */
static int libc_debug_file(char *buf, size_t cap)
{
	const unsigned char *id;
	Elf *elf;
	ssize_t len, i;
	int fd = open(LIBC, O_RDONLY | O_CLOEXEC), n;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	len = elf ? dwelf_elf_gnu_build_id(elf, (const void **)&id) : -1;
	n = len > 1 ? snprintf(buf, cap, "%s/.build-id/%02x/", DEBUG_DIR, id[0]) : -1;
	for (i = 1; i < len && n > 0 && (size_t)n < cap; i++)
		n += snprintf(buf + n, cap - (size_t)n, "%02x", id[i]);
	if (n > 0 && (size_t)n < cap)
		n += snprintf(buf + n, cap - (size_t)n, ".debug");
	elf_end(elf);
	close(fd);
	return n > 0 && (size_t)n < cap && access(buf, R_OK) == 0 ? 0 : -1;
}

/* The address range of section name (a NOBITS .text in a debug file will do). Returns 0 or -1. */
static int section_range(const char *path, const char *name, uint64_t *lo, uint64_t *hi)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t strndx;
	const char *s;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;

	if (elf && elf_getshdrstrndx(elf, &strndx) == 0) {
		while ((scn = elf_nextscn(elf, scn))) {
			s = gelf_getshdr(scn, &sh) ? elf_strptr(elf, strndx, sh.sh_name) : NULL;
			if (s && strcmp(s, name) == 0 && sh.sh_size) {
				*lo = sh.sh_addr;
				*hi = sh.sh_addr + sh.sh_size;
				rc = 0;
			}
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Resident memory of this process in bytes. */
static size_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *fp = fopen("/proc/self/statm", "re");

	if (fp) {
		if (fscanf(fp, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(fp);
	}
	return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* a and b are equal but for names where b has glibc's internal alias "__GI_name" (addr2line prints a
 * DW_AT_linkage_name where there is one; inlines_at prints DW_AT_name). */
static bool chain_alias(const struct chain *a, const struct chain *b)
{
	int i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++) {
		if (strcmp(a->names[i], b->names[i]) != 0 &&
		    (strncmp(b->names[i], "__GI_", 5) != 0 || strcmp(a->names[i], b->names[i] + 5) != 0))
			return false;
	}
	return true;
}

/* Probes LIBC_PROBES addresses across .text and compares them with addr2line -i. */
static void libc_compare(const char *dbg, struct inlines *in, uint64_t lo, uint64_t hi, struct probe *p)
{
	struct chain got;
	size_t i;
	int with = 0, bad = 0, errors = 0, alias = 0, rc;

	p->n = 0;
	for (i = 0; i < LIBC_PROBES; i++)
		p->addr[p->n++] = lo + (hi - lo) / LIBC_PROBES * i + 1;
	if (oracle(dbg, p) < 0) {
		CHECK(0, "libc: addr2line -i on the debug file");
		return;
	}
	for (i = 0; i < p->n; i++) {
		rc = lookup(in, p->addr[i], &got);
		errors += rc < 0;
		with += rc > 0;
		if (chain_equal(&got, &p->want[i]))
			continue;
		if (chain_alias(&got, &p->want[i])) {
			alias++;
			continue;
		}
		if (bad++ < 5) {
			printf("# libc 0x%" PRIx64 ": rc %d, ", p->addr[i], rc);
			chain_print("got", &got);
			chain_print(", addr2line", &p->want[i]);
			printf("\n");
		}
	}
	CHECK(errors == 0, "libc: %d probes, no lookup failed (%d did)", LIBC_PROBES, errors);
	CHECK(with >= LIBC_PROBES / 20, "libc: %d of %d probes are inside inlined code", with, LIBC_PROBES);
	CHECK(bad == 0, "libc: all %d chains equal addr2line -i's (%d differ; %d only by a __GI_ linkage name)",
	      LIBC_PROBES, bad, alias);
}

/* LIBC_LOOKUPS lookups across [lo, hi). Returns how many failed; *with counts those inside inlined code. */
static int libc_lookups(struct inlines *in, uint64_t lo, uint64_t hi, int *with)
{
	const char *names[MAX_CHAIN];
	uint64_t step = (hi - lo) / LIBC_LOOKUPS;
	int i, rc, errors = 0;

	*with = 0;
	for (i = 0; i < LIBC_LOOKUPS; i++) {
		rc = inlines_at(in, lo + step * (uint64_t)i + (uint64_t)(i % 7), names, MAX_CHAIN);
		errors += rc < 0;
		*with += rc > 0;
	}
	return errors;
}

/* Opens libc's debug file from libc6-dbg, compares chains with addr2line and measures the cost. */
static void test_libc(struct probe *p)
{
	struct inlines *in = NULL;
	char dbg[PATH_MAX];
	uint64_t lo, hi;
	size_t rss0, rss1, rss2;
	double t0, t1, t2, t3;
	int rc, with = 0, errors;

	if (libc_debug_file(dbg, sizeof(dbg)) < 0) {
		SKIP("libc debug file", "no " LIBC " or no file for its build-id: apt-get install libc6-dbg");
		return;
	}
	if (section_range(dbg, ".text", &lo, &hi) < 0) {
		CHECK(0, "libc: .text of %s", dbg);
		return;
	}
	rss0 = rss_bytes();
	t0 = now_s();
	rc = inlines_open(dbg, &in);
	t1 = now_s();
	rss1 = rss_bytes();
	CHECK(rc == 0, "libc: %s opens (%d)", dbg, rc);
	if (rc)
		return;
	errors = libc_lookups(in, lo, hi, &with);
	t2 = now_s();
	rss2 = rss_bytes();
	errors += libc_lookups(in, lo, hi, &with);
	t3 = now_s();
	CHECK(errors == 0, "libc: 2 x %d lookups without an error (%d)", LIBC_LOOKUPS, errors);
	printf("# libc debug file: open %.1f ms; %d lookups: %.1f us each the first time (units indexed), "
	       "%.1f us again; %d inside inlined code; %zu ranges\n", (t1 - t0) * 1e3, LIBC_LOOKUPS,
	       (t2 - t1) * 1e6 / LIBC_LOOKUPS, (t3 - t2) * 1e6 / LIBC_LOOKUPS, with, inlines_ranges(in));
	printf("# libc debug file: inlines_bytes %.1f MiB; RSS +%.1f MiB after open, +%.1f MiB after the lookups\n",
	       (double)inlines_bytes(in) / 1048576.0, (double)(rss1 - rss0) / 1048576.0,
	       (double)(rss2 - rss0) / 1048576.0);
	if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload"))
		SKIP("libc: inlines_bytes against RSS", "under valgrind, RSS holds its shadow memory");
	else
		CHECK(inlines_bytes(in) * 2 >= rss2 - rss0 && inlines_bytes(in) <= (rss2 - rss0) * 2,
		      "libc: inlines_bytes is within a factor of 2 of the RSS growth");
	libc_compare(dbg, in, lo, hi, p);
	inlines_free(in);
}

int main(void)
{
	char dir[] = "/tmp/test_inlines.XXXXXX", src[FIX_PATH], bin[FIX_PATH], dbg[FIX_PATH + 16];
	char zdbg[FIX_PATH + 32];
	struct probe *p = calloc(1, sizeof(*p)); /* scratch for one test at a time */

	if (!p || !mkdtemp(dir)) {
		CHECK(0, "test setup: %s", strerror(errno));
		free(p);
		return CHECK_EXIT();
	}
	snprintf(src, sizeof(src), "%s/fixture.c", dir);
	if (run("cc --version >/dev/null 2>&1 && objcopy --version >/dev/null 2>&1 && "
		"addr2line --version >/dev/null 2>&1 && objdump --version >/dev/null 2>&1") != 0) {
		SKIP("DWARF fixtures", "cc or binutils (objcopy, addr2line, objdump) missing: apt-get install gcc binutils");
	} else if (write_file(src, fixture_src, sizeof(fixture_src) - 1) < 0) {
		CHECK(0, "fixture source written");
	} else {
		test_fixture(dir, "gcc_dwarf5", "gcc", "-O2 -g", p);
		test_fixture(dir, "gcc_dwarf4", "gcc", "-O2 -gdwarf-4", p);
		if (run("clang --version >/dev/null 2>&1") == 0)
			test_fixture(dir, "clang", "clang", "-O2 -g", p);
		else
			SKIP("clang fixture", "clang missing");
		snprintf(bin, sizeof(bin), "%s/fix_gcc_dwarf5", dir);
		snprintf(dbg, sizeof(dbg), "%s.debug", bin);
		if (probe_host(bin, "host", false, p) == 0) {
			test_api(bin, p);
			snprintf(zdbg, sizeof(zdbg), "%s.z", dbg);
			test_corrupt(dir, dbg, zdbg, p);
		}
		test_dwz(dir, p);
		test_cxx(dir, p);
	}
	test_libc(p);
	run("rm -rf -- '%s'", dir);
	free(p);
	return CHECK_EXIT();
}
