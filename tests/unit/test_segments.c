/* test_segments.c - a mapping's file offset turned into ELF virtual addresses (elf_segments_vaddr), as the
 * unwinder, the symbolizer and the Python finder do it: the layouts ld.bfd, gold, lld and mold write
 * (lld and mold put the read-only segment and the code in one page of the file, apart only in their
 * addresses), segments that lie (overlapping, wrapping around), and real programs linked by each linker
 * here, run, their executable mapping's address taken to a function's address through the segments. */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/wait.h>

#include "check.h"
#include "testutil.h"
#include "elf/elf_file.h"
#include "elf/procmaps.h"

#define R PF_R
#define RX (PF_R | PF_X)
#define RW (PF_R | PF_W)

/* vaddr of file offset off in a mapping (exec or not) of the segments; UINT64_MAX when none holds it. */
static uint64_t vaddr_of(const struct elf_segment *segs, size_t n, uint64_t off, bool exec)
{
	uint64_t v;

	return elf_segments_vaddr(segs, n, off, exec, &v) ? UINT64_MAX : v;
}

static void test_layouts(void)
{
	/* ld.bfd (Debian 12's gcc, PIE): each segment on its own pages, offset == address. */
	static const struct elf_segment bfd[] = {
		{ 0x0, 0x0, 0x628, R }, { 0x1000, 0x1000, 0x1c5, RX }, { 0x2000, 0x2000, 0x10c, R },
		{ 0x2db8, 0x3db8, 0x258, RW },
	};
	/* lld: the code shares its first page of the file with the read-only segment before it. */
	static const struct elf_segment lld[] = {
		{ 0x0, 0x0, 0x994, R }, { 0x9a0, 0x19a0, 0x4b0, RX }, { 0xe50, 0x2e50, 0x1d8, RW },
		{ 0x1028, 0x4028, 0x78, RW },
	};
	/* mold: likewise, other sizes. */
	static const struct elf_segment mold[] = {
		{ 0x0, 0x0, 0x8c8, R }, { 0x8d0, 0x18d0, 0x4c0, RX }, { 0xd90, 0x2d90, 0x220, RW },
	};
	/* A non-PIE executable linked by lld: addresses from 0x200000, the code in the read-only page. */
	static const struct elf_segment lld_exec[] = {
		{ 0x0, 0x200000, 0x5a0, R }, { 0x5a0, 0x2015a0, 0x2200, RX }, { 0x27a0, 0x2047a0, 0x100, RW },
	};

	CHECK(vaddr_of(bfd, 4, 0x1000, true) == 0x1000, "ld.bfd: the code's mapping at offset 0x1000 is at 0x1000");
	CHECK(vaddr_of(bfd, 4, 0x0, false) == 0x0, "ld.bfd: the read-only mapping at offset 0 is at 0");
	CHECK(vaddr_of(bfd, 4, 0x2000, false) == 0x3000 - 0x1000, "ld.bfd: .rodata's mapping at 0x2000 is at 0x2000");
	CHECK(vaddr_of(bfd, 4, 0x2000 + 0xdb8, false) == 0x3db8, "ld.bfd: a data offset is at its address (0x3db8)");

	CHECK(vaddr_of(lld, 4, 0x0, true) == 0x1000,
	      "lld: the code's mapping at offset 0 (the page it shares) is at 0x1000, not 0 (%#" PRIx64 ")",
	      vaddr_of(lld, 4, 0x0, true));
	CHECK(vaddr_of(lld, 4, 0x0, false) == 0x0, "lld: the read-only mapping at offset 0 is at 0");
	CHECK(vaddr_of(lld, 4, 0x9a0, true) == 0x19a0 && vaddr_of(lld, 4, 0xa10, true) == 0x1a10,
	      "lld: a code offset (0xa10) is at its address (0x1a10)");
	CHECK(vaddr_of(lld, 4, 0x800, false) == 0x800, "lld: a read-only offset in the shared page (0x800) stays at 0x800");
	CHECK(vaddr_of(mold, 3, 0x0, true) == 0x1000 && vaddr_of(mold, 3, 0x900, true) == 0x1900,
	      "mold: the code's mapping at offset 0 is at 0x1000, its offset 0x900 at 0x1900");
	CHECK(vaddr_of(lld_exec, 3, 0x0, true) == 0x201000 && vaddr_of(lld_exec, 3, 0x0, false) == 0x200000,
	      "lld, not PIE: the code's page at 0x201000, the read-only one at 0x200000");
	CHECK(vaddr_of(lld_exec, 3, 0x2000, true) == 0x203000, "lld, not PIE: the code's second page at 0x203000");
}

static void test_lies(void)
{
	/* A mapping marked executable whose file has no executable segment (an old binary, READ_IMPLIES_EXEC):
	 * the segment holding the offset, whatever its flags. */
	static const struct elf_segment no_x[] = { { 0x0, 0x400000, 0x3000, R } };
	/* Segments that wrap around the end of the address space, or overlap. */
	static const struct elf_segment wrap[] = {
		{ UINT64_MAX - 0x10, 0x1000, 0x100, RX }, { 0x0, 0x0, UINT64_MAX, R }, { 0x2000, 0x2000, 0x1000, RX },
	};
	static const struct elf_segment overlap[] = { { 0x0, 0x0, 0x3000, RX }, { 0x1000, 0x9000, 0x1000, RX } };
	uint64_t v = 0;

	CHECK(vaddr_of(no_x, 1, 0x1000, true) == 0x401000, "an executable mapping of a file without PF_X: its segment");
	CHECK(elf_segments_vaddr(no_x, 1, 0x5000, true, &v) == -ENOENT, "an offset past every segment: -ENOENT");
	CHECK(elf_segments_vaddr(no_x, 0, 0x0, true, &v) == -ENOENT, "no segment at all: -ENOENT");
	CHECK(vaddr_of(wrap, 3, 0x2000, true) == 0x2000, "a segment wrapping around is passed over (no crash)");
	CHECK(elf_segments_vaddr(wrap, 3, UINT64_MAX - 8, true, &v) == -ENOENT,
	      "an offset only a wrapping segment would hold: -ENOENT");
	CHECK(vaddr_of(overlap, 2, 0x1000, true) == 0x1000, "overlapping segments: the first that holds it exactly");
}

/* The program each linker links: prints the address of spin (a function), then waits to be killed. */
static const char prog_src[] =
	"#include <stdio.h>\n"
	"#include <unistd.h>\n"
	"__attribute__((noinline)) int spin(int n) { volatile int s = 0; for (int i = 0; i < n; i++) s += i; return s; }\n"
	"int main(void) { printf(\"%p\\n\", (void *)spin); fflush(stdout); spin(10); pause(); return 0; }\n";

/* The address of symbol in the ELF file bin (from nm); 0 when not found. */
static uint64_t elf_address(const char *bin, const char *symbol)
{
	char cmd[2 * PATH_MAX], line[64];
	uint64_t v = 0;
	FILE *nm;

	snprintf(cmd, sizeof(cmd), "nm %s | awk '$3 == \"%s\" { print $1 }'", bin, symbol);
	nm = popen(cmd, "re");
	if (nm && fgets(line, sizeof(line), nm))
		v = strtoull(line, NULL, 16);
	if (nm)
		pclose(nm);
	return v;
}

/* Runs bin with its output to out; returns its pid (0: could not) and the address it prints in *addr. */
static pid_t start(const char *bin, const char *out, uint64_t *addr)
{
	char line[64];
	pid_t pid = fork();

	*addr = 0;
	if (pid == 0) {
		if (!freopen(out, "w", stdout))
			_exit(127);
		execl(bin, bin, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 250 && pid > 0 && !*addr; i++) {
		FILE *f = fopen(out, "re");

		if (f && fgets(line, sizeof(line), f))
			*addr = strtoull(line, NULL, 16);
		if (f)
			fclose(f);
		if (!*addr)
			usleep(20000);
	}
	return pid > 0 ? pid : 0;
}

/* Links prog with linker ld (a -fuse-ld= name), runs it, and checks that its executable mapping taken
 * through the segments puts spin where the program says it is. */
static void test_linker(const char *dir, const char *ld, bool pie)
{
	const char *how = pie ? "" : " (no PIE)";
	char bin[PATH_MAX], out[PATH_MAX + 8];
	struct elf_segment segs[ELF_MAX_SEGMENTS];
	struct procmap *maps = NULL;
	uint64_t spin_run = 0, spin_elf, vaddr = 0;
	struct elf_file *f = NULL;
	int nsegs = -1, found = 0, at = 0;
	size_t nmaps = 0;
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/prog-%s%s", dir, ld, pie ? "" : "-nopie");
	if (run_quiet("cc -O1 -fuse-ld=%s %s %s/prog.c -o %s 2> /dev/null", ld, pie ? "-pie -fPIE" : "-no-pie -fno-pie",
		      dir, bin)) {
		printf("# -fuse-ld=%s%s: not here, not tested\n", ld, how);
		return;
	}
	spin_elf = elf_address(bin, "spin");
	if (elf_file_open(bin, &f) == 0)
		nsegs = elf_file_segments(f, segs, ELF_MAX_SEGMENTS);
	elf_file_free(f);
	snprintf(out, sizeof(out), "%s.out", bin);
	pid = start(bin, out, &spin_run);
	CHECK(spin_elf && nsegs > 0 && pid > 0 && spin_run, "%s%s: linked (spin at %#" PRIx64 " in the file, %d PT_LOAD "
	      "segments) and running (spin at %#" PRIx64 ")", ld, how, spin_elf, nsegs, spin_run);
	if (pid > 0 && procmaps_read((uint32_t)pid, &maps, &nmaps) == 0) {
		for (size_t i = 0; i < nmaps; i++) {
			if (!maps[i].path || strcmp(maps[i].path, bin) || !maps[i].exec)
				continue;
			found++;
			if (nsegs <= 0 || elf_segments_vaddr(segs, (size_t)nsegs, maps[i].offset, true, &vaddr) ||
			    spin_run < maps[i].start || spin_run >= maps[i].end)
				continue;
			at++;
			CHECK(maps[i].start - vaddr + spin_elf == spin_run,
			      "%s%s: the code's mapping (%#" PRIx64 ", file offset %#" PRIx64 ") through its segment puts spin at "
			      "%#" PRIx64 ", where it runs", ld, how, maps[i].start, maps[i].offset,
			      maps[i].start - vaddr + spin_elf);
		}
		procmaps_free(maps, nmaps);
	}
	CHECK(found >= 1 && at == 1, "%s%s: spin runs in an executable mapping of it (%d of them)", ld, how, found);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

int main(void)
{
	char dir[] = "/tmp/test_segments.XXXXXX", path[PATH_MAX];
	static const char *const linkers[] = { "bfd", "gold", "lld", "mold" };

	test_layouts();
	test_lies();
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return CHECK_EXIT();
	}
	snprintf(path, sizeof(path), "%s/prog.c", dir);
	CHECK(write_file(path, prog_src, strlen(prog_src)) == 0, "the program's source written");
	for (size_t i = 0; i < sizeof(linkers) / sizeof(linkers[0]); i++) {
		test_linker(dir, linkers[i], true);
		test_linker(dir, linkers[i], false);
	}
	run("rm -rf %s", dir);
	return CHECK_EXIT();
}
