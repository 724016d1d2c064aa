/* syspython.h - the system's python3 for the unit tests: its real path, file name and version. */
#ifndef FLAMED_SYSPYTHON_H
#define FLAMED_SYSPYTHON_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The distribution's python3, not the first one on PATH (that may be a pyenv shim). */
#ifndef SYSTEM_PYTHON
#define SYSTEM_PYTHON "/usr/bin/python3"
#endif

/* The system's python3 as found at run time. */
struct system_python {
	char path[PATH_MAX];     /* its real path: /usr/bin/python3.11 on Debian 12, /usr/bin/python3.13 on 13 */
	char name[NAME_MAX + 1]; /* its file name: "python3.13" */
	unsigned major, minor, micro;
};

/* Resolves SYSTEM_PYTHON to its real path and asks it its version. Returns 0; -1 when there is none
 * (path then is SYSTEM_PYTHON) or it does not say its version (path and name are set). */
static inline int system_python(struct system_python *py)
{
	char cmd[PATH_MAX + 80], line[64];
	const char *slash;
	bool found;
	FILE *fp;
	int rc = -1;

	memset(py, 0, sizeof(*py));
	found = realpath(SYSTEM_PYTHON, py->path) != NULL;
	if (!found)
		snprintf(py->path, sizeof(py->path), "%s", SYSTEM_PYTHON);
	slash = strrchr(py->path, '/');
	snprintf(py->name, sizeof(py->name), "%.*s", NAME_MAX, slash ? slash + 1 : py->path);
	if (!found)
		return -1;
	snprintf(cmd, sizeof(cmd), "'%s' -c 'import sys; print(*sys.version_info[:3])' 2>/dev/null", py->path);
	fp = popen(cmd, "re");
	if (!fp)
		return -1;
	if (fgets(line, sizeof(line), fp) && sscanf(line, "%u %u %u", &py->major, &py->minor, &py->micro) == 3)
		rc = 0;
	pclose(fp);
	return rc;
}

#endif
