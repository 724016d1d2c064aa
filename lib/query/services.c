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

/* The service of the cgroup at path, read by cgname_parse into *n (every field "" when it refused path):
 * its kind, "container" (*key its id), "unit" (its unit), "cgroup" (the path) or "none" (""). */
static const char *service_of(const char *path, struct cgname *n, const char **key)
{
	if (cgname_parse(path, n) < 0)
		return *key = "", "none";
	if (n->container[0])
		return *key = n->container, "container";
	if (n->unit[0])
		return *key = n->unit, "unit";
	return *key = path, "cgroup";
}

void services_json_fields(FILE *out, const char *cgroup)
{
	struct cgname n;

	cgname_parse(cgroup, &n); /* refused ("", no path): every field "" */
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
	const char *key, *kind = service_of(cgroup, &n, &key);

	if (!strcmp(kind, "container"))
		snprintf(buf, cap, "%.12s", key);
	else
		snprintf(buf, cap, "%s", key[0] ? key : "-");
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
	const char *key, *kind = service_of(c->path, &n, &key);
	struct service *s = NULL;
	char **np;

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

/* One process of a services_map. */
struct proc_service {
	uint32_t pid;
	char *cgroup, *unit, *service;
	char container[65];
};

struct services_map {
	struct proc_service *p;
	size_t n, cap;
};

static int add_process(const struct store_process *p, void *ctx)
{
	struct services_map *m = ctx;
	struct proc_service *e;
	struct cgname n;
	const char *key, *kind = service_of(p->cgroup, &n, &key);
	char service[CGNAME_FIELD_MAX + 32];

	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct proc_service *np = reallocarray(m->p, cap, sizeof(*np));

		if (!np)
			return -ENOMEM;
		m->p = np;
		m->cap = cap;
	}
	if (!strcmp(kind, "none"))
		snprintf(service, sizeof(service), "[no cgroup]");
	else if (!strcmp(kind, "container"))
		snprintf(service, sizeof(service), "%s %.12s", n.runtime[0] ? n.runtime : "container", key);
	else
		snprintf(service, sizeof(service), "%s", key);
	e = &m->p[m->n];
	*e = (struct proc_service){ .pid = p->pid, .cgroup = strdup(p->cgroup ? p->cgroup : ""),
				    .unit = strdup(n.unit), .service = strdup(service) };
	snprintf(e->container, sizeof(e->container), "%s", n.container);
	m->n++;
	return e->cgroup && e->unit && e->service ? 0 : -ENOMEM;
}

static int cmp_pid(const void *x, const void *y)
{
	const struct proc_service *a = x, *b = y;

	return (a->pid > b->pid) - (a->pid < b->pid);
}

void services_map_free(struct services_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->p[i].cgroup);
		free(m->p[i].unit);
		free(m->p[i].service);
	}
	free(m->p);
	free(m);
}

int services_map_load(struct store *st, const struct store_filter *f, struct services_map **out)
{
	struct services_map *m = calloc(1, sizeof(*m));
	int err;

	if (!m)
		return -ENOMEM;
	err = store_query_processes(st, f, add_process, m);
	if (err) {
		services_map_free(m);
		return err;
	}
	if (m->n)
		qsort(m->p, m->n, sizeof(*m->p), cmp_pid);
	*out = m;
	return 0;
}

struct services_of services_map_get(const struct services_map *m, uint32_t pid)
{
	struct proc_service key = { .pid = pid };
	const struct proc_service *e = m && m->n ? bsearch(&key, m->p, m->n, sizeof(*m->p), cmp_pid) : NULL;

	if (!e)
		return (struct services_of){ "", "", "", "[no cgroup]" };
	return (struct services_of){ e->cgroup, e->unit, e->container, e->service };
}

/* One stack under its service: "service\0comm;stack", and its count. */
struct grouped {
	char *key;
	size_t service_len;
	uint64_t count;
};

struct grouping {
	const struct services_map *map;
	struct grouped *g;
	size_t n, cap;
};

static int group_stack(uint32_t pid, const char *comm, const char *folded, const struct store_frame *frames,
		       unsigned nframes, uint64_t count, void *ctx)
{
	struct grouping *c = ctx;
	const char *service = services_map_get(c->map, pid).service;
	size_t sl = strlen(service), cl = strlen(comm), fl = strlen(folded);
	char *key;

	(void)frames;
	(void)nframes;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct grouped *ng = reallocarray(c->g, cap, sizeof(*ng));

		if (!ng)
			return -ENOMEM;
		c->g = ng;
		c->cap = cap;
	}
	key = malloc(sl + cl + fl + 3);
	if (!key)
		return -ENOMEM;
	memcpy(key, service, sl + 1);
	memcpy(key + sl + 1, comm, cl);
	key[sl + 1 + cl] = ';';
	memcpy(key + sl + 2 + cl, folded, fl + 1);
	c->g[c->n++] = (struct grouped){ .key = key, .service_len = sl, .count = count };
	return 0;
}

/* By key (service, then the rest). */
static int cmp_key(const void *x, const void *y)
{
	const struct grouped *a = x, *b = y;

	return strcmp(a->key, b->key) ?: strcmp(a->key + a->service_len + 1, b->key + b->service_len + 1);
}

/* Most first, then by key. */
static int cmp_count(const void *x, const void *y)
{
	const struct grouped *a = x, *b = y;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return cmp_key(x, y);
}

int services_each_stack(struct store *st, const struct store_filter *f, store_stack_cb cb, void *ctx)
{
	struct grouping c = { 0 };
	struct services_map *m = NULL;
	size_t n = 0;
	int err = services_map_load(st, f, &m);

	c.map = m;
	err = err ?: store_query_stacks_frames(st, f, group_stack, &c);
	if (!err && c.n) { /* a service's processes' same stacks become one */
		qsort(c.g, c.n, sizeof(*c.g), cmp_key);
		for (size_t i = 0; i < c.n; i++) {
			if (n && !cmp_key(&c.g[n - 1], &c.g[i])) {
				c.g[n - 1].count += c.g[i].count;
				free(c.g[i].key);
			} else {
				c.g[n++] = c.g[i];
			}
		}
		qsort(c.g, n, sizeof(*c.g), cmp_count);
	}
	for (size_t i = 0; !err && i < n; i++)
		err = cb(c.g[i].key, c.g[i].key + c.g[i].service_len + 1, c.g[i].count, ctx);
	for (size_t i = 0; i < (err && !n ? c.n : n); i++)
		free(c.g[i].key);
	free(c.g);
	services_map_free(m);
	return err;
}
