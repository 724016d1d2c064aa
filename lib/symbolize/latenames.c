/* latenames.c - a few debug files' symbol tables by build-id, kept for the answers that read frames stored
 * before those files were there (see latenames.h). */
#include "symbolize/latenames.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "elf/debugfetch.h"
#include "elf/elf_file.h"
#include "symbolize/elf_symbols.h"
#include "symbolize/jitdump.h"
#include "symbolize/symbolizer.h"

#define ID_HEX_MAX (2 * ELF_BUILD_ID_MAX)
#define RECHECK_S 60 /* a build-id with no debug file is looked for again after this */
#define MAX_DUMPS 8  /* jitdump files held */
#define DUMP_READS 8 /* reads of JITDUMP_READ_BUDGET bytes per look at a file: JITDUMP_MAX_FILE */

/* One build-id looked for: its symbol table, or none found (when, and at which arrival count). */
struct late_file {
	char id[ID_HEX_MAX + 1];
	struct elf_symtab *syms;
	int64_t checked;
	uint64_t arrivals;
	uint64_t used;
};

/* One jitdump file: its path and header timestamp (hex), what was read of it, when. */
struct late_dump {
	char *path;
	char id[17];
	struct jitdump_table *t;
	int64_t read_at;
	uint64_t used;
};

struct latenames {
	pthread_mutex_t lock;
	struct late_dump dumps[MAX_DUMPS];
	unsigned ndumps;
	struct jitdump_stats jst;
	char *debug_dir;
	char *cache_dir; /* NULL: none */
	struct debugfetch *fetch;
	struct late_file *files;
	unsigned nfiles, max_files;
	size_t bytes, max_bytes;
	uint64_t tick;
	struct latenames_stats st;
};

static int64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

int latenames_new(const struct latenames_opts *opts, struct latenames **out)
{
	struct latenames *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->max_files = opts->max_files ? opts->max_files : 16;
	l->max_bytes = opts->max_bytes ? opts->max_bytes : (size_t)256 << 20;
	l->fetch = opts->fetch;
	l->debug_dir = strdup(opts->debug_dir ? opts->debug_dir : "/usr/lib/debug");
	l->files = calloc(l->max_files, sizeof(*l->files));
	l->cache_dir = opts->cache_dir ? strdup(opts->cache_dir) : NULL;
	if (!l->debug_dir || !l->files || (opts->cache_dir && !l->cache_dir)) {
		free(l->cache_dir);
		free(l->debug_dir);
		free(l->files);
		free(l);
		return -ENOMEM;
	}
	pthread_mutex_init(&l->lock, NULL);
	*out = l;
	return 0;
}

void latenames_free(struct latenames *l)
{
	if (!l)
		return;
	for (unsigned i = 0; i < l->nfiles; i++)
		elf_symtab_free(l->files[i].syms);
	for (unsigned i = 0; i < l->ndumps; i++) {
		jitdump_table_free(l->dumps[i].t);
		free(l->dumps[i].path);
	}
	pthread_mutex_destroy(&l->lock);
	free(l->files);
	free(l->cache_dir);
	free(l->debug_dir);
	free(l);
}

/* The function symbols of the ELF file at path, when its build-id is id (hex). */
static struct elf_symtab *load_checked(const char *path, const char *id)
{
	uint8_t got[ELF_BUILD_ID_MAX];
	char hex[ID_HEX_MAX + 1];
	struct elf_symtab *t = NULL;
	struct elf_file *f;
	int n;

	if (elf_file_open(path, &f) < 0)
		return NULL;
	n = elf_file_build_id(f, got, sizeof(got));
	for (int i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", got[i]);
	if (n > 0 && !strcmp(hex, id) && elf_symtab_load(f, false, &t) < 0)
		t = NULL;
	elf_file_free(f);
	return t;
}

/* The symbols of id's debug file: under the debug directory, else in the cache of fetched ones, else
 * fetched (asked for when it is not). */
static struct elf_symtab *find_file(struct latenames *l, const char *id)
{
	char path[PATH_MAX];
	struct elf_symtab *t = NULL;

	if (snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", l->debug_dir, id, id + 2) < (int)sizeof(path))
		t = load_checked(path, id);
	if (!t && l->cache_dir && snprintf(path, sizeof(path), "%s/%s/debuginfo", l->cache_dir, id) < (int)sizeof(path))
		t = load_checked(path, id);
	if (!t && l->fetch && debugfetch_path(l->fetch, id, path, sizeof(path)) == 0)
		t = load_checked(path, id);
	return t;
}

/* Frees file slot i's table and moves the last slot into it. */
static void forget(struct latenames *l, unsigned i)
{
	l->bytes -= elf_symtab_bytes(l->files[i].syms);
	elf_symtab_free(l->files[i].syms);
	l->files[i] = l->files[--l->nfiles];
}

/* A slot for id, after room is made for bytes more: the least recently used go first. */
static struct late_file *new_slot(struct latenames *l, size_t bytes)
{
	while (l->nfiles && (l->nfiles == l->max_files || l->bytes + bytes > l->max_bytes)) {
		unsigned old = 0;

		for (unsigned i = 1; i < l->nfiles; i++)
			if (l->files[i].used < l->files[old].used)
				old = i;
		forget(l, old);
		l->st.evicted++;
	}
	return &l->files[l->nfiles++];
}

/* The slot of id, (re)looked for when new, or when it had no file and files arrived or time passed. */
static struct late_file *file_of(struct latenames *l, const char *id)
{
	uint64_t arrivals = l->fetch ? debugfetch_arrivals(l->fetch) : 0;
	struct late_file *f = NULL;
	struct elf_symtab *t;
	size_t bytes;

	for (unsigned i = 0; i < l->nfiles && !f; i++)
		if (!strcmp(l->files[i].id, id))
			f = &l->files[i];
	if (f && (f->syms || (f->arrivals == arrivals && now_s() - f->checked < RECHECK_S)))
		return f;
	if (f) /* looked for again: a new slot, sized for what is found */
		forget(l, (unsigned)(f - l->files));
	t = find_file(l, id);
	bytes = elf_symtab_bytes(t);
	if (t)
		l->st.loaded++;
	if (bytes > l->max_bytes) { /* never kept: remembered as none */
		elf_symtab_free(t);
		t = NULL;
		bytes = 0;
	}
	f = new_slot(l, bytes);
	*f = (struct late_file){ .syms = t, .checked = now_s(), .arrivals = arrivals };
	snprintf(f->id, sizeof(f->id), "%s", id);
	l->bytes += bytes;
	return f;
}

/* The jitdump file at path whose header's timestamp is id, read on when a second passed since it was
 * last (the runtime may have written more). NULL: out of memory. */
static struct late_dump *dump_of(struct latenames *l, const char *path, const char *id)
{
	struct late_dump *d = NULL;
	int64_t now = now_s();

	for (unsigned i = 0; i < l->ndumps && !d; i++)
		if (!strcmp(l->dumps[i].path, path) && !strcmp(l->dumps[i].id, id))
			d = &l->dumps[i];
	if (!d) {
		unsigned old = 0;

		if (l->ndumps < MAX_DUMPS) {
			old = l->ndumps++;
		} else {
			for (unsigned i = 1; i < l->ndumps; i++)
				if (l->dumps[i].used < l->dumps[old].used)
					old = i;
			jitdump_table_free(l->dumps[old].t);
			free(l->dumps[old].path);
			l->st.evicted++;
		}
		d = &l->dumps[old];
		*d = (struct late_dump){ .path = strdup(path), .read_at = INT64_MIN };
		snprintf(d->id, sizeof(d->id), "%s", id);
		if (!d->path || jitdump_table_new(&d->t) < 0) {
			free(d->path);
			l->dumps[old] = l->dumps[--l->ndumps];
			return NULL;
		}
	}
	if (now != d->read_at) {
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

		for (int i = 0; fd >= 0 && i < DUMP_READS; i++)
			if (jitdump_table_read(d->t, fd, &l->jst) < 0)
				break;
		if (fd >= 0)
			close(fd);
		d->read_at = now;
	}
	return d;
}

/* The name of addr in the jitdump file at path, when its header's timestamp is id. */
static const char *jit_name(struct latenames *l, const char *path, const char *id, uint64_t addr)
{
	struct late_dump *d = strlen(id) < sizeof(d->id) ? dump_of(l, path, id) : NULL;
	char hex[sizeof(d->id)];
	uint64_t stamp;
	uint32_t pid;

	if (!d || jitdump_table_header(d->t, &pid, &stamp) < 0)
		return NULL;
	d->used = ++l->tick;
	snprintf(hex, sizeof(hex), "%016" PRIx64, stamp);
	return strcmp(hex, id) ? NULL : jitdump_table_find(d->t, addr, 0);
}

int latenames_name(void *ctx, const char *module, const char *build_id, uint64_t addr, char *buf, size_t cap)
{
	struct latenames *l = ctx;
	const char *name = NULL, *suffix = "";
	struct late_file *f;
	size_t n;

	if (!cap || strlen(build_id) > ID_HEX_MAX || strlen(build_id) < 2)
		return -ENOENT;
	pthread_mutex_lock(&l->lock);
	if (module[0] == '/' && jitdump_path(module)) {
		name = jit_name(l, module, build_id, addr);
		suffix = "_[j]";
		l->st.jit_named += name != NULL;
	} else {
		f = file_of(l, build_id);
		f->used = ++l->tick;
		if (f->syms)
			name = elf_symtab_lookup(f->syms, addr);
	}
	buf[0] = '\0';
	if (name && cap > strlen(suffix)) {
		n = frame_copy_clean(buf, cap - strlen(suffix), name);
		if (!name[n]) /* the suffix only after a name kept whole */
			snprintf(buf + n, cap - n, "%s", suffix);
	}
	l->st.named += name != NULL;
	pthread_mutex_unlock(&l->lock);
	return name ? 0 : -ENOENT;
}

void latenames_get_stats(struct latenames *l, struct latenames_stats *out)
{
	pthread_mutex_lock(&l->lock);
	*out = l->st;
	pthread_mutex_unlock(&l->lock);
}
