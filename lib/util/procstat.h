/* procstat.h - the fields of /proc/PID/stat the daemon needs: a process's parent and its start time
 * (which tells a process from a later one given the same pid). */
#ifndef FLAMED_UTIL_PROCSTAT_H
#define FLAMED_UTIL_PROCSTAT_H

#include <stdint.h>

struct procstat {
	uint32_t ppid;      /* field 4: the parent process (0 for the kernel's own) */
	uint64_t starttime; /* field 22: clock ticks (sysconf(_SC_CLK_TCK)) after boot, CLOCK_BOOTTIME */
};

/* Parses the text of a /proc/PID/stat file (len bytes; NUL-terminated or not). The command name
 * may hold spaces and parentheses: fields are counted from its last ')'. Returns 0 or -EINVAL. */
int procstat_parse(const char *text, size_t len, struct procstat *out);

/* Reads and parses proc_root/PID/stat (proc_root NULL: "/proc"). Returns 0 or -errno (-ENOENT:
 * the process is gone, -EINVAL: not the text of a stat file). */
int procstat_read(const char *proc_root, uint32_t pid, struct procstat *out);

#endif
