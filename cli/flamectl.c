/* flamectl.c - the command line: asks flamed's HTTP API (--server) or reads its database (--db). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "query/query.h"
#include "store/store.h"
#include "query/window.h"

/* Long options without a short form. */
enum {
	OPT_DB = 256, OPT_SERVER, OPT_PID, OPT_TID, OPT_COMM, OPT_SINCE, OPT_FROM, OPT_TO, OPT_FORMAT,
	OPT_BASE_PID, OPT_BASE_FROM, OPT_BASE_TO, OPT_LINES, OPT_REVERSE, OPT_TITLE, OPT_WIDTH, OPT_MINWIDTH, OPT_LIMIT,
	OPT_STEP, OPT_PER_THREAD, OPT_TOKEN_FILE, OPT_KIND, OPT_CHILDREN, OPT_MERGE, OPT_FREQUENCY, OPT_OFF_CPU,
	OPT_DURATION, OPT_WATCH, OPT_DEMANGLE, OPT_UNIT, OPT_CONTAINER, OPT_POD, OPT_CGROUP, OPT_BASE_UNIT,
	OPT_BASE_CONTAINER, OPT_GROUP, OPT_CACERT, OPT_CERT, OPT_KEY,
};

const char *const command_names[] = {
	[CMD_STATUS] = "status", [CMD_PROCESSES] = "processes", [CMD_THREADS] = "threads",
	[CMD_QUERY] = "query", [CMD_TOP] = "top", [CMD_FLAMEGRAPH] = "flamegraph",
	[CMD_DIFF] = "diff", [CMD_TIMELINE] = "timeline", [CMD_RECORD] = "record", [CMD_SERVICES] = "services",
};

static void print_help(void)
{
	printf("Usage: flamectl [--server URL | --db PATH] COMMAND [OPTION]...\n"
	       "       flamectl record [OPTION]... [--] CMD [ARG]...\n"
	       "\n"
	       "Reads the profiles flamed recorded (CPU samples; with flamed --off-cpu also the time threads\n"
	       "spend blocked): from its HTTP API (default), or straight from its database with --db; or\n"
	       "records one command from its start to its end.\n"
	       "\n"
	       "Commands:\n"
	       "  record -- CMD ...   runs CMD (your terminal, environment and CMD's exit status) and when it\n"
	       "                      ends writes the profile of it and every process it started, over its\n"
	       "                      life: -o FILE (default flamed-record-PID.svg here), --format (default: -o's\n"
	       "                      extension .svg .folded .txt .json .pb.gz .top, else svg). It asks the\n"
	       "                      flamed at --server; when none answers (or it cannot record what is\n"
	       "                      asked) and you are root, it runs a flamed of its own for the while, on\n"
	       "                      a temporary database (--db PATH keeps it). Ctrl-C stops CMD and still\n"
	       "                      writes the profile. record --pid N [--duration D] follows a running\n"
	       "                      process (and its children) until it ends, D passes or Ctrl-C\n"
	       "  status              the daemon's state (with --db: the database's)\n"
	       "  processes           processes by CPU samples in the window, each with its service\n"
	       "  services            systemd units, containers and other cgroups by CPU samples\n"
	       "  threads --pid N     threads of a process by CPU samples\n"
	       "  query --pid N       the process's profile (or --unit's, --container's, --pod's, --cgroup's);\n"
	       "                      --format folded (default: \"process;root;...;leaf COUNT\" lines, for\n"
	       "                      flamegraph.pl or speedscope), json, svg, pprof or top\n"
	       "  top                 functions by self and total samples (whole host, or --pid N); --watch:\n"
	       "                      a live view of the last --since (default 5s), redrawn every second;\n"
	       "                      keys s, t, n sort by self, total, name, p pauses, q quits; plain\n"
	       "                      blocks when piped\n"
	       "  flamegraph -o FILE  an interactive SVG flame graph (whole host, or --pid N)\n"
	       "  diff                the change from a base window (--base-from/--base-to) or another\n"
	       "                      process (--base-pid) to the window: --format folded, json or svg\n"
	       "  timeline            samples per --step seconds, as JSON\n"
	       "\n"
	       "Where to read (before or after the command):\n"
	       "  --server URL        flamed's API (default: $FLAMED_URL when set, else " DEFAULT_SERVER ")\n"
	       "  --db PATH           read flamed's database instead (default when $FLAMED_DB is set)\n"
	       "  --token-file PATH   the API token when flamed has --auth-token-file (or $FLAMED_TOKEN)\n"
	       "  --cacert FILE       trust the CA certificates in FILE (PEM) for an https:// --server\n"
	       "                      (default: the system's)\n"
	       "  --cert FILE         a client certificate (PEM) for a flamed with --tls-client-ca\n"
	       "  --key FILE          its private key (PEM)\n"
	       "\n"
	       "What to read:\n"
	       "  --pid N             one process (0 is the idle task)\n"
	       "  --tid N             one thread of it\n"
	       "  --comm NAME         only processes named NAME\n"
	       "  --unit NAME         only what ran in a systemd unit or slice (nginx.service, system.slice)\n"
	       "  --container ID      only what ran in a container: its id, or a prefix of it naming one\n"
	       "  --pod UID           only what ran in a Kubernetes pod: its uid, or a prefix naming one\n"
	       "  --cgroup PATH       only what ran in a cgroup and those below it (/system.slice/x.service)\n"
	       "  --since DURATION    the last DURATION up to now: seconds (90) or with s, m, h or d (30s, 10m,\n"
	       "                      2h, 7d); default 1h\n"
	       "  --from TIME         start of the window, inclusive: unix seconds (1795000000) or RFC 3339\n"
	       "                      (2026-11-22T10:00:00Z, 2026-11-22T11:00:00+01:00)\n"
	       "  --to TIME           end of the window, exclusive (needs --from; default: now)\n"
	       "  --base-pid N        diff: the process to compare against (default: --pid)\n"
	       "  --base-unit NAME    diff: the unit to compare against (default: the window's --unit ...)\n"
	       "  --base-container ID diff: the container to compare against (either: it alone, over the\n"
	       "                      window unless --base-from/--base-to)\n"
	       "  --base-from TIME    diff: start of the base window (default: the window's length before it)\n"
	       "  --base-to TIME      diff: end of the base window (default: the start of the window)\n"
	       "  --children          with --pid: also every process it started, theirs and so on; each\n"
	       "                      process's stacks under a root frame \"NAME [PID]\"\n"
	       "  --merge             with --children: the family as one tree (one root frame)\n"
	       "  --kind KIND         cpu: CPU samples (default); offcpu: time blocked, in microseconds (flamed\n"
	       "                      --off-cpu); wall: both as time (samples x the sampling period), in\n"
	       "                      microseconds, so a thread's wall-clock profile adds up to its lifetime\n"
	       "\n"
	       "Recording (record):\n"
	       "  --frequency HZ      a flamed of record's own samples at HZ (default 99); a running flamed\n"
	       "                      at another frequency is left alone for one of record's own (root)\n"
	       "  --off-cpu           record the time CMD waits too (default --kind wall then)\n"
	       "  --duration D        with --pid: stop after D (90, 30s, 10m)\n"
	       "\n"
	       "How to show it:\n"
	       "  --format FORMAT     query: folded, json, svg, pprof, top; diff: folded, json, svg;\n"
	       "                      processes, top: json (default: a table, plain when piped)\n"
	       "  -o, --output FILE   write to FILE instead of standard output\n"
	       "  --demangle MODE     C++ and Rust names: short (default: ns::Class<T>::method,\n"
	       "                      crate::module::func), full (parameters, Rust's hash, as c++filt\n"
	       "                      writes them) or none (as the binary names them)\n"
	       "  --group unit        query, flamegraph: each stack under a root frame of its process's service\n"
	       "                      (its systemd unit, its container, else its cgroup)\n"
	       "  --reverse           svg/json: the icicle view, leaf functions first\n"
	       "  --title TEXT        svg: the title\n"
	       "  --width PIXELS      svg: the width, 100-10000 (default 1200)\n"
	       "  --minwidth PIXELS   svg: leave out frames narrower than this (default 0.1)\n"
	       "  --limit N           top: at most N functions\n"
	       "  --lines             top: each line a Python function ran ranks apart, as\n"
	       "                      \"NAME (FILE:LINE)\"\n"
	       "  --step SECONDS      timeline: the step (default 1)\n"
	       "  --per-thread        timeline: a series per thread\n"
	       "  -h, --help          show this help and exit\n"
	       "  -V, --version       show the version and exit\n"
	       "\n"
	       "Exit status: 0 on success (also when there are no samples), 1 on an error, 2 on bad usage;\n"
	       "record: CMD's own (128 + N when a signal N ended it), 127 when CMD cannot run.\n"
	       "\n"
	       "Examples:\n"
	       "  sudo flamectl record -o profile.svg -- python3 app.py\n"
	       "  flamectl record --format folded -o build.folded -- make -j2\n"
	       "  flamectl top --watch --pid 1234 --children\n"
	       "  flamectl processes --since 10m\n"
	       "  flamectl query --pid 1234 --since 10m | flamegraph.pl > cpu.svg\n"
	       "  flamectl flamegraph --pid 1234 -o cpu.svg\n"
	       "  flamectl query --pid 1234 --kind offcpu | flamegraph.pl --countname=us > offcpu.svg\n"
	       "  flamectl query --pid 1234 --format pprof -o cpu.pb.gz && go tool pprof -top cpu.pb.gz\n"
	       "  flamectl diff --pid 1234 --from 2026-11-22T10:05:00Z --to 2026-11-22T10:10:00Z --format svg -o d.svg\n"
	       "  flamectl --db ./flamed.db query --pid 1234 --from 2026-11-22T10:00:00Z --to 2026-11-22T10:05:00Z\n");
}

int usage_error(const char *fmt, ...)
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

static int parse_id(const char *name, const char *s, int64_t *out)
{
	if (!parse_number(s, 0, QUERY_PID_LIMIT, out))
		return usage_error("%s takes an id from 0 to %d, not '%s'", name, QUERY_PID_LIMIT, s);
	return -1;
}

/* A unit, container, pod or cgroup value: not empty, under 512 bytes (the store checks the rest). */
static int group_opt(const char *name, const char *what, const char *arg, const char **out)
{
	*out = arg;
	return arg[0] && strlen(arg) < 512 ? -1 : usage_error("%s needs %s", name, what);
}

static int parse_time_opt(const char *name, const char *s, int64_t *out)
{
	if (window_parse_time(s, out) < 0)
		return usage_error("%s takes unix seconds or an RFC 3339 time like 2026-11-22T10:00:00Z, not '%s'",
				   name, s);
	return -1;
}

static enum command parse_command(const char *s)
{
	for (size_t i = 1; i < sizeof(command_names) / sizeof(command_names[0]); i++)
		if (!strcmp(s, command_names[i]))
			return (enum command)i;
	return CMD_NONE;
}

/* Handles one option; returns -1 to go on or an exit code. */
static int parse_one(int c, const char *arg, const char *opt_text, struct options *o)
{
	char *end;

	switch (c) {
	case OPT_DB: o->db = arg; return arg[0] ? -1 : usage_error("--db needs a path");
	case OPT_SERVER: o->server = arg; return -1;
	case OPT_TOKEN_FILE: o->token_file = arg; return -1;
	case OPT_CACERT: o->cacert = arg; return arg[0] ? -1 : usage_error("--cacert needs a file");
	case OPT_CERT: o->cert = arg; return arg[0] ? -1 : usage_error("--cert needs a file");
	case OPT_KEY: o->key = arg; return arg[0] ? -1 : usage_error("--key needs a file");
	case OPT_PID: return parse_id("--pid", arg, &o->pid);
	case OPT_TID: return parse_id("--tid", arg, &o->tid);
	case OPT_BASE_PID: return parse_id("--base-pid", arg, &o->base_pid);
	case OPT_COMM: o->comm = arg; return arg[0] && strlen(arg) < 256 ? -1 : usage_error("--comm needs a process name");
	case OPT_UNIT: return group_opt("--unit", "a unit name", arg, &o->unit);
	case OPT_CONTAINER: return group_opt("--container", "a container id", arg, &o->container);
	case OPT_POD: return group_opt("--pod", "a pod uid", arg, &o->pod);
	case OPT_CGROUP: return group_opt("--cgroup", "a cgroup path", arg, &o->cgroup);
	case OPT_BASE_UNIT: return group_opt("--base-unit", "a unit name", arg, &o->base_unit);
	case OPT_BASE_CONTAINER: return group_opt("--base-container", "a container id", arg, &o->base_container);
	case OPT_GROUP:
		o->by_service = !strcmp(arg, "unit");
		return o->by_service ? -1 : usage_error("--group takes unit (each stack under its service), not '%s'", arg);
	case OPT_SINCE:
		if (window_parse_duration(arg, &o->since) < 0)
			return usage_error("--since takes a duration like 90, 30s, 10m, 2h or 7d, not '%s'", arg);
		return -1;
	case OPT_FROM: o->from_s = arg; return parse_time_opt("--from", arg, &o->from);
	case OPT_TO: o->to_s = arg; return parse_time_opt("--to", arg, &o->to);
	case OPT_BASE_FROM: o->base_from_s = arg; return parse_time_opt("--base-from", arg, &o->base_from);
	case OPT_BASE_TO: o->base_to_s = arg; return parse_time_opt("--base-to", arg, &o->base_to);
	case OPT_FORMAT: o->format = arg; return -1;
	case OPT_KIND:
		if (query_parse_kind(arg, &o->kind) < 0)
			return usage_error("--kind takes cpu, offcpu or wall, not '%s'", arg);
		o->kind_given = true;
		return -1;
	case OPT_DEMANGLE:
		if (demangle_parse_mode(arg, &o->demangle) < 0)
			return usage_error("--demangle takes short, full or none, not '%s'", arg);
		return -1;
	case OPT_CHILDREN: o->children = true; return -1;
	case OPT_MERGE: o->merge = true; return -1;
	case OPT_OFF_CPU: o->off_cpu = true; return -1;
	case OPT_WATCH: o->watch = true; return -1;
	case OPT_FREQUENCY:
		return parse_number(arg, 1, 10000, &o->frequency) ? -1 : usage_error("--frequency takes 1 to 10000 Hz, not '%s'", arg);
	case OPT_DURATION:
		if (window_parse_duration(arg, &o->duration) < 0 || o->duration < 1 || o->duration > 7 * 86400)
			return usage_error("--duration takes a duration from 1s to 7d like 30, 30s or 10m, not '%s'", arg);
		return -1;
	case 'o': o->output = arg; return arg[0] ? -1 : usage_error("-o needs a file name");
	case OPT_REVERSE: o->reverse = true; return -1;
	case OPT_PER_THREAD: o->per_thread = true; return -1;
	case OPT_LINES: o->lines = true; return -1;
	case OPT_TITLE: o->title = arg; return -1;
	case OPT_WIDTH:
		return parse_number(arg, 100, 10000, &o->width) ? -1 : usage_error("--width takes 100 to 10000 pixels, not '%s'", arg);
	case OPT_LIMIT:
		return parse_number(arg, 1, 100000, &o->limit) ? -1 : usage_error("--limit takes 1 to 100000, not '%s'", arg);
	case OPT_STEP:
		return parse_number(arg, 1, 86400, &o->step) ? -1 : usage_error("--step takes 1 to 86400 seconds, not '%s'", arg);
	case OPT_MINWIDTH:
		errno = 0;
		o->minwidth = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->minwidth >= 0 && o->minwidth <= 1000))
			return usage_error("--minwidth takes 0 to 1000 pixels, not '%s'", arg);
		return -1;
	case 'h': print_help(); return EXIT_OK;
	case 'V': printf("flamectl %s\n", FLAMED_VERSION); return EXIT_OK;
	case ':': return usage_error("option '%s' needs a value", opt_text);
	default: return usage_error("unknown option '%s'", opt_text);
	}
}

/* The formats each command takes, and its default ("" : a table, plain when piped). */
static const struct {
	const char *allowed;
	const char *fallback;
} command_formats[] = {
	[CMD_QUERY] = { "folded json svg pprof top", "folded" },
	[CMD_DIFF] = { "folded json svg", "folded" },
	[CMD_FLAMEGRAPH] = { "svg", "svg" },
	[CMD_THREADS] = { "json", "json" },
	[CMD_TIMELINE] = { "json", "json" },
	[CMD_PROCESSES] = { "json", "" },
	[CMD_SERVICES] = { "json", "" },
	[CMD_TOP] = { "json", "" },
	[CMD_STATUS] = { "json", "" },
	[CMD_RECORD] = { "svg folded json pprof top", "" },
};

/* Is word one of the space-separated words of list? */
static bool in_list(const char *list, const char *word)
{
	size_t l = strlen(word);

	for (const char *p = list; l && (p = strstr(p, word)); p += l)
		if ((p == list || p[-1] == ' ') && (p[l] == '\0' || p[l] == ' '))
			return true;
	return false;
}

static int check_format(struct options *o)
{
	const char *allowed = command_formats[o->command].allowed;

	if (!o->format)
		o->format = command_formats[o->command].fallback;
	else if (!in_list(allowed, o->format))
		return usage_error("%s takes --format %s, not '%s'", command_names[o->command], allowed, o->format);
	if (o->format[0])
		query_parse_format(o->format, &o->fmt);
	return -1;
}

/* The window: --from/--to, else --since (default 1h) up to the current second included. */
static int resolve_window(struct options *o)
{
	int64_t now = (int64_t)time(NULL);

	if (o->since && (o->from_s || o->to_s))
		return usage_error("use either --since or --from/--to, not both");
	if (o->to_s && !o->from_s)
		return usage_error("--to needs --from");
	if (o->from_s) {
		if (!o->to_s)
			o->to = now + 1;
		if (o->from >= o->to)
			return usage_error("the window is empty: --from must be before %s", o->to_s ? "--to" : "now");
	} else {
		int64_t since = o->since ? o->since : DEFAULT_SINCE;

		o->to = now + 1;
		o->from = now < INT64_MIN + since ? INT64_MIN : now - since;
	}
	if (o->command != CMD_DIFF)
		return -1;
	if (!o->base_from_s && !o->base_to_s && o->base_pid < 0 && !o->base_unit && !o->base_container)
		return usage_error("diff needs a base: --base-from TIME [--base-to TIME], --base-pid N, --base-unit NAME "
				   "or --base-container ID");
	if (!o->base_from_s && !o->base_to_s) {
		o->base_from = o->from;
		o->base_to = o->to;
	} else {
		o->base_to = o->base_to_s ? o->base_to : o->from;
		o->base_from = o->base_from_s ? o->base_from : o->base_to - (o->to - o->from);
	}
	if (o->base_from >= o->base_to)
		return usage_error("the base window is empty: --base-from must be before --base-to");
	return -1;
}

/* The extension of a file name ("" when none); ".pb.gz" counts whole. */
static const char *extension(const char *path)
{
	const char *base = strrchr(path, '/'), *dot;
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 6 && !strcmp(base + n - 6, ".pb.gz"))
		return base + n - 6;
	dot = strrchr(base, '.');
	return dot && dot != base ? dot : "";
}

/* record: the format (--format, else -o's extension, else svg), the command or --pid, no window. */
static int validate_record(struct options *o)
{
	static const struct {
		const char *ext, *format;
	} exts[] = { { ".svg", "svg" }, { ".folded", "folded" }, { ".txt", "folded" }, { ".json", "json" },
		     { ".pb.gz", "pprof" }, { ".pprof", "pprof" }, { ".pb", "pprof" }, { ".top", "top" } };
	int code;

	if (!o->cmd && o->pid < 0)
		return usage_error("record needs a command (flamectl record -- CMD [ARGS...]) or --pid N");
	if (o->cmd && o->pid >= 0)
		return usage_error("record takes a command or --pid N, not both");
	if (o->duration && o->cmd)
		return usage_error("--duration is for --pid N: a command is recorded until it ends");
	if (o->tid >= 0 || o->comm || o->since || o->from_s || o->to_s || o->base_pid >= 0 || o->base_from_s ||
	    o->base_to_s || o->children || o->watch || o->step > 0 || o->per_thread || o->unit || o->container ||
	    o->pod || o->cgroup || o->base_unit || o->base_container)
		return usage_error("record takes its window from the command's life: drop --tid, --comm, --since, "
				   "--from, --to, --base-*, --children (always on), --step, --watch, --unit, --container, "
				   "--pod and --cgroup");
	if (!o->format && o->output) {
		const char *ext = extension(o->output);

		for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
			if (!strcmp(ext, exts[i].ext))
				o->format = exts[i].format;
	}
	if (!o->format)
		o->format = "svg";
	if ((code = check_format(o)) >= 0)
		return code;
	if (!o->kind_given && o->off_cpu)
		o->kind = STORE_WALL; /* what --off-cpu is for: running and waiting together */
	if (o->kind != STORE_CPU && !o->off_cpu)
		o->off_cpu = true; /* off-CPU time must be recorded to be shown */
	o->children = true;
	return -1;
}

static int validate(struct options *o)
{
	int code;

	if (o->command == CMD_NONE)
		return usage_error("no command given: try flamectl processes, or flamectl query --pid N");
	if (o->command == CMD_RECORD)
		return validate_record(o);
	if (o->command == CMD_THREADS && o->pid < 0)
		return usage_error("threads needs --pid N");
	if (o->command == CMD_QUERY && o->pid < 0 && !o->unit && !o->container && !o->pod && !o->cgroup)
		return usage_error("query needs --pid N, --unit, --container, --pod or --cgroup");
	if (o->tid >= 0 && o->pid < 0)
		return usage_error("--tid needs --pid");
	if (o->command == CMD_FLAMEGRAPH && !o->output)
		return usage_error("flamegraph needs -o FILE.svg");
	if (o->children && o->pid < 0)
		return usage_error("--children needs --pid N (the process whose descendants to take)");
	if (o->children && o->tid >= 0)
		return usage_error("--children takes a process, not one thread: drop --tid");
	if (o->children && (o->command == CMD_THREADS || o->command == CMD_STATUS))
		return usage_error("%s does not take --children", command_names[o->command]);
	if (o->merge && !o->children)
		return usage_error("--merge needs --children (it folds a process's family into one tree)");
	if ((o->command == CMD_PROCESSES || o->command == CMD_SERVICES) && o->pid >= 0 && !o->children)
		return usage_error("%s takes --pid N with --children (the process and its descendants)",
				   command_names[o->command]);
	if (o->by_service && o->command != CMD_QUERY && o->command != CMD_FLAMEGRAPH)
		return usage_error("--group is for query and flamegraph");
	if ((o->base_unit || o->base_container) && o->command != CMD_DIFF)
		return usage_error("--base-unit and --base-container are for diff");
	if (o->watch && o->command != CMD_TOP)
		return usage_error("--watch is for top");
	if (o->watch && (o->format || o->output))
		return usage_error("top --watch draws a live table: drop --format and -o");
	if (o->watch && !o->since && !o->from_s)
		o->since = 5;
	if ((o->frequency >= 0 || o->off_cpu || o->duration) && o->command != CMD_RECORD)
		return usage_error("--frequency, --off-cpu and --duration are for record");
	if (o->db && o->server)
		return usage_error("use either --db or --server, not both");
	if ((code = check_format(o)) >= 0)
		return code;
	if (o->command == CMD_QUERY && o->fmt == QUERY_PPROF && !o->output && isatty(STDOUT_FILENO))
		return usage_error("pprof is binary: pass -o FILE or pipe it");
	return resolve_window(o);
}

/* Fills o from argv. Returns -1 to go on, or the exit code to end with (--help, --version, bad usage). */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, OPT_DB },
		{ "server", required_argument, NULL, OPT_SERVER },
		{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
		{ "cacert", required_argument, NULL, OPT_CACERT },
		{ "cert", required_argument, NULL, OPT_CERT },
		{ "key", required_argument, NULL, OPT_KEY },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "tid", required_argument, NULL, OPT_TID },
		{ "comm", required_argument, NULL, OPT_COMM },
		{ "unit", required_argument, NULL, OPT_UNIT },
		{ "container", required_argument, NULL, OPT_CONTAINER },
		{ "pod", required_argument, NULL, OPT_POD },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "base-unit", required_argument, NULL, OPT_BASE_UNIT },
		{ "base-container", required_argument, NULL, OPT_BASE_CONTAINER },
		{ "group", required_argument, NULL, OPT_GROUP },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "base-pid", required_argument, NULL, OPT_BASE_PID },
		{ "base-from", required_argument, NULL, OPT_BASE_FROM },
		{ "base-to", required_argument, NULL, OPT_BASE_TO },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		{ "reverse", no_argument, NULL, OPT_REVERSE },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ "width", required_argument, NULL, OPT_WIDTH },
		{ "minwidth", required_argument, NULL, OPT_MINWIDTH },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "step", required_argument, NULL, OPT_STEP },
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "demangle", required_argument, NULL, OPT_DEMANGLE },
		{ "children", no_argument, NULL, OPT_CHILDREN },
		{ "merge", no_argument, NULL, OPT_MERGE },
		{ "frequency", required_argument, NULL, OPT_FREQUENCY },
		{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "watch", no_argument, NULL, OPT_WATCH },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, code;

	opterr = 0;
	/* '-' returns the command (and stray words) in place, so options may come before or after it
	 * even when POSIXLY_CORRECT is set. */
	while ((c = getopt_long(argc, argv, "-:o:hV", longopts, NULL)) != -1) {
		if (c == 1) {
			if (o->command == CMD_RECORD && !o->cmd) {
				/* record's command starts at its first word: the rest are its own */
				o->cmd = argv + optind - 1;
				break;
			}
			if (o->command != CMD_NONE)
				return usage_error("unexpected argument '%s'", optarg);
			o->command = parse_command(optarg);
			if (o->command == CMD_NONE)
				return usage_error("unknown command '%s'", optarg);
			continue;
		}
		if ((code = parse_one(c, optarg, argv[optind - 1], o)) >= 0)
			return code;
	}
	if (o->command == CMD_RECORD && !o->cmd && optind < argc)
		o->cmd = argv + optind; /* after "--" */
	return validate(o);
}
int main(int argc, char **argv)
{
	struct options o = { .pid = -1, .tid = -1, .base_pid = -1, .width = -1, .limit = -1, .step = -1,
			     .minwidth = -1, .frequency = -1 };
	const char *env_db = getenv("FLAMED_DB");
	FILE *out = stdout;
	int code = parse_args(argc, argv, &o);

	if (code >= 0)
		return code;
	if (o.command == CMD_RECORD)
		return record_main(&o);
	if (o.watch)
		return watch_main(&o);
	if (o.output) {
		out = fopen(o.output, "we");
		if (!out) {
			fprintf(stderr, "flamectl: cannot write %s: %s\n", o.output, strerror(errno));
			return EXIT_ERROR;
		}
	}
	if (o.db || (!o.server && env_db && env_db[0]))
		code = run_local(&o, o.db ? o.db : env_db, out);
	else
		code = run_server(&o, server_url(&o), out);
	if (fflush(out) || ferror(out)) {
		if (code == EXIT_OK)
			fprintf(stderr, "flamectl: cannot write the output: %s\n", strerror(errno));
		code = EXIT_ERROR;
	}
	if (out != stdout)
		fclose(out);
	return code;
}
