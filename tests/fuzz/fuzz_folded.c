/* fuzz_folded.c - libFuzzer target: folded-stack lines through tree_add, top_add, store_add and the renderers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "render/json.h"
#include "render/svg.h"
#include "render/top.h"
#include "render/tree.h"
#include "store/store.h"

/* Each input is lines "comm;frame;...;frame COUNT", added to both sides of a tree, a top table and one
 * store transaction (rolled back, so the database stays empty), then rendered as JSON and SVG. */
static struct store *store;
static char dir[] = "/tmp/fuzz_folded.XXXXXX";
static char db_path[64];
static FILE *devnull;

/* Everything one input builds. */
struct sinks {
	struct tree *tree;
	struct top *top;
	unsigned line;
};

static void cleanup(void)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	char path[80];

	store_close(store);
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", db_path, suffixes[i]);
		unlink(path);
	}
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	FUZZ_ASSERT(mkdtemp(dir));
	snprintf(db_path, sizeof(db_path), "%s/fuzz.db", dir);
	FUZZ_ASSERT(store_open(db_path, STORE_READ_WRITE, &store) == 0);
	devnull = fopen("/dev/null", "we");
	FUZZ_ASSERT(devnull);
	atexit(cleanup);
	return 0;
}

/* The frames of folded, split at ';', with module and build-id id (the store checks each). */
static struct store_frame *split_frames(char *copy, const char *id, unsigned *n)
{
	struct store_frame *frames = calloc(strlen(copy) + 1, sizeof(*frames));
	char *p = copy, *e;

	FUZZ_ASSERT(frames);
	*n = 0;
	for (;;) {
		e = strchr(p, ';');
		if (e)
			*e = '\0';
		frames[(*n)++] = (struct store_frame){ .name = p, .module = id, .build_id = id };
		if (!e)
			break;
		p = e + 1;
	}
	return frames;
}

/* One line: the process name up to the first ';', the stack up to the last space, then the count. */
static void add_line(char *line, void *ctx)
{
	struct sinks *s = ctx;
	struct store_sample sample = { .ts = 1700000000, .pid = 1, .tid = 1 };
	char *semi, *space, *copy, *end;
	uint64_t count;

	line[strcspn(line, "\n")] = '\0';
	semi = strchr(line, ';');
	space = strrchr(line, ' ');
	if (!semi || !space || space < semi)
		return;
	*semi = *space = '\0';
	count = strtoull(space + 1, &end, 10);
	sample.comm = sample.thread = line;
	sample.folded = semi + 1;
	sample.count = count;

	tree_add(s->tree, line, semi + 1, count, s->line % 2 ? TREE_BASE : TREE_NEW);
	top_add(s->top, semi + 1, count);
	if (s->line % 2) {
		store_add(store, &sample);
	} else {
		copy = strdup(semi + 1);
		FUZZ_ASSERT(copy);
		sample.frames = split_frames(copy, line, &sample.nframes);
		store_add(store, &sample);
		free((void *)sample.frames);
		free(copy);
	}
	s->line++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tree_opts topts = { .reverse = size % 2, .max_nodes = 4096 };
	struct svg_opts sopts = { .minwidth = -1, .diff = true, .unit = (size / 2) % 2 ? UNIT_MICROS : UNIT_SAMPLES };
	struct sinks s = { .line = 0 };
	const struct top_entry *e;
	size_t n;

	FUZZ_ASSERT(tree_new(&topts, &s.tree) == 0 && top_new(1024, &s.top) == 0);
	FUZZ_ASSERT(store_begin(store) == 0);
	fuzz_each_line(data, size, add_line, &s);
	store_rollback(store);

	tree_finish(s.tree);
	e = top_sorted(s.top, &n);
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT(e[i].name && e[i].name[0]);
	render_json_tree(devnull, s.tree, true, sopts.unit);
	render_top_json(devnull, s.top, 0, sopts.unit);
	render_top_text(devnull, s.top, 0, true, sopts.unit);
	if (tree_nodes(s.tree) < 256)
		render_svg(devnull, s.tree, &sopts);
	tree_free(s.tree);
	top_free(s.top);
	return 0;
}
