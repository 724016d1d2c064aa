/* test_dumprows.c - unwind rows from a jitdump file's unwinding information: a file written here as
 * CPython's -X perf_jit writes it (an UNWINDING_INFO record, then the CODE_LOAD of the trampoline it
 * describes), read whole and as it grows; rows placed at the code, newer code at an address replacing the
 * older's rows, and malformed records counted. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/types.h>

#include "check.h"
#include "unwind.h"
#include "unwind/dumprows.h"

#define ARENA 0x7f0000010000ULL

/* CPython 3.13's for an 11-byte trampoline (sub $8,%rsp; call *%rcx; add $8,%rsp; ret): a CIE, an FDE
 * (CFA rsp+8, after 4 bytes rsp+16, after 6 more rsp+8) whose pc_begin says the code is 16 bytes before
 * the .eh_frame, then the .eh_frame_hdr saying so too. */
static const uint8_t eh[] = {
	0x14, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x7a, 0x52, 0, 0x01, 0x78, 0x10, 0x01, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0, 0,
	0x14, 0, 0, 0, 0x1c, 0, 0, 0, 0xd0, 0xff, 0xff, 0xff, 0x0b, 0, 0, 0, 0, 0x44, 0x0e, 0x10, 0x46, 0x0e, 0x08, 0,
};
static const uint8_t hdr[] = { 0x01, 0x1b, 0x03, 0x3b, 0xcc, 0xff, 0xff, 0xff, 0x01, 0, 0, 0,
			       0xc0, 0xff, 0xff, 0xff, 0xe8, 0xff, 0xff, 0xff };
static const uint8_t code[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3 };

static uint8_t file[8192];
static size_t len;

static void put(const void *p, size_t n)
{
	memcpy(file + len, p, n);
	len += n;
}

static void head(uint32_t id, uint32_t size)
{
	uint64_t stamp = 1;

	put(&id, 4);
	put(&size, 4);
	put(&stamp, 8);
}

/* The file's header: the magic, version 1, 40 bytes, x86-64, pid 42, a timestamp, no flags. */
static void file_header(void)
{
	uint32_t magic = JITDUMP_MAGIC, version = 1, hsize = 40, mach = 62, pad = 0, pid = 42;
	uint64_t stamp = 7, flags = 0;

	put(&magic, 4);
	put(&version, 4);
	put(&hsize, 4);
	put(&mach, 4);
	put(&pad, 4);
	put(&pid, 4);
	put(&stamp, 8);
	put(&flags, 8);
}

/* An UNWINDING_INFO record: the .eh_frame, then the header (hdr_len bytes of it; 0: none). */
static void unwind_record(size_t hdr_len)
{
	uint64_t usize = sizeof(eh) + hdr_len, hsize = hdr_len, mapped = 80, pad = 0;
	size_t body = 24 + usize, padded = (body + 7) & ~(size_t)7;

	head(JITDUMP_UNWIND, (uint32_t)(16 + padded));
	put(&usize, 8);
	put(&hsize, 8);
	put(&mapped, 8);
	put(eh, sizeof(eh));
	put(hdr, hdr_len);
	put(&pad, padded - body);
}

static void load_record(uint64_t at, const char *name)
{
	uint32_t pid = 42, tid = 42;
	uint64_t size = sizeof(code), index = 1;
	size_t n = strlen(name) + 1;

	head(JITDUMP_LOAD, (uint32_t)(16 + 40 + n + sizeof(code)));
	put(&pid, 4);
	put(&tid, 4);
	put(&at, 8);
	put(&at, 8);
	put(&size, 8);
	put(&index, 8);
	put(name, n);
	put(code, sizeof(code));
}

/* The row covering pc (relative to the arena) of rows, or NULL. */
static const struct unwind_row *row_at(const struct unwind_row *rows, size_t n, uint32_t pc)
{
	const struct unwind_row *r = NULL;

	for (size_t i = 0; i < n && rows[i].pc <= pc; i++)
		r = &rows[i];
	return r;
}

static bool cfa_is(const struct unwind_row *rows, size_t n, uint32_t pc, int kind, int off)
{
	const struct unwind_row *r = row_at(rows, n, pc);

	return r && UNWIND_CFA_KIND(r->kinds) == kind && (kind != UNWIND_CFA_RSP || r->cfa_off == off);
}

int main(void)
{
	struct jitrows_stats rst = { 0 };
	struct dumprows_stats st = { 0 };
	struct unwind_row *rows = NULL;
	struct dumprows *d;
	size_t n = 0, half;
	int fd = memfd_create("test-dumprows", MFD_CLOEXEC), r;

	CHECK(fd >= 0, "a file to write");
	file_header();
	unwind_record(sizeof(hdr));
	load_record(ARENA + 0x110, "py::fib:x.py");
	half = len;
	unwind_record(0); /* no header: the .eh_frame taken to follow the code, 16-aligned */
	load_record(ARENA + 0x220, "py::g:x.py");
	load_record(ARENA + 0x330, "py::h:x.py"); /* no unwinding information before it: no rows */

	CHECK(dumprows_new(&d) == 0, "dumprows_new");
	CHECK(pwrite(fd, file, half + 20, 0) == (ssize_t)(half + 20), "the first records written, and a part");
	r = dumprows_read(d, fd, &rst, &st);
	CHECK(r == 1 && rst.objects == 1 && st.records == 1 && dumprows_offset(d) == half,
	      "read as far as its records are whole: rows for one trampoline (%d, %" PRIu64 " objects)", r,
	      (uint64_t)rst.objects);
	CHECK(dumprows_read(d, fd, &rst, &st) == 0, "nothing more: no rows added");
	CHECK(pwrite(fd, file, len, 0) == (ssize_t)len, "the rest written");
	r = dumprows_read(d, fd, &rst, &st);
	CHECK(r == 1 && rst.objects == 2 && st.records == 2 && st.bad == 0 && dumprows_offset(d) == len,
	      "read on: the second trampoline's rows (%d)", r);
	CHECK(jitrows_range(dumprows_rows(d), ARENA, ARENA + 0x10000, 1000, &rows, &n) == 0 && n >= 8,
	      "the arena's rows (%zu)", n);
	CHECK(cfa_is(rows, n, 0x110, UNWIND_CFA_RSP, 8) && cfa_is(rows, n, 0x114, UNWIND_CFA_RSP, 16) &&
	      cfa_is(rows, n, 0x115, UNWIND_CFA_RSP, 16) && cfa_is(rows, n, 0x11a, UNWIND_CFA_RSP, 8) &&
	      cfa_is(rows, n, 0x11b, UNWIND_CFA_NONE, 0),
	      "the first trampoline: CFA rsp+8, +16 from its call, +8 at its ret, nothing past it");
	CHECK(cfa_is(rows, n, 0x220, UNWIND_CFA_RSP, 8) && cfa_is(rows, n, 0x225, UNWIND_CFA_RSP, 16) &&
	      cfa_is(rows, n, 0x22b, UNWIND_CFA_NONE, 0), "the second, its .eh_frame placed without a header");
	CHECK(!cfa_is(rows, n, 0x335, UNWIND_CFA_RSP, 16), "the third, with no unwinding information: no rows");
	free(rows);

	/* Code loaded again where the first was (a file of its own): its rows replace the first's. */
	{
		struct dumprows *e;

		len = 0;
		file_header();
		unwind_record(sizeof(hdr));
		load_record(ARENA + 0x110, "py::fib:x.py");
		unwind_record(sizeof(hdr));
		load_record(ARENA + 0x118, "py::k:x.py");
		/* an unwinding record whose sizes lie */
		head(JITDUMP_UNWIND, 16 + 32);
		{
			uint64_t big = 1ULL << 40, zero = 0;

			put(&big, 8);
			put(&zero, 8);
			put(&zero, 8);
			put(&zero, 8);
		}
		CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, file, len, 0) == (ssize_t)len, "a file with code reloaded");
		memset(&rst, 0, sizeof(rst));
		memset(&st, 0, sizeof(st));
		CHECK(dumprows_new(&e) == 0, "dumprows_new");
		dumprows_read(e, fd, &rst, &st);
		CHECK(rst.objects == 2 && rst.objects_replaced == 1 && st.bad == 1 && st.records == 3,
		      "the older code's rows replaced (%" PRIu64 "), the lying record counted bad (%" PRIu64 ")",
		      (uint64_t)rst.objects_replaced, (uint64_t)st.bad);
		CHECK(jitrows_range(dumprows_rows(e), ARENA, ARENA + 0x10000, 1000, &rows, &n) == 0 &&
		      cfa_is(rows, n, 0x118, UNWIND_CFA_RSP, 8) && cfa_is(rows, n, 0x11d, UNWIND_CFA_RSP, 16) &&
		      !cfa_is(rows, n, 0x110, UNWIND_CFA_RSP, 8), "the newer code's rows alone");
		free(rows);
		dumprows_free(e);
	}
	CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, "not a jitdump file at all, no, not at all", 41, 0) == 41, "junk");
	{
		struct dumprows *e;

		memset(&st, 0, sizeof(st));
		CHECK(dumprows_new(&e) == 0 && dumprows_read(e, fd, &rst, &st) == -EINVAL && st.file.files_bad == 1 &&
		      !dumprows_rows(e), "not a jitdump file: -EINVAL, counted, no rows");
		dumprows_free(e);
	}
	dumprows_free(d);
	close(fd);
	return CHECK_EXIT();
}
