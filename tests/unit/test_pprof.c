/* test_pprof.c - the pprof encoder: gunzipped and unpacked structure, empty and odd inputs, and
 * (when go is installed) what `go tool pprof` itself reads from the file. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "check.h"
#include "lib/render/pprof.pb-c.h"
#include "render/pprof.h"

typedef Perftools__Profiles__Profile Profile;

#define PERIOD INT64_C(52631578) /* 1e9 / 19 Hz */
#define T0_NS INT64_C(1700000000000000000)
#define DURATION_NS INT64_C(10000000000)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The known profile: app's main calls work, work calls libc's memcpy, memcpy enters the kernel; one
 * frame nobody could name (NULL module and build-id); the first stack comes twice. */
/* A native frame: name, module, build-id (no Python source). */
#define PF(name_, module_, build_id_) { .name = (name_), .module = (module_), .build_id = (build_id_) }
#define F_MAIN PF("main", "/usr/bin/app", "aaaa")
#define F_WORK PF("work", "/usr/bin/app", "aaaa")
#define F_MEMCPY PF("memcpy", "/usr/lib/libc.so.6", "bbbb")
#define F_SCHED PF("schedule_[k]", "[kernel]", "")
#define F_UNKNOWN PF("[unknown]", NULL, NULL)

static const struct pprof_frame s_work[] = { F_WORK, F_MAIN };
static const struct pprof_frame s_memcpy[] = { F_MEMCPY, F_WORK, F_MAIN };
static const struct pprof_frame s_sched[] = { F_SCHED, F_MEMCPY, F_MAIN };
static const struct pprof_frame s_unknown[] = { F_UNKNOWN };

static const struct pprof_stack known[] = {
	{ s_work, 2, 30, "app", 100, "web.service", "", "/system.slice/web.service" },
	{ s_memcpy, 3, 20, "app", 100, "web.service", "", "/system.slice/web.service" },
	{ s_sched, 3, 7, NULL, -1, NULL, NULL, NULL },
	{ s_unknown, 1, 3, "other", 5, "", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	  "/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope" },
	{ s_work, 2, 10, "app", 100, "web.service", "", "/system.slice/web.service" },
};

static const struct pprof_info known_info = { T0_NS, DURATION_NS, PERIOD, NULL };

/* Flat samples per function (leaf counts) in the known profile. */
static const struct {
	const char *name;
	int64_t flat;
} known_flat[] = {
	{ "work", 40 }, { "memcpy", 20 }, { "schedule_[k]", 7 }, { "[unknown]", 3 }, { "main", 0 },
};

/* A growing byte buffer. */
struct buf {
	uint8_t *data;
	size_t len;
};

/* Renders into a tmpfile and reads the bytes back. Returns render_pprof's result, or -EIO. */
static int encode(const struct pprof_stack *stacks, size_t n, const struct pprof_info *info, struct buf *out)
{
	FILE *f = tmpfile();
	long size;
	int err;

	out->data = NULL;
	out->len = 0;
	if (!f)
		return -EIO;
	err = render_pprof(f, stacks, n, info);
	if (!err && (fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0))
		err = -EIO;
	if (!err && !(out->data = malloc(size ? (size_t)size : 1)))
		err = -ENOMEM;
	if (!err && fread(out->data, 1, (size_t)size, f) != (size_t)size)
		err = -EIO;
	if (!err)
		out->len = (size_t)size;
	fclose(f);
	return err;
}

/* Inflates a gzip stream (and nothing after it). Returns 0 or -EIO. */
static int gunzip(const struct buf *gz, struct buf *raw)
{
	z_stream z;
	size_t cap = 4096;
	int zerr = Z_OK;

	memset(&z, 0, sizeof(z));
	raw->len = 0;
	raw->data = malloc(cap);
	if (!raw->data || inflateInit2(&z, 15 + 16) != Z_OK)
		return -EIO;
	z.next_in = gz->data;
	z.avail_in = (uInt)gz->len;
	while (zerr == Z_OK) {
		if (raw->len == cap) {
			uint8_t *d = realloc(raw->data, cap * 2);

			if (!d)
				break;
			raw->data = d;
			cap *= 2;
		}
		z.next_out = raw->data + raw->len;
		z.avail_out = (uInt)(cap - raw->len);
		zerr = inflate(&z, Z_NO_FLUSH);
		raw->len = cap - z.avail_out;
	}
	inflateEnd(&z);
	return zerr == Z_STREAM_END && z.avail_in == 0 ? 0 : -EIO;
}

/* Renders, gunzips and unpacks; NULL (after a failed check) when any step fails. */
static Profile *roundtrip(const char *what, const struct pprof_stack *stacks, size_t n, const struct pprof_info *info)
{
	struct buf gz, raw = { 0 };
	Profile *p = NULL;
	int err = encode(stacks, n, info, &gz);

	CHECK(err == 0, "%s: render_pprof returns 0 (got %d)", what, err);
	if (!err) {
		CHECK(gz.len >= 2 && gz.data[0] == 0x1f && gz.data[1] == 0x8b, "%s: output is gzip", what);
		err = gunzip(&gz, &raw);
		CHECK(err == 0, "%s: output gunzips completely", what);
	}
	if (!err) {
		p = perftools__profiles__profile__unpack(NULL, raw.len, raw.data);
		CHECK(p != NULL, "%s: gunzipped output unpacks as a Profile", what);
	}
	free(gz.data);
	free(raw.data);
	return p;
}

static const char *str(const Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "<bad string index>";
}

static const Perftools__Profiles__Location *location(const Profile *p, uint64_t id)
{
	return id >= 1 && id <= p->n_location && p->location[id - 1]->id == id ? p->location[id - 1] : NULL;
}

static const Perftools__Profiles__Function *function(const Profile *p, uint64_t id)
{
	return id >= 1 && id <= p->n_function && p->function[id - 1]->id == id ? p->function[id - 1] : NULL;
}

static const Perftools__Profiles__Mapping *mapping(const Profile *p, uint64_t id)
{
	return id >= 1 && id <= p->n_mapping && p->mapping[id - 1]->id == id ? p->mapping[id - 1] : NULL;
}

/* The function name of a location, "<bad>" when the ids do not resolve. */
static const char *location_name(const Profile *p, uint64_t id)
{
	const Perftools__Profiles__Location *l = location(p, id);
	const Perftools__Profiles__Function *f = l && l->n_line == 1 ? function(p, l->line[0]->function_id) : NULL;

	return f ? str(p, f->name) : "<bad>";
}

/* Whether a sample's locations name exactly the stack's frames, leaf first. */
static bool same_frames(const Profile *p, const Perftools__Profiles__Sample *s, const struct pprof_stack *st)
{
	if (s->n_location_id != st->nframes)
		return false;
	for (unsigned i = 0; i < st->nframes; i++)
		if (strcmp(location_name(p, s->location_id[i]), st->frames[i].name))
			return false;
	return true;
}

/* The string label key of s, NULL when absent; *num gets the numeric one (or stays). */
static const char *label_str(const Profile *p, const Perftools__Profiles__Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(str(p, s->label[i]->key), key) && s->label[i]->str)
			return str(p, s->label[i]->str);
	return NULL;
}

static bool label_num(const Profile *p, const Perftools__Profiles__Sample *s, const char *key, int64_t *num)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(str(p, s->label[i]->key), key) && !s->label[i]->str) {
			*num = s->label[i]->num;
			return true;
		}
	return false;
}

static void check_header(const Profile *p)
{
	CHECK(p->n_string_table > 0 && !strcmp(p->string_table[0], ""), "string table entry 0 is \"\"");
	CHECK(p->n_sample_type == 2, "two sample types (got %zu)", p->n_sample_type);
	if (p->n_sample_type == 2) {
		CHECK(!strcmp(str(p, p->sample_type[0]->type), "samples") &&
			      !strcmp(str(p, p->sample_type[0]->unit), "count"),
		      "sample type 0 is samples/count");
		CHECK(!strcmp(str(p, p->sample_type[1]->type), "cpu") &&
			      !strcmp(str(p, p->sample_type[1]->unit), "nanoseconds"),
		      "sample type 1 is cpu/nanoseconds");
	}
	CHECK(p->period_type && !strcmp(str(p, p->period_type->type), "cpu") &&
		      !strcmp(str(p, p->period_type->unit), "nanoseconds"),
	      "period type is cpu/nanoseconds");
}

/* Whether a label read (NULL: none) is what was given (NULL or "": none). */
static bool same_label(const char *got, const char *given)
{
	return given && given[0] ? got && !strcmp(got, given) : !got;
}

/* Samples in input order with [count, count * period], frames leaf first, and their labels. */
static void check_samples(const Profile *p)
{
	CHECK(p->n_sample == ARRAY_SIZE(known), "one sample per input stack, repeats included (got %zu)", p->n_sample);
	for (size_t i = 0; i < p->n_sample && i < ARRAY_SIZE(known); i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		int64_t want = (int64_t)known[i].count, pid = -1;
		const char *comm = label_str(p, s, "comm");
		bool has_pid = label_num(p, s, "pid", &pid);

		CHECK(s->n_value == 2 && s->value[0] == want && s->value[1] == want * PERIOD,
		      "sample %zu values are [%" PRId64 ", %" PRId64 "]", i, want, want * PERIOD);
		CHECK(same_frames(p, s, &known[i]), "sample %zu locations name its frames leaf first", i);
		if (known[i].comm)
			CHECK(comm && !strcmp(comm, known[i].comm), "sample %zu has label comm=%s", i, known[i].comm);
		else
			CHECK(!comm, "sample %zu (comm NULL) has no comm label", i);
		if (known[i].pid >= 0)
			CHECK(has_pid && pid == known[i].pid, "sample %zu has numeric label pid=%" PRId64, i, known[i].pid);
		else
			CHECK(!has_pid, "sample %zu (pid -1) has no pid label", i);
		CHECK(same_label(label_str(p, s, "unit"), known[i].unit) &&
			      same_label(label_str(p, s, "container"), known[i].container) &&
			      same_label(label_str(p, s, "cgroup"), known[i].cgroup),
		      "sample %zu has its unit, container and cgroup labels, none where \"\" or NULL", i);
	}
}

/* The mapping of the location named name, NULL when it has none. */
static const Perftools__Profiles__Mapping *mapping_of(const Profile *p, const char *name, bool *found)
{
	*found = false;
	for (size_t i = 0; i < p->n_location; i++)
		if (!strcmp(location_name(p, p->location[i]->id), name)) {
			*found = true;
			return mapping(p, p->location[i]->mapping_id);
		}
	return NULL;
}

static void check_mapping(const Profile *p, const struct pprof_frame *f)
{
	bool found;
	const Perftools__Profiles__Mapping *m = mapping_of(p, f->name, &found);

	CHECK(found && m && !strcmp(str(p, m->filename), f->module) && !strcmp(str(p, m->build_id), f->build_id) &&
		      m->has_functions,
	      "%s's location maps to %s build-id \"%s\" with functions", f->name, f->module, f->build_id);
}

/* One function and one location per distinct frame, ids from 1, mappings per binary. */
static void check_tables(const Profile *p)
{
	bool found, ids_ok = true, strings_unique = true;

	CHECK(p->n_function == 5, "5 distinct functions across the samples (got %zu)", p->n_function);
	CHECK(p->n_location == 5, "5 distinct locations across the samples (got %zu)", p->n_location);
	CHECK(p->n_mapping == 3, "3 mappings: app, libc, kernel (got %zu)", p->n_mapping);
	for (size_t i = 0; i < p->n_function; i++)
		ids_ok &= p->function[i]->id == i + 1 && p->function[i]->system_name == p->function[i]->name;
	for (size_t i = 0; i < p->n_location; i++)
		ids_ok &= p->location[i]->id == i + 1 && p->location[i]->address == 0 && p->location[i]->n_line == 1;
	for (size_t i = 0; i < p->n_mapping; i++)
		ids_ok &= p->mapping[i]->id == i + 1;
	CHECK(ids_ok, "ids count from 1; locations have one line, address 0; system_name == name");
	for (size_t i = 0; i < ARRAY_SIZE(known_flat); i++) {
		const char *name = known_flat[i].name;
		size_t seen = 0;

		for (size_t j = 0; j < p->n_function; j++)
			seen += !strcmp(str(p, p->function[j]->name), name);
		CHECK(seen == 1, "function %s appears once", name);
	}
	check_mapping(p, &s_sched[2]);   /* main */
	check_mapping(p, &s_work[0]);    /* work */
	check_mapping(p, &s_memcpy[0]);  /* memcpy */
	check_mapping(p, &s_sched[0]);   /* schedule_[k] */
	CHECK(!mapping_of(p, "[unknown]", &found) && found && p->location[4]->mapping_id == 0,
	      "a frame with NULL module has no mapping (mapping_id 0)");
	for (size_t i = 0; i < p->n_string_table; i++)
		for (size_t j = i + 1; j < p->n_string_table; j++)
			strings_unique &= strcmp(p->string_table[i], p->string_table[j]) != 0;
	CHECK(strings_unique, "string table holds no duplicate (%zu strings)", p->n_string_table);
}

static void test_known(void)
{
	Profile *p = roundtrip("known", known, ARRAY_SIZE(known), &known_info);

	if (!p)
		return;
	check_header(p);
	CHECK(p->period == PERIOD, "period is %" PRId64 " ns", PERIOD);
	CHECK(p->time_nanos == T0_NS && p->duration_nanos == DURATION_NS, "time_nanos and duration_nanos as given");
	check_samples(p);
	check_tables(p);
	perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_empty(void)
{
	Profile *p = roundtrip("empty", NULL, 0, &known_info);

	if (!p)
		return;
	check_header(p);
	CHECK(p->n_sample == 0 && p->n_location == 0 && p->n_function == 0 && p->n_mapping == 0,
	      "empty: no samples, locations, functions or mappings");
	perftools__profiles__profile__free_unpacked(p, NULL);

	p = roundtrip("empty, NULL info", known, 0, NULL);
	if (p)
		CHECK(p->period == 0 && p->time_nanos == 0, "NULL info: period and time 0");
	perftools__profiles__profile__free_unpacked(p, NULL);
}

/* A count too big for int64, and count * period past int64, saturate. */
static void test_saturation(void)
{
	const struct pprof_stack st[] = { { s_work, 2, UINT64_MAX, "a", 1, NULL, NULL, NULL }, { s_work, 2, INT64_MAX / 2, "a", 1, NULL, NULL, NULL } };
	Profile *p = roundtrip("saturation", st, 2, &known_info);

	if (!p)
		return;
	CHECK(p->n_sample == 2 && p->sample[0]->value[0] == INT64_MAX && p->sample[0]->value[1] == INT64_MAX &&
		      p->sample[1]->value[0] == INT64_MAX / 2 && p->sample[1]->value[1] == INT64_MAX,
	      "values saturate at INT64_MAX");
	perftools__profiles__profile__free_unpacked(p, NULL);
}

/* Off-CPU and wall time: one sample type TYPE/nanoseconds, microseconds written as nanoseconds
 * (saturated), the period type the same. */
static void test_time_types(void)
{
	const struct pprof_stack st[] = { { s_work, 2, 1500, "a", 1, NULL, NULL, NULL }, { s_work, 2, UINT64_MAX, "a", 1, NULL, NULL, NULL } };
	const char *types[] = { "off_cpu", "wall" };

	for (int i = 0; i < 2; i++) {
		struct pprof_info info = known_info;
		Profile *p;

		info.time_type = types[i];
		info.period_ns = 1000;
		p = roundtrip(types[i], st, 2, &info);
		if (!p)
			continue;
		CHECK(p->n_sample_type == 1 && !strcmp(str(p, p->sample_type[0]->type), types[i]) &&
			      !strcmp(str(p, p->sample_type[0]->unit), "nanoseconds"),
		      "%s: one sample type %s/nanoseconds", types[i], types[i]);
		CHECK(p->period_type && !strcmp(str(p, p->period_type->type), types[i]) && p->period == 1000,
		      "%s: period type %s, period 1000 ns", types[i], types[i]);
		CHECK(p->n_sample == 2 && p->sample[0]->n_value == 1 && p->sample[0]->value[0] == 1500000 &&
			      p->sample[1]->n_value == 1 && p->sample[1]->value[0] == INT64_MAX,
		      "%s: 1500 us is 1500000 ns; a count past int64 saturates", types[i]);
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
}

/* Bad arguments and a stream that cannot be written. */
static void test_errors(void)
{
	FILE *full = fopen("/dev/full", "we");
	int err;

	CHECK(render_pprof(NULL, known, 1, &known_info) == -EIO, "NULL out: -EIO");
	CHECK(render_pprof(stdout, NULL, 1, &known_info) == -EINVAL, "NULL stacks with n > 0: -EINVAL");
	if (!full) {
		SKIP("write to /dev/full: -EIO", "no /dev/full");
		return;
	}
	err = render_pprof(full, known, ARRAY_SIZE(known), &known_info);
	CHECK(err == -EIO, "write to /dev/full: -EIO (got %d)", err);
	fclose(full);
}

/* Whether s is UTF-8 by lead and continuation bytes (enough to tell U+FFFD from stray bytes). */
static bool utf8_ok(const char *s)
{
	const unsigned char *c = (const unsigned char *)s;

	while (*c) {
		size_t n = *c < 0x80 ? 1 : *c >= 0xc2 && *c <= 0xdf ? 2 : *c >= 0xe0 && *c <= 0xef ? 3 : *c >= 0xf0 && *c <= 0xf4 ? 4 : 0;

		if (!n)
			return false;
		for (size_t i = 1; i < n; i++)
			if ((c[i] & 0xc0) != 0x80)
				return false;
		c += n;
	}
	return true;
}

/* Names that are not UTF-8, cut characters, control bytes and a very long name all encode; the
 * strings that come back are UTF-8 with bad bytes as U+FFFD. */
static void test_odd_names(void)
{
	enum { LONG = 1 << 20 };
	char *longname = malloc(LONG + 1);
	struct pprof_frame frames[5] = {
		PF("\xff\xfe", "/bin/\x80x", "\xc0\xaf"),
		PF("\xe6\x97", NULL, NULL),               /* the first two bytes of a 3-byte character */
		PF("\x01\t\n\x7f ;[k]", "", ""),
		PF("caf\xc3\xa9 \xf0\x9f\x94\xa5", "", ""), /* valid: must stay as is */
		PF(NULL, NULL, NULL),
	};
	const struct pprof_stack st[] = { { frames, 5, 1, "\xe6\x97\xa5\xe6", 7, NULL, NULL, NULL } };
	Profile *p;
	bool all_utf8 = true, kept = false, replaced = false;

	if (!longname) {
		CHECK(0, "odd names: allocation for the test");
		return;
	}
	memset(longname, 'x', LONG);
	longname[LONG] = '\0';
	longname[LONG / 2] = '\xff';
	frames[4].name = longname;
	p = roundtrip("odd names", st, 1, &known_info);
	if (p) {
		for (size_t i = 0; i < p->n_string_table; i++) {
			all_utf8 &= utf8_ok(p->string_table[i]);
			kept |= !strcmp(p->string_table[i], "caf\xc3\xa9 \xf0\x9f\x94\xa5");
			replaced |= !strcmp(p->string_table[i], "\xef\xbf\xbd\xef\xbf\xbd");
		}
		CHECK(all_utf8, "odd names: every string comes back UTF-8");
		CHECK(kept, "odd names: valid UTF-8 is kept byte for byte");
		CHECK(replaced, "odd names: each invalid byte becomes U+FFFD");
		CHECK(p->n_sample == 1 && p->sample[0]->n_location_id == 5, "odd names: all 5 frames encoded");
		CHECK(label_str(p, p->sample[0], "comm") && !strcmp(label_str(p, p->sample[0], "comm"), "\xe6\x97\xa5\xef\xbf\xbd"),
		      "odd names: a comm cut inside a character ends in U+FFFD");
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	free(longname);
}

/* Random bytes as names, modules, build-ids and comms (fixed seed): every render succeeds and
 * unpacks with every frame. Also grows the tables past their first capacity. */
static void test_random_names(void)
{
	enum { STACKS = 300, DEPTH = 8, NAMELEN = 12 };
	static struct pprof_frame frames[STACKS][DEPTH];
	static struct pprof_stack st[STACKS];
	static char names[STACKS][DEPTH][3][NAMELEN + 1];
	static char comms[STACKS][NAMELEN + 1];
	unsigned seed = 12345, failures = 0;
	size_t nframes = 0;
	Profile *p;

	for (size_t i = 0; i < STACKS; i++) {
		for (size_t j = 0; j < DEPTH; j++) {
			for (size_t k = 0; k < 3; k++) {
				size_t len = (size_t)rand_r(&seed) % (NAMELEN + 1);

				for (size_t c = 0; c < len; c++)
					names[i][j][k][c] = (char)(1 + rand_r(&seed) % 255);
				names[i][j][k][len] = '\0';
			}
			frames[i][j] = (struct pprof_frame)PF(names[i][j][0], names[i][j][1], names[i][j][2]);
		}
		for (size_t c = 0; c < NAMELEN; c++)
			comms[i][c] = (char)(1 + rand_r(&seed) % 255);
		st[i] = (struct pprof_stack){ frames[i], (unsigned)(1 + i % DEPTH), 1 + i, comms[i], (int64_t)i - 1,
					      NULL, NULL, NULL };
		nframes += st[i].nframes;
	}
	p = roundtrip("random names", st, STACKS, &known_info);
	if (!p)
		return;
	for (size_t i = 0; i < p->n_sample && i < STACKS; i++)
		failures += p->sample[i]->n_location_id != st[i].nframes || p->sample[i]->value[0] != (int64_t)(1 + i);
	CHECK(p->n_sample == STACKS && !failures, "random names: %d samples, %zu frames come back", STACKS, nframes);
	for (size_t i = 0; i < p->n_string_table; i++)
		failures += !utf8_ok(p->string_table[i]);
	CHECK(!failures, "random names: every string comes back UTF-8");
	perftools__profiles__profile__free_unpacked(p, NULL);
}

/* Runs a shell command into a malloc'd string (NULL on failure); *status gets its exit status. */
static char *run(const char *cmd, int *status)
{
	FILE *f = popen(cmd, "re");
	char *out = NULL;
	size_t len = 0, cap = 0;
	int c;

	*status = -1;
	if (!f)
		return NULL;
	while ((c = fgetc(f)) != EOF) {
		if (len + 1 >= cap) {
			char *n = realloc(out, cap ? cap * 2 : 4096);

			if (!n)
				break;
			out = n;
			cap = cap ? cap * 2 : 4096;
		}
		out[len++] = (char)c;
	}
	if (out)
		out[len] = '\0';
	*status = pclose(f);
	return out;
}

/* go tool pprof -top: "flat flat% sum% cum cum% name" rows; each known function's flat count. */
static void check_go_top(const char *output)
{
	for (size_t i = 0; i < ARRAY_SIZE(known_flat); i++) {
		const char *line = output;
		long long flat = -1, found = -1;

		while (line && *line) {
			char name[256];
			int end = 0;

			if (sscanf(line, "%lld %*s %*s %*s %*s %255s%n", &flat, name, &end) == 2 && end > 0 &&
			    !strcmp(name, known_flat[i].name))
				found = flat;
			line = strchr(line, '\n');
			line = line ? line + 1 : NULL;
		}
		CHECK(found == known_flat[i].flat, "go tool pprof -top: %s flat %" PRId64 " (read %lld)", known_flat[i].name,
		      known_flat[i].flat, found);
	}
}

/* The rest of the line at s (without the newline) into buf. */
static void line_copy(const char *s, char *buf, size_t size)
{
	size_t len = strcspn(s, "\n");

	len = len < size - 1 ? len : size - 1;
	memcpy(buf, s, len);
	buf[len] = '\0';
}

/* The line after the one at s, NULL at the end. */
static const char *next_line(const char *s)
{
	s = strchr(s, '\n');
	return s && s[1] ? s + 1 : NULL;
}

/* The function name pprof -raw gives location id, from its rows "ID: 0xADDR [M=N] NAME :LINE s=0"
 * between "Locations" and "Mappings". NULL when absent. */
static const char *raw_location(const char *output, unsigned long id, char name[256])
{
	const char *line = strstr(output, "\nLocations\n");

	for (line = line ? next_line(line + 1) : NULL; line && strncmp(line, "Mappings", 8); line = next_line(line)) {
		char row[512], *save = NULL, *tok;

		line_copy(line, row, sizeof(row));
		tok = strtok_r(row, " ", &save);
		if (!tok || strtoul(tok, NULL, 10) != id || !strtok_r(NULL, " ", &save)) /* id, then address */
			continue;
		tok = strtok_r(NULL, " ", &save);
		if (tok && !strncmp(tok, "M=", 2))
			tok = strtok_r(NULL, " ", &save);
		if (!tok)
			return NULL;
		snprintf(name, 256, "%s", tok);
		return name;
	}
	return NULL;
}

/* One -raw sample row's ids ("ID ID ...") as leaf-first names joined by ';'. */
static void raw_stack(const char *output, const char *ids, char *stack, size_t size)
{
	char row[512], *save = NULL, name[256];

	line_copy(ids, row, sizeof(row));
	stack[0] = '\0';
	for (char *tok = strtok_r(row, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		const char *n = raw_location(output, strtoul(tok, NULL, 10), name);

		snprintf(stack + strlen(stack), size - strlen(stack), "%s%s", stack[0] ? ";" : "", n ? n : "<bad>");
	}
}

/* go tool pprof -raw: sample rows "COUNT NS: ID ID ..." (it merges identical stacks), resolved through
 * its Locations into leaf-first names, must be the known stacks with their merged counts. */
static void check_go_raw(const char *output)
{
	static const struct {
		const char *stack;
		long long count;
	} want[] = { { "work;main", 40 }, { "memcpy;work;main", 20 }, { "schedule_[k];memcpy;main", 7 }, { "[unknown]", 3 } };
	const char *line = strstr(output, "samples/count cpu/nanoseconds\n");
	long long got[ARRAY_SIZE(want)] = { 0 };

	for (line = line ? next_line(line) : NULL; line && strncmp(line, "Locations", 9); line = next_line(line)) {
		long long count, ns;
		int off = 0;
		char stack[1024];

		if (sscanf(line, " %lld %lld:%n", &count, &ns, &off) != 2 || !off)
			continue; /* a label row */
		raw_stack(output, line + off, stack, sizeof(stack));
		for (size_t i = 0; i < ARRAY_SIZE(want); i++)
			if (!strcmp(stack, want[i].stack))
				got[i] += count;
	}
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		CHECK(got[i] == want[i].count, "go tool pprof -raw: stack %s count %lld (read %lld)", want[i].stack,
		      want[i].count, got[i]);
	CHECK(strstr(output, " /usr/bin/app aaaa ") && strstr(output, " /usr/lib/libc.so.6 bbbb "),
	      "go tool pprof -raw: mappings with file names and build-ids");
	CHECK(strstr(output, "comm:[app]") && strstr(output, "pid:[100]"), "go tool pprof -raw: comm and pid labels");
}

/* Writes the known profile to dir/profile.pb.gz and has the real pprof read it. */
/* Python frames: a Function named QUALNAME with the full file name and first line, no Mapping, a
 * Location per line run; native frames in the same stacks as before. */
static void test_python(void)
{
	static const struct pprof_frame at23[] = {
		{ .name = "tooth (app.py)", .module = "", .build_id = "", .file = "/srv/app.py", .start_line = 20,
		  .line = 23 },
		{ .name = "main (app.py)", .module = "", .build_id = "", .file = "/srv/app.py", .start_line = 40,
		  .line = 44 },
		PF("Py_RunMain", "/usr/bin/python3.11", "cc"),
	};
	static const struct pprof_frame at22[] = {
		{ .name = "tooth (app.py)", .module = "", .build_id = "", .file = "/srv/app.py", .start_line = 20,
		  .line = 22 },
		{ .name = "main (app.py)", .module = "", .build_id = "", .file = "/srv/app.py", .start_line = 40,
		  .line = 44 },
		PF("Py_RunMain", "/usr/bin/python3.11", "cc"),
	};
	const struct pprof_stack stacks[] = { { at23, 3, 5, "python3.11", 9, NULL, NULL, NULL }, { at22, 3, 2, "python3.11", 9, NULL, NULL, NULL } };
	Profile *p = roundtrip("python", stacks, 2, &known_info);
	bool funcs = true, lines = false, tooth22 = false, tooth23 = false;

	if (!p)
		return;
	CHECK(p->n_function == 3 && p->n_location == 4 && p->n_mapping == 1,
	      "python: 3 functions, 4 locations (tooth at 22 and 23), 1 mapping (python3.11) (%zu, %zu, %zu)",
	      p->n_function, p->n_location, p->n_mapping);
	for (size_t i = 0; i < p->n_function; i++) {
		const Perftools__Profiles__Function *f = p->function[i];
		const char *name = str(p, f->name), *file = str(p, f->filename);

		if (!strcmp(name, "tooth"))
			funcs &= !strcmp(file, "/srv/app.py") && f->start_line == 20;
		else if (!strcmp(name, "main"))
			funcs &= !strcmp(file, "/srv/app.py") && f->start_line == 40;
		else
			funcs &= !strcmp(name, "Py_RunMain") && !strcmp(file, "") && f->start_line == 0;
	}
	CHECK(funcs, "python: functions named tooth and main (no \" (app.py)\"), with file and first line; Py_RunMain "
		     "as a native one");
	for (size_t i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];
		const char *name = l->n_line ? location_name(p, l->id) : "";

		if (!strcmp(name, "tooth")) {
			tooth22 |= l->line[0]->line == 22 && l->mapping_id == 0;
			tooth23 |= l->line[0]->line == 23 && l->mapping_id == 0;
		}
		lines |= !strcmp(name, "main") && l->line[0]->line == 44;
	}
	CHECK(tooth22 && tooth23 && lines, "python: a location per line run, with no mapping");
	perftools__profiles__profile__free_unpacked(p, NULL);
}

/* Demangled frames: Function.name the demangled name, system_name the binary's; two overloads that read
 * alike once demangled (short) are one function, named by the first one's symbol; a C frame's two
 * names are one string. */
static void test_demangled(void)
{
	static const struct pprof_frame relax = { .name = "heldout::geo::Grid<double>::relax",
		.system_name = "_ZN7heldout3geo4GridIdE5relaxEi", .module = "/usr/bin/app", .build_id = "aaaa" };
	static const struct pprof_frame f_int = { .name = "ns::f", .system_name = "_ZN2ns1fEi", .module = "/usr/bin/app",
		.build_id = "aaaa" };
	static const struct pprof_frame f_double = { .name = "ns::f", .system_name = "_ZN2ns1fEd",
		.module = "/usr/bin/app", .build_id = "aaaa" };
	const struct pprof_frame a[] = { relax, F_MAIN }, b[] = { f_int, F_MAIN }, c[] = { f_double, F_MAIN };
	const struct pprof_stack stacks[] = { { a, 2, 5, "app", 1, NULL, NULL, NULL }, { b, 2, 3, "app", 1, NULL, NULL, NULL }, { c, 2, 2, "app", 1, NULL, NULL, NULL } };
	Profile *p = roundtrip("demangled", stacks, ARRAY_SIZE(stacks), &known_info);
	int found = 0;

	if (!p)
		return;
	CHECK(p->n_function == 3, "demangled: relax, ns::f (both overloads) and main are 3 functions (%zu)", p->n_function);
	for (size_t i = 0; i < p->n_function; i++) {
		const char *name = str(p, p->function[i]->name), *sys = str(p, p->function[i]->system_name);

		if (!strcmp(name, relax.name) && !strcmp(sys, relax.system_name))
			found |= 1;
		else if (!strcmp(name, "ns::f") && !strcmp(sys, "_ZN2ns1fEi"))
			found |= 2;
		else if (!strcmp(name, "main") && p->function[i]->system_name == p->function[i]->name)
			found |= 4;
	}
	CHECK(found == 7, "demangled: name the demangled one, system_name the symbol (the first overload's); "
	      "main's two names one string (%d)", found);
	perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_go_pprof(void)
{
	char dir[] = "/tmp/test_pprof.XXXXXX", path[64], cmd[512], *out;
	struct buf gz;
	FILE *f;
	int status;

	if (system("command -v go >/dev/null 2>&1") != 0) {
		SKIP("go tool pprof reads the profile", "go is not on PATH (Debian: apt-get install golang-go)");
		return;
	}
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/profile.pb.gz", dir);
	CHECK(encode(known, ARRAY_SIZE(known), &known_info, &gz) == 0, "go: encode the known profile");
	f = fopen(path, "we");
	CHECK(f && fwrite(gz.data, 1, gz.len, f) == gz.len && fclose(f) == 0, "go: write %s", path);
	free(gz.data);

	/* A private HOME and caches: works as root with no home, leaves nothing behind. */
	snprintf(cmd, sizeof(cmd),
		 "HOME=%1$s GOCACHE=%1$s/cache GOPATH=%1$s/gopath GOENV=off GOFLAGS= PPROF_TMPDIR=%1$s "
		 "go tool pprof -raw %2$s 2>&1",
		 dir, path);
	out = run(cmd, &status);
	CHECK(out && status == 0, "go tool pprof -raw exits 0%s%s", out && status ? ": " : "", out && status ? out : "");
	if (out && status == 0)
		check_go_raw(out);
	free(out);

	snprintf(cmd, sizeof(cmd),
		 "HOME=%1$s GOCACHE=%1$s/cache GOPATH=%1$s/gopath GOENV=off GOFLAGS= PPROF_TMPDIR=%1$s "
		 "go tool pprof -top -sample_index=samples %2$s 2>&1",
		 dir, path);
	out = run(cmd, &status);
	CHECK(out && status == 0, "go tool pprof -top exits 0%s%s", out && status ? ": " : "", out && status ? out : "");
	if (out && status == 0)
		check_go_top(out);
	free(out);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("note: could not remove %s\n", dir);
}

int main(void)
{
	test_known();
	test_empty();
	test_saturation();
	test_time_types();
	test_errors();
	test_odd_names();
	test_random_names();
	test_python();
	test_demangled();
	test_go_pprof();
	return CHECK_EXIT();
}
