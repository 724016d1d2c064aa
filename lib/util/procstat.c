/* procstat.c - reads a process's parent and start time from /proc/PID/stat. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/procstat.h"
#include "util/textparse.h"

/* The longest stat file read (it is about 300 bytes; the command name is at most 64). */
#define STAT_MAX 1024

/* Moves *p to the start of the field after the next space; -EINVAL at the end of the text. */
static int next_field(const char **p, const char *end)
{
	const char *s = memchr(*p, ' ', (size_t)(end - *p));

	if (!s || s + 1 >= end)
		return -EINVAL;
	*p = s + 1;
	return 0;
}

int procstat_parse(const char *text, size_t len, struct procstat *out)
{
	char buf[STAT_MAX + 1];
	const char *p, *end;
	uint64_t v;
	int err = 0;

	if (!text || !out || len > STAT_MAX)
		return -EINVAL;
	memcpy(buf, text, len);
	buf[len] = '\0';
	len = strlen(buf); /* a NUL inside ends the text */
	end = buf + len;
	p = memrchr(buf, ')', len);
	if (!p)
		return -EINVAL;
	/* ") S PPID": field 3 (the state) follows the name, field 4 is the parent. */
	for (int i = 0; !err && i < 2; i++)
		err = next_field(&p, end);
	if (err || text_parse_uint(&p, 10, 10, &v) < 0 || v > UINT32_MAX)
		return -EINVAL;
	out->ppid = (uint32_t)v;
	for (int i = 4; !err && i < 22; i++)
		err = next_field(&p, end);
	if (err || text_parse_uint(&p, 10, 20, &out->starttime) < 0)
		return -EINVAL;
	return 0;
}

int procstat_read(const char *proc_root, uint32_t pid, struct procstat *out)
{
	char path[4096], buf[STAT_MAX];
	ssize_t n;
	int fd, err;

	if ((size_t)snprintf(path, sizeof(path), "%s/%" PRIu32 "/stat", proc_root ? proc_root : "/proc", pid) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	err = n < 0 ? -errno : 0;
	close(fd);
	if (n <= 0)
		return n < 0 ? err : -EINVAL;
	return procstat_parse(buf, (size_t)n, out);
}
