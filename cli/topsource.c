/* topsource.c - top --watch's snapshots: the window's top functions as JSON, from flamed's API (flush=1)
 * or from its database (the query library), written into a bounded buffer and parsed. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "httpget.h"
#include "jsonread.h"
#include "topsource.h"
#include "util/capstream.h"

struct topsource {
	const struct options *o;
	const char *db;   /* NULL: the API at url */
	const char *url;
	struct http_tls tls;
	char token[512];  /* "": none */
};

__attribute__((format(printf, 3, 4))) static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

int topsource_new(const struct options *o, struct topsource **out, char *why, size_t whylen)
{
	const char *env_db = getenv("FLAMED_DB");
	struct topsource *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->o = o;
	s->db = o->db ? o->db : !o->server && env_db && env_db[0] ? env_db : NULL;
	s->url = server_url(o);
	s->tls = (struct http_tls){ .cacert = o->cacert, .cert = o->cert, .key = o->key };
	if (!s->db && (err = api_token(o, s->token, sizeof(s->token), why, whylen))) {
		free(s);
		return err;
	}
	*out = s;
	return 0;
}

bool topsource_local(const struct topsource *s)
{
	return s->db != NULL;
}

const char *topsource_where(const struct topsource *s)
{
	return s->db ? s->db : s->url;
}

/* --- the JSON of a top table ---------------------------------------------------------------------- */

/* Appends one function (its name cut to TOPSOURCE_NAME_MAX - 1 bytes on a character boundary); past
 * TOPSOURCE_MAX_FUNCS it is only counted. Returns 0 or -ENOMEM. */
static int add_fn(struct top_snapshot *snap, size_t *alloc, const char *name, uint64_t self, uint64_t total)
{
	size_t len = strlen(name);

	if (snap->n >= TOPSOURCE_MAX_FUNCS) {
		snap->left_out++;
		return 0;
	}
	if (snap->n == *alloc) {
		size_t grown = *alloc ? *alloc * 2 : 256;
		struct top_fn *fn = realloc(snap->fn, grown * sizeof(*fn));

		if (!fn)
			return -ENOMEM;
		snap->fn = fn;
		*alloc = grown;
	}
	if (len > TOPSOURCE_NAME_MAX - 1) { /* cut before a character's continuation bytes */
		len = TOPSOURCE_NAME_MAX - 1;
		while (len && ((unsigned char)name[len] & 0xc0) == 0x80)
			len--;
	}
	snap->fn[snap->n].name = strndup(name, len);
	if (!snap->fn[snap->n].name)
		return -ENOMEM;
	snap->fn[snap->n].self = self;
	snap->fn[snap->n].total = total;
	snap->n++;
	return 0;
}

/* {"unit", "total", "functions": [{"name", "self", "total"}, ...]} (len bytes at json) into snap, each
 * field's type checked. Returns 0, -EPROTO (why names what is wrong) or -ENOMEM. */
static int parse_top(const char *json, size_t len, struct top_snapshot *snap, char *why, size_t whylen)
{
	struct json_object *top, *fns;
	const char *unit = NULL;
	size_t n = 0, alloc = 0;
	int err = jr_parse(json, len, &top, why, whylen);

	if (err)
		return err;
	if ((err = jr_u64(top, "total", &snap->total, why, whylen)) ||
	    (err = jr_array(top, "functions", &fns, &n, why, whylen)))
		goto out;
	if (!jr_string(top, "unit", &unit, why, whylen))
		snap->micros = !strcmp(unit, "microseconds");
	for (size_t i = 0; i < n && !err; i++) {
		struct json_object *f = json_object_array_get_idx(fns, i);
		const char *name;
		uint64_t self, total;

		if (!json_object_is_type(f, json_type_object)) {
			snprintf(why, whylen, "the answer's functions[%zu] is not an object", i);
			err = -EPROTO;
		} else if (!(err = jr_string(f, "name", &name, why, whylen)) && !(err = jr_u64(f, "self", &self, why, whylen)) &&
			   !(err = jr_u64(f, "total", &total, why, whylen))) {
			err = add_fn(snap, &alloc, name, self, total);
		}
	}
out:
	json_object_put(top);
	return err == -ENOENT ? -EPROTO : err;
}

/* --- reading the window ---------------------------------------------------------------------------- */

/* Appends name=v to the request's target t (len bytes). Returns 0 or -ENOSPC. */
static int add_num(char *t, size_t len, const char *name, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	return http_add_param(t, len, name, buf);
}

/* GETs /api/v1/top for the window ending now (on the server's clock) into out. */
static int fetch_api(struct topsource *s, FILE *out, char *why, size_t whylen)
{
	const struct options *o = s->o;
	char target[4096] = "/api/v1/top", body[1024], since[32];
	int status = 0, err = 0;

	if (o->kind != STORE_CPU)
		err |= http_add_param(target, sizeof(target), "kind", query_kind_name(o->kind));
	if (o->pid >= 0)
		err |= add_num(target, sizeof(target), "pid", o->pid);
	if (o->tid >= 0)
		err |= add_num(target, sizeof(target), "tid", o->tid);
	if (o->children)
		err |= http_add_param(target, sizeof(target), "children", "1");
	if (o->children && o->merge)
		err |= http_add_param(target, sizeof(target), "merge", "1");
	if (o->comm)
		err |= http_add_param(target, sizeof(target), "comm", o->comm);
	if (o->from_s) {
		err |= add_num(target, sizeof(target), "from", o->from);
		if (o->to_s)
			err |= add_num(target, sizeof(target), "to", o->to);
	} else {
		snprintf(since, sizeof(since), "-%llds", (long long)o->since);
		err |= http_add_param(target, sizeof(target), "from", since);
	}
	if (o->lines)
		err |= http_add_param(target, sizeof(target), "lines", "1");
	err |= http_add_param(target, sizeof(target), "format", "json");
	err |= http_add_param(target, sizeof(target), "flush", "1");
	if (err) {
		say(why, whylen, "the request is too long");
		return -ENOSPC;
	}
	err = http_get(s->url, &s->tls, target, s->token[0] ? s->token : NULL, TOPSOURCE_TIMEOUT_S, out, &status,
		       body, sizeof(body));
	if (err == -EINVAL)
		say(why, whylen, "--server wants http[s]://HOST[:PORT], not '%s'", s->url);
	else if (err == -EPROTO)
		say(why, whylen, "cannot read %s: %s", s->url, body); /* TLS refused, a malformed answer */
	else if (err)
		say(why, whylen, "cannot reach %s: %s%s", s->url, strerror(-err),
		    err == -ECONNREFUSED ? " (is flamed running?)" : "");
	if (err)
		return err;
	if (status / 100 != 2) {
		say(why, whylen, "%s answered %d: %s%s", s->url, status, api_error(body),
		    status == 401 ? " (pass --token-file PATH or set FLAMED_TOKEN)" : "");
		return -EPROTO;
	}
	return 0;
}

/* Runs the window ending now (on this clock) against the database into out. */
static int fetch_db(struct topsource *s, FILE *out, char *why, size_t whylen)
{
	const struct options *o = s->o;
	int64_t now = (int64_t)time(NULL), period = 0;
	struct store_filter f = { .pid = o->pid, .tid = o->tid, .comm = o->comm, .kind = o->kind,
				  .children = o->children, .merge = o->children && o->merge };
	struct store *st = NULL;
	int err = local_open(o, s->db, &st, &period, why, whylen);

	if (err)
		return err;
	f.from = o->from_s ? o->from : now - o->since;
	f.to = o->to_s ? o->to : now + 1;
	f.cpu_period_us = period;
	err = query_top_json(st, &f, 0, o->lines, out);
	if (err)
		say(why, whylen, "cannot query %s: %s", s->db, store_errmsg(st));
	store_close(st);
	return err;
}

int topsource_fetch(struct topsource *s, struct top_snapshot *snap, char *why, size_t whylen)
{
	struct capstream buf;
	FILE *out;
	int err;

	topsource_clear(snap);
	why[0] = '\0';
	out = capstream_open(&buf, TOPSOURCE_MAX_BODY);
	if (!out) {
		say(why, whylen, "out of memory");
		return -ENOMEM;
	}
	err = s->db ? fetch_db(s, out, why, whylen) : fetch_api(s, out, why, whylen);
	if (fclose(out) && !err)
		err = -EIO;
	if (buf.full) {
		say(why, whylen, "the answer is over %u MiB: narrow it down (--pid, --since)", TOPSOURCE_MAX_BODY >> 20);
		err = -EFBIG;
	} else if (buf.nomem) {
		say(why, whylen, "out of memory for the answer");
		err = -ENOMEM;
	} else if (!err) {
		char detail[256] = "";

		err = parse_top(buf.data ? buf.data : "", buf.data ? buf.len : 0, snap, detail, sizeof(detail));
		if (err == -ENOMEM)
			say(why, whylen, "out of memory for %zu functions", snap->n);
		else if (err)
			say(why, whylen, "%s answered something else than the top table: %s", topsource_where(s), detail);
		if (err)
			topsource_clear(snap);
	}
	if (err && !why[0])
		say(why, whylen, "%s", strerror(-err));
	free(buf.data);
	return err;
}

void topsource_clear(struct top_snapshot *snap)
{
	for (size_t i = 0; i < snap->n; i++)
		free(snap->fn[i].name);
	free(snap->fn);
	memset(snap, 0, sizeof(*snap));
}

void topsource_free(struct topsource *s)
{
	free(s);
}
