/* token.c - the API token from --auth-token-file (see token.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "token.h"

int token_read(const char *path, char *buf, size_t len)
{
	struct stat st;
	size_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	FILE *f;

	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		fprintf(stderr, "flamed: cannot read the token file %s: %s\n", path, strerror(-err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	if (st.st_mode & 077) {
		fprintf(stderr, "flamed: the token file %s is readable by others: chmod 600 it\n", path);
		close(fd);
		return -EPERM;
	}
	f = fdopen(fd, "r");
	if (!f || !fgets(buf, (int)len, f))
		buf[0] = '\0';
	if (f)
		fclose(f);
	else
		close(fd);
	n = strcspn(buf, "\r\n");
	buf[n] = '\0';
	if (n < 16) {
		fprintf(stderr, "flamed: the token in %s is shorter than 16 characters: write a longer one, e.g.\n"
			"  head -c 32 /dev/urandom | base64 > %s\n", path, path);
		return -EINVAL;
	}
	return 0;
}
