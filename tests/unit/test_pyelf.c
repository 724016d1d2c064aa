/* test_pyelf.c - py_elf_inspect on the interpreters installed here (the system's python3 with and without
 * its debug file, pyenv's libpython3.8 to 3.13 and stripped copies), non-interpreters and crafted copies. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "syspython.h"
#include "testutil.h"
#include "python/pyelf.h"
#include "elf/elf_file.h"

#define PYENV "/root/.pyenv/versions"
#define MAX_SYMS 8       /* entries of one name patched in a copy (.dynsym and .symtab) */
#define FUZZ_ROUNDS 200  /* corrupted copies inspected */
#define FUZZ_REGIONS 16
#define NOWHERE 0x7ff000000000ull /* an address no segment of a library holds */
#define SHRUNK 65536u            /* bytes a copy is truncated to once opened: its headers, not its data */

/* What nm says of a symbol. */
struct nm_sym {
	uint64_t value, size;
	bool found;
};

/* One file region the fuzzer corrupts: [off, off+len). */
struct region {
	uint64_t off, len;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Opens path (and debug, NULL: none) and inspects it. Returns what py_elf_inspect returns, or the error
 * of opening. */
static int inspect(const char *path, const char *debug, struct py_binary *out)
{
	struct elf_file *f = NULL, *d = NULL;
	int err = elf_file_open(path, &f);

	memset(out, 0, sizeof(*out));
	if (!err && debug)
		err = elf_file_open(debug, &d);
	if (!err)
		err = py_elf_inspect(f, d, out);
	elf_file_free(d);
	elf_file_free(f);
	return err;
}

/* The first line the shell command fmt prints, without its newline. Returns 0 or -1 (no output). */
__attribute__((format(printf, 3, 4)))
static int first_line(char *buf, size_t cap, const char *fmt, ...)
{
	char cmd[4 * PATH_MAX];
	va_list ap;
	FILE *fp;
	int n, rc = -1;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(cmd))
		return -1;
	fp = popen(cmd, "re");
	if (!fp)
		return -1;
	if (fgets(buf, (int)cap, fp)) {
		buf[strcspn(buf, "\n")] = '\0';
		rc = 0;
	}
	pclose(fp);
	return rc;
}

/* The defined symbol name as nm (dynamic: nm -D) prints it for file. */
static struct nm_sym nm_lookup(const char *file, bool dynamic, const char *name)
{
	char cmd[PATH_MAX + 64], line[512], sym[256], type;
	unsigned long long v, sz;
	struct nm_sym r = { 0 };
	FILE *fp;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only %s -- '%s' 2>/dev/null", dynamic ? "-D" : "", file);
	fp = popen(cmd, "re");
	if (!fp)
		return r;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%llx %llx %c %255s", &v, &sz, &type, sym) == 4 && strcmp(sym, name) == 0)
			r = (struct nm_sym){ v, sz, true };
		else if (sscanf(line, "%llx %c %255s", &v, &type, sym) == 3 && strcmp(sym, name) == 0)
			r = (struct nm_sym){ v, 0, true };
	}
	pclose(fp);
	return r;
}

/* The end of the FDE readelf lists as starting at lo in file, or 0. */
static uint64_t fde_end(const char *file, uint64_t lo)
{
	unsigned long long a, b;
	char line[256];
	const char *p;

	if (first_line(line, sizeof(line),
		       "readelf --debug-dump=frames -- '%s' 2>/dev/null | grep -m1 'pc=%016llx\\.\\.'", file,
		       (unsigned long long)lo) < 0)
		return 0;
	p = strstr(line, "pc=");
	if (!p || sscanf(p, "pc=%llx..%llx", &a, &b) != 2 || a != lo)
		return 0;
	return b;
}

/* Counts, as objdump decodes [lo, hi) of file, the direct jumps leaving it (*out) and those landing in
 * [tlo, thi) (*into). Returns 0 or -1. */
static int objdump_jumps(const char *file, uint64_t lo, uint64_t hi, uint64_t tlo, uint64_t thi,
			 unsigned *out, unsigned *into)
{
	char cmd[PATH_MAX + 128], line[512], mnem[32];
	unsigned long long pc, t;
	FILE *fp;

	*out = *into = 0;
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn --start-address=0x%" PRIx64
		 " --stop-address=0x%" PRIx64 " -- '%s' 2>/dev/null", lo, hi, file);
	fp = popen(cmd, "re");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, " %llx: %31s %llx", &pc, mnem, &t) != 3 || mnem[0] != 'j' || (t >= lo && t < hi))
			continue;
		(*out)++;
		*into += t >= tlo && t < thi;
	}
	return pclose(fp) == 0 ? 0 : -1;
}

/* The version the interpreter exe reports. Returns 0 or -1. */
static int run_version(const char *exe, unsigned *major, unsigned *minor, unsigned *micro)
{
	char line[128];

	if (first_line(line, sizeof(line), "'%s' -c 'import sys; print(*sys.version_info[:3])' 2>/dev/null",
		       exe) < 0)
		return -1;
	return sscanf(line, "%u %u %u", major, minor, micro) == 3 ? 0 : -1;
}

/* The file offset of ELF address vaddr in path, through its segments, or 0. */
static uint64_t file_offset(const char *path, uint64_t vaddr)
{
	struct elf_segment segs[ELF_MAX_SEGMENTS];
	struct elf_file *f;
	uint64_t off = 0;
	int i, n;

	if (elf_file_open(path, &f) < 0)
		return 0;
	n = elf_file_segments(f, segs, ELF_MAX_SEGMENTS);
	for (i = 0; i < n; i++) {
		if (vaddr >= segs[i].vaddr && vaddr - segs[i].vaddr < segs[i].filesz)
			off = segs[i].offset + (vaddr - segs[i].vaddr);
	}
	elf_file_free(f);
	return off;
}

/* The section headers of the ELF64 image img (len bytes), or NULL when they do not lie in it. */
static const Elf64_Shdr *shdrs(const unsigned char *img, size_t len, size_t *n)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;

	if (len < sizeof(*eh) || eh->e_shoff > len || eh->e_shnum > (len - eh->e_shoff) / sizeof(Elf64_Shdr))
		return NULL;
	*n = eh->e_shnum;
	return (const Elf64_Shdr *)(img + eh->e_shoff);
}

/* The file offsets of the symbol entries called name in .dynsym and .symtab of img. Returns how many. */
static size_t sym_entries(const unsigned char *img, size_t len, const char *name, size_t *offs)
{
	size_t i, j, n = 0, found = 0;
	const Elf64_Shdr *sh = shdrs(img, len, &n), *str;
	const Elf64_Sym *sym;
	size_t at;

	for (i = 0; sh && i < n; i++) {
		if ((sh[i].sh_type != SHT_DYNSYM && sh[i].sh_type != SHT_SYMTAB) || sh[i].sh_link >= n ||
		    sh[i].sh_offset + sh[i].sh_size > len)
			continue;
		str = &sh[sh[i].sh_link];
		for (j = 0; j < sh[i].sh_size / sizeof(*sym) && found < MAX_SYMS; j++) {
			sym = (const Elf64_Sym *)(img + sh[i].sh_offset) + j;
			at = str->sh_offset + sym->st_name;
			if (at < len && strncmp((const char *)img + at, name, len - at) == 0)
				offs[found++] = sh[i].sh_offset + j * sizeof(*sym);
		}
	}
	return found;
}

/* Writes a copy of src to dir/name (out: its path) with the field at field_off of every entry of symbol
 * sym set to v (sym NULL: an exact copy). Returns 0 or -1. */
static int patched_copy(const char *src, const char *dir, const char *name, const char *sym, size_t field_off,
			uint64_t v, char *out, size_t cap)
{
	size_t len = 0, offs[MAX_SYMS], n, i;
	unsigned char *img = read_all(src, &len);
	int rc = -1;

	snprintf(out, cap, "%s/%s", dir, name);
	if (!img)
		return -1;
	n = sym ? sym_entries(img, len, sym, offs) : 1;
	for (i = 0; sym && i < n; i++)
		memcpy(img + offs[i] + field_off, &v, sizeof(v));
	if (n > 0)
		rc = write_file(out, img, len);
	free(img);
	return rc;
}

/* Writes a copy of src to dir/name with the byte at file offset off xor-ed with x. Returns 0 or -1. */
static int byte_copy(const char *src, const char *dir, const char *name, uint64_t off, unsigned char x,
		     char *out, size_t cap)
{
	size_t len = 0;
	unsigned char *img = read_all(src, &len);
	int rc = -1;

	snprintf(out, cap, "%s/%s", dir, name);
	if (img && off > 0 && off < len) {
		img[off] ^= x;
		rc = write_file(out, img, len);
	}
	free(img);
	return rc;
}

/* ---- the system's python3 (python3.11 on Debian 12, python3.13 on Debian 13): static libpython, stripped,
 * debug file (python3-dbg) by build-id ---- */

/* The path of f's debug file under /usr/lib/debug/.build-id. Returns 0 or -1. */
static int debug_path(const char *path, char *out, size_t cap)
{
	uint8_t id[ELF_BUILD_ID_MAX];
	struct elf_file *f;
	int n, i, pos;

	if (elf_file_open(path, &f) < 0)
		return -1;
	n = elf_file_build_id(f, id, sizeof(id));
	elf_file_free(f);
	if (n < 2)
		return -1;
	pos = snprintf(out, cap, "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (i = 1; i < n && pos > 0 && (size_t)pos < cap; i++)
		pos += snprintf(out + pos, cap - (size_t)pos, "%02x", id[i]);
	if (pos <= 0 || (size_t)pos >= cap || (size_t)pos + 7 > cap)
		return -1;
	strcat(out, ".debug");
	return access(out, R_OK) == 0 ? 0 : -1;
}

/* Times py_elf_inspect on path without a debug file: the first call and the best of 5. */
static void time_inspect(const char *path)
{
	double t0, first = 0, best = 1e9;
	struct py_binary b;
	struct elf_file *f;
	int i, err = 0;

	if (elf_file_open(path, &f) < 0)
		return;
	for (i = 0; i < 6; i++) {
		t0 = now_ms();
		err |= py_elf_inspect(f, NULL, &b);
		t0 = now_ms() - t0;
		if (i == 0)
			first = t0;
		else if (t0 < best)
			best = t0;
	}
	elf_file_free(f);
	printf("# %s without debug file (cold part by jumps): py_elf_inspect %.2f ms first, %.2f ms best of 5%s\n",
	       path, first, best, err ? " (errors)" : "");
}

/* Checks the addresses of b against nm -D on path. */
static void check_addresses(const char *what, const char *path, const struct py_binary *b)
{
	struct nm_sym rt = nm_lookup(path, true, "_PyRuntime"), ct = nm_lookup(path, true, "PyCode_Type");
	struct nm_sym ev = nm_lookup(path, true, "_PyEval_EvalFrameDefault");

	CHECK(rt.found && b->runtime == rt.value, "%s: _PyRuntime %#" PRIx64 " as nm -D says (%#" PRIx64 ")", what,
	      b->runtime, rt.value);
	CHECK(ev.found && b->eval_start == ev.value && b->eval_end == ev.value + ev.size,
	      "%s: _PyEval_EvalFrameDefault [%#" PRIx64 ", %#" PRIx64 ") as nm -D says", what, b->eval_start,
	      b->eval_end);
	CHECK(ct.found && b->code_type == ct.value, "%s: PyCode_Type %#" PRIx64 " as nm -D says", what,
	      b->code_type);
}

/* Checks the version of b against what exe reports (micro from 3.11 on). */
static void check_version(const char *what, const char *exe, const struct py_binary *b)
{
	unsigned major, minor, micro;

	if (run_version(exe, &major, &minor, &micro) < 0) {
		CHECK(0, "%s: %s reports its version", what, exe);
		return;
	}
	CHECK(b->major == major && b->minor == minor && (minor < 11 ? b->micro == 0 : b->micro == micro),
	      "%s: version %u.%u.%u (%s says %u.%u.%u)", what, b->major, b->minor, b->micro, exe, major, minor,
	      micro);
	CHECK(b->layout.major == major && b->layout.minor == minor, "%s: the layout of %u.%u", what, major, minor);
}

/* Checks the perf trampoline of b against nm (dynamic: nm -D, for a stripped binary) and objdump (3.12+), or
 * its absence. */
static void check_trampoline(const char *what, const char *lib, bool dynamic, const struct py_binary *b)
{
	struct nm_sym s = nm_lookup(lib, dynamic, "_Py_trampoline_func_start"), e;
	char line[64];
	bool push;

	if (b->minor < 12) {
		CHECK(b->tramp_start == 0 && b->tramp_end == 0 && b->tramp_cfa == 0, "%s: no perf trampoline", what);
		return;
	}
	e = nm_lookup(lib, dynamic, "_Py_trampoline_func_end");
	push = first_line(line, sizeof(line), "objdump -D --start-address=0x%" PRIx64 " --stop-address=0x%" PRIx64
			  " -- '%s' | grep -c 'push *%%rbp'", s.value, e.value, lib) == 0 && atoi(line) > 0;
	CHECK(s.found && e.found && b->tramp_start == s.value && b->tramp_end == e.value,
	      "%s: perf trampoline [%#" PRIx64 ", %#" PRIx64 ") as nm says", what, b->tramp_start, b->tramp_end);
	CHECK(b->tramp_cfa == 16 && b->tramp_rbp_saved == push, "%s: trampoline CFA rsp+%u, rbp %s", what,
	      b->tramp_cfa, b->tramp_rbp_saved ? "saved" : "not saved");
}

static void test_system(const struct system_python *py)
{
	const char *name = py->name, *path = py->path;
	struct nm_sym cold;
	struct py_binary b;
	char dbg[PATH_MAX];
	uint64_t end;
	int err;

	if (py->major == 0) {
		CHECK(0, "the system's python3 (%s) is there and says its version (scripts/deps.sh installs it)",
		      path);
		return;
	}
	printf("# the system's python3: %s (%u.%u.%u)\n", path, py->major, py->minor, py->micro);
	err = inspect(path, NULL, &b);
	if (py->major != 3 || py->minor < 8 || py->minor > 15) {
		CHECK(err == -ENOTSUP && b.major == py->major && b.minor == py->minor, "%s: %u.%u, no layout: "
		      "-ENOTSUP with the version (%d, %u.%u)", name, py->major, py->minor, err, b.major, b.minor);
		snprintf(dbg, sizeof(dbg), "flamed reads CPython 3.8 to 3.15, not %u.%u yet", py->major, py->minor);
		SKIP(name, dbg);
		return;
	}
	CHECK(err == 0, "%s (the system's python3, stripped, no debug file): an interpreter (%d)", name, err);
	check_version(name, path, &b);
	check_addresses(name, path, &b);
	check_trampoline(name, path, true, &b);
	CHECK(b.debug_offsets == (py->minor >= 13), "%s: _Py_DebugOffsets %s", name,
	      b.debug_offsets ? "agree" : "none");
	if (debug_path(path, dbg, sizeof(dbg)) < 0) {
		printf("# %s: its debug file (python3-dbg) is not installed here, .cold part not tested\n", path);
		return;
	}
	cold = nm_lookup(dbg, false, "_PyEval_EvalFrameDefault.cold");
	end = cold.found ? fde_end(path, cold.value) : 0;
	CHECK(cold.found && end > cold.value, "%s: nm finds the .cold symbol in %s (%#" PRIx64
	      ") and readelf its FDE (to %#" PRIx64 ")", name, dbg, cold.value, end);
	CHECK(b.cold_source == PY_COLD_JUMPS && b.cold_start == cold.value && b.cold_end == end,
	      "%s without debug file: .cold part [%#" PRIx64 ", %#" PRIx64 ") found by jumps (source %d), "
	      "the symbol's FDE", name, b.cold_start, b.cold_end, b.cold_source);
	time_inspect(path);
	err = inspect(path, dbg, &b);
	CHECK(err == 0 && b.cold_source == PY_COLD_SYMBOL && b.cold_start == cold.value &&
	      b.cold_end == cold.value + cold.size, "%s with debug file: .cold part [%#" PRIx64 ", %#" PRIx64
	      ") from its symbol (source %d)", name, b.cold_start, b.cold_end, b.cold_source);
	snprintf(dbg, sizeof(dbg), "%s with debug file", name);
	check_addresses(dbg, path, &b);
}

/* ---- pyenv's shared libpython3.8 to 3.13 ---- */

/* Checks the .cold part found in lib without its symbol against the symbol sym and objdump: the
 * symbol's range when at least 3 jumps of the eval loop land in it, none when fewer than 3 leave it. */
static void check_cold_jumps(const char *what, const char *lib, const struct py_binary *b, struct nm_sym sym)
{
	unsigned out, into;

	if (objdump_jumps(lib, b->eval_start, b->eval_end, sym.value, sym.value + sym.size, &out, &into) < 0) {
		CHECK(0, "%s: objdump decodes _PyEval_EvalFrameDefault", what);
		return;
	}
	printf("# %s: objdump: %u direct jumps leave _PyEval_EvalFrameDefault, %u into its .cold symbol\n", what,
	       out, into);
	if (sym.found && sym.size && into >= 3)
		CHECK(b->cold_source == PY_COLD_JUMPS && b->cold_start == sym.value &&
		      b->cold_end == sym.value + sym.size, "%s: .cold part [%#" PRIx64 ", %#" PRIx64 ") by jumps is the "
		      "symbol's", what, b->cold_start, b->cold_end);
	else if (out < 3)
		CHECK(b->cold_source == PY_COLD_NONE && b->cold_start == 0 && b->cold_end == 0,
		      "%s: no .cold part found by jumps (source %d), none jumped to", what, b->cold_source);
	else
		printf("# %s: jumps leave to other places: found [%#" PRIx64 ", %#" PRIx64 ") source %d, unchecked\n",
		       what, b->cold_start, b->cold_end, b->cold_source);
}

/* Copies of a 3.13 lib with a byte of its _Py_DebugOffsets changed (at runtime + at, xor x): refused as
 * lying (-EINVAL), refused as not walked (-ENOTSUP, why), or read with the changed offset. */
static void test_debug_offsets_patched(const char *dir, const char *lib, const struct py_binary *b)
{
	static const struct {
		unsigned at;
		unsigned char x;
		int err;
		enum py_unsupported why;
		const char *what;
	} cases[] = {
		{ 0, 0x01, -EINVAL, 0, "no cookie \"xdebugpy\" (3.13 must have one)" },
		{ 10, 0x02, -EINVAL, 0, "a version (3.15) other than Py_Version's" },
		{ 16, 0x01, -ENOTSUP, PY_UNSUPPORTED_FREE_THREADED, "free_threaded 1: not walked, counted as free-threaded" },
		{ 16, 0x02, -EINVAL, 0, "free_threaded 2" },
		{ 185, 0x10, -EINVAL, 0, "thread_state.current_frame past the thread state's size" },
		{ 289, 0x01, -EINVAL, 0, "code_object.name past the code object's size" },
		{ 154, 0x40, -EINVAL, 0, "thread_state.size over a megabyte" },
		{ 264, 0x80, -EINVAL, 0, "interpreter_frame.owner past the frame's size" },
		{ 184, 0x08, 0, 0, "thread_state.current_frame 64, inside: read as the build's" },
	};
	char copy[PATH_MAX];
	struct py_binary p;
	uint64_t off;
	int err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		off = file_offset(lib, b->runtime + cases[i].at);
		if (off == 0 || byte_copy(lib, dir, "libpython-debugoff.so", off, cases[i].x, copy, sizeof(copy)) < 0) {
			CHECK(0, "3.13: a copy with _Py_DebugOffsets patched at file offset %#" PRIx64, off);
			return;
		}
		err = inspect(copy, NULL, &p);
		CHECK(err == cases[i].err && (err != -ENOTSUP || p.unsupported == cases[i].why) &&
		      (err != -EINVAL || p.debug_offsets_refused) &&
		      (err || p.layout.bpf.tstate_frame == (b->layout.bpf.tstate_frame ^ cases[i].x)),
		      "3.13 _Py_DebugOffsets: %s: %d (%d, why %d, refused %d)", cases[i].what, cases[i].err, err,
		      p.unsupported, p.debug_offsets_refused);
	}
}

/* A copy of a 3.12+ lib with the trampoline template changed (sub $16) keeps the range, not the CFA. */
static void test_trampoline_patched(const char *dir, const char *lib, const struct py_binary *b)
{
	uint64_t off = file_offset(lib, b->tramp_start + 3); /* the 08 of sub $8, %rsp */
	char copy[PATH_MAX];
	struct py_binary p;
	int err;

	if (off == 0 || byte_copy(lib, dir, "libpython-tramp.so", off, 0x18, copy, sizeof(copy)) < 0) {
		CHECK(0, "trampoline: a copy with its template patched");
		return;
	}
	err = inspect(copy, NULL, &p);
	CHECK(err == 0 && p.tramp_start == b->tramp_start && p.tramp_end == b->tramp_end && p.tramp_cfa == 0,
	      "trampoline template not understood (sub $16): range kept, tramp_cfa 0 (%d, cfa %u)", err,
	      p.tramp_cfa);
}

/* Inspects lib, its executable exe and a stripped copy of lib. */
static void test_pyenv_lib(const char *dir, unsigned minor, const char *lib, const char *exe)
{
	struct nm_sym cold = nm_lookup(lib, false, "_PyEval_EvalFrameDefault.cold");
	char what[64], stripped[PATH_MAX];
	struct py_binary b, s;
	int err;

	snprintf(what, sizeof(what), "libpython3.%u", minor);
	err = inspect(lib, NULL, &b);
	CHECK(err == 0, "%s (%s): an interpreter (%d)", what, lib, err);
	if (err)
		return;
	check_version(what, exe, &b);
	check_addresses(what, lib, &b);
	if (cold.found && cold.size)
		CHECK(b.cold_source == PY_COLD_SYMBOL && b.cold_start == cold.value &&
		      b.cold_end == cold.value + cold.size, "%s: .cold part [%#" PRIx64 ", %#" PRIx64
		      ") from its .symtab symbol", what, b.cold_start, b.cold_end);
	else
		check_cold_jumps(what, lib, &b, cold);
	check_trampoline(what, lib, false, &b);
	CHECK(b.debug_offsets == (minor >= 13), "%s: _Py_DebugOffsets %s", what, b.debug_offsets ? "agree" : "none");
	if (minor >= 13)
		test_debug_offsets_patched(dir, lib, &b);
	if (minor >= 12)
		test_trampoline_patched(dir, lib, &b);

	snprintf(stripped, sizeof(stripped), "%s/libpython3.%u.stripped", dir, minor);
	if (run("objcopy --strip-all -- '%s' '%s'", lib, stripped) != 0) {
		CHECK(0, "%s: objcopy --strip-all", what);
		return;
	}
	snprintf(what, sizeof(what), "libpython3.%u stripped", minor);
	err = inspect(stripped, NULL, &s);
	CHECK(err == 0 && s.major == b.major && s.minor == b.minor && s.micro == b.micro && s.runtime == b.runtime &&
	      s.eval_start == b.eval_start && s.eval_end == b.eval_end && s.code_type == b.code_type &&
	      s.tramp_start == b.tramp_start && s.tramp_cfa == b.tramp_cfa && s.debug_offsets == b.debug_offsets,
	      "%s: as unstripped but for the .cold part (%d)", what, err);
	check_cold_jumps(what, stripped, &s, cold);
}

static void test_pyenv(const char *dir)
{
	char pat[PATH_MAX], exe[PATH_MAX], tmp[PATH_MAX];
	unsigned minor;
	glob_t g;
	size_t i;

	for (minor = 8; minor <= 13; minor++) {
		snprintf(pat, sizeof(pat), PYENV "/3.%u.*/lib/libpython3.%u.so.1.0", minor, minor);
		if (glob(pat, 0, NULL, &g) != 0) {
			printf("# python3.%u (pyenv): not installed here, not tested\n", minor);
			globfree(&g);
			continue;
		}
		for (i = 0; i < g.gl_pathc; i++) {
			snprintf(tmp, sizeof(tmp), "%s", g.gl_pathv[i]);
			snprintf(exe, sizeof(exe), "%s/../bin/python3.%u", dirname(tmp), minor);
			test_pyenv_lib(dir, minor, g.gl_pathv[i], exe);
		}
		globfree(&g);
	}
}

/* ---- not interpreters, or not supported ---- */

/* The first file matching pat into out. Returns 0 or -1. */
static int glob_one(const char *pat, char *out, size_t cap)
{
	glob_t g;
	int rc = -1;

	if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
		snprintf(out, cap, "%s", g.gl_pathv[0]);
		rc = 0;
	}
	globfree(&g);
	return rc;
}

static void expect_enoent(const char *path)
{
	struct py_binary b;
	double t0 = now_ms();
	int err = inspect(path, NULL, &b);

	CHECK(err == -ENOENT, "%s: not an interpreter, -ENOENT (%d, %.2f ms with opening it)", path, err,
	      now_ms() - t0);
}

static void test_others(void)
{
	char path[PATH_MAX];
	struct py_binary b;
	int err;

	expect_enoent("/bin/ls");
	if (first_line(path, sizeof(path), "ldd /bin/ls | awk '/libc\\.so\\.6/ { print $3 }'") == 0 &&
	    path[0] == '/')
		expect_enoent(path);
	else
		CHECK(0, "ldd finds the libc.so.6 of /bin/ls");
	if (glob_one(PYENV "/3.12.*/bin/python3.12", path, sizeof(path)) == 0)
		expect_enoent(path); /* links libpython3.12.so dynamically */
	else
		printf("# python3.12: not installed here, its executable not tested\n");
	if (glob_one(PYENV "/2.7.*/lib/libpython2.7.so.1.0", path, sizeof(path)) == 0)
		expect_enoent(path); /* no _PyRuntime before 3.7 */
	else
		printf("# python2.7: not installed here, not tested\n");
	if (glob_one(PYENV "/3.7.*/lib/libpython3.7m.so.1.0", path, sizeof(path)) == 0) {
		err = inspect(path, NULL, &b);
		CHECK(err == -ENOTSUP && b.major == 3 && b.minor == 7, "%s: 3.7, no layout: -ENOTSUP with the version "
		      "(%d, %u.%u)", path, err, b.major, b.minor);
	} else {
		printf("# python3.7: not installed here, not tested\n");
	}
}

/* ---- Debian sid's and experimental's interpreters, stripped as shipped (scripts/python-root.sh) ---- */

#define PYROOT_DEFAULT "/var/tmp/flamed-pyroot"

/* What CPython's headers say of each version's structures (x86-64, GIL build). */
static const struct {
	unsigned minor;
	uint16_t tstate_frame, tstate_thread_id, base_frame, frame_back, frame_owner, code_first_instr;
	uint16_t code_qualname, str_ascii_size;
} pyroot_want[] = {
	{ 13, 72, 152, PY_NO_OFFSET, 8, 70, 200, 128, 40 },
	{ 14, 72, 152, PY_NO_OFFSET, 8, 74, 208, 128, 40 },
	{ 15, 72, 176, 80, 8, 74, 208, 128, 40 },
};

/* Checks the version of b against what python3.MINOR says inside root. */
static void check_root_version(const char *what, const char *root, unsigned minor, const struct py_binary *b)
{
	unsigned major = 0, mi = 0, micro = 0;
	char line[64];

	if (first_line(line, sizeof(line), "chroot '%s' /usr/bin/python3.%u -c 'import sys; "
		       "print(*sys.version_info[:3])' 2>/dev/null", root, minor) < 0 ||
	    sscanf(line, "%u %u %u", &major, &mi, &micro) != 3) {
		CHECK(0, "%s: it says its version in its root", what);
		return;
	}
	CHECK(b->major == major && b->minor == mi && b->micro == micro && b->layout.major == major &&
	      b->layout.minor == mi, "%s: version %u.%u.%u, its layout's %u.%u (it says %u.%u.%u)", what, b->major,
	      b->minor, b->micro, b->layout.major, b->layout.minor, major, mi, micro);
}

static void test_pyroot(void)
{
	const char *root = getenv("FLAMED_PYROOT") ? getenv("FLAMED_PYROOT") : PYROOT_DEFAULT;
	char path[PATH_MAX], mark[PATH_MAX], what[64];
	struct py_binary b;
	int err;

	snprintf(mark, sizeof(mark), "%s/.flamed-pyroot-ready", root);
	if (access(mark, F_OK) != 0) {
		SKIP("Debian sid's python3.13 and 3.14, experimental's 3.15", "their private root is not made here "
		     "(scripts/python-root.sh; tests/integration/test_pyroot.sh makes it)");
		return;
	}
	for (size_t i = 0; i < sizeof(pyroot_want) / sizeof(pyroot_want[0]); i++) {
		unsigned minor = pyroot_want[i].minor;

		snprintf(path, sizeof(path), "%s/usr/bin/python3.%u", root, minor);
		snprintf(what, sizeof(what), "Debian's python3.%u", minor);
		err = inspect(path, NULL, &b);
		CHECK(err == 0 && b.major == 3 && b.minor == minor && b.debug_offsets,
		      "%s (%s, stripped): an interpreter, its layout read from _Py_DebugOffsets (%d)", what, path, err);
		if (err)
			continue;
		CHECK(b.layout.bpf.tstate_frame == pyroot_want[i].tstate_frame &&
		      b.layout.bpf.tstate_thread_id == pyroot_want[i].tstate_thread_id &&
		      b.layout.bpf.tstate_base_frame == pyroot_want[i].base_frame &&
		      b.layout.bpf.frame_back == pyroot_want[i].frame_back && b.layout.bpf.frame_code == 0 &&
		      b.layout.bpf.frame_owner == pyroot_want[i].frame_owner &&
		      b.layout.bpf.code_first_instr == pyroot_want[i].code_first_instr &&
		      b.layout.code_qualname == pyroot_want[i].code_qualname &&
		      b.layout.str_ascii_size == pyroot_want[i].str_ascii_size && b.layout.bpf.walk == PY_WALK_SHIM,
		      "%s: current_frame %u, thread_id %u, base_frame %u, previous %u, owner %u, co_code_adaptive %u, "
		      "co_qualname %u, PyASCIIObject %u", what, b.layout.bpf.tstate_frame, b.layout.bpf.tstate_thread_id,
		      b.layout.bpf.tstate_base_frame, b.layout.bpf.frame_back, b.layout.bpf.frame_owner,
		      b.layout.bpf.code_first_instr, b.layout.code_qualname, b.layout.str_ascii_size);
		check_root_version(what, root, minor, &b);
		check_addresses(what, path, &b);
		check_trampoline(what, path, true, &b);
		/* gcc 16 with Debian's profile moves the eval loop's body (its computed gotos) to its .cold part. */
		CHECK(b.cold_source == PY_COLD_JUMPS && b.cold_end - b.cold_start > 32768,
		      "%s: the eval loop's body found by jumps: [%#" PRIx64 ", %#" PRIx64 ")", what, b.cold_start,
		      b.cold_end);
	}
}

/* py_elf_needs_libpython of path is want. */
static void expect_needs(const char *path, int want, const char *what)
{
	struct elf_file *f;
	int got = elf_file_open(path, &f);

	if (got == 0) {
		got = py_elf_needs_libpython(f);
		elf_file_free(f);
	}
	CHECK(got == want, "%s: %s (%d)", path, what, got);
}

/* Which programs wait for a libpython the dynamic loader maps after they start. */
static void test_needs_libpython(const struct system_python *py)
{
	char path[PATH_MAX];

	expect_needs("/bin/ls", 0, "needs no libpython");
	if (py->major)
		expect_needs(py->path, 0, "needs no libpython (it is built in)");
	if (glob_one(PYENV "/3.12.*/bin/python3.12", path, sizeof(path)) == 0)
		expect_needs(path, 1, "needs libpython3.12.so (DT_NEEDED)");
	else
		printf("# python3.12: not installed here, its executable not tested\n");
}

/* ---- crafted copies ---- */

/* Copies of lib with symbol name's field (value or size) set to v must give an error. */
static void expect_patched_error(const char *dir, const char *lib, const char *name, size_t field, uint64_t v,
				 const char *what)
{
	char copy[PATH_MAX];
	struct py_binary b;
	int err;

	if (patched_copy(lib, dir, "libpython-patched.so", name, field, v, copy, sizeof(copy)) < 0) {
		CHECK(0, "a copy with %s", what);
		return;
	}
	err = inspect(copy, NULL, &b);
	CHECK(err == -EINVAL, "%s: -EINVAL (%d)", what, err);
}

/* A copy of lib with its cache tag "cpython-3XY" changed to tag (same length) gives want. */
static void expect_tag(const char *dir, const char *lib, const char *tag, int want, const char *what)
{
	size_t len = 0, tlen = strlen(tag);
	unsigned char *img = read_all(lib, &len), *p = NULL;
	char copy[PATH_MAX];
	struct py_binary b;
	int err = 1;

	snprintf(copy, sizeof(copy), "%s/libpython-tag.so", dir);
	if (img)
		p = memmem(img, len, "\0cpython-3", 10);
	if (p && p + 1 + tlen + 1 <= img + len && p[1 + tlen] == '\0') {
		memcpy(p + 1, tag, tlen);
		if (write_file(copy, img, len) == 0)
			err = inspect(copy, NULL, &b);
	}
	free(img);
	CHECK(err == want, "%s (%d)", what, err);
}

/* Writes img (len bytes) to copy, opens it, inspects it once when first (libelf then holds its tables, so
 * that the reads of the data fail), truncates it to SHRUNK bytes and inspects it. Returns what
 * py_elf_inspect returns, or 1 when this could not be done. */
static int inspect_shrunk(const char *copy, const unsigned char *img, size_t len, bool first)
{
	struct py_binary b;
	struct elf_file *f;
	int err = 1;

	if (write_file(copy, img, len) < 0 || elf_file_open(copy, &f) < 0)
		return 1;
	if ((!first || py_elf_inspect(f, NULL, &b) == 0) && truncate(copy, SHRUNK) == 0)
		err = py_elf_inspect(f, NULL, &b);
	elf_file_free(f);
	return err;
}

/* Inspecting a truncated file, or one truncated after it was opened, fails cleanly. */
static void test_truncated(const char *dir, const char *lib)
{
	char copy[PATH_MAX];
	struct py_binary b;
	struct elf_file *f;
	size_t len = 0;
	unsigned char *img = read_all(lib, &len);
	int err;

	snprintf(copy, sizeof(copy), "%s/libpython-trunc.so", dir);
	if (!img || write_file(copy, img, len / 2) < 0) {
		free(img);
		CHECK(0, "a truncated copy");
		return;
	}
	err = elf_file_open(copy, &f);
	if (!err) {
		err = py_elf_inspect(f, NULL, &b);
		elf_file_free(f);
	}
	CHECK(err < 0, "a copy truncated to half: an error (%d)", err);
	err = inspect_shrunk(copy, img, len, false);
	CHECK(err < 0, "a copy truncated to %u bytes once opened: an error (%d)", SHRUNK, err);
	err = inspect_shrunk(copy, img, len, true);
	CHECK(err < 0, "a copy truncated to %u bytes after a first inspection: an error (%d)", SHRUNK, err);
	free(img);
}

/* The regions of img the fuzzer corrupts: the headers, the symbol and string tables, .eh_frame(_hdr). */
static size_t fuzz_regions(const unsigned char *img, size_t len, struct region *r)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	size_t i, n = 0, k = 0;
	const Elf64_Shdr *sh = shdrs(img, len, &n);

	r[k++] = (struct region){ 0, eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) };
	r[k++] = (struct region){ eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) };
	for (i = 1; sh && i < n && k < FUZZ_REGIONS; i++) {
		if (sh[i].sh_type == SHT_DYNSYM || sh[i].sh_type == SHT_STRTAB ||
		    (sh[i].sh_type == SHT_PROGBITS && sh[i].sh_size < (1u << 20) && sh[i].sh_addr &&
		     !(sh[i].sh_flags & (SHF_WRITE | SHF_EXECINSTR))))
			r[k++] = (struct region){ sh[i].sh_offset, sh[i].sh_size };
	}
	return k;
}

/* Inspects FUZZ_ROUNDS copies of lib with a few bytes of its headers and tables changed: errors or
 * results, never a crash. */
static void test_fuzz(const char *dir, const char *lib)
{
	unsigned char *img, old[8];
	struct region r[FUZZ_REGIONS];
	int i, j, fd, nerr = 0, nok = 0;
	size_t len = 0, nr;
	char copy[PATH_MAX];
	struct py_binary b;
	uint64_t off;

	snprintf(copy, sizeof(copy), "%s/libpython-fuzz.so", dir);
	img = read_all(lib, &len);
	fd = img && write_file(copy, img, len) == 0 ? open(copy, O_RDWR | O_CLOEXEC) : -1;
	nr = fd >= 0 ? fuzz_regions(img, len, r) : 0;
	srand(1);
	for (i = 0; i < FUZZ_ROUNDS && nr > 0; i++) {
		const struct region *g = &r[(size_t)rand() % nr];

		if (g->len < sizeof(old) || g->off + g->len > len)
			continue;
		off = g->off + (uint64_t)rand() % (g->len - sizeof(old) + 1);
		memcpy(old, img + off, sizeof(old));
		for (j = 0; j < 1 + rand() % 3; j++)
			img[off + (size_t)rand() % sizeof(old)] ^= (unsigned char)(1 + rand() % 255);
		if (pwrite(fd, img + off, sizeof(old), (off_t)off) != (ssize_t)sizeof(old))
			break;
		if (inspect(copy, NULL, &b) == 0)
			nok++;
		else
			nerr++;
		memcpy(img + off, old, sizeof(old));
		if (pwrite(fd, old, sizeof(old), (off_t)off) != (ssize_t)sizeof(old))
			break;
	}
	if (fd >= 0)
		close(fd);
	free(img);
	CHECK(nok + nerr >= FUZZ_ROUNDS / 2, "fuzz: %d copies of %s with bytes of headers and tables changed "
	      "inspected without a crash (%d errors)", nok + nerr, lib, nerr);
}

static void test_crafted(const char *dir)
{
	char lib[PATH_MAX], stripped[PATH_MAX];

	if (glob_one(PYENV "/3.1[23].*/lib/libpython3.1[23].so.1.0", lib, sizeof(lib)) < 0) {
		printf("# python3.12, 3.13: not installed here, crafted copies not tested\n");
		return;
	}
	expect_patched_error(dir, lib, "Py_Version", offsetof(Elf64_Sym, st_value), NOWHERE,
			     "Py_Version outside all segments");
	expect_patched_error(dir, lib, "_PyRuntime", offsetof(Elf64_Sym, st_value), NOWHERE,
			     "_PyRuntime outside all segments");
	expect_patched_error(dir, lib, "_PyEval_EvalFrameDefault", offsetof(Elf64_Sym, st_size), UINT64_MAX - 8,
			     "_PyEval_EvalFrameDefault's size wrapping around");
	expect_patched_error(dir, lib, "_Py_trampoline_func_end", offsetof(Elf64_Sym, st_value), 1,
			     "_Py_trampoline_func_end before _start");
	expect_tag(dir, lib, "cpython-310", -EINVAL, "a cache tag of another version than Py_Version: -EINVAL");
	test_truncated(dir, lib);
	snprintf(stripped, sizeof(stripped), "%s/libpython-fuzz-src.so", dir);
	if (run("objcopy --strip-all -- '%s' '%s'", lib, stripped) == 0)
		test_fuzz(dir, stripped); /* stripped: the .cold part is looked for by jumps each time */
	if (glob_one(PYENV "/3.10.*/lib/libpython3.10.so.1.0", lib, sizeof(lib)) == 0)
		expect_tag(dir, lib, "cpython-3a0", -EINVAL, "3.10 without its cache tag: no version, -EINVAL");
}

int main(void)
{
	char dir[] = "/tmp/test_pyelf.XXXXXX";
	struct system_python py;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return CHECK_EXIT();
	}
	if (run("nm --version >/dev/null 2>&1 && objcopy --version >/dev/null 2>&1 && "
		"objdump --version >/dev/null 2>&1 && readelf --version >/dev/null 2>&1") != 0) {
		CHECK(0, "binutils (nm, objcopy, objdump, readelf) installed: apt-get install binutils");
		return CHECK_EXIT();
	}
	system_python(&py);
	test_system(&py);
	test_pyenv(dir);
	test_needs_libpython(&py);
	test_others();
	test_pyroot();
	test_crafted(dir);
	run("rm -rf -- '%s'", dir);
	return CHECK_EXIT();
}
