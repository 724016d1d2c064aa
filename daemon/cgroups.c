/* cgroups.c - where each sample ran: a kernel cgroup id to its cgroup v2 path, by opening the id on the
 * cgroup2 file system, else from /proc/PID/cgroup; remembered per id (per process and id without a
 * cgroup2 mount), within a bound. */
#include "cgroups.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "store/store.h"
#include "util/cgname.h"
#include "util/hash.h"

#define DEFAULT_MAX 4096
#define FILEID_KERNFS 0xfe     /* the file handle type of kernfs (cgroup2): the 64-bit node id */
#define CGROUP_FILE_MAX 16384  /* bytes of /proc/PID/cgroup read at most */

struct entry {
	uint64_t cgid;
	uint32_t pid; /* 0 when paths are learnt by id (the same for every process) */
	bool used;
	char *path;
};

struct cgroups {
	struct entry *e;
	size_t cap, n, max;
	int mount_fd; /* the cgroup2 mount's root, or -1 */
	bool no_handles; /* opening by id is refused (no CAP_DAC_READ_SEARCH): /proc only */
	char proc_root[64];
	struct cgroups_stats stats;
	char path[STORE_CGROUP_MAX_BYTES + 1]; /* the answer of the last call */
};

/* Decodes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Finds the first mount of the whole cgroup2 hierarchy (root "/") in mountinfo: its path into mnt. */
static bool find_mount(const char *mountinfo, char *mnt, size_t cap)
{
	FILE *f = fopen(mountinfo, "re");
	char line[4096], root[1024], point[1024], type[64];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2 ||
		    sscanf(dash + 3, "%63s", type) != 1)
			continue;
		unescape(root);
		unescape(point);
		if (!strcmp(type, "cgroup2") && !strcmp(root, "/") && strlen(point) < cap) {
			snprintf(mnt, cap, "%s", point);
			found = true;
		}
	}
	fclose(f);
	return found;
}

int cgroups_new(const struct cgroups_opts *o, struct cgroups **out)
{
	struct cgroups *c;
	const char *proc = o && o->proc_root ? o->proc_root : "/proc";

	if (strlen(proc) >= sizeof(c->proc_root))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->max = o && o->max ? o->max : DEFAULT_MAX;
	for (c->cap = 16; c->cap < 2 * c->max; c->cap *= 2)
		;
	c->e = calloc(c->cap, sizeof(*c->e));
	if (!c->e) {
		free(c);
		return -ENOMEM;
	}
	snprintf(c->proc_root, sizeof(c->proc_root), "%s", proc);
	c->mount_fd = -1;
	if (find_mount(o && o->mountinfo ? o->mountinfo : "/proc/self/mountinfo", c->stats.mount, sizeof(c->stats.mount)))
		c->mount_fd = open(c->stats.mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->mount_fd < 0)
		c->stats.mount[0] = '\0';
	*out = c;
	return 0;
}

static void forget_all(struct cgroups *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->e[i].path);
	memset(c->e, 0, c->cap * sizeof(*c->e));
	c->n = 0;
}

void cgroups_free(struct cgroups *c)
{
	if (!c)
		return;
	forget_all(c);
	free(c->e);
	if (c->mount_fd >= 0)
		close(c->mount_fd);
	free(c);
}

/* The path of cgid under the cgroup2 mount, by its file handle, into buf. */
static bool by_id(struct cgroups *c, uint64_t cgid, char *buf, size_t cap)
{
	struct {
		struct file_handle fh;
		unsigned char id[8];
	} h = { .fh = { .handle_bytes = 8, .handle_type = FILEID_KERNFS } };
	char link[64], target[4096];
	size_t mlen = strlen(c->stats.mount);
	ssize_t n;
	int fd;

	memcpy(h.fh.f_handle, &cgid, sizeof(cgid));
	fd = open_by_handle_at(c->mount_fd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		c->no_handles = errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS;
		return false;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	close(fd);
	if (n <= 0 || (size_t)n < mlen || memcmp(target, c->stats.mount, mlen) ||
	    (target[mlen] != '/' && (size_t)n != mlen))
		return false;
	target[n] = '\0';
	snprintf(buf, cap, "%s", (size_t)n == mlen ? "/" : target + mlen);
	return true;
}

/* Whether path (as /proc/PID/cgroup names it) is still the cgroup with id cgid: opened beneath the cgroup2
 * mount only (openat2's RESOLVE_BENEATH: a name the kernel took cannot lead outside it). */
static bool is_cgroup(const struct cgroups *c, const char *path, uint64_t cgid)
{
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	struct stat st;
	bool same;
	int fd;

	fd = (int)syscall(SYS_openat2, c->mount_fd, path[1] ? path + 1 : ".", &how, sizeof(how));
	if (fd < 0)
		return false;
	same = fstat(fd, &st) == 0 && (uint64_t)st.st_ino == cgid;
	close(fd);
	return same;
}

/* From /proc/PID/cgroup: the "0::" line's path, or the v1 "name=systemd" one when the first is missing or
 * the root. With a cgroup2 mount, a v2 path is taken only while it is still cgid's (the process may have
 * moved since), and *checked says so: then it is the id's whichever process asks. */
static bool by_proc(struct cgroups *c, uint32_t pid, uint64_t cgid, char *buf, size_t cap, bool *checked)
{
	char file[96], *text, *v2 = NULL, *v1 = NULL;
	bool ok = false;
	ssize_t n;
	int fd;

	snprintf(file, sizeof(file), "%s/%u/cgroup", c->proc_root, pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	text = malloc(CGROUP_FILE_MAX + 1);
	n = text ? read(fd, text, CGROUP_FILE_MAX) : -1;
	close(fd);
	if (n > 0) {
		text[n] = '\0';
		for (char *line = text, *next; line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			if (!strncmp(line, "0::", 3))
				v2 = line + 3;
			else if (strstr(line, ":name=systemd:"))
				v1 = strstr(line, ":name=systemd:") + 14;
		}
		if (v2 && v2[0] == '/' && (strcmp(v2, "/") || !v1 || v1[0] != '/')) {
			ok = c->mount_fd < 0 || (*checked = is_cgroup(c, v2, cgid));
			if (ok)
				snprintf(buf, cap, "%s", v2);
		} else if (v1 && v1[0] == '/') {
			snprintf(buf, cap, "%s", v1);
			ok = true;
		}
	}
	free(text);
	return ok;
}

/* The slot of (pid, cgid): its entry, or the free one where it goes. */
static struct entry *slot(const struct cgroups *c, uint32_t pid, uint64_t cgid)
{
	uint64_t v[2] = { cgid, pid };
	size_t i = hash_words(v, 2) & (c->cap - 1);

	while (c->e[i].used && (c->e[i].cgid != cgid || c->e[i].pid != pid))
		i = (i + 1) & (c->cap - 1);
	return &c->e[i];
}

/* Remembers path ("" none) under (pid, cgid); empties the table first when it is full. */
static void remember(struct cgroups *c, uint32_t pid, uint64_t cgid, const char *path)
{
	struct entry *e;

	if (c->n >= c->max) {
		forget_all(c);
		c->stats.forgotten++;
	}
	e = slot(c, pid, cgid);
	*e = (struct entry){ .cgid = cgid, .pid = pid, .used = true, .path = path[0] ? strdup(path) : NULL };
	c->n++;
}

const char *cgroups_path(struct cgroups *c, uint32_t pid, uint64_t cgid)
{
	char raw[4096];
	struct entry *e;
	bool ok = false, checked = false;

	if (!cgid)
		return "";
	/* A path checked against the id (opened by it, or found to be it under the cgroup2 mount) is the id's,
	 * whichever process ran in it: remembered under pid 0. One not checked (v1's, or no mount), or none,
	 * is remembered per process (another may tell). */
	e = slot(c, 0, cgid);
	if (!e->used)
		e = slot(c, pid, cgid);
	if (e->used)
		return e->path ? e->path : "";
	if (c->mount_fd >= 0 && !c->no_handles)
		checked = ok = by_id(c, cgid, raw, sizeof(raw));
	if (ok)
		c->stats.by_id++;
	else if ((ok = by_proc(c, pid, cgid, raw, sizeof(raw), &checked)))
		c->stats.by_proc++;
	else
		c->stats.unknown++;
	c->path[0] = '\0';
	if (ok && cgname_clean(raw, c->path, sizeof(c->path)) == 1)
		c->stats.cut++;
	remember(c, checked ? 0 : pid, cgid, c->path);
	return c->path;
}

void cgroups_get_stats(const struct cgroups *c, struct cgroups_stats *out)
{
	*out = c->stats;
	out->known = c->n;
}
