/* options.h - flamed's command line: its options with their defaults, --help, and the check of every
 * value. */
#ifndef FLAMED_OPTIONS_H
#define FLAMED_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#define FLAMED_DEFAULT_DB "/var/lib/flamed/flamed.db"

/* What flamed was asked to do. */
struct options {
	const char *db;
	unsigned frequency;
	unsigned flush_interval;
	bool include_idle;
	const char *debug_dir;
	unsigned max_stacks;
	unsigned max_keys;
	unsigned symbol_cache_mb;
	bool inline_frames;
	int64_t retention;         /* seconds */
	int64_t raw_retention;     /* seconds of samples per second and thread */
	int64_t minute_retention;  /* seconds of per-minute totals */
	uint64_t max_db_size;      /* bytes */
	int verbose;
	const char *listen;
	const char *auth_token_file;
	const char *tls_cert;      /* PEM certificate chain: serve HTTPS (with tls_key); NULL: plain HTTP */
	const char *tls_key;       /* its PEM private key, readable by its owner only */
	const char *tls_client_ca; /* PEM CAs every client's certificate must come from; NULL: none asked */
	bool insecure_listen;      /* plain HTTP on a non-loopback address is wanted */
	unsigned unwind;           /* enum unwind_mode */
	unsigned unwind_tables_mb;
	unsigned unwind_processes;
	const char *unwind_cache;  /* directory of unwind tables kept by build-id; NULL: beside the database;
				    * "none": not kept */
	unsigned unwind_cache_mb;
	const char *debuginfod;       /* servers to fetch debug files from (--debuginfod, else $DEBUGINFOD_URLS);
				       * NULL: off */
	const char *debuginfod_cache; /* where they are kept; NULL: "debuginfod" beside the database */
	unsigned debuginfod_cache_mb;
	bool python;               /* walk Python frames */
	unsigned python_processes;
	unsigned python_frames;
	unsigned python_code_cache;
	bool off_cpu;              /* count the time threads spend blocked */
	unsigned off_cpu_min_us;   /* shorter waits are not counted */
};

/* Fills o with the defaults, then with what argv says. --help and --version print and exit 0; a bad
 * option or value prints one line naming it and exits 2. */
void options_parse(int argc, char **argv, struct options *o);

#endif
