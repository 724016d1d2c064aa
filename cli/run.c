/* run.c - runs a command's query: over flamed's HTTP API (the request built from the options) or
 * against its database (the query library called directly). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli.h"
#include "httpget.h"
#include "jsonread.h"
#include "symbolize/latenames.h"

/* Says in why (len bytes) why the database at path could not be opened, with what to do next. */
static void open_error(const char *path, int err, char *why, size_t len)
{
	switch (err) {
	case -ENOENT:
		snprintf(why, len, "no database at %s: is flamed running? pass --db PATH or set FLAMED_DB", path);
		break;
	case -EACCES:
	case -EPERM:
		snprintf(why, len, "cannot read %s: %s: run as root or as a user who can read it", path, strerror(-err));
		break;
	case -EIO:
		snprintf(why, len, "cannot read %s: it is corrupt or not an SQLite database: pass the path of flamed's database", path);
		break;
	case -EINVAL:
		snprintf(why, len, "%s is not a flamed database: pass the path of flamed's database", path);
		break;
	case -ENOTSUP:
		snprintf(why, len, "%s was written by a newer flamed: upgrade flamectl", path);
		break;
	default:
		snprintf(why, len, "cannot open the database %s: %s", path, strerror(-err));
		break;
	}
}

static struct latenames *late; /* names frames stored unnamed, for the database read directly */

static void late_free(void)
{
	latenames_free(late);
}

/* Sets st's namer: frames stored unnamed are named from debug files under /usr/lib/debug or fetched by
 * flamed into debuginfod/ beside the database, and JIT code from the jitdump files still there, as
 * flamed's own answers name them. Without it (out of memory) they read as stored. */
static void set_namer(struct store *st, const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];

	if (!late) {
		snprintf(dir, sizeof(dir), "%.*sdebuginfod", slash ? (int)(slash - path + 1) : 0, path);
		if (latenames_new(&(struct latenames_opts){ .cache_dir = dir }, &late) < 0)
			return;
		atexit(late_free);
	}
	store_set_namer(st, &(struct store_namer){ .name = latenames_name, .ctx = late });
}

int local_open(const struct options *o, const char *path, struct store **st, int64_t *period_us, char *why,
	       size_t len)
{
	int err = store_open(path, STORE_READ_ONLY, st);

	*period_us = 0;
	if (err) {
		open_error(path, err, why, len);
		return err;
	}
	set_namer(*st, path);
	if (o->kind == STORE_WALL && o->command != CMD_STATUS && (err = store_cpu_period(*st, period_us))) {
		if (err == -ENOENT)
			snprintf(why, len, "%s does not say what a CPU sample stands for (an older flamed wrote it): "
				 "--kind wall cannot be read from it; use --kind cpu or offcpu", path);
		else
			snprintf(why, len, "cannot read %s: %s", path, store_errmsg(*st));
		store_close(*st);
		*st = NULL;
	}
	return err;
}

/* Runs the command against the database; returns 0 or -errno (the store's message in *why).
 * period_us: what one CPU sample stands for, for --kind wall. */
static int run_db(struct store *st, const struct options *o, int64_t period_us, FILE *out)
{
	struct store_filter f = { .pid = o->pid, .tid = o->tid, .from = o->from, .to = o->to, .comm = o->comm,
				  .kind = o->kind, .cpu_period_us = period_us, .children = o->children, .merge = o->merge,
				  .demangle = o->demangle, .unit = o->unit, .container = o->container, .pod = o->pod,
				  .cgroup = o->cgroup };
	struct store_filter base = { .pid = o->base_pid >= 0 ? o->base_pid : o->pid, .tid = -1,
				     .from = o->base_from, .to = o->base_to, .comm = o->comm,
				     .kind = o->kind, .cpu_period_us = period_us, .children = o->children,
				     .merge = o->merge, .demangle = o->demangle, .unit = o->unit, .container = o->container,
				     .pod = o->pod, .cgroup = o->cgroup };
	struct query_graph g = {
		.reverse = o->reverse, .title = o->title, .width = o->width > 0 ? (unsigned)o->width : 0,
		.minwidth = o->minwidth, .lines = o->lines, .by_service = o->by_service,
	};
	bool tty = isatty(fileno(out));
	struct store_stats ss;
	int64_t oldest, newest;
	int err;

	if (o->base_unit || o->base_container) /* the base's cgroups are those alone, as the API takes them */
		base.unit = o->base_unit, base.container = o->base_container, base.pod = base.cgroup = NULL;

	switch (o->command) {
	case CMD_STATUS:
		err = store_get_stats(st, &ss);
		if (err)
			return err;
		if (store_time_range(st, &oldest, &newest))
			oldest = newest = 0;
		if (!strcmp(o->format, "json"))
			fprintf(out, "{\"db_bytes\":%llu,\"stacks\":%llu,\"sample_rows\":%llu,\"oldest\":%lld,\"newest\":%lld}\n",
				(unsigned long long)ss.db_bytes, (unsigned long long)ss.stacks,
				(unsigned long long)ss.sample_rows, (long long)oldest, (long long)newest);
		else
			fprintf(out, "db_bytes\t%llu\nstacks\t%llu\nsample_rows\t%llu\noldest\t%lld\nnewest\t%lld\n",
				(unsigned long long)ss.db_bytes, (unsigned long long)ss.stacks,
				(unsigned long long)ss.sample_rows, (long long)oldest, (long long)newest);
		return 0;
	case CMD_PROCESSES:
		return query_processes(st, &f, !strcmp(o->format, "json"), tty, out);
	case CMD_SERVICES:
		return query_services(st, &f, !strcmp(o->format, "json"), tty, out);
	case CMD_THREADS:
		return query_threads(st, &f, out);
	case CMD_QUERY:
	case CMD_FLAMEGRAPH:
		return query_profile(st, &f, o->command == CMD_FLAMEGRAPH ? QUERY_SVG : o->fmt, &g,
				     o->limit > 0 ? (unsigned)o->limit : 0, out);
	case CMD_TOP:
		if (!strcmp(o->format, "json"))
			return query_top_json(st, &f, o->limit > 0 ? (unsigned)o->limit : 0, o->lines, out);
		return query_top_text(st, &f, o->limit > 0 ? (unsigned)o->limit : 0, tty, o->lines, out);
	case CMD_DIFF:
		return query_diff(st, &base, &f, o->fmt, &g, out);
	case CMD_TIMELINE:
		return query_timeline(st, &f, o->step > 0 ? o->step : 1, o->per_thread, out);
	case CMD_NONE:
	case CMD_RECORD:
		break;
	}
	return -EINVAL;
}

static void add_num(char *t, size_t len, const char *name, int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	http_add_param(t, len, name, buf);
}

/* Builds the API path and query string for the command. */
static void build_target(const struct options *o, bool tty, char *t, size_t len)
{
	static const char *const paths[] = {
		[CMD_STATUS] = "/api/v1/status", [CMD_PROCESSES] = "/api/v1/processes",
		[CMD_THREADS] = "/api/v1/threads", [CMD_QUERY] = "/api/v1/profile",
		[CMD_TOP] = "/api/v1/top", [CMD_FLAMEGRAPH] = "/api/v1/profile",
		[CMD_DIFF] = "/api/v1/diff", [CMD_TIMELINE] = "/api/v1/timeline", [CMD_SERVICES] = "/api/v1/services",
	};
	char buf[32];

	snprintf(t, len, "%s", paths[o->command]);
	if (o->command == CMD_STATUS) {
		http_add_param(t, len, "format", o->format[0] ? o->format : "text");
		return;
	}
	if (o->kind != STORE_CPU)
		http_add_param(t, len, "kind", query_kind_name(o->kind));
	if (o->demangle != DEMANGLE_SHORT &&
	    (o->command == CMD_QUERY || o->command == CMD_TOP || o->command == CMD_DIFF || o->command == CMD_FLAMEGRAPH))
		http_add_param(t, len, "demangle", demangle_mode_name(o->demangle));
	if (o->pid >= 0)
		add_num(t, len, "pid", o->pid);
	if (o->tid >= 0)
		add_num(t, len, "tid", o->tid);
	if (o->children)
		http_add_param(t, len, "children", "1");
	if (o->merge && o->command != CMD_PROCESSES && o->command != CMD_DIFF)
		http_add_param(t, len, "merge", "1");
	if (o->comm)
		http_add_param(t, len, "comm", o->comm);
	if (o->unit)
		http_add_param(t, len, "unit", o->unit);
	if (o->container)
		http_add_param(t, len, "container", o->container);
	if (o->pod)
		http_add_param(t, len, "pod", o->pod);
	if (o->cgroup)
		http_add_param(t, len, "cgroup", o->cgroup);
	add_num(t, len, "from", o->from);
	add_num(t, len, "to", o->to);
	if (o->command == CMD_DIFF) {
		if (o->base_pid >= 0)
			add_num(t, len, "base_pid", o->base_pid);
		if (o->base_unit)
			http_add_param(t, len, "base_unit", o->base_unit);
		if (o->base_container)
			http_add_param(t, len, "base_container", o->base_container);
		add_num(t, len, "base_from", o->base_from);
		add_num(t, len, "base_to", o->base_to);
	}
	if (o->command == CMD_FLAMEGRAPH)
		http_add_param(t, len, "format", "svg");
	else if (o->command == CMD_PROCESSES || o->command == CMD_TOP || o->command == CMD_SERVICES)
		http_add_param(t, len, "format", o->format[0] ? o->format : tty ? "text" : "tsv");
	else if (o->command != CMD_THREADS && o->command != CMD_TIMELINE)
		http_add_param(t, len, "format", o->format);
	if (o->by_service && (o->command == CMD_QUERY || o->command == CMD_FLAMEGRAPH))
		http_add_param(t, len, "group", "unit");
	if (o->reverse)
		http_add_param(t, len, "reverse", "1");
	if (o->title)
		http_add_param(t, len, "title", o->title);
	if (o->width > 0)
		add_num(t, len, "width", o->width);
	if (o->minwidth >= 0) {
		snprintf(buf, sizeof(buf), "%g", o->minwidth);
		http_add_param(t, len, "minwidth", buf);
	}
	if (o->limit > 0)
		add_num(t, len, "limit", o->limit);
	if (o->lines && (o->command == CMD_TOP || o->command == CMD_QUERY))
		http_add_param(t, len, "lines", "1");
	if (o->command == CMD_TIMELINE) {
		add_num(t, len, "step", o->step > 0 ? o->step : 1);
		if (o->per_thread)
			http_add_param(t, len, "per_thread", "1");
	}
	if (o->flush)
		http_add_param(t, len, "flush", "1");
}

/* The "error" string of a JSON error body, or the body's first line; body is cut in place. */
static const char *error_text(char *body)
{
	struct json_object *o;
	const char *msg;
	char why[128];

	if (!jr_parse(body, strlen(body), &o, why, sizeof(why))) {
		if (!jr_string(o, "error", &msg, why, sizeof(why)))
			snprintf(body, strlen(body) + 1, "%s", msg); /* no longer than the JSON holding it */
		json_object_put(o);
	}
	body[strcspn(body, "\n")] = '\0';
	return body;
}

const char *server_url(const struct options *o)
{
	const char *env_url = getenv("FLAMED_URL");

	return o->server ? o->server : env_url && env_url[0] ? env_url : DEFAULT_SERVER;
}

int api_token(const struct options *o, char *token, size_t len, char *why, size_t whylen)
{
	const char *env = getenv("FLAMED_TOKEN");
	FILE *f;
	int err;

	snprintf(token, len, "%s", env && !o->token_file ? env : "");
	if (!o->token_file)
		return 0;
	f = fopen(o->token_file, "re");
	if (!f || !fgets(token, (int)len, f)) {
		err = f ? -EINVAL : -errno;
		snprintf(why, whylen, "cannot read the token file %s%s%s", o->token_file, f ? "" : ": ", f ? "" : strerror(-err));
		if (f)
			fclose(f);
		token[0] = '\0';
		return err;
	}
	fclose(f);
	token[strcspn(token, "\r\n")] = '\0';
	return 0;
}

int api_get(const struct options *o, const char *url, const char *target, unsigned timeout_s, FILE *out,
	    int *status, char *errbuf, size_t errlen)
{
	struct http_tls tls = { .cacert = o->cacert, .cert = o->cert, .key = o->key };
	char token[512], why[512];
	int err = api_token(o, token, sizeof(token), why, sizeof(why));

	if (err) {
		fprintf(stderr, "flamectl: %s\n", why);
		return -EBADF;
	}
	err = http_get(url, &tls, target, token[0] ? token : NULL, timeout_s, out, status, errbuf, errlen);
	explicit_bzero(token, sizeof(token));
	return err;
}

const char *api_error(char *body)
{
	return error_text(body);
}

/* Runs the command against flamed's API; returns the exit code. */
int run_server(const struct options *o, const char *url, FILE *out)
{
	char target[4096], err_body[1024];
	int status = 0, err;

	build_target(o, isatty(fileno(out)), target, sizeof(target));
	err = api_get(o, url, target, HTTP_TIMEOUT_S, out, &status, err_body, sizeof(err_body));
	if (err == -EBADF)
		return EXIT_ERROR;
	if (err == -EINVAL) {
		fprintf(stderr, "flamectl: --server wants http[s]://HOST[:PORT], not '%s'\n", url);
		return EXIT_USAGE;
	}
	if (err) {
		fprintf(stderr, "flamectl: cannot read %s: %s%s\n", url, err == -EPROTO ? err_body : strerror(-err),
			err == -ECONNREFUSED ? " (is flamed running? start it, or pass --db PATH to read its database)" :
			err == -EPROTO && !o->cert && !strncmp(url, "https:", 6) ?
			" (if flamed has --tls-client-ca, pass --cert FILE --key FILE)" : "");
		return EXIT_ERROR;
	}
	if (status / 100 != 2) {
		fprintf(stderr, "flamectl: %s answered %d: %s%s\n", url, status, error_text(err_body),
			status == 401 ? " (pass --token-file PATH or set FLAMED_TOKEN)" : "");
		return EXIT_ERROR;
	}
	return EXIT_OK;
}

int run_local(const struct options *o, const char *path, FILE *out)
{
	struct store *st = NULL;
	int64_t period_us = 0;
	char why[768];
	int err = local_open(o, path, &st, &period_us, why, sizeof(why));

	if (err) {
		fprintf(stderr, "flamectl: %s\n", why);
		return EXIT_ERROR;
	}
	err = run_db(st, o, period_us, out);
	if (err)
		fprintf(stderr, "flamectl: cannot query %s: %s\n", path,
			err == -EIO && ferror(out) ? "cannot write the output" : store_errmsg(st));
	store_close(st);
	return err ? EXIT_ERROR : EXIT_OK;
}
