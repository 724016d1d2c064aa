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

/* The system's python3 as the interpreter under test of a test that reads CPython 3.min to 3.max: 0 with
 * py set when it is one of those; otherwise -1, after a failed check (none there: deps.sh installs it) or
 * a skip naming its version. Needs check.h. */
static inline int system_python_under_test(struct system_python *py, unsigned min, unsigned max)
{
	char why[96];

	if (system_python(py) < 0) {
		CHECK(0, "the system's python3 (%s) is there and says its version (scripts/deps.sh installs it)",
		      py->path);
		return -1;
	}
	if (py->major != 3 || py->minor < min || py->minor > max) {
		snprintf(why, sizeof(why), "flamed reads CPython 3.%u to 3.%u, not %u.%u yet", min, max, py->major,
			 py->minor);
		SKIP(py->path, why);
		return -1;
	}
	printf("# the system's python3: %s (%u.%u.%u)\n", py->path, py->major, py->minor, py->micro);
	return 0;
}

#endif
