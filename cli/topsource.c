/* topsource.c - top --watch's snapshots: the window's top functions as JSON, from flamed's API (flush=1)
 * or from its database (the query library), written into a bounded buffer and parsed. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "httpget.h"
#include "topsource.h"
#include "util/capstream.h"
#include "util/utf8.h"

#define MAX_DEPTH 32 /* nesting of a JSON value skipped */

struct topsource {
	const struct options *o;
	const char *db;   /* NULL: the API at url */
	const char *url;
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

static void skip_ws(const char **p)
{
	while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
		(*p)++;
}

static bool eat(const char **p, char c)
{
	skip_ws(p);
	if (**p != c)
		return false;
	(*p)++;
	return true;
}

static int hex4(const char **p, unsigned *cp)
{
	*cp = 0;
	for (int i = 0; i < 4; i++) {
		char c = *(*p)++;

		*cp <<= 4;
		if (c >= '0' && c <= '9')
			*cp |= (unsigned)(c - '0');
		else if ((c | 32) >= 'a' && (c | 32) <= 'f')
			*cp |= (unsigned)((c | 32) - 'a' + 10);
		else
			return -EPROTO;
	}
	return 0;
}

/* One \u escape (after the "\u"), a surrogate pair whole; a lone surrogate reads as U+FFFD. */
static int unicode_escape(const char **p, unsigned *cp)
{
	unsigned lo;

	if (hex4(p, cp))
		return -EPROTO;
	if (*cp >= 0xd800 && *cp < 0xdc00 && (*p)[0] == '\\' && (*p)[1] == 'u') {
		*p += 2;
		if (hex4(p, &lo))
			return -EPROTO;
		*cp = lo >= 0xdc00 && lo < 0xe000 ? 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00) : 0xfffd;
	} else if (*cp >= 0xd800 && *cp < 0xe000) {
		*cp = 0xfffd;
	}
	return 0;
}

/* Reads a JSON string into out (cap > 0 bytes with the NUL; what does not fit is left out; out NULL:
 * skipped). Returns 0 or -EPROTO. */
static int parse_string(const char **p, char *out, size_t cap)
{
	size_t n = 0;
	bool cut = false;

	if (!eat(p, '"'))
		return -EPROTO;
	for (;;) {
		unsigned char c = (unsigned char)*(*p)++;
		unsigned char enc[4];
		size_t len = 1;
		unsigned cp;

		if (c == '"')
			break;
		if (c < 0x20) /* the NUL at the end among them */
			return -EPROTO;
		enc[0] = c;
		if (c == '\\') {
			c = (unsigned char)*(*p)++;
			switch (c) {
			case '"': case '\\': case '/': enc[0] = c; break;
			case 'b': enc[0] = '\b'; break;
			case 'f': enc[0] = '\f'; break;
			case 'n': enc[0] = '\n'; break;
			case 'r': enc[0] = '\r'; break;
			case 't': enc[0] = '\t'; break;
			case 'u':
				if (unicode_escape(p, &cp))
					return -EPROTO;
				len = utf8_encode(cp, enc);
				break;
			default: return -EPROTO;
			}
		}
		if (out && !cut && n + len < cap) {
			memcpy(out + n, enc, len);
			n += len;
		} else {
			cut = true;
		}
	}
	if (out)
		out[n] = '\0';
	return 0;
}

/* Reads a whole number that fits in 64 bits. Returns 0 or -EPROTO. */
static int parse_u64(const char **p, uint64_t *v)
{
	char *end;

	skip_ws(p);
	if (**p < '0' || **p > '9')
		return -EPROTO;
	errno = 0;
	*v = strtoull(*p, &end, 10);
	if (errno || *end == '.' || *end == 'e' || *end == 'E')
		return -EPROTO;
	*p = end;
	return 0;
}

/* Skips any JSON value nested at most depth deep. Returns 0 or -EPROTO. */
static int skip_value(const char **p, int depth)
{
	char close;

	skip_ws(p);
	if (**p == '"')
		return parse_string(p, NULL, 0);
	if (**p != '{' && **p != '[') {
		const char *start = *p;

		while (**p && strchr("-+.0123456789eEtruefalsn", **p))
			(*p)++;
		return *p > start ? 0 : -EPROTO;
	}
	if (depth <= 0)
		return -EPROTO;
	close = **p == '{' ? '}' : ']';
	(*p)++;
	if (eat(p, close))
		return 0;
	do {
		if (close == '}' && (parse_string(p, NULL, 0) || !eat(p, ':')))
			return -EPROTO;
		if (skip_value(p, depth - 1))
			return -EPROTO;
	} while (eat(p, ','));
	return eat(p, close) ? 0 : -EPROTO;
}

/* Appends one function; past TOPSOURCE_MAX_FUNCS it is only counted. Returns 0 or -ENOMEM. */
static int add_fn(struct top_snapshot *snap, size_t *alloc, const char *name, uint64_t self, uint64_t total)
{
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
	snap->fn[snap->n].name = strdup(name);
	if (!snap->fn[snap->n].name)
		return -ENOMEM;
	snap->fn[snap->n].self = self;
	snap->fn[snap->n].total = total;
	snap->n++;
	return 0;
}

/* "functions": [{"name", "self", "total"}, ...]. Returns 0, -EPROTO or -ENOMEM. */
static int parse_functions(const char **p, struct top_snapshot *snap)
{
	char key[16], name[TOPSOURCE_NAME_MAX];
	size_t alloc = 0;
	int err;

	if (!eat(p, '['))
		return -EPROTO;
	if (eat(p, ']'))
		return 0;
	do {
		uint64_t self = 0, total = 0;

		if (!eat(p, '{'))
			return -EPROTO;
		name[0] = '\0';
		do {
			if (parse_string(p, key, sizeof(key)) || !eat(p, ':'))
				return -EPROTO;
			if (!strcmp(key, "name"))
				err = parse_string(p, name, sizeof(name));
			else if (!strcmp(key, "self"))
				err = parse_u64(p, &self);
			else if (!strcmp(key, "total"))
				err = parse_u64(p, &total);
			else
				err = skip_value(p, MAX_DEPTH);
			if (err)
				return err;
		} while (eat(p, ','));
		if (!eat(p, '}'))
			return -EPROTO;
		if ((err = add_fn(snap, &alloc, name, self, total)))
			return err;
	} while (eat(p, ','));
	return eat(p, ']') ? 0 : -EPROTO;
}

/* {"unit", "total", "functions", ...} into snap. Returns 0, -EPROTO or -ENOMEM. */
static int parse_top(const char *json, struct top_snapshot *snap)
{
	const char *p = json;
	char key[16], unit[16];
	bool have_functions = false;
	int err;

	if (!eat(&p, '{'))
		return -EPROTO;
	do {
		if (parse_string(&p, key, sizeof(key)) || !eat(&p, ':'))
			return -EPROTO;
		if (!strcmp(key, "unit")) {
			err = parse_string(&p, unit, sizeof(unit));
			snap->micros = !err && !strcmp(unit, "microseconds");
		} else if (!strcmp(key, "total")) {
			err = parse_u64(&p, &snap->total);
		} else if (!strcmp(key, "functions")) {
			err = parse_functions(&p, snap);
			have_functions = true;
		} else {
			err = skip_value(&p, MAX_DEPTH);
		}
		if (err)
			return err;
	} while (eat(&p, ','));
	return eat(&p, '}') && have_functions ? 0 : -EPROTO;
}

/* --- reading the window ---------------------------------------------------------------------------- */

/* The "error" of a JSON error body, or its first line. */
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
	err = http_get(s->url, target, s->token[0] ? s->token : NULL, TOPSOURCE_TIMEOUT_S, out, &status, body,
		       sizeof(body));
	if (err == -EINVAL)
		say(why, whylen, "--server wants http://HOST[:PORT], not '%s'", s->url);
	else if (err == -EIO || err == -EAGAIN || err == -EWOULDBLOCK)
		say(why, whylen, "%s did not answer in %d s, or broke the connection", s->url, TOPSOURCE_TIMEOUT_S);
	else if (err == -EPROTO)
		say(why, whylen, "%s answered something else than HTTP", s->url);
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
		err = parse_top(buf.data ? buf.data : "", snap);
		if (err == -ENOMEM)
			say(why, whylen, "out of memory for %zu functions", snap->n);
		else if (err)
			say(why, whylen, "%s answered something else than the top table", topsource_where(s));
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
