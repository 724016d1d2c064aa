/* test_procstat.c - /proc/PID/stat read for a process's parent and start time: names with spaces and
 * parentheses, cut or garbled text refused, this process's own file read for real. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "util/procstat.h"

static int parse(const char *text, struct procstat *ps)
{
	return procstat_parse(text, strlen(text), ps);
}

int main(void)
{
	struct procstat ps = { 0 };
	char big[2048];

	CHECK(parse("1234 (python3) S 99 1234 1234 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 777 0 0\n", &ps) == 0 &&
		      ps.ppid == 99 && ps.starttime == 777,
	      "a plain line: ppid 99, starttime 777");
	CHECK(parse("7 (a) b (c)) R 42 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12345678901 0\n", &ps) == 0 &&
		      ps.ppid == 42 && ps.starttime == 12345678901ULL,
	      "a name with spaces and parentheses: fields counted from its last ')'");
	CHECK(parse("7 (x) S 42 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0", &ps) == -EINVAL, "cut before starttime: refused");
	CHECK(parse("7 (x) S -1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0", &ps) == -EINVAL, "a negative ppid: refused");
	CHECK(parse("7 (x) S 99999999999 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0", &ps) == -EINVAL,
	      "a ppid past 32 bits: refused");
	CHECK(parse("no parenthesis at all 1 2 3", &ps) == -EINVAL, "no ')': refused");
	CHECK(parse("", &ps) == -EINVAL, "empty: refused");
	CHECK(procstat_parse("7 (x) S 4\0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0", 40, &ps) == -EINVAL,
	      "a NUL inside ends the text: refused");
	memset(big, '1', sizeof(big));
	CHECK(procstat_parse(big, sizeof(big), &ps) == -EINVAL, "longer than a stat file: refused");
	CHECK(procstat_read(NULL, (uint32_t)getpid(), &ps) == 0 && ps.ppid == (uint32_t)getppid() && ps.starttime > 0,
	      "this process's own /proc/self: its parent %u and a start time", ps.ppid);
	CHECK(procstat_read("/nonexistent", 1, &ps) == -ENOENT, "a missing file: -ENOENT");
	return CHECK_EXIT();
}
