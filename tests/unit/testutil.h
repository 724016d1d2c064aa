/* testutil.h - small helpers the unit tests share: run a shell command, write and read whole files. */
#ifndef FLAMED_TESTUTIL_H
#define FLAMED_TESTUTIL_H

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* Runs the shell command made from fmt and ap; returns its exit status (-1: could not run). When loud,
 * a failing command is printed as a comment line. */
static inline int run_va(int loud, const char *fmt, va_list ap)
{
	char cmd[4 * PATH_MAX];
	int n, rc;

	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	if (n < 0 || (size_t)n >= sizeof(cmd))
		return -1;
	rc = system(cmd);
	if (rc == -1 || !WIFEXITED(rc))
		return -1;
	if (loud && WEXITSTATUS(rc) != 0)
		printf("# command failed (%d): %s\n", WEXITSTATUS(rc), cmd);
	return WEXITSTATUS(rc);
}

/* run_va, loud: for commands expected to succeed. */
__attribute__((format(printf, 1, 2)))
static inline int run(const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = run_va(1, fmt, ap);
	va_end(ap);
	return rc;
}

/* run_va, quiet: for commands whose failure is an answer (a grep that should find nothing). */
__attribute__((format(printf, 1, 2)))
static inline int run_quiet(const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = run_va(0, fmt, ap);
	va_end(ap);
	return rc;
}

/* Writes len bytes of data to path. Returns 0 or -1. */
static inline int write_file(const char *path, const void *data, size_t len)
{
	FILE *fp = fopen(path, "we");
	int rc;

	if (!fp)
		return -1;
	rc = fwrite(data, 1, len, fp) == len ? 0 : -1;
	if (fclose(fp) != 0)
		rc = -1;
	return rc;
}

/* Reads all of path into a malloc'd buffer. Returns it (NULL on failure) and its size in *len. */
static inline unsigned char *read_all(const char *path, size_t *len)
{
	unsigned char *buf = NULL;
	struct stat st;
	FILE *fp = fopen(path, "re");

	if (!fp)
		return NULL;
	if (fstat(fileno(fp), &st) == 0 && st.st_size > 0) {
		buf = malloc((size_t)st.st_size);
		if (buf && fread(buf, 1, (size_t)st.st_size, fp) != (size_t)st.st_size) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)st.st_size;
	}
	fclose(fp);
	return buf;
}

#endif
