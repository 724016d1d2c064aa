/* services.c - where samples ran, in the words people use: a cgroup path read (util/cgname.h) into the
 * unit, container and pod fields of the processes listing, and the window's services (a container, a
 * systemd unit, else the cgroup itself) by samples, from the store's per-cgroup totals. */
#include "query/services.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "render/json.h"
#include "render/unit.h"
#include "util/cgname.h"

void services_json_fields(FILE *out, const char *cgroup)
{
	struct cgname n;

	if (cgname_parse(cgroup, &n) < 0)
		memset(&n, 0, sizeof(n)), n.runtime = n.qos = "";
	fputs(",\"cgroup\":", out);
	json_write_string(out, cgroup);
	fputs(",\"unit\":", out);
	json_write_string(out, n.unit);
	fputs(",\"slice\":", out);
	json_write_string(out, n.slice);
	fprintf(out, ",\"container\":\"%s\",\"runtime\":\"%s\",\"pod\":\"%s\",\"qos\":\"%s\"", n.container, n.runtime,
		n.pod, n.qos);
}

const char *services_short(const char *cgroup, char *buf, size_t cap)
{
	struct cgname n;

	if (cgname_parse(cgroup, &n) < 0)
		snprintf(buf, cap, "-");
	else if (n.container[0])
		snprintf(buf, cap, "%.12s", n.container);
	else
		snprintf(buf, cap, "%s", n.unit[0] ? n.unit : cgroup);
	return buf;
}

/* One service: the cgroups that make it. */
struct service {
	char kind[10];
	char key[CGNAME_PATH_MAX]; /* container id, unit name or cgroup path; "" none */
	struct cgname name;        /* of its first cgroup */
	uint64_t samples;
	uint32_t processes;
	char **paths;
	size_t npaths;
};

struct services {
	struct service *s;
	size_t n, cap;
	uint64_t total;
};

/* Puts cgroup c into its service (a linear search: a window holds few services). */
static int add_cgroup(const struct store_cgroup_total *c, void *ctx)
{
	struct services *l = ctx;
	struct cgname n;
	const char *kind, *key;
	struct service *s = NULL;
	char **np;

	if (cgname_parse(c->path, &n) < 0)
		kind = "none", key = "", memset(&n, 0, sizeof(n)), n.runtime = n.qos = "";
	else if (n.container[0])
		kind = "container", key = n.container;
	else if (n.unit[0])
		kind = "unit", key = n.unit;
	else
		kind = "cgroup", key = c->path;
	for (size_t i = 0; i < l->n && !s; i++)
		if (!strcmp(l->s[i].kind, kind) && !strcmp(l->s[i].key, key))
			s = &l->s[i];
	if (!s) {
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 16;
			struct service *ns = reallocarray(l->s, cap, sizeof(*ns));

			if (!ns)
				return -ENOMEM;
			l->s = ns;
			l->cap = cap;
		}
		s = &l->s[l->n++];
		*s = (struct service){ .name = n };
		snprintf(s->kind, sizeof(s->kind), "%s", kind);
		snprintf(s->key, sizeof(s->key), "%s", key);
	}
	np = reallocarray(s->paths, s->npaths + 1, sizeof(*np));
	if (!np)
		return -ENOMEM;
	s->paths = np;
	if (!(s->paths[s->npaths] = strdup(c->path)))
		return -ENOMEM;
	s->npaths++;
	s->samples += c->samples;
	s->processes += c->processes;
	l->total += c->samples;
	return 0;
}

static int cmp_services(const void *x, const void *y)
{
	const struct service *a = x, *b = y;

	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	return strcmp(a->key, b->key);
}

static void write_json(FILE *out, const struct services *l, enum unit unit)
{
	fprintf(out, "{\"unit\":\"%s\",\"total\":%" PRIu64 ",\"services\":[", unit_name(unit), l->total);
	for (size_t i = 0; i < l->n; i++) {
		const struct service *s = &l->s[i];

		fprintf(out, "%s{\"kind\":\"%s\",\"name\":", i ? "," : "", s->kind);
		json_write_string(out, s->key);
		fputs(",\"unit\":", out);
		json_write_string(out, s->name.unit);
		fputs(",\"slice\":", out);
		json_write_string(out, s->name.slice);
		fprintf(out, ",\"container\":\"%s\",\"runtime\":\"%s\",\"pod\":\"%s\",\"qos\":\"%s\",\"samples\":%" PRIu64
			",\"share\":%.4f,\"processes\":%u,\"cgroups\":[", s->name.container, s->name.runtime, s->name.pod,
			s->name.qos, s->samples, l->total ? (double)s->samples / (double)l->total : 0.0, s->processes);
		for (size_t j = 0; j < s->npaths; j++) {
			fputs(j ? "," : "", out);
			json_write_string(out, s->paths[j]);
		}
		fputs("]}", out);
	}
	fputs("]}\n", out);
}

static void write_text(FILE *out, const struct services *l, bool tty, enum unit unit)
{
	char amount[UNIT_BUF];

	if (tty)
		fprintf(out, "%-9s  %-40s %12s %7s %6s  %s\n", "KIND", "SERVICE", unit == UNIT_MICROS ? "TIME" : "SAMPLES",
			"SHARE", "PROCS", "POD");
	for (size_t i = 0; i < l->n; i++) {
		const struct service *s = &l->s[i];
		const char *name = s->key[0] ? s->key : "-";

		if (!tty) {
			fprintf(out, "%s\t%s\t%" PRIu64 "\t%u\n", s->kind, name, s->samples, s->processes);
			continue;
		}
		if (unit == UNIT_MICROS)
			unit_amount(amount, s->samples, unit);
		else
			snprintf(amount, sizeof(amount), "%" PRIu64, s->samples);
		fprintf(out, "%-9s  %-40.*s %12s %6.2f%% %6u  %s\n", s->kind, !strcmp(s->kind, "container") ? 12 : 200,
			name, amount, l->total ? 100.0 * (double)s->samples / (double)l->total : 0.0, s->processes,
			s->name.pod[0] ? s->name.pod : "");
	}
}

int query_services(struct store *st, const struct store_filter *f, bool json, bool tty, FILE *out)
{
	struct services l = { 0 };
	enum unit unit = f && f->kind != STORE_CPU ? UNIT_MICROS : UNIT_SAMPLES;
	int err = store_query_cgroups(st, f, add_cgroup, &l);

	if (!err && l.n)
		qsort(l.s, l.n, sizeof(*l.s), cmp_services);
	if (!err && json)
		write_json(out, &l, unit);
	else if (!err)
		write_text(out, &l, tty, unit);
	if (!err && ferror(out))
		err = -EIO;
	for (size_t i = 0; i < l.n; i++) {
		for (size_t j = 0; j < l.s[i].npaths; j++)
			free(l.s[i].paths[j]);
		free(l.s[i].paths);
	}
	free(l.s);
	return err;
}
