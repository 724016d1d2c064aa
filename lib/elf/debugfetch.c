/* debugfetch.c - asks debuginfod servers for debug files by build-id on a thread of its own, remembers
 * what they had not, and keeps the cache they land in within its bound. */
#include "elf/debugfetch.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#define ID_MAX 128          /* hex digits of a build-id at most */
#define SCAN_MAX 65536      /* cache entries looked at by one scan at most */
#define DEBUGINFO "debuginfo"

/* libdebuginfod, opened when a fetcher starts (as libdw opens it): a process that fetches nothing never
 * loads it, nor libcurl and the TLS libraries it brings. */
static struct {
	void *handle;
	debuginfod_client *(*begin)(void);
	void (*end)(debuginfod_client *);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	void (*set_user_data)(debuginfod_client *, void *);
	void *(*get_user_data)(debuginfod_client *);
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_open(void)
{
	void *h = dlopen(DEBUGINFOD_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	*(void **)&lib.begin = dlsym(h, "debuginfod_begin");
	*(void **)&lib.end = dlsym(h, "debuginfod_end");
	*(void **)&lib.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
	*(void **)&lib.set_progressfn = dlsym(h, "debuginfod_set_progressfn");
	*(void **)&lib.set_user_data = dlsym(h, "debuginfod_set_user_data");
	*(void **)&lib.get_user_data = dlsym(h, "debuginfod_get_user_data");
	if (lib.begin && lib.end && lib.find_debuginfo && lib.set_progressfn && lib.set_user_data && lib.get_user_data)
		lib.handle = h;
	else
		dlclose(h);
}

enum state { ST_QUEUED, ST_FETCHING, ST_MISSED };

/* A build-id asked for and not (yet) in the cache. */
struct known {
	char id[ID_MAX + 1];
	enum state state;
	int64_t when; /* ST_MISSED: when the answer came (monotonic seconds) */
};

struct debugfetch {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool stop;
	char *dir;
	uint64_t max_bytes;
	unsigned max_time_s, retry_s;
	struct known *known;     /* max_known slots, nknown used */
	unsigned nknown, max_known;
	unsigned *queue;         /* ring of indexes into known */
	unsigned qhead, qlen, max_queue;
	int64_t deadline;        /* of the transfer under way (monotonic seconds) */
	struct debugfetch_stats st;
};

static int64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* Whether s is a build-id as this module takes one: lowercase hex, an even count of 2 to ID_MAX. */
static bool is_build_id(const char *s)
{
	size_t n = strnlen(s, ID_MAX + 1);

	if (n < 2 || n > ID_MAX || n % 2)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* One cached file found by a scan. */
struct cached {
	char id[ID_MAX + 1];
	int64_t mtime;
	uint64_t size;
};

static int by_mtime(const void *a, const void *b)
{
	const struct cached *x = a, *y = b;

	return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

/* Deletes DIR/ID/debuginfo and, when empty, DIR/ID. */
static void remove_cached(struct debugfetch *d, const char *id)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s/" DEBUGINFO, d->dir, id) >= (int)sizeof(path))
		return;
	unlink(path);
	*strrchr(path, '/') = '\0';
	rmdir(path);
}

/* Counts the cache's files and, over the bound, deletes the least recently used ones; a file larger than
 * the whole bound (keep: the one just fetched) goes too, counted as too big. Called with the lock held
 * (the scan is one directory of at most SCAN_MAX names). */
static void scan(struct debugfetch *d, const char *keep)
{
	struct cached *c = NULL;
	size_t n = 0, cap = 0;
	uint64_t bytes = 0;
	struct dirent *e;
	DIR *dir = opendir(d->dir);

	if (!dir)
		return;
	while ((e = readdir(dir)) && n < SCAN_MAX) {
		char path[ID_MAX + sizeof("/" DEBUGINFO)];
		struct stat sb;

		if (!is_build_id(e->d_name))
			continue;
		snprintf(path, sizeof(path), "%.*s/" DEBUGINFO, ID_MAX, e->d_name);
		/* an empty file is libdebuginfod's memory of a miss, not a debug file */
		if (fstatat(dirfd(dir), path, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode) || !sb.st_size)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct cached *g = reallocarray(c, ncap, sizeof(*c));

			if (!g)
				break;
			c = g;
			cap = ncap;
		}
		snprintf(c[n].id, sizeof(c[n].id), "%.*s", ID_MAX, e->d_name);
		c[n].mtime = (int64_t)sb.st_mtim.tv_sec;
		c[n].size = (uint64_t)sb.st_size;
		bytes += c[n].size;
		n++;
	}
	closedir(dir);
	if (n)
		qsort(c, n, sizeof(*c), by_mtime);
	for (size_t i = 0; i < n && bytes > d->max_bytes; i++) {
		bool big = c[i].size > d->max_bytes;

		if (keep && strcmp(c[i].id, keep) == 0 && !big)
			continue;
		remove_cached(d, c[i].id);
		bytes -= c[i].size;
		c[i].size = UINT64_MAX; /* gone */
		if (big)
			d->st.too_big++;
		else
			d->st.evicted++;
	}
	d->st.files = 0;
	for (size_t i = 0; i < n; i++)
		d->st.files += c[i].size != UINT64_MAX;
	d->st.bytes = bytes;
	free(c);
}

static struct known *find_known(struct debugfetch *d, const char *id)
{
	for (unsigned i = 0; i < d->nknown; i++)
		if (strcmp(d->known[i].id, id) == 0)
			return &d->known[i];
	return NULL;
}

/* A slot for a new build-id: a free one, else the oldest miss's (queued ones are never reused).
 * NULL when every slot waits or is in flight. */
static struct known *new_known(struct debugfetch *d)
{
	struct known *old = NULL;

	if (d->nknown < d->max_known)
		return &d->known[d->nknown++];
	for (unsigned i = 0; i < d->nknown; i++)
		if (d->known[i].state == ST_MISSED && (!old || d->known[i].when < old->when))
			old = &d->known[i];
	return old;
}

/* libdebuginfod calls this while it transfers (about every second while it waits), with the bytes received
 * and the size announced (when known): non-zero cuts the transfer, at shutdown, past the deadline or past
 * the cache's bound. */
static int progress(debuginfod_client *client, long got, long size)
{
	struct debugfetch *d = lib.get_user_data(client);
	bool cut;

	pthread_mutex_lock(&d->lock);
	cut = d->stop || now_s() > d->deadline || (got > 0 && (uint64_t)got > d->max_bytes) ||
	      (size > 0 && (uint64_t)size > d->max_bytes);
	pthread_mutex_unlock(&d->lock);
	return cut;
}

/* Asks for k's file (the lock dropped meanwhile) and records the answer. Called with the lock held. */
static void fetch_one(struct debugfetch *d, debuginfod_client *client, struct known *k)
{
	char id[ID_MAX + 1], *path = NULL;
	int fd;

	snprintf(id, sizeof(id), "%s", k->id);
	k->state = ST_FETCHING;
	d->st.fetching = 1;
	d->deadline = now_s() + d->max_time_s;
	pthread_mutex_unlock(&d->lock);
	fd = lib.find_debuginfo(client, (const unsigned char *)id, 0, &path);
	if (fd >= 0)
		close(fd);
	free(path);
	pthread_mutex_lock(&d->lock);
	d->st.fetching = 0;
	if (fd >= 0) {
		d->st.fetched++;
		*k = d->known[--d->nknown]; /* in the cache now: forgotten here (queued slots are indexes...) */
		for (unsigned i = 0; i < d->qlen; i++) /* ...so the moved slot's queue entry follows it */
			if (d->queue[(d->qhead + i) % d->max_queue] == d->nknown)
				d->queue[(d->qhead + i) % d->max_queue] = (unsigned)(k - d->known);
		scan(d, id);
		return;
	}
	if (fd == -ENOENT)
		d->st.missed++;
	else
		d->st.failed++;
	k->state = ST_MISSED;
	k->when = now_s();
}

static void *worker(void *arg)
{
	struct debugfetch *d = arg;
	debuginfod_client *client = lib.begin();

	if (client) {
		lib.set_user_data(client, d);
		lib.set_progressfn(client, progress);
	}
	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		struct known *k;

		if (!d->qlen) {
			pthread_cond_wait(&d->wake, &d->lock);
			continue;
		}
		k = &d->known[d->queue[d->qhead]];
		d->qhead = (d->qhead + 1) % d->max_queue;
		d->qlen--;
		d->st.queued = d->qlen;
		if (!client) {
			d->st.failed++;
			k->state = ST_MISSED;
			k->when = now_s();
			continue;
		}
		fetch_one(d, client, k);
	}
	pthread_mutex_unlock(&d->lock);
	if (client)
		lib.end(client);
	return NULL;
}

/* Sets name to value in the environment, unless the user set it. */
static int env_default(const char *name, uint64_t value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, value);
	return setenv(name, buf, 0) < 0 ? -errno : 0;
}

/* Writes libdebuginfod's setting file DIR/name with value unless it is there. libdebuginfod writes those
 * it misses with dprintf, whose buffer glibc 2.36 leaks (LeakSanitizer says so at exit); its defaults:
 * the cache cleaned daily of files unused for a week (within our bound), a miss asked again after ten
 * minutes (as retry_s). */
static void put_setting(const char *dir, const char *name, unsigned long value)
{
	char path[PATH_MAX], text[32];
	int fd, n;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	n = snprintf(text, sizeof(text), "%lu", value);
	if (write(fd, text, (size_t)n) != n)
		unlink(path);
	close(fd);
}

int debugfetch_new(const struct debugfetch_opts *opts, struct debugfetch **out)
{
	struct debugfetch *d;
	int err;

	if (!opts->urls || !opts->urls[0] || !opts->cache_dir || !opts->cache_dir[0] || !opts->max_bytes)
		return -EINVAL;
	pthread_once(&lib_once, lib_open);
	if (!lib.handle)
		return -ELIBACC;
	if (mkdir(opts->cache_dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	put_setting(opts->cache_dir, "cache_clean_interval_s", 86400);
	put_setting(opts->cache_dir, "max_unused_age_s", 7 * 86400);
	put_setting(opts->cache_dir, "cache_miss_s", opts->retry_s ? opts->retry_s : 600);
	if (setenv(DEBUGINFOD_URLS_ENV_VAR, opts->urls, 1) < 0 ||
	    setenv(DEBUGINFOD_CACHE_PATH_ENV_VAR, opts->cache_dir, 1) < 0)
		return -errno;
	/* The size and total time are bounded by progress(): with DEBUGINFOD_MAXSIZE or _MAXTIME set,
	 * libdebuginfod dprintf()s them to its verbose fd even when it is -1, and glibc 2.36 leaks the buffer
	 * of a dprintf that fails. */
	err = env_default(DEBUGINFOD_TIMEOUT_ENV_VAR, opts->timeout_s ? opts->timeout_s : 5);
	if (err)
		return err;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->max_known = opts->max_known ? opts->max_known : 2048;
	d->max_queue = opts->max_queue ? opts->max_queue : 512;
	d->max_time_s = opts->max_time_s ? opts->max_time_s : 120;
	d->retry_s = opts->retry_s ? opts->retry_s : 600;
	d->max_bytes = opts->max_bytes;
	d->dir = strdup(opts->cache_dir);
	d->known = calloc(d->max_known, sizeof(*d->known));
	d->queue = calloc(d->max_queue, sizeof(*d->queue));
	if (!d->dir || !d->known || !d->queue) {
		err = -ENOMEM;
		goto fail;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->wake, NULL);
	scan(d, NULL);
	err = -pthread_create(&d->thread, NULL, worker, d);
	if (!err) {
		*out = d;
		return 0;
	}
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->lock);
fail:
	free(d->queue);
	free(d->known);
	free(d->dir);
	free(d);
	return err;
}

void debugfetch_free(struct debugfetch *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->lock);
	free(d->queue);
	free(d->known);
	free(d->dir);
	free(d);
}

/* Asks for id: queues it unless it is known. Called with the lock held. */
static int ask(struct debugfetch *d, const char *id)
{
	struct known *k = find_known(d, id);

	if (k && k->state != ST_MISSED)
		return -EAGAIN;
	if (k && now_s() - k->when < d->retry_s)
		return -ENOENT;
	if (d->qlen == d->max_queue || (!k && !(k = new_known(d)))) {
		d->st.dropped++;
		return -ENOSPC;
	}
	snprintf(k->id, sizeof(k->id), "%s", id);
	k->state = ST_QUEUED;
	d->queue[(d->qhead + d->qlen++) % d->max_queue] = (unsigned)(k - d->known);
	d->st.queued = d->qlen;
	pthread_cond_signal(&d->wake);
	return -EAGAIN;
}

int debugfetch_path(struct debugfetch *d, const char *build_id, char *path, size_t cap)
{
	struct stat sb;
	int n, err;

	if (!is_build_id(build_id))
		return -EINVAL;
	n = snprintf(path, cap, "%s/%s/" DEBUGINFO, d->dir, build_id);
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
		utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW); /* used now: last to go */
		return 0;
	}
	pthread_mutex_lock(&d->lock);
	err = ask(d, build_id);
	pthread_mutex_unlock(&d->lock);
	return err;
}

uint64_t debugfetch_arrivals(struct debugfetch *d)
{
	uint64_t n;

	pthread_mutex_lock(&d->lock);
	n = d->st.fetched + d->st.missed + d->st.failed;
	pthread_mutex_unlock(&d->lock);
	return n;
}

void debugfetch_get_stats(struct debugfetch *d, struct debugfetch_stats *out)
{
	pthread_mutex_lock(&d->lock);
	*out = d->st;
	pthread_mutex_unlock(&d->lock);
}
