/* bgfetch.c - one topsource fetch at a time on a thread of its own; its end is told through a pipe, so
 * the caller waits for it, keys and signals in one poll. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bgfetch.h"

#define WHY_MAX 512

struct bgfetch {
	struct topsource *src;
	int pipe[2];         /* [0] readable when the fetch ended; [1] written by the thread, once */
	pthread_t thread;
	bool busy;           /* started, not taken */
	/* written by the thread before its byte, read by the caller after it */
	struct top_snapshot snap;
	int err;
	char why[WHY_MAX];
};

int bgfetch_new(struct topsource *src, struct bgfetch **out)
{
	struct bgfetch *b = calloc(1, sizeof(*b));

	*out = NULL;
	if (!b)
		return -ENOMEM;
	if (pipe2(b->pipe, O_CLOEXEC | O_NONBLOCK)) {
		int err = -errno;

		free(b);
		return err;
	}
	b->src = src;
	*out = b;
	return 0;
}

int bgfetch_fd(const struct bgfetch *b)
{
	return b->pipe[0];
}

bool bgfetch_busy(const struct bgfetch *b)
{
	return b->busy;
}

static void *run(void *arg)
{
	struct bgfetch *b = arg;
	ssize_t n;

	b->err = topsource_fetch(b->src, &b->snap, b->why, sizeof(b->why));
	do
		n = write(b->pipe[1], "", 1);
	while (n < 0 && errno == EINTR);
	return NULL;
}

int bgfetch_start(struct bgfetch *b)
{
	int err;

	if (b->busy)
		return -EBUSY;
	memset(&b->snap, 0, sizeof(b->snap));
	b->err = 0;
	b->why[0] = '\0';
	err = pthread_create(&b->thread, NULL, run, b);
	if (err)
		return -err;
	b->busy = true;
	return 0;
}

int bgfetch_take(struct bgfetch *b, struct top_snapshot *snap, char *why, size_t whylen)
{
	char byte;
	ssize_t n;

	if (!b->busy)
		return -EAGAIN;
	do
		n = read(b->pipe[0], &byte, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		return -EAGAIN;
	pthread_join(b->thread, NULL);
	b->busy = false;
	*snap = b->snap;
	memset(&b->snap, 0, sizeof(b->snap));
	if (whylen)
		snprintf(why, whylen, "%s", b->why);
	return b->err;
}

bool bgfetch_free(struct bgfetch *b)
{
	if (!b)
		return true;
	if (b->busy) {
		pthread_detach(b->thread);
		return false;
	}
	close(b->pipe[0]);
	close(b->pipe[1]);
	free(b);
	return true;
}
