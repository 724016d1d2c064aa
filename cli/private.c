/* private.c - runs a flamed of flamectl's own for `flamectl record`: a temporary directory for its
 * database, log and notify socket; flamed started in a process group of its own (a Ctrl-C at the
 * terminal is the recorded command's, not its), tied to flamectl's life (PR_SET_PDEATHSIG), ready
 * on READY=1; stopped with SIGTERM and its directory removed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "private.h"

#define READY_TIMEOUT_S 60
#define STOP_TIMEOUT_S 60   /* its last flush names and stores what is pending */
#define LOG_TAIL_BYTES 2048

struct private_flamed {
	char dir[64];        /* the temporary directory */
	char db[PATH_MAX];
	char log[96], sock[96];
	bool keep_db;
	char refused[PRIVATE_REFUSED_MAX][160]; /* "feature: why", from its X_FLAMED_REFUSED= lines */
	int sock_fd;
	pid_t pid;           /* 0: not running */
};

/* Prints the last lines of flamed's log, indented, after why. */
static void print_log(const struct private_flamed *p, const char *why)
{
	char buf[LOG_TAIL_BYTES + 1];
	int fd = open(p->log, O_RDONLY | O_CLOEXEC);
	off_t size;
	ssize_t n;

	fprintf(stderr, "flamectl: %s; its log says:\n", why);
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > LOG_TAIL_BYTES)
		lseek(fd, size - LOG_TAIL_BYTES, SEEK_SET);
	else
		lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, LOG_TAIL_BYTES);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		fprintf(stderr, "    %s\n", line);
	}
}

/* The flamed to run: the one beside this program (build/ or bin/), else "flamed" on PATH. */
static void flamed_path(char *buf, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	snprintf(buf, len, "flamed");
	if (n <= 0)
		return;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return;
	*slash = '\0';
	if ((size_t)snprintf(buf, len, "%s/flamed", self) >= len || access(buf, X_OK) < 0)
		snprintf(buf, len, "flamed");
}

/* The notify socket flamed sends READY=1 to (bound in the private directory). */
static int open_socket(struct private_flamed *p)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };

	if (strlen(p->sock) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, p->sock);
	p->sock_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (p->sock_fd < 0 || bind(p->sock_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		return -errno;
	return 0;
}

/* In the child: becomes flamed, logging to the private log, in a process group of its own. */
static void exec_flamed(const struct private_flamed *p, const struct private_opts *o, pid_t parent)
{
	char path[PATH_MAX], freq[16];
	const char *argv[16];
	int n = 0, fd;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(127); /* flamectl is gone already */
	fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
	}
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		dup2(fd, STDIN_FILENO);
	setenv("NOTIFY_SOCKET", p->sock, 1);
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	flamed_path(path, sizeof(path));
	snprintf(freq, sizeof(freq), "%u", o->frequency);
	argv[n++] = path;
	argv[n++] = "--db";
	argv[n++] = p->db;
	argv[n++] = "--listen";
	argv[n++] = "none";
	argv[n++] = "--unwind-cache"; /* not beside a temporary database, nor beside the user's */
	argv[n++] = "none";
	argv[n++] = "--frequency";
	argv[n++] = freq;
	if (o->off_cpu)
		argv[n++] = "--off-cpu";
	argv[n] = NULL;
	execvp(path, (char *const *)argv);
	fprintf(stderr, "cannot run %s: %s\n", path, strerror(errno));
	_exit(127);
}

/* Keeps the X_FLAMED_REFUSED=feature: why lines of flamed's READY=1 message: what it left out. */
static void note_refused(struct private_flamed *p, const char *msg)
{
	const char *line = msg;
	unsigned n = 0;

	while (line && *line && n < PRIVATE_REFUSED_MAX) {
		size_t len = strcspn(line, "\n");

		if (!strncmp(line, "X_FLAMED_REFUSED=", 17))
			snprintf(p->refused[n++], sizeof(p->refused[0]), "%.*s", (int)(len - 17), line + 17);
		line += len + (line[len] == '\n');
	}
}

/* Waits for READY=1 on the socket, or flamed's exit, or the timeout. */
static int wait_ready(struct private_flamed *p, unsigned timeout_s)
{
	struct timespec t0, now;
	char msg[2048];
	int status;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { .fd = p->sock_fd, .events = POLLIN };
		int r = poll(&pfd, 1, 200);

		if (r > 0) {
			ssize_t n = recv(p->sock_fd, msg, sizeof(msg) - 1, 0);

			if (n > 0) {
				msg[n] = '\0';
				if (strstr(msg, "READY=1")) {
					note_refused(p, msg);
					return 0;
				}
			}
		} else if (r < 0 && errno != EINTR) {
			return -errno;
		}
		if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
			p->pid = 0;
			print_log(p, "the private flamed could not start");
			return -EIO;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= (time_t)timeout_s) {
			print_log(p, "the private flamed did not start sampling in time");
			return -ETIMEDOUT;
		}
	}
}

int private_start(const struct private_opts *o, struct private_flamed **out)
{
	struct private_flamed *p = calloc(1, sizeof(*p));
	const char *tmp = getenv("TMPDIR");
	pid_t self = getpid();
	int err;

	if (!p)
		return -ENOMEM;
	p->sock_fd = -1;
	/* A short path: the socket's must fit sun_path. TMPDIR is used when it leaves room. */
	if (!tmp || !tmp[0] || strlen(tmp) > 40)
		tmp = "/tmp";
	snprintf(p->dir, sizeof(p->dir), "%s/flamectl-record.XXXXXX", tmp);
	if (!mkdtemp(p->dir)) {
		err = -errno;
		fprintf(stderr, "flamectl: cannot make a temporary directory in %s: %s\n", tmp, strerror(-err));
		free(p);
		return err;
	}
	snprintf(p->log, sizeof(p->log), "%s/flamed.log", p->dir);
	snprintf(p->sock, sizeof(p->sock), "%s/notify", p->dir);
	p->keep_db = o->db != NULL;
	if ((size_t)snprintf(p->db, sizeof(p->db), "%s", o->db ? o->db : "") >= sizeof(p->db) ||
	    (!o->db && (size_t)snprintf(p->db, sizeof(p->db), "%s/flamed.db", p->dir) >= sizeof(p->db))) {
		private_free(p);
		return -ENAMETOOLONG;
	}
	err = open_socket(p);
	if (err) {
		fprintf(stderr, "flamectl: cannot make the notify socket %s: %s\n", p->sock, strerror(-err));
		private_free(p);
		return err;
	}
	p->pid = fork();
	if (p->pid < 0) {
		err = -errno;
		p->pid = 0;
		fprintf(stderr, "flamectl: cannot start flamed: %s\n", strerror(-err));
		private_free(p);
		return err;
	}
	if (p->pid == 0)
		exec_flamed(p, o, self);
	err = wait_ready(p, o->ready_timeout_s ? o->ready_timeout_s : READY_TIMEOUT_S);
	if (err) {
		private_free(p);
		return err;
	}
	*out = p;
	return 0;
}

const char *private_db(const struct private_flamed *p)
{
	return p->db;
}

const char *private_refused(const struct private_flamed *p, const char *feature)
{
	size_t len = strlen(feature);

	for (unsigned i = 0; i < PRIVATE_REFUSED_MAX; i++)
		if (!strncmp(p->refused[i], feature, len) && !strncmp(p->refused[i] + len, ": ", 2))
			return p->refused[i] + len + 2;
	return NULL;
}

/* Waits up to timeout_s for flamed to exit; its wait status, or -ETIMEDOUT. */
static int wait_exit(struct private_flamed *p, unsigned timeout_s)
{
	int status = 0;

	for (unsigned i = 0; i < timeout_s * 10; i++) {
		pid_t r = waitpid(p->pid, &status, WNOHANG);

		if (r == p->pid || (r < 0 && errno == ECHILD)) {
			p->pid = 0;
			return r > 0 ? status : 0;
		}
		usleep(100000);
	}
	return -ETIMEDOUT;
}

int private_stop(struct private_flamed *p)
{
	int status;

	if (!p->pid)
		return -EIO;
	kill(p->pid, SIGTERM);
	status = wait_exit(p, STOP_TIMEOUT_S);
	if (status == -ETIMEDOUT) {
		print_log(p, "the private flamed did not stop in time");
		return -EIO;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		print_log(p, "the private flamed did not stop cleanly");
		return -EIO;
	}
	return 0;
}

void private_free(struct private_flamed *p)
{
	char path[PATH_MAX + 8];

	if (!p)
		return;
	if (p->pid) {
		kill(p->pid, SIGTERM);
		if (wait_exit(p, 5) == -ETIMEDOUT) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, NULL, 0);
		}
	}
	if (p->sock_fd >= 0)
		close(p->sock_fd);
	unlink(p->sock);
	unlink(p->log);
	if (!p->keep_db && p->db[0]) {
		static const char *const suffixes[] = { "", "-wal", "-shm", "-journal" };

		for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
			snprintf(path, sizeof(path), "%s%s", p->db, suffixes[i]);
			unlink(path);
		}
	}
	rmdir(p->dir);
	free(p);
}
