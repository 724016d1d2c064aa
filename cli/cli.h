/* cli.h - what flamectl's files share: the parsed command line, exit codes, and how a command's query
 * is run (run.c: over flamed's HTTP API, or against its database). */
#ifndef FLAMED_CLI_H
#define FLAMED_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "query/query.h"
#include "query/services.h"
#include "store/store.h"

#ifndef FLAMED_VERSION
#define FLAMED_VERSION "dev"
#endif

#define DEFAULT_SERVER "http://127.0.0.1:7070"
#define DEFAULT_SINCE (60 * 60)
#define HTTP_TIMEOUT_S 60

/* Exit codes. */
enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

enum command { CMD_NONE, CMD_STATUS, CMD_PROCESSES, CMD_THREADS, CMD_QUERY, CMD_TOP, CMD_FLAMEGRAPH, CMD_DIFF,
	       CMD_TIMELINE, CMD_RECORD, CMD_SERVICES };

/* The commands' names, by enum command. */
extern const char *const command_names[];

/* The parsed command line. */
struct options {
	const char *db, *server;
	const char *token_file;
	const char *cacert, *cert, *key; /* TLS: CAs trusted, a client certificate and its key (NULL: none) */
	enum command command;
	int64_t pid, tid, base_pid;     /* -1: not given */
	const char *comm;
	const char *unit, *container, *pod, *cgroup; /* where the samples ran; NULL: anywhere */
	const char *base_unit, *base_container;      /* diff: the base's (NULL: as the window's) */
	int64_t since;                  /* seconds; 0: not given */
	const char *from_s, *to_s, *base_from_s, *base_to_s; /* as typed, parsed later */
	const char *format;
	enum store_kind kind;           /* --kind: STORE_CPU unless given */
	enum demangle_mode demangle;    /* --demangle: DEMANGLE_SHORT unless given */
	bool kind_given;
	bool children, merge;           /* --children: the process's descendants too; --merge: as one tree */
	const char *output;             /* -o FILE */
	bool reverse, per_thread, lines;
	bool by_service;                /* --group unit: each stack under its process's service */
	const char *title;
	int64_t width, limit, step;     /* -1: not given */
	double minwidth;                /* < 0: not given */
	/* record */
	char **cmd;                     /* the command to run (NULL: --pid) */
	int64_t frequency;              /* --frequency: a private flamed's; -1: not given */
	bool off_cpu;                   /* --off-cpu */
	int64_t duration;               /* --duration: seconds; 0: until the process ends */
	/* top --watch */
	bool watch;
	bool flush;                     /* ask the daemon to store what it sampled first (flush=1) */
	/* derived */
	int64_t from, to, base_from, base_to;
	enum query_format fmt;
};

/* Says what was wrong with the command line and how to get help; returns the usage exit code. */
__attribute__((format(printf, 1, 2))) int usage_error(const char *fmt, ...);

/* The API's address: --server, else $FLAMED_URL, else DEFAULT_SERVER. */
const char *server_url(const struct options *o);

/* The API token: --token-file's first line, else $FLAMED_TOKEN, else "" (none), into token (len
 * bytes). 0, or -errno when the token file cannot be read (why it cannot, in why). */
int api_token(const struct options *o, char *token, size_t len, char *why, size_t whylen);

/* GETs target from flamed's API at url, with the token of --token-file or $FLAMED_TOKEN and the TLS
 * files of --cacert, --cert and --key, as http_get() does (cli/httpget.h). -EBADF when the token file
 * cannot be read (said already). */
int api_get(const struct options *o, const char *url, const char *target, unsigned timeout_s, FILE *out,
	    int *status, char *errbuf, size_t errlen);

/* The message of an API error body ({"error": "..."}), or its first line; body is cut in place. */
const char *api_error(char *body);

/* Runs the command against flamed's API at url; returns the exit code. */
int run_server(const struct options *o, const char *url, FILE *out);

/* Opens the database at path read-only for o's query, with what one CPU sample stands for when
 * o->kind is wall (*period_us; else 0). 0, or -errno with why (and what to do next) in why; *st is
 * NULL then. */
int local_open(const struct options *o, const char *path, struct store **st, int64_t *period_us, char *why,
	       size_t len);

/* Runs the command against the database at path; returns the exit code. */
int run_local(const struct options *o, const char *path, FILE *out);

/* record.c: flamectl record. Runs o->cmd (or follows --pid) and writes its profile; returns the
 * command's exit status (or the exit code of what went wrong before it could run). */
int record_main(struct options *o);

/* watch.c: flamectl top --watch: the top functions of the last --since seconds (default 5), redrawn
 * every second, until q or Ctrl-C. Returns the exit code. */
int watch_main(const struct options *o);

#endif
