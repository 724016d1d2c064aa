/* test_notify.c - sd_notify datagrams reach $NOTIFY_SOCKET (path and abstract), and the watchdog
 * interval is read only when it is meant for this process. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <poll.h>
#include <signal.h>

#include "check.h"
#include "notify.h"

/* Binds a datagram socket at name ('@' first: abstract). Returns the fd or -1. */
static int listen_at(const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memcpy(a.sun_path, name, len);
	if (name[0] == '@')
		a.sun_path[0] = '\0';
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)))
		return -1;
	return fd;
}

static void expect_message(int fd, const char *want, const char *what)
{
	char buf[128] = "";
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	if (n > 0)
		buf[n] = '\0';
	CHECK(n > 0 && !strcmp(buf, want), "%s: received '%s'", what, buf);
}

/* Waits up to ms for a datagram on fd into buf; false on timeout. */
static bool wait_message(int fd, char *buf, size_t len, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return false;
	n = recv(fd, buf, len - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* The daemon itself: READY=1 once it samples, WATCHDOG=1 at half the interval, STOPPING=1 at exit. */
/* A notification on one line, its lines joined by " | ", for a check's message. */
static const char *oneline(const char *msg)
{
	static char out[1024];
	size_t n = 0;

	for (; *msg && n + 4 < sizeof(out); msg++) {
		if (*msg == '\n') {
			memcpy(out + n, " | ", 3);
			n += 3;
		} else {
			out[n++] = *msg;
		}
	}
	out[n] = '\0';
	return out;
}

/* flamed at build/flamed, its notify socket sock; with refuse, --off-cpu and FLAMED_TEST_REFUSE=refuse. */
static pid_t start_flamed(const char *flamed, const char *sock, const char *db, const char *refuse)
{
	pid_t pid = fork();

	if (pid == 0) {
		setenv("NOTIFY_SOCKET", sock, 1);
		setenv("WATCHDOG_USEC", "400000", 1);
		unsetenv("WATCHDOG_PID");
		if (refuse)
			setenv("FLAMED_TEST_REFUSE", refuse, 1);
		freopen("/dev/null", "w", stderr);
		execl(flamed, flamed, "--db", db, "--listen", "none", refuse ? "--off-cpu" : (char *)NULL, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* A flamed whose off-CPU program the kernel refuses says so in its READY=1 message: in STATUS= (for
 * systemctl status) and in an X_FLAMED_REFUSED= line per feature left out (flamectl record reads them). */
static void test_daemon_refused(const char *flamed, const char *db)
{
	char sock[64], buf[1024] = "";
	int fd, status = -1;
	pid_t pid;

	snprintf(sock, sizeof(sock), "/tmp/test_notify.r.%d", (int)getpid());
	unlink(sock);
	fd = listen_at(sock);
	pid = start_flamed(flamed, sock, db, "offcpu_switch");
	CHECK(fd >= 0 && pid > 0 && wait_message(fd, buf, sizeof(buf), 15000) && !strncmp(buf, "READY=1\n", 8),
	      "off-CPU refused: READY=1 once sampling all the same");
	CHECK(strstr(buf, "\nSTATUS=sampling ") && strstr(buf, "; left out: off_cpu, off_cpu_ongoing\n"),
	      "off-CPU refused: STATUS= names what was left out (%s)", oneline(buf));
	CHECK(strstr(buf, "\nX_FLAMED_REFUSED=off_cpu: the kernel refused offcpu_switch: Permission denied") &&
	      strstr(buf, "\nX_FLAMED_REFUSED=off_cpu_ongoing: it needs off_cpu, which is off"),
	      "off-CPU refused: an X_FLAMED_REFUSED= line for each, with why");
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "off-CPU refused: exits 0");
	close(fd);
	unlink(sock);
}

static void test_daemon(void)
{
	char sock[64], flamed[4096], db[64], buf[1024] = "";
	const char *build = getenv("BUILD");
	int fd, status = -1, watchdogs = 0;
	pid_t pid;

	if (geteuid() != 0) {
		SKIP("daemon notifications", "flamed loads BPF programs: needs root");
		return;
	}
	snprintf(flamed, sizeof(flamed), "%s/flamed", build ? build : "build");
	snprintf(sock, sizeof(sock), "/tmp/test_notify.d.%d", (int)getpid());
	snprintf(db, sizeof(db), "/tmp/test_notify.%d.db", (int)getpid());
	unlink(sock);
	fd = listen_at(sock);
	pid = start_flamed(flamed, sock, db, NULL);
	CHECK(fd >= 0 && pid > 0, "daemon: started %s", flamed);
	CHECK(wait_message(fd, buf, sizeof(buf), 15000) && !strncmp(buf, "READY=1\nSTATUS=sampling ", 24) &&
	      !strstr(buf, "left out") && !strstr(buf, "X_FLAMED_REFUSED="),
	      "daemon: READY=1 once sampling, with a STATUS= line and nothing left out (%s)", oneline(buf));
	for (int i = 0; i < 5; i++)
		if (wait_message(fd, buf, sizeof(buf), 400) && !strcmp(buf, "WATCHDOG=1"))
			watchdogs++;
	CHECK(watchdogs >= 4, "daemon: WATCHDOG=1 at half of a 400 ms watchdog (%d in 5 waits)", watchdogs);
	kill(pid, SIGTERM);
	while (wait_message(fd, buf, sizeof(buf), 5000) && strcmp(buf, "STOPPING=1"))
		;
	CHECK(!strcmp(buf, "STOPPING=1"), "daemon: STOPPING=1 on SIGTERM");
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "daemon: exits 0");
	close(fd);
	unlink(sock);
	test_daemon_refused(flamed, db);
	unlink(db);
	snprintf(flamed, sizeof(flamed), "%s-wal", db);
	unlink(flamed);
	snprintf(flamed, sizeof(flamed), "%s-shm", db);
	unlink(flamed);
}

int main(void)
{
	char path[64], abstract[64], pid[32];
	int fd;

	unsetenv("NOTIFY_SOCKET");
	CHECK(notify_send("READY=1") == 0, "no NOTIFY_SOCKET: nothing sent, no error");

	snprintf(path, sizeof(path), "/tmp/test_notify.%d", (int)getpid());
	unlink(path);
	fd = listen_at(path);
	CHECK(fd >= 0, "bind %s", path);
	setenv("NOTIFY_SOCKET", path, 1);
	CHECK(notify_send("READY=1") == 1, "a path socket: sent");
	expect_message(fd, "READY=1", "a path socket");
	close(fd);
	unlink(path);

	snprintf(abstract, sizeof(abstract), "@test_notify.%d", (int)getpid());
	fd = listen_at(abstract);
	setenv("NOTIFY_SOCKET", abstract, 1);
	CHECK(fd >= 0 && notify_send("WATCHDOG=1") == 1, "an abstract socket: sent");
	expect_message(fd, "WATCHDOG=1", "an abstract socket");
	close(fd);

	setenv("NOTIFY_SOCKET", "relative/path", 1);
	CHECK(notify_send("READY=1") == -EINVAL, "a relative NOTIFY_SOCKET is refused");

	unsetenv("WATCHDOG_USEC");
	CHECK(notify_watchdog_usec() == 0, "no watchdog");
	setenv("WATCHDOG_USEC", "30000000", 1);
	unsetenv("WATCHDOG_PID");
	CHECK(notify_watchdog_usec() == 30000000, "WATCHDOG_USEC read");
	snprintf(pid, sizeof(pid), "%d", (int)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1);
	CHECK(notify_watchdog_usec() == 0, "a watchdog meant for another pid is ignored");
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	CHECK(notify_watchdog_usec() == 30000000, "a watchdog meant for us");
	setenv("WATCHDOG_USEC", "12x", 1);
	CHECK(notify_watchdog_usec() == 0, "a malformed WATCHDOG_USEC is no watchdog");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	unsetenv("NOTIFY_SOCKET");
	test_daemon();
	return CHECK_EXIT();
}
