/* jitdumpfile.h - reading a jitdump file (perf's format for JITs, jit-PID.dump) record by record, on from
 * where the last read stopped: the file grows while its process runs, and only whole records are read.
 * Shared by the names read from it (symbolize/jitdump.c) and the unwind rows (unwind/dumprows.c). The
 * format (perf's tools/perf/util/jitdump.h): a header { u32 magic, version, total_size, elf_mach, pad1,
 * pid; u64 timestamp, flags }, then records, each { u32 id, total_size; u64 timestamp } and a body. Fields
 * are in the writer's byte order: the magic read byte-swapped means another order, which is not read. Its
 * contents are outside data: every size is bounded and checked, and what is malformed is counted. */
#ifndef FLAMED_ELF_JITDUMPFILE_H
#define FLAMED_ELF_JITDUMPFILE_H

#include <stdbool.h>
#include <stdint.h>

#define JITDUMP_MAGIC 0x4A695444u          /* "JiTD" as a little-endian u32 */
#define JITDUMP_MAX_FILE (512ull << 20)     /* bytes of a file read; the rest is left, counted */
#define JITDUMP_READ_BUDGET (64u << 20)     /* bytes read per look at a file */
#define JITDUMP_MAX_PEEK (1u << 20)         /* bytes of one record's body a reader may look at */

/* Record ids. */
enum { JITDUMP_LOAD = 0, JITDUMP_MOVE = 1, JITDUMP_DEBUG = 2, JITDUMP_CLOSE = 3, JITDUMP_UNWIND = 4 };

/* Field offsets in the bodies of CODE_LOAD { u32 pid, tid; u64 vma, code_addr, code_size, code_index;
 * char name[]; code bytes } and CODE_MOVE { u32 pid, tid; u64 vma, old_code_addr, new_code_addr,
 * code_size, code_index }, and UNWINDING_INFO { u64 unwinding_size, eh_frame_hdr_size, mapped_size;
 * unwinding data: .eh_frame then .eh_frame_hdr, eh_frame_hdr_size bytes }. */
#define JITDUMP_LOAD_FIXED 40
#define JITDUMP_MOVE_FIXED 48
#define JITDUMP_UNWIND_FIXED 24

struct jitdump_file_stats {
	uint64_t files_read; /* files read from their start */
	uint64_t files_bad;  /* not a jitdump file (magic, version, header size), or another byte order */
	uint64_t records;    /* records read */
	uint64_t records_bad; /* a record's size below its head's: the file is read no further */
	uint64_t files_cut;  /* files past JITDUMP_MAX_FILE, or a record whose size runs past it */
};

#define JITDUMP_FLAGS_ARCH_TIMESTAMP 1ull /* header flag: timestamps are the CPU's (TSC), not CLOCK_MONOTONIC */

/* A file being read. Zeroed: nothing read yet. */
struct jitdump_file {
	uint32_t pid;     /* the header's */
	uint64_t stamp;
	uint64_t flags;   /* the header's: JITDUMP_FLAGS_* */
	uint64_t offset;  /* of the next record; 0: the header is still to read */
	bool bad, closed; /* nothing more is read */
	unsigned char *win;
	uint64_t win_off, win_len;
};

/* How many bytes of the body (body bytes long) of a record of kind id the reader wants to look at (at
 * most JITDUMP_MAX_PEEK; 0: none). */
typedef uint64_t (*jitdump_peek_fn)(uint32_t id, uint64_t body);

/* One record: its id, timestamp and body size, and the first have bytes of the body (as peek asked) at
 * b. Returns 0 to go on, or an error that stops the read (-ENOMEM). */
typedef int (*jitdump_record_fn)(void *ctx, uint32_t id, uint64_t stamp, const unsigned char *b, uint64_t have,
				 uint64_t body);

/* Reads the whole records of fd from where the last read stopped (at most JITDUMP_READ_BUDGET bytes),
 * calling fn for each; a record not yet whole is left for the next read; a CLOSE record ends the file.
 * Returns 0, -EINVAL (not a jitdump file, or a record without a size: nothing more is read from it),
 * fn's error, or -errno of fstat or pread (-EIO: shorter than it said); counted in *st. */
int jitdump_file_read(struct jitdump_file *f, int fd, jitdump_peek_fn peek, jitdump_record_fn fn, void *ctx,
		      struct jitdump_file_stats *st);

/* Whether path's file name is jit-DIGITS.dump, as runtimes name their jitdump files. */
bool jitdump_path(const char *path);

/* Frees what f holds (its window), leaving it as if zeroed. */
void jitdump_file_reset(struct jitdump_file *f);

uint32_t jitdump_u32(const unsigned char *p);
uint64_t jitdump_u64(const unsigned char *p);

#endif
