/* private.h - a flamed of flamectl's own for the length of one `flamectl record`: started on a temporary
 * database (or one the user keeps), without HTTP, ready once it samples every CPU (it says so on a
 * notify socket, as it tells systemd), stopped with its last flush, and nothing left behind. */
#ifndef FLAMECTL_PRIVATE_H
#define FLAMECTL_PRIVATE_H

#include <stdbool.h>

struct private_flamed;

struct private_opts {
	const char *db;        /* the database to write and keep; NULL: a temporary one, deleted */
	unsigned frequency;    /* Hz */
	bool off_cpu;          /* --off-cpu */
	unsigned ready_timeout_s; /* how long flamed may take to start sampling; 0: 60 */
};

/* Starts flamed (the one beside this flamectl, else the first on PATH) and waits until it samples.
 * Returns 0, or -errno with the reason already printed (its log's last lines when it failed to
 * start: not root, BPF refused). *out is set only on success. */
int private_start(const struct private_opts *o, struct private_flamed **out);

/* The database it writes. */
const char *private_db(const struct private_flamed *p);

/* Features flamed names at most as left out. */
#define PRIVATE_REFUSED_MAX 8

/* Why flamed left out the feature named so (as its status names it: "off_cpu", "python", ...) when it
 * was asked for and the kernel refused its program; NULL when it runs. */
const char *private_refused(const struct private_flamed *p, const char *feature);

/* Stops it (SIGTERM: it stores what is pending, then exits) and waits for it. Returns 0, or -EIO
 * when it did not exit cleanly (its log's last lines printed). */
int private_stop(struct private_flamed *p);

/* Stops it if running (SIGKILL after a grace period) and deletes its temporary files (the database
 * too, unless it was the user's); NULL is safe. */
void private_free(struct private_flamed *p);

#endif
