/* symbolizer.c - names user and kernel frames: the facade over the process, binary and kallsyms caches. */
#include "symbolize/symbolizer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/bincache.h"
#include "symbolize/gdbjit.h"
#include "symbolize/jitdump.h"
#include "util/hash.h"
#include "symbolize/kallsyms.h"
#include "symbolize/perfmap.h"
#include "symbolize/proccache.h"

#define DEFAULT_KALLSYMS "/proc/kallsyms"
#define DEFAULT_MAX_BINARIES 512
#define DEFAULT_MAX_PROCESSES 4096
#define UNKNOWN_FRAME "[unknown]"
#define KALLSYMS_RELOAD_FLUSHES 30 /* kallsyms is re-read at most this often, and only after a miss */

struct symbolizer {
	struct kallsyms *ksyms; /* NULL: no kernel symbols */
	char *kallsyms_path;
	unsigned flushes_since_kload;
	uint64_t modules_sig;         /* hash of /proc/modules when kallsyms was read */
	char *modules_path;
	uint64_t kmisses_since_kload; /* kernel frames unnamed since kallsyms was read (modules, BPF loaded later) */
	struct proccache *procs;
	struct perfmap_cache *jit;    /* perf maps (JIT symbols) of the processes that need them */
	struct gdbjit_cache *gdbjit;  /* JIT objects registered with the GDB JIT interface (LLVM's MCJIT) */
	struct jitdump_cache *jitdump; /* jitdump files (jit-PID.dump) the processes map */
	uint64_t sample_mono;         /* symbolizer_set_time's */
	struct bincache *bins;
	uint64_t user_hits, user_misses, kernel_hits, kernel_misses;
	uint64_t snapshots;
	uint64_t jit_hits, gdbjit_hits, jitdump_hits, jitdump_late;
};

/* A hash of the loaded modules' names and load addresses from /proc/modules (reference counts, which
 * change all the time, left out); 0 when unreadable. */
static uint64_t modules_signature(const char *path)
{
	char line[512], name[128], addr[64];
	uint64_t h = HASH_FNV_OFFSET;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		const char *last = strrchr(line, ' ');

		if (sscanf(line, "%127s", name) != 1 || !last || sscanf(last, "%63s", addr) != 1)
			continue;
		h = hash_bytes(h, name, strlen(name));
		h = hash_bytes(h, addr, strlen(addr));
	}
	fclose(f);
	return h;
}

/* Loads kallsyms: an explicit path must load; the default one may be missing (kernel frames unnamed). */
static int load_kernel_symbols(const struct symbolizer_opts *opts, struct symbolizer *s)
{
	int err;

	s->kallsyms_path = strdup(opts->kallsyms_path ? opts->kallsyms_path : DEFAULT_KALLSYMS);
	if (!s->kallsyms_path)
		return -ENOMEM;
	s->modules_path = strdup(opts->modules_path ? opts->modules_path : "/proc/modules");
	if (!s->modules_path)
		return -ENOMEM;
	s->modules_sig = modules_signature(s->modules_path);
	err = kallsyms_load(s->kallsyms_path, &s->ksyms);
	if (err && err != -ENOMEM && !opts->kallsyms_path)
		return 0;
	return err;
}

/* Re-reads kallsyms when modules were loaded or unloaded, and after misses (BPF programs, for one)
 * at most every KALLSYMS_RELOAD_FLUSHES flushes; keeps the old table when that fails. */
static void maybe_reload_kernel_symbols(struct symbolizer *s)
{
	uint64_t sig = modules_signature(s->modules_path);
	struct kallsyms *k;

	if (s->flushes_since_kload < KALLSYMS_RELOAD_FLUSHES)
		s->flushes_since_kload++;
	if (sig != s->modules_sig) {
		s->modules_sig = sig;
		s->kmisses_since_kload = 1; /* reload now */
		s->flushes_since_kload = KALLSYMS_RELOAD_FLUSHES;
	}
	if (s->flushes_since_kload < KALLSYMS_RELOAD_FLUSHES || s->kmisses_since_kload == 0)
		return;
	s->flushes_since_kload = 0;
	s->kmisses_since_kload = 0;
	if (kallsyms_load(s->kallsyms_path, &k) < 0)
		return;
	kallsyms_free(s->ksyms);
	s->ksyms = k;
}

int symbolizer_new(const struct symbolizer_opts *opts, struct symbolizer **out)
{
	const struct symbolizer_opts none = { 0 };
	struct perfmap_cache_opts po = { 0 };
	struct bincache_opts bo = { 0 };
	struct symbolizer *s;
	int err;

	if (!opts)
		opts = &none;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	bo.debug_dir = opts->debug_dir;
	bo.max_bytes = opts->max_symbol_bytes;
	bo.inlines = opts->inline_frames;
	bo.fetch = opts->fetch;
	bo.max = opts->max_binaries ? opts->max_binaries : DEFAULT_MAX_BINARIES;
	err = bincache_new(&bo, &s->bins);
	if (err)
		goto fail;
	err = proccache_new(opts->max_processes ? opts->max_processes : DEFAULT_MAX_PROCESSES, &s->procs);
	if (err)
		goto fail;
	po.max_processes = opts->max_processes ? opts->max_processes : DEFAULT_MAX_PROCESSES;
	err = perfmap_cache_new(&po, &s->jit);
	if (err)
		goto fail;
	err = gdbjit_cache_new(po.max_processes, &s->gdbjit);
	if (err)
		goto fail;
	err = jitdump_cache_new(po.max_processes, &s->jitdump);
	if (err)
		goto fail;
	err = load_kernel_symbols(opts, s);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	symbolizer_free(s);
	return err;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	kallsyms_free(s->ksyms);
	free(s->kallsyms_path);
	free(s->modules_path);
	proccache_free(s->procs);
	perfmap_cache_free(s->jit);
	gdbjit_cache_free(s->gdbjit);
	jitdump_cache_free(s->jitdump);
	bincache_free(s->bins);
	free(s);
}

void symbolizer_keep(struct symbolizer *s, uint32_t pid)
{
	proccache_keep(s->procs, pid);
	perfmap_cache_keep(s->jit, pid);
	gdbjit_cache_keep(s->gdbjit, pid);
	jitdump_cache_keep(s->jitdump, pid);
}

void symbolizer_set_time(struct symbolizer *s, uint64_t mono_ns)
{
	s->sample_mono = mono_ns;
}

bool symbolizer_names_by_time(struct symbolizer *s, uint32_t pid, uint64_t mono_ns)
{
	const struct procmap *maps;
	size_t n;

	if (!jitdump_cache_has(s->jitdump, pid))
		return false;
	maps = proccache_maps(s->procs, pid, &n);
	return jitdump_cache_by_time(s->jitdump, pid, maps, n, mono_ns);
}

void symbolizer_begin_flush(struct symbolizer *s)
{
	proccache_begin_flush(s->procs);
	perfmap_cache_begin_flush(s->jit);
	gdbjit_cache_begin_flush(s->gdbjit);
	jitdump_cache_begin_flush(s->jitdump);
	bincache_begin_flush(s->bins);
	maybe_reload_kernel_symbols(s);
}

/* A byte safe in a folded line: ';' becomes ':', control characters become '?'. */
static char clean(unsigned char c)
{
	if (c == ';')
		return ':';
	if (c < 0x20 || c == 0x7f)
		return '?';
	return (char)c;
}

/* Cleans buf in place. */
static void sanitize(char *buf)
{
	for (; *buf; buf++)
		*buf = clean((unsigned char)*buf);
}

/* Copies name into buf (truncated, cleaned) and returns kind. */
static int put_name(char *buf, size_t len, const char *name, int kind)
{
	frame_copy_clean(buf, len, name);
	return kind;
}

size_t frame_copy_clean(char *dst, size_t cap, const char *src)
{
	size_t i;

	if (cap == 0)
		return 0;
	for (i = 0; i + 1 < cap && src[i]; i++)
		dst[i] = clean((unsigned char)src[i]);
	dst[i] = '\0';
	return i;
}

size_t frame_copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
	return n;
}

/* Writes "module+0xOFF" into buf; returns FRAME_UNKNOWN. */
static int put_offset(char *buf, size_t len, const char *module, uint64_t off)
{
	if (len == 0)
		return FRAME_UNKNOWN;
	snprintf(buf, len, "%s+0x%" PRIx64, module, off);
	sanitize(buf);
	return FRAME_UNKNOWN;
}

/* Names addr of pid from its perf map, else from the jitdump file it maps, else from the objects its JIT
 * registered with the GDB JIT interface: FRAME_JIT, origin "[jit]" without a build-id. Returns -ENOENT
 * when none holds addr. */
static int name_jit(struct symbolizer *s, uint32_t pid, uint64_t addr, char *buf, size_t len,
		    struct frame_origin *origin)
{
	const char *name = perfmap_cache_find(s->jit, pid, addr);
	const struct procmap *maps;
	size_t n;

	if (!name) {
		maps = proccache_maps(s->procs, pid, &n); /* read this flush already: the caller looked addr up */
		name = jitdump_cache_find(s->jitdump, pid, maps, n, addr, s->sample_mono);
		s->jitdump_hits += name != NULL;
		if (!name) {
			name = gdbjit_cache_find(s->gdbjit, pid, maps, n, addr);
			s->gdbjit_hits += name != NULL;
		}
	}
	if (!name)
		return -ENOENT;
	if (origin) {
		frame_copy_str(origin->module, sizeof(origin->module), "[jit]");
		origin->build_id[0] = '\0';
	}
	return put_name(buf, len, name, FRAME_JIT);
}

/* JIT code none of the above named, of a process that maps a jitdump file: its runtime writes that file
 * through a buffer (V8's and CPython's hold 2 MiB), so the record of code it made lately may come later
 * (at the latest when it exits). Named "jit-PID.dump+0xADDR" with the file as module and its header's
 * timestamp as build-id, which the store's namer (latenames.c) names when read. -ENOENT: no such file. */
static int name_jit_late(struct symbolizer *s, uint32_t pid, uint64_t addr, char *buf, size_t len,
			 struct frame_origin *origin)
{
	char path[sizeof(origin->module)];
	uint64_t stamp;

	if (jitdump_cache_file(s->jitdump, pid, path, sizeof(path), &stamp) < 0)
		return -ENOENT;
	if (origin) {
		frame_copy_str(origin->module, sizeof(origin->module), path);
		snprintf(origin->build_id, sizeof(origin->build_id), "%016" PRIx64, stamp);
	}
	s->jitdump_late++;
	return put_offset(buf, len, strrchr(path, '/') + 1, addr);
}

/* Copies the functions inlined at vaddr of b into origin, cleaned like every frame name. */
static void fill_inlined(const struct binary *b, uint64_t vaddr, struct frame_origin *origin)
{
	const char *names[SYMBOLIZER_MAX_INLINED];
	int n = binary_inlines(b, vaddr, names, SYMBOLIZER_MAX_INLINED);

	for (int i = 0; i < n; i++)
		put_name(origin->inlined[i], sizeof(origin->inlined[i]), names[i], FRAME_USER);
	origin->ninlined = n;
}

/* Names addr inside mapping m of pid: its symbol, else its perf-map symbol, else "basename+0xVADDR"
 * ("[unknown]" for memory with no file). */
static int name_in_mapping(struct symbolizer *s, uint32_t pid, const struct procmap *m, uint64_t addr,
			   char *buf, size_t len, struct frame_origin *origin)
{
	uint64_t vaddr = addr - m->start + m->offset; /* the file offset until the segments say otherwise */
	const struct binary *b;
	struct bin_source src;
	const char *name;
	int kind;

	if (origin && m->path)
		frame_copy_str(origin->module, sizeof(origin->module), m->path);
	if (!m->path || m->path[0] != '/' || m->inode == 0) {
		if (m->path && (strcmp(m->path, "[vdso]") == 0 || strcmp(m->path, "[vsyscall]") == 0))
			return put_offset(buf, len, m->path, addr - m->start);
		kind = name_jit(s, pid, addr, buf, len, origin); /* anonymous: JIT code, ... */
		if (kind < 0)
			kind = name_jit_late(s, pid, addr, buf, len, origin);
		return kind >= 0 ? kind : put_name(buf, len, UNKNOWN_FRAME, FRAME_UNKNOWN);
	}
	src = bin_source_of(pid, m);
	b = bincache_get(s->bins, &src);
	if (b && origin)
		frame_copy_str(origin->build_id, sizeof(origin->build_id), binary_build_id(b));
	if (b && binary_vaddr(b, vaddr, m->exec, &vaddr) == 0) {
		name = binary_symbol(b, vaddr);
		if (name && origin)
			fill_inlined(b, vaddr, origin);
		if (name)
			return put_name(buf, len, name, FRAME_USER);
	}
	kind = name_jit(s, pid, addr, buf, len, origin); /* JIT code in a file: a memfd, a non-ELF file */
	return kind >= 0 ? kind : put_offset(buf, len, strrchr(m->path, '/') + 1, vaddr);
}

int symbolizer_user(struct symbolizer *s, uint32_t pid, uint64_t addr, bool is_return_addr, char *buf,
		    size_t len)
{
	return symbolizer_user_frame(s, pid, addr, is_return_addr, buf, len, NULL);
}

int symbolizer_user_frame(struct symbolizer *s, uint32_t pid, uint64_t addr, bool is_return_addr,
			  char *buf, size_t len, struct frame_origin *origin)
{
	const struct procmap *m;
	int kind;

	if (origin)
		origin->module[0] = origin->build_id[0] = '\0', origin->ninlined = 0;
	if (is_return_addr && addr > 0)
		addr--;
	m = proccache_find(s->procs, pid, addr);
	if (m)
		kind = name_in_mapping(s, pid, m, addr, buf, len, origin);
	else if ((kind = name_jit(s, pid, addr, buf, len, origin)) < 0 &&
		 (kind = name_jit_late(s, pid, addr, buf, len, origin)) < 0)
		/* In no mapping we know: the process mapped it after we last read its maps and is gone
		 * (JIT code spaces grow so); its perf map may still know it. */
		kind = put_name(buf, len, UNKNOWN_FRAME, FRAME_UNKNOWN);
	if (kind == FRAME_USER || kind == FRAME_JIT)
		s->user_hits++;
	else
		s->user_misses++;
	if (kind == FRAME_JIT)
		s->jit_hits++;
	return kind;
}

int symbolizer_kernel(struct symbolizer *s, uint64_t addr, char *buf, size_t len)
{
	const char *name = s->ksyms ? kallsyms_lookup(s->ksyms, addr) : NULL;

	if (!name) {
		s->kernel_misses++;
		s->kmisses_since_kload++;
		return put_name(buf, len, UNKNOWN_FRAME, FRAME_UNKNOWN);
	}
	s->kernel_hits++;
	return put_name(buf, len, name, FRAME_KERNEL);
}

void symbolizer_get_stats(const struct symbolizer *s, struct symbolizer_stats *out)
{
	struct bincache_stats bs;
	struct perfmap_stats ps;

	bincache_get_stats(s->bins, &bs);
	perfmap_cache_get_stats(s->jit, &ps);
	memset(out, 0, sizeof(*out));
	out->user_hits = s->user_hits;
	out->user_misses = s->user_misses;
	out->kernel_hits = s->kernel_hits;
	out->kernel_misses = s->kernel_misses;
	out->binaries_cached = bs.cached;
	out->symbol_bytes = bs.bytes;
	out->binaries_evicted = bs.evicted;
	out->binaries_over_bound = bs.over_bound;
	out->debug_files_found = bs.debug_files_found;
	out->symbols_dropped = bs.symbols_dropped;
	out->processes_cached = proccache_count(s->procs);
	proccache_get_stats(s->procs, &out->maps_reads);
	out->jit_hits = s->jit_hits;
	out->perfmap_files_loaded = ps.files_loaded;
	out->perfmap_lines_skipped = ps.lines_skipped;
	out->perfmap_files_rejected = ps.files_rejected;
	out->perfmap_names_truncated = ps.names_truncated;
	out->perfmap_entries_dropped = ps.entries_dropped;
	out->perfmap_symbols = ps.symbols;
	out->gdbjit_hits = s->gdbjit_hits;
	gdbjit_cache_get_stats(s->gdbjit, &out->gdbjit);
	out->jitdump_hits = s->jitdump_hits;
	out->jitdump_late = s->jitdump_late;
	jitdump_cache_get_stats(s->jitdump, &out->jitdump);
}

const struct procmap *symbolizer_maps(struct symbolizer *s, uint32_t pid, size_t *n)
{
	return proccache_maps(s->procs, pid, n);
}

bool symbolizer_maps_changed(const struct symbolizer *s)
{
	return proccache_changed(s->procs);
}

int symbolizer_snapshot(struct symbolizer *s, uint32_t pid, unsigned flags)
{
	size_t n;
	const struct procmap *maps = proccache_snapshot(s->procs, pid, flags, &n);
	bool jit_read = false;

	for (size_t i = 0; i < n; i++) {
		const struct procmap *m = &maps[i];
		struct bin_source src = bin_source_of(pid, m);

		if (m->path && m->path[0] == '/' && m->inode && jitdump_path(m->path)) {
			jitdump_cache_find(s->jitdump, pid, maps, n, 0, 0); /* read while the process lives */
		} else if (m->path && m->path[0] == '/' && m->inode) {
			bincache_get(s->bins, &src);
		} else if (!jit_read && (!m->path || !strncmp(m->path, "[anon:", 6))) {
			/* JIT code (anonymous, not the kernel's [vdso]): read the perf map while its owner can
			 * be checked. A process without any is not looked at (three files of /proc each). */
			perfmap_cache_find(s->jit, pid, m->start);
			jit_read = true;
		}
	}
	s->snapshots++;
	return n ? 0 : -ESRCH;
}
