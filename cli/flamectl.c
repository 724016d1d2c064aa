/* flamectl.c - the command line: reads the profiles flamed stored and prints them. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "render/folded.h"
#include "store.h"
#include "window.h"

#ifndef FLAMED_VERSION
#define FLAMED_VERSION "dev"
#endif

#define DEFAULT_DB "/var/lib/flamed/flamed.db"
#define DEFAULT_SINCE (60 * 60)
/* The largest pid Linux hands out (PID_MAX_LIMIT on 64-bit: the highest pid_max accepts). */
#define PID_LIMIT 4194304

/* Exit codes. */
enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

/* Long options without a short form. */
enum { OPT_DB = 256, OPT_PID, OPT_TID, OPT_SINCE, OPT_FROM, OPT_TO, OPT_FORMAT };

/* The parsed command line. */
struct options {
	const char *db;
	const char *command;
	int64_t pid, tid;             /* -1: not given */
	int64_t since;                /* seconds; 0: not given */
	int64_t from, to;             /* valid when has_from / has_to */
	bool has_from, has_to;
	const char *format;
};

/* What the query callback needs. */
struct print_ctx {
	FILE *out;
	uint64_t lines;
	int write_errno; /* errno of a failed write, 0 when none */
};

static void print_help(void)
{
	printf("Usage: flamectl [--db PATH] query --pid N [--tid N] [--since DURATION | --from TIME [--to TIME]]\n"
	       "                [--format folded]\n"
	       "\n"
	       "Prints the CPU profile flamed recorded for a process, read from flamed's database.\n"
	       "\n"
	       "Commands:\n"
	       "  query               print the stacks the process ran, most samples first, one per line:\n"
	       "                      \"process;root;...;leaf COUNT\" (pipe into flamegraph.pl, inferno or\n"
	       "                      speedscope for a flame graph)\n"
	       "\n"
	       "Options (before or after the command):\n"
	       "  --db PATH           flamed's database (default: $FLAMED_DB when set, else\n"
	       "                      " DEFAULT_DB ")\n"
	       "  --pid N             the process to show (required)\n"
	       "  --tid N             only this thread of the process\n"
	       "  --since DURATION    the last DURATION up to now: a number of seconds (90) or a number with\n"
	       "                      s, m, h or d (30s, 10m, 2h, 7d); default 1h\n"
	       "  --from TIME         start of the window, inclusive: unix seconds (1795000000) or RFC 3339\n"
	       "                      (2026-11-22T10:00:00Z, 2026-11-22T11:00:00+01:00)\n"
	       "  --to TIME           end of the window, exclusive (needs --from; default: now)\n"
	       "  --format FORMAT     output format; only folded for now (json, svg, pprof and top come\n"
	       "                      with the HTTP API)\n"
	       "  -h, --help          show this help and exit\n"
	       "  -V, --version       show the version and exit\n"
	       "\n"
	       "Exit status: 0 on success (also when there are no samples), 1 on an error, 2 on bad usage.\n"
	       "\n"
	       "Examples:\n"
	       "  flamectl query --pid 1234\n"
	       "  flamectl query --pid 1234 --since 10m | flamegraph.pl > cpu.svg\n"
	       "  flamectl --db ./flamed.db query --pid 1234 --from 2026-11-22T10:00:00Z --to 2026-11-22T10:05:00Z\n");
}

/* Says what was wrong with the command line and how to get help; returns the usage exit code. */
__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("flamectl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\ntry flamectl --help\n", stderr);
	return EXIT_USAGE;
}

/* Parses a whole decimal number in [min, max]: no sign, no spaces, no trailing text. */
static bool parse_number(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* Fills o from argv. Returns -1 to go on, or the exit code to end with (--help, --version, bad usage). */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, OPT_DB },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "tid", required_argument, NULL, OPT_TID },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	/* '-': arguments that are not options come back in order as code 1, so options work before and
	 * after the command even under POSIXLY_CORRECT; ':': report a missing value as ':' ourselves. */
	while ((c = getopt_long(argc, argv, "-:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 1:
			if (o->command)
				return usage_error("unexpected argument '%s'", optarg);
			if (strcmp(optarg, "query") != 0)
				return usage_error("unknown command '%s' (the command is query)", optarg);
			o->command = optarg;
			break;
		case OPT_DB:
			if (!optarg[0])
				return usage_error("--db needs a path");
			o->db = optarg;
			break;
		case OPT_PID:
			if (!parse_number(optarg, 0, PID_LIMIT, &o->pid))
				return usage_error("--pid takes a process id from 0 (idle) to %d, not '%s'", PID_LIMIT, optarg);
			break;
		case OPT_TID:
			if (!parse_number(optarg, 0, PID_LIMIT, &o->tid))
				return usage_error("--tid takes a thread id from 0 to %d, not '%s'", PID_LIMIT, optarg);
			break;
		case OPT_SINCE:
			if (window_parse_duration(optarg, &o->since) < 0)
				return usage_error("--since takes a duration like 90, 30s, 10m, 2h or 7d, not '%s'", optarg);
			break;
		case OPT_FROM:
			if (window_parse_time(optarg, &o->from) < 0)
				return usage_error("--from takes unix seconds or an RFC 3339 time like "
						   "2026-11-22T10:00:00Z, not '%s'", optarg);
			o->has_from = true;
			break;
		case OPT_TO:
			if (window_parse_time(optarg, &o->to) < 0)
				return usage_error("--to takes unix seconds or an RFC 3339 time like "
						   "2026-11-22T10:00:00Z, not '%s'", optarg);
			o->has_to = true;
			break;
		case OPT_FORMAT:
			o->format = optarg;
			break;
		case 'h':
			print_help();
			return EXIT_OK;
		case 'V':
			printf("flamectl %s\n", FLAMED_VERSION);
			return EXIT_OK;
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			/* optopt names an unknown short option; for a long one, it is 0. */
			if (optopt > 0 && optopt < 256)
				return usage_error("unknown option '-%c'", optopt);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}

	if (!o->command)
		return usage_error("no command given: flamectl query --pid N");
	if (o->pid < 0)
		return usage_error("query needs --pid N");
	if (o->format && strcmp(o->format, "folded") != 0) {
		if (!strcmp(o->format, "json") || !strcmp(o->format, "svg") || !strcmp(o->format, "pprof") ||
		    !strcmp(o->format, "top"))
			return usage_error("--format %s is not supported yet: use --format folded", o->format);
		return usage_error("unknown format '%s': use --format folded", o->format);
	}
	if (o->since && (o->has_from || o->has_to))
		return usage_error("use either --since or --from/--to, not both");
	if (o->has_to && !o->has_from)
		return usage_error("--to needs --from");
	return -1;
}

/* The database path: --db, else $FLAMED_DB, else the daemon's default. */
static const char *db_path(const struct options *o)
{
	const char *env = getenv("FLAMED_DB");

	if (o->db)
		return o->db;
	return env && env[0] ? env : DEFAULT_DB;
}

static int print_stack(const char *comm, const char *folded, uint64_t count, void *ctx)
{
	struct print_ctx *p = ctx;
	int err;

	errno = 0;
	err = render_folded_line(p->out, comm, folded, count);
	if (err) {
		p->write_errno = errno ? errno : EIO;
		return err;
	}
	p->lines++;
	return 0;
}

/* Explains why the database at path could not be opened, with what to do next. */
static void open_error(const char *path, int err)
{
	switch (err) {
	case -ENOENT:
		fprintf(stderr, "flamectl: no database at %s: is flamed running? pass --db PATH or set FLAMED_DB\n", path);
		break;
	case -EACCES:
	case -EPERM:
		fprintf(stderr, "flamectl: cannot read %s: %s: run as root or as a user who can read it\n", path, strerror(-err));
		break;
	case -EIO:
		fprintf(stderr, "flamectl: cannot read %s: it is corrupt or not an SQLite database: pass the path of flamed's database\n", path);
		break;
	case -EINVAL:
		fprintf(stderr, "flamectl: %s is not a flamed database: pass the path of flamed's database\n", path);
		break;
	case -ENOTSUP:
		fprintf(stderr, "flamectl: %s was written by a newer flamed: upgrade flamectl\n", path);
		break;
	default:
		fprintf(stderr, "flamectl: cannot open the database %s: %s\n", path, strerror(-err));
		break;
	}
}

/* Runs the query command; returns the exit code. */
static int run_query(const struct options *o)
{
	const char *path = db_path(o);
	struct store_filter f = { .pid = o->pid, .tid = o->tid };
	struct print_ctx p = { .out = stdout };
	struct store *st = NULL;
	int64_t now = (int64_t)time(NULL);
	int err, code = EXIT_OK;

	/* The current second counts: the window ends just after it unless --to says otherwise. */
	if (o->has_from) {
		f.from = o->from;
		f.to = o->has_to ? o->to : now + 1;
		if (f.from >= f.to)
			return usage_error("the window is empty: --from must be before %s", o->has_to ? "--to" : "now");
	} else {
		int64_t since = o->since ? o->since : DEFAULT_SINCE;

		f.to = now + 1;
		f.from = now < INT64_MIN + since ? INT64_MIN : now - since;
	}

	err = store_open(path, STORE_READ_ONLY, &st);
	if (err) {
		open_error(path, err);
		return EXIT_ERROR;
	}
	err = store_query_stacks(st, &f, print_stack, &p);
	if (err && p.write_errno) {
		fprintf(stderr, "flamectl: cannot write the output: %s\n", strerror(p.write_errno));
		code = EXIT_ERROR;
	} else if (err) {
		fprintf(stderr, "flamectl: cannot query %s: %s\n", path, store_errmsg(st));
		code = EXIT_ERROR;
	}
	store_close(st);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (code == EXIT_OK)
			fprintf(stderr, "flamectl: cannot write the output: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	if (code == EXIT_OK && p.lines == 0 && isatty(STDOUT_FILENO))
		fprintf(stderr, "flamectl: no samples for pid %lld in that window: widen it with --since or --from\n",
			(long long)o->pid);
	return code;
}

int main(int argc, char **argv)
{
	struct options o = { .pid = -1, .tid = -1 };
	int code = parse_args(argc, argv, &o);

	if (code >= 0)
		return code;
	return run_query(&o);
}
