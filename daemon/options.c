/* options.c - flamed's command line: the defaults, --help, and each option's value checked (a bad one
 * names itself and exits 2). */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/types.h> /* profile.h needs __u32 */

#include "http/http.h"
#include "options.h"
#include "profile.h"
#include "query/window.h"

static const struct options defaults = {
	.python = true,
	.python_processes = 1024,
	.python_frames = PROFILE_MAX_DEPTH,
	.python_code_cache = 16384,
	.unwind = UNWIND_MODE_AUTO,
	.unwind_tables_mb = 64,
	.unwind_processes = 1024,
	.unwind_cache_mb = 256,
	.debuginfod_cache_mb = 1024,
	.listen = "127.0.0.1:7070",
	.db = FLAMED_DEFAULT_DB,
	.frequency = 19,
	.flush_interval = 10,
	.debug_dir = "/usr/lib/debug",
	.max_stacks = 0, /* auto */
	.max_keys = 16384,
	.symbol_cache_mb = 64,
	.retention = 7 * 24 * 3600,
	.raw_retention = 3600,
	.minute_retention = 24 * 3600,
	.max_db_size = 1ULL << 30,
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: flamed [OPTION]...\n"
		"System-wide CPU profiler: samples every CPU with BPF, names every frame and stores\n"
		"folded stacks in SQLite. Needs root, or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and\n"
		"CAP_SYSLOG. Stops on SIGINT or SIGTERM after storing what is pending; SIGHUP reads\n"
		"the TLS certificate and key again.\n"
		"\n"
		"  --db PATH              SQLite database, created if missing (default %s)\n"
		"  --listen ADDR:PORT     serve the HTTP API there (default\n"
		"                         127.0.0.1:7070; [::1]:PORT for IPv6; port 0 picks one;\n"
		"                         'none' serves nothing); a non-loopback address needs\n"
		"                         --tls-cert and --tls-key, or --insecure-listen\n"
		"  --tls-cert FILE        serve HTTPS with this PEM certificate chain (server's\n"
		"                         certificate first); both files are read again on SIGHUP,\n"
		"                         the listener kept\n"
		"  --tls-key FILE         its PEM private key, owned by flamed's user and not\n"
		"                         readable by group or others\n"
		"  --tls-client-ca FILE   require a client certificate signed by one of these PEM\n"
		"                         CAs (mutual TLS): others fail in the handshake\n"
		"  --insecure-listen      allow plain HTTP on a non-loopback --listen address\n"
		"  --auth-token-file PATH every request but /healthz and the dashboard page must\n"
		"                         carry 'Authorization: Bearer TOKEN', TOKEN being the\n"
		"                         file's first line; the file must not be readable by\n"
		"                         group or others (chmod 600)\n"
		"  --frequency HZ         samples per second per CPU, 1-10000 (default 19)\n"
		"  --flush-interval S     seconds between drains to the database, 1-3600 (default 10)\n"
		"  --include-idle         also count the idle task (pid 0)\n"
		"  --inline               show inlined functions as frames of their own, marked _[i],\n"
		"                         where DWARF is found (debug files, -g binaries); costs\n"
		"                         memory: about 12 MiB for libc's debug info\n"
		"  --debug-dir DIR        root of separate debug files (default /usr/lib/debug)\n"
		"  --debuginfod URLS      fetch the debug file of a binary with no symbols but its\n"
		"                         dynamic ones and none under --debug-dir from these\n"
		"                         debuginfod servers (space-separated), in the background;\n"
		"                         its frames are named once it is there, those stored before\n"
		"                         too (default: $DEBUGINFOD_URLS; 'none', or neither: off)\n"
		"  --debuginfod-cache DIR where fetched debug files are kept (default: debuginfod\n"
		"                         beside the database)\n"
		"  --debuginfod-cache-mb N  disk for them, 1-1048576 (default 1024); the least\n"
		"                         recently used are deleted first, a larger file not fetched\n"
		"  --max-stacks N         distinct stacks kept per flush, 256-1048576 (default: two\n"
		"                         per CPU per tick of a flush, so that every sample fits,\n"
		"                         at least 8192); each takes about 1 KiB of kernel memory\n"
		"                         while it waits for the flush; more are counted as lost\n"
		"  --max-keys N           distinct (thread, second, stack) keys per flush,\n"
		"                         256-4194304 (default 16384); more are counted as lost\n"
		"  --retention DURATION   keep samples this long (90m, 12h, 7d; default 7d)\n"
		"  --raw-retention DURATION  keep samples per second and thread this long (default\n"
		"                         1h); older ones are kept per minute, then per hour, without\n"
		"                         threads: threads, tid filters and per-thread timelines see\n"
		"                         this window only\n"
		"  --minute-retention DURATION  keep per-minute totals this long (default 1d; at least\n"
		"                         an hour more than --raw-retention); older time is kept per hour\n"
		"  --max-db-size BYTES    keep the database under this size, deleting the oldest\n"
		"                         samples first (500M, 2G; default 1G)\n"
		"  --symbol-cache-mb N    memory for the symbol tables of cached binaries, 1-65536\n"
		"                         (default 64); the least recently used are dropped first,\n"
		"                         but not those one flush's stacks use (PyTorch's take more:\n"
		"                         the cache then holds them, counted as over the bound)\n"
		"  --unwind MODE          how user stacks are walked: 'auto' (default) with the\n"
		"                         unwind tables (.eh_frame) of a process's binaries, and\n"
		"                         frame pointers where there are none; 'dwarf' tables\n"
		"                         only; 'fp' frame pointers only (no tables are built)\n"
		"  --unwind-tables-mb N   kernel memory for unwind tables, 1-65536 (default 64);\n"
		"                         about 0.5 MiB for python3.11, 0.2 MiB for libc; tables of\n"
		"                         binaries no process runs are dropped first\n"
		"  --unwind-processes N   processes given unwind tables at once, 16-65536 (default\n"
		"                         1024; 8 KiB of kernel memory each); more use frame pointers\n"
		"  --unwind-cache DIR     keep the unwind tables built there, by build-id, so that a\n"
		"                         restart reads them instead of building them again (default:\n"
		"                         unwind-cache beside the database; 'none' keeps none)\n"
		"  --unwind-cache-mb N    disk for it, 1-65536 (default 256; libLLVM's takes 7.3 MiB);\n"
		"                         the least recently used tables are deleted first\n"
		"  --python on|off        name Python functions (CPython 3.8-3.15) in every stack,\n"
		"                         walked from each thread's own interpreter state where the\n"
		"                         eval loop runs, in place of its native frames (default on;\n"
		"                         not with --unwind fp)\n"
		"  --python-processes N   Python processes walked at once, 16-65536 (default 1024;\n"
		"                         about 120 bytes of kernel memory each); more are counted\n"
		"                         and keep their native frames only\n"
		"  --python-frames N      Python frames kept per stack, 1-127 (default 127); a deeper\n"
		"                         Python stack is cut (its outermost frames) and counted\n"
		"  --python-code-cache N  code objects whose names and line tables are kept,\n"
		"                         256-1048576 (default 16384, at most 1 KiB each on average);\n"
		"                         the least recently used go first\n"
		"  --off-cpu              also count the time threads spend blocked (sleeping or in\n"
		"                         uninterruptible waits), by stack, at each context switch:\n"
		"                         a BPF run per switch, about 1.5%% of a context-switch\n"
		"                         storm's throughput (docs/BENCHMARKS.md); query it with\n"
		"                         flamectl --kind offcpu|wall\n"
		"  --off-cpu-min-us N     waits shorter than N microseconds are not counted,\n"
		"                         0-1000000000 (default 0)\n"
		"  -v, --verbose          log when sampling began and each flush (samples, keys, its\n"
		"                         length, when it drained the maps) and its stacks; twice\n"
		"                         (-vv): libbpf's debug output too\n"
		"  -h, --help             show this help and exit\n"
		"  -V, --version          show the version and exit\n"
		"\n"
		"Read the profiles with: flamectl query --pid N, or curl http://127.0.0.1:7070/api/v1/profile?pid=N\n",
		FLAMED_DEFAULT_DB);
}

__attribute__((noreturn, format(printf, 1, 2)))
static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("flamed: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\ntry 'flamed --help'\n", stderr);
	exit(2);
}

static unsigned parse_uint(const char *name, const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		die_usage("%s wants a whole number from %u to %u, not '%s'", name, lo, hi, s);
	return (unsigned)v;
}

/* Parses BYTES with an optional K, M or G (powers of 1024), at least 1 MiB. */
static uint64_t parse_size(const char *name, const char *s)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		shift = 10, end++;
	else if (*end == 'M' || *end == 'm')
		shift = 20, end++;
	else if (*end == 'G' || *end == 'g')
		shift = 30, end++;
	if (errno || end == s || *end || s[0] == '-' || v > (UINT64_MAX >> 30) || (v << shift) < (1ULL << 20))
		die_usage("%s wants a size of at least 1M like 500M or 2G, not '%s'", name, s);
	return (uint64_t)v << shift;
}

/* A duration of a rollup window: a minute to 366 days. */
static int64_t parse_window(const char *name, const char *s)
{
	int64_t v;

	if (window_parse_duration(s, &v) < 0 || v < 60 || v > 366 * 24 * 3600)
		die_usage("%s wants a duration from a minute to 366 days like 90m, 12h or 7d, not '%s'", name, s);
	return v;
}

static bool parse_on_off(const char *name, const char *s)
{
	if (!strcmp(s, "on"))
		return true;
	if (!strcmp(s, "off"))
		return false;
	die_usage("%s wants on or off, not '%s'", name, s);
}

static unsigned parse_unwind(const char *s)
{
	if (!strcmp(s, "fp"))
		return UNWIND_MODE_FP;
	if (!strcmp(s, "dwarf"))
		return UNWIND_MODE_DWARF;
	if (!strcmp(s, "auto"))
		return UNWIND_MODE_AUTO;
	die_usage("--unwind wants fp, dwarf or auto, not '%s'", s);
}

void options_parse(int argc, char **argv, struct options *o)
{
	struct sockaddr_storage addr;
	unsigned addr_len;
	enum { O_DB = 256, O_LISTEN, O_AUTH, O_INLINE, O_SYMCACHE, O_RETENTION, O_MAX_DB, O_FREQ, O_FLUSH, O_IDLE, O_DEBUG_DIR, O_MAX_STACKS, O_MAX_KEYS, O_UNWIND, O_UNWIND_MB, O_UNWIND_PROCS, O_RAW_RET, O_MIN_RET, O_PYTHON, O_PY_PROCS, O_PY_FRAMES, O_PY_CODES, O_OFF_CPU, O_OFF_CPU_MIN, O_UNWIND_CACHE, O_UNWIND_CACHE_MB, O_DEBUGINFOD, O_DEBUGINFOD_CACHE, O_DEBUGINFOD_MB, O_TLS_CERT, O_TLS_KEY, O_TLS_CA, O_INSECURE };
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, O_DB },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "auth-token-file", required_argument, NULL, O_AUTH },
		{ "tls-cert", required_argument, NULL, O_TLS_CERT },
		{ "tls-key", required_argument, NULL, O_TLS_KEY },
		{ "tls-client-ca", required_argument, NULL, O_TLS_CA },
		{ "insecure-listen", no_argument, NULL, O_INSECURE },
		{ "frequency", required_argument, NULL, O_FREQ },
		{ "flush-interval", required_argument, NULL, O_FLUSH },
		{ "include-idle", no_argument, NULL, O_IDLE },
		{ "inline", no_argument, NULL, O_INLINE },
		{ "debug-dir", required_argument, NULL, O_DEBUG_DIR },
		{ "max-stacks", required_argument, NULL, O_MAX_STACKS },
		{ "max-keys", required_argument, NULL, O_MAX_KEYS },
		{ "symbol-cache-mb", required_argument, NULL, O_SYMCACHE },
		{ "retention", required_argument, NULL, O_RETENTION },
		{ "max-db-size", required_argument, NULL, O_MAX_DB },
		{ "raw-retention", required_argument, NULL, O_RAW_RET },
		{ "minute-retention", required_argument, NULL, O_MIN_RET },
		{ "unwind", required_argument, NULL, O_UNWIND },
		{ "unwind-tables-mb", required_argument, NULL, O_UNWIND_MB },
		{ "unwind-processes", required_argument, NULL, O_UNWIND_PROCS },
		{ "unwind-cache", required_argument, NULL, O_UNWIND_CACHE },
		{ "unwind-cache-mb", required_argument, NULL, O_UNWIND_CACHE_MB },
		{ "debuginfod", required_argument, NULL, O_DEBUGINFOD },
		{ "debuginfod-cache", required_argument, NULL, O_DEBUGINFOD_CACHE },
		{ "debuginfod-cache-mb", required_argument, NULL, O_DEBUGINFOD_MB },
		{ "python", required_argument, NULL, O_PYTHON },
		{ "python-processes", required_argument, NULL, O_PY_PROCS },
		{ "python-frames", required_argument, NULL, O_PY_FRAMES },
		{ "python-code-cache", required_argument, NULL, O_PY_CODES },
		{ "off-cpu", no_argument, NULL, O_OFF_CPU },
		{ "off-cpu-min-us", required_argument, NULL, O_OFF_CPU_MIN },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;

	*o = defaults;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vhV", longopts, NULL)) != -1) {
		switch (c) {
		case O_DB: o->db = optarg; break;
		case O_LISTEN: o->listen = optarg; break;
		case O_AUTH: o->auth_token_file = optarg; break;
		case O_TLS_CERT: o->tls_cert = optarg; break;
		case O_TLS_KEY: o->tls_key = optarg; break;
		case O_TLS_CA: o->tls_client_ca = optarg; break;
		case O_INSECURE: o->insecure_listen = true; break;
		case O_FREQ: o->frequency = parse_uint("--frequency", optarg, 1, 10000); break;
		case O_FLUSH: o->flush_interval = parse_uint("--flush-interval", optarg, 1, 3600); break;
		case O_IDLE: o->include_idle = true; break;
		case O_INLINE: o->inline_frames = true; break;
		case O_DEBUG_DIR: o->debug_dir = optarg; break;
		case O_MAX_STACKS: o->max_stacks = parse_uint("--max-stacks", optarg, 256, 1 << 20); break;
		case O_MAX_KEYS: o->max_keys = parse_uint("--max-keys", optarg, 256, 1 << 22); break;
		case O_SYMCACHE: o->symbol_cache_mb = parse_uint("--symbol-cache-mb", optarg, 1, 65536); break;
		case O_RETENTION:
			if (window_parse_duration(optarg, &o->retention) < 0 || o->retention < 60)
				die_usage("--retention wants a duration of at least a minute like 90m, 12h or 7d, not '%s'",
					  optarg);
			break;
		case O_MAX_DB: o->max_db_size = parse_size("--max-db-size", optarg); break;
		case O_RAW_RET: o->raw_retention = parse_window("--raw-retention", optarg); break;
		case O_MIN_RET: o->minute_retention = parse_window("--minute-retention", optarg); break;
		case O_UNWIND: o->unwind = parse_unwind(optarg); break;
		case O_UNWIND_MB: o->unwind_tables_mb = parse_uint("--unwind-tables-mb", optarg, 1, 65536); break;
		case O_UNWIND_PROCS: o->unwind_processes = parse_uint("--unwind-processes", optarg, 16, 65536); break;
		case O_UNWIND_CACHE: o->unwind_cache = optarg; break;
		case O_UNWIND_CACHE_MB: o->unwind_cache_mb = parse_uint("--unwind-cache-mb", optarg, 1, 65536); break;
		case O_DEBUGINFOD: o->debuginfod = optarg; break;
		case O_DEBUGINFOD_CACHE: o->debuginfod_cache = optarg; break;
		case O_DEBUGINFOD_MB: o->debuginfod_cache_mb = parse_uint("--debuginfod-cache-mb", optarg, 1, 1 << 20); break;
		case O_PYTHON: o->python = parse_on_off("--python", optarg); break;
		case O_PY_PROCS: o->python_processes = parse_uint("--python-processes", optarg, 16, 65536); break;
		case O_PY_FRAMES: o->python_frames = parse_uint("--python-frames", optarg, 1, PROFILE_MAX_DEPTH); break;
		case O_PY_CODES: o->python_code_cache = parse_uint("--python-code-cache", optarg, 256, 1 << 20); break;
		case O_OFF_CPU: o->off_cpu = true; break;
		case O_OFF_CPU_MIN: o->off_cpu_min_us = parse_uint("--off-cpu-min-us", optarg, 0, 1000000000); break;
		case 'v': o->verbose++; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("flamed %s\n", FLAMED_VERSION); exit(0);
		case ':': die_usage("%s needs a value", argv[optind - 1]);
		default: die_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (!o->db[0])
		die_usage("--db needs a path");
	if (o->unwind_cache && !o->unwind_cache[0])
		die_usage("--unwind-cache needs a directory (or 'none')");
	if (o->debuginfod_cache && !o->debuginfod_cache[0])
		die_usage("--debuginfod-cache needs a directory");
	if (!o->debuginfod)
		o->debuginfod = getenv("DEBUGINFOD_URLS");
	if (o->debuginfod && (!strcmp(o->debuginfod, "none") || !o->debuginfod[strspn(o->debuginfod, " \t")]))
		o->debuginfod = NULL;
	if (!o->tls_cert != !o->tls_key)
		die_usage("--tls-cert and --tls-key go together: the certificate chain and its private key (PEM)");
	if (o->tls_client_ca && !o->tls_cert)
		die_usage("--tls-client-ca needs --tls-cert and --tls-key: client certificates are asked for over HTTPS");
	if (strcmp(o->listen, "none") && !o->tls_cert && !o->insecure_listen &&
	    !http_parse_listen(o->listen, &addr, &addr_len) && !http_addr_is_loopback(&addr))
		die_usage("--listen %s is not a loopback address: every profile, command line and the bearer token "
			  "would cross the network in clear text. Serve HTTPS with --tls-cert FILE --tls-key FILE, "
			  "or pass --insecure-listen if plain HTTP there is wanted", o->listen);
	if (o->minute_retention < o->raw_retention + 3600)
		die_usage("--minute-retention must be at least an hour more than --raw-retention");
}
