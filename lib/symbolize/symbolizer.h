/* symbolizer.h - names user frames (/proc/PID/maps + ELF symbols, separate debug files) and kernel frames (kallsyms). */
#ifndef FLAMED_SYMBOLIZER_H
#define FLAMED_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/procmaps.h"
#include "symbolize/gdbjit.h"
#include "symbolize/jitdump.h"
#include "symbolize/proccache.h"

struct debugfetch;

/* A symbolizer is not thread-safe: one thread (the flush loop) uses it. Files: procmaps.c (/proc/PID/maps),
 * proccache.c (per-process tables), elf_file.c + elf_symbols.c (ELF reading), debuginfo.c (separate debug
 * files), bincache.c (parsed binaries), kallsyms.c (kernel symbols), perfmap.c (JIT perf maps). */
struct symbolizer;

struct symbolizer_opts {
	const char *debug_dir;     /* root of separate debug files; NULL: "/usr/lib/debug" */
	const char *kallsyms_path; /* NULL: "/proc/kallsyms" */
	const char *modules_path;  /* NULL: "/proc/modules"; kallsyms is re-read when it changes */
	unsigned max_binaries;     /* parsed ELF files kept (LRU); 0: 512 */
	unsigned max_processes;    /* process mapping tables (and perf-map tables) kept; 0: 4096 */
	size_t max_symbol_bytes;   /* memory the cached binaries' symbols may hold (LRU); 0: no bound */
	bool inline_frames;        /* name inlined functions from DWARF (opens each binary's debug info) */
	struct debugfetch *fetch;  /* NULL, or where debug files missing from disk are fetched (bincache.h) */
};

enum frame_kind {
	FRAME_UNKNOWN = 0, /* "[unknown]" or "module+0xOFF" */
	FRAME_USER,        /* named from an ELF symbol */
	FRAME_KERNEL,      /* named from kallsyms */
	FRAME_JIT,         /* JIT code named from the process's perf map (/tmp/perf-PID.map), its jitdump
			    * file, or what its JIT registered with the GDB JIT interface */
};

struct symbolizer_stats {
	uint64_t user_hits, user_misses;     /* user frames named / not named */
	uint64_t kernel_hits, kernel_misses; /* kernel frames named / not named */
	uint64_t binaries_cached, binaries_evicted, debug_files_found;
	uint64_t binaries_over_bound; /* loaded past max_symbol_bytes: every cached binary in use this flush */
	uint64_t symbols_dropped; /* function symbols past ELF_MAX_SYMBOLS in one binary, not kept */
	uint64_t processes_cached;
	struct proccache_stats maps_reads; /* /proc/PID/maps opened, read by a held file, held now */
	uint64_t symbol_bytes;       /* memory held by cached symbol tables */
	uint64_t jit_hits;           /* user frames of JIT code named (FRAME_JIT; also in user_hits) */
	uint64_t gdbjit_hits;        /* of which from the GDB JIT interface's objects */
	struct gdbjit_stats gdbjit;
	uint64_t jitdump_hits;       /* of which from jitdump files */
	uint64_t jitdump_late;       /* JIT frames left "jit-PID.dump+0xADDR": their record not written yet */
	struct jitdump_stats jitdump;
	uint64_t perfmap_files_loaded;   /* perf maps read from their start */
	uint64_t perfmap_lines_skipped;  /* malformed perf-map lines */
	uint64_t perfmap_files_rejected; /* perf maps ignored: not the process's user's, writable by others, ... */
	uint64_t perfmap_names_truncated;  /* perf-map names cut to 1024 bytes */
	uint64_t perfmap_entries_dropped;  /* perf-map lines past 1,000,000 symbols in one process */
	uint64_t perfmap_symbols;          /* perf-map symbols held */
};

/* Creates a symbolizer; loads kallsyms (a kernel that hides addresses leaves kernel frames unnamed).
 * opts may be NULL (all defaults). An explicit kallsyms_path that cannot be read fails (-ENOENT, ...);
 * the default /proc/kallsyms missing only leaves kernel frames unnamed.
 * Returns 0 or -errno; *out is set only on success. */
int symbolizer_new(const struct symbolizer_opts *opts, struct symbolizer **out);

/* Frees everything; NULL is safe. */
void symbolizer_free(struct symbolizer *s);

/* Marks the start of a flush: each process's mappings are re-read, and its perf map checked for new
 * lines, at its next lookup (kept when the process is gone), and processes not looked up for several
 * flushes (6) are dropped. Binaries that failed to load are tried again, and after kernel misses
 * kallsyms is re-read (at most every 30 flushes, ~70 ms) so modules and BPF programs loaded later
 * get named. */
void symbolizer_begin_flush(struct symbolizer *s);

/* The time the frames named next were sampled at (CLOCK_MONOTONIC ns; 0: now): JIT code named from a
 * jitdump file is named as it was then, where its records tell code freed and its memory reused apart. */
void symbolizer_set_time(struct symbolizer *s, uint64_t mono_ns);

/* Whether pid's frames sampled at mono_ns may be named otherwise than those of another time: its JIT
 * code is named from a jitdump file, and code was loaded over other code since mono_ns. */
bool symbolizer_names_by_time(struct symbolizer *s, uint32_t pid, uint64_t mono_ns);

/* Names user address addr of process pid into buf (always NUL-terminated, truncated to len).
 * is_return_addr: addr is a return address (every frame but the sampled one), looked up at addr-1.
 * The name has no ';' and no control characters: "func", "libfoo.so+0x1a2b" (mapping known, no
 * symbol; the offset is the ELF virtual address) or "[unknown]". Returns an enum frame_kind.
 * Names are raw symbol names (C++ stays mangled), without a version suffix ("@@GLIBC_2.17").
 * "[vdso]+0xOFF" names vDSO frames (FRAME_UNKNOWN). An address in a mapping with no file (anonymous,
 * "[anon:...]", "//anon": JIT code), or in a file where no ELF symbol holds it, is named from the
 * process's perf map when one covers it (FRAME_JIT, the name without a "_[j]" suffix), else "[unknown]"
 * or "module+0xOFF". The perf map is checked (owner, not writable by others) and re-read when it grew
 * at the first such lookup of the process in each flush; see perfmap.h.
 * The first lookup of a binary opens and parses it (and may CRC a separate debug file): slow once. */
int symbolizer_user(struct symbolizer *s, uint32_t pid, uint64_t addr, bool is_return_addr,
		    char *buf, size_t len);

#define SYMBOLIZER_MAX_INLINED 8 /* inlined frames kept per address (the innermost) */

/* Where a frame's code lives, for pprof mappings; and the functions inlined there. */
struct frame_origin {
	int ninlined;       /* with opts.inline_frames: functions inlined at the address, outermost first */
	char inlined[SYMBOLIZER_MAX_INLINED][128];
	char module[1024];  /* the binary's path as the process sees it, "[kernel]", "[vdso]", "[jit]", or "" */
	char build_id[129]; /* lowercase hex, or "" */
};

/* Copies the string src into dst of cap (> 0) bytes, cut to fit (a frame's name or origin, without
 * the cost of printf); returns the length copied. */
size_t frame_copy_str(char *dst, size_t cap, const char *src);

/* Copies the name src into dst of cap bytes (NUL-terminated, cut to fit), cleaned as every frame name is
 * (';' to ':', control characters to '?'); returns the length copied (0 when cap is 0). */
size_t frame_copy_clean(char *dst, size_t cap, const char *src);

/* symbolizer_user(), also filling origin (when not NULL) with the binary the address is in. */
int symbolizer_user_frame(struct symbolizer *s, uint32_t pid, uint64_t addr, bool is_return_addr,
			  char *buf, size_t len, struct frame_origin *origin);

/* Names kernel address addr into buf ("func", without the "_[k]" suffix, or "[unknown]").
 * Returns FRAME_KERNEL or FRAME_UNKNOWN. */
int symbolizer_kernel(struct symbolizer *s, uint64_t addr, char *buf, size_t len);

/* Captures what naming pid's frames needs while the process lives: its mappings now and the binaries
 * behind them (opened through /proc/PID/map_files, so deleted files and other mount namespaces
 * work), and the jitdump file it maps. Call it at a process's first sample; a process that exits before
 * the flush is still named. flags: how /proc/PID/maps is read (PROCCACHE_FRESH at an image's first
 * sample, PROCCACHE_KEEP_FD where it is read again shortly, PROCCACHE_CLOSE_FD at the last of those).
 * Returns 0 or -ESRCH (gone already, or no executable mapping). */
int symbolizer_snapshot(struct symbolizer *s, uint32_t pid, unsigned flags);

/* Whether the last symbolizer_snapshot found pid's mappings other than its snapshot before (true at its
 * first): a read again that found them unchanged has nothing new for the unwinder or the runtimes. */
bool symbolizer_maps_changed(const struct symbolizer *s);

/* Keeps what naming pid's frames needs (its mappings read at its snapshot, its JIT records) from being
 * dropped as idle while its samples wait elsewhere (deferred for their unwind tables): call it before
 * each flush's symbolizer_begin_flush for every such pid. A pid not known is ignored. */
void symbolizer_keep(struct symbolizer *s, uint32_t pid);

/* pid's executable mappings as the symbolizer knows them (read at its snapshot or this flush's first
 * lookup): *n of them, NULL when none. Valid until the next call on s. */
const struct procmap *symbolizer_maps(struct symbolizer *s, uint32_t pid, size_t *n);

/* Copies the counters. */
void symbolizer_get_stats(const struct symbolizer *s, struct symbolizer_stats *out);

#endif
