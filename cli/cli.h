/* cli.h - what flamectl's files share: the parsed command line, exit codes, and how a command's query
 * is run (run.c: over flamed's HTTP API, or against its database). */
#ifndef FLAMED_CLI_H
#define FLAMED_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "query/query.h"
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
	       CMD_TIMELINE };

/* The commands' names, by enum command. */
extern const char *const command_names[];

/* The parsed command line. */
struct options {
	const char *db, *server;
	const char *token_file;
	enum command command;
	int64_t pid, tid, base_pid;     /* -1: not given */
	const char *comm;
	int64_t since;                  /* seconds; 0: not given */
	const char *from_s, *to_s, *base_from_s, *base_to_s; /* as typed, parsed later */
	const char *format;
	enum store_kind kind;           /* --kind: STORE_CPU unless given */
	const char *output;             /* -o FILE */
	bool reverse, per_thread, lines;
	const char *title;
	int64_t width, limit, step;     /* -1: not given */
	double minwidth;                /* < 0: not given */
	/* derived */
	int64_t from, to, base_from, base_to;
	enum query_format fmt;
};

/* Runs the command against flamed's API at url; returns the exit code. */
int run_server(const struct options *o, const char *url, FILE *out);

/* Runs the command against the database at path; returns the exit code. */
int run_local(const struct options *o, const char *path, FILE *out);

#endif
