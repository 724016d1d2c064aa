/* notify.c - writes sd_notify(3) datagrams to $NOTIFY_SOCKET, without libsystemd. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "notify.h"

int notify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	size_t len;
	ssize_t n;
	int fd;

	if (!path || !path[0])
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(addr.sun_path))
		return -EINVAL;
	memcpy(addr.sun_path, path, len);
	if (path[0] == '@')
		addr.sun_path[0] = '\0'; /* the abstract namespace */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&addr,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
	n = n < 0 ? -errno : 1;
	close(fd);
	return (int)n;
}

uint64_t notify_watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	char *end;
	unsigned long long v;

	if (!usec)
		return 0;
	if (pid && strtoll(pid, NULL, 10) != (long long)getpid())
		return 0;
	errno = 0;
	v = strtoull(usec, &end, 10);
	return errno || end == usec || *end ? 0 : v;
}
