/* test_render.c - the frame tree, JSON output and the top-functions table. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "render/json.h"
#include "render/top.h"
#include "render/tree.h"
#include "render/unit.h"

/* Renders with fn into a string (caller frees). */
#define CAPTURE(var, call)                                         \
	do {                                                       \
		size_t len_;                                       \
		FILE *f_ = open_memstream(&(var), &len_);          \
		call;                                              \
		fclose(f_);                                        \
	} while (0)

static const struct tree_node *child_named(const struct tree_node *n, const char *name)
{
	for (uint32_t i = 0; i < n->nchildren; i++)
		if (!strcmp(n->children[i]->name, name))
			return n->children[i];
	return NULL;
}

static void test_tree(void)
{
	struct tree *t;
	const struct tree_node *root, *app, *main_, *b, *a;

	CHECK(tree_new(NULL, &t) == 0, "tree: new");
	CHECK(tree_add(t, "app", "main;b;leaf", 3, TREE_NEW) == 0, "tree: add");
	tree_add(t, "app", "main;a;leaf", 2, TREE_NEW);
	tree_add(t, "app", "main", 1, TREE_NEW);
	tree_add(t, "other", "x", 4, TREE_NEW);
	CHECK(tree_add(t, "app", "", 1, TREE_NEW) == -EINVAL, "tree: empty stack rejected");
	CHECK(tree_add(t, "app", "main", 0, TREE_NEW) == -EINVAL, "tree: count 0 rejected");
	tree_finish(t);
	root = tree_root(t);
	CHECK(!strcmp(root->name, "all") && root->value[TREE_NEW] == 10, "tree: root 'all' holds every sample (%llu)",
	      (unsigned long long)root->value[TREE_NEW]);
	CHECK(root->nchildren == 2 && !strcmp(root->children[0]->name, "app") && !strcmp(root->children[1]->name, "other"),
	      "tree: process names are the first frames, sorted");
	app = child_named(root, "app");
	main_ = app ? child_named(app, "main") : NULL;
	CHECK(main_ && main_->value[TREE_NEW] == 6 && main_->self[TREE_NEW] == 1, "tree: main total 6, self 1");
	CHECK(main_ && main_->nchildren == 2 && !strcmp(main_->children[0]->name, "a"), "tree: children sorted by name");
	a = main_ ? child_named(main_, "a") : NULL;
	b = main_ ? child_named(main_, "b") : NULL;
	CHECK(a && b && a->value[TREE_NEW] == 2 && b->value[TREE_NEW] == 3, "tree: branch values 2 and 3");
	CHECK(b && b->children[0]->self[TREE_NEW] == 3 && b->children[0]->depth == 4, "tree: leaf self and depth");
	CHECK(tree_nodes(t) == 9, "tree: 9 nodes (%zu)", tree_nodes(t));
	tree_free(t);

	struct tree_opts ro = { .reverse = true };
	CHECK(tree_new(&ro, &t) == 0, "tree: reverse new");
	tree_add(t, "app", "main;b;leaf", 3, TREE_NEW);
	tree_add(t, "app", "main;a;leaf", 2, TREE_NEW);
	tree_finish(t);
	root = tree_root(t);
	const struct tree_node *leaf = child_named(root, "leaf");
	CHECK(leaf && leaf->value[TREE_NEW] == 5 && leaf->nchildren == 2, "tree: icicle puts the leaf first with its callers below");
	tree_free(t);

	struct tree_opts small = { .max_nodes = 3, .no_comm = true };
	CHECK(tree_new(&small, &t) == 0, "tree: small new");
	tree_add(t, NULL, "a;b;c;d", 5, TREE_NEW);
	CHECK(tree_nodes(t) == 3 && tree_truncated(t) == 5, "tree: beyond max_nodes stacks are cut and counted (%zu nodes, %llu cut)",
	      tree_nodes(t), (unsigned long long)tree_truncated(t));
	CHECK(tree_root(t)->value[TREE_NEW] == 5, "tree: cut samples still count in the total");
	tree_free(t);

	char deep[1200 * 2 + 1];
	for (int i = 0; i < 1200; i++)
		memcpy(deep + 2 * i, "f;", 2);
	deep[1200 * 2 - 1] = '\0';
	CHECK(tree_new(NULL, &t) == 0, "tree: deep new");
	tree_add(t, "p", deep, 7, TREE_NEW);
	tree_add(t, "p", "f", 1, TREE_NEW);
	CHECK(tree_truncated(t) == 7, "tree: a stack deeper than 1024 frames is cut and counted (%llu)",
	      (unsigned long long)tree_truncated(t));
	tree_free(t);
	tree_free(NULL);
}

static void test_classify(void)
{
	CHECK(frame_classify("vfs_write_[k]") == FRAME_CLASS_KERNEL, "classify: kernel");
	CHECK(frame_classify("LazyCompile:foo_[j]") == FRAME_CLASS_JIT, "classify: jit");
	CHECK(frame_classify("inlined_[i]") == FRAME_CLASS_INLINED, "classify: inlined");
	CHECK(frame_classify("[unknown]") == FRAME_CLASS_UNKNOWN, "classify: [unknown]");
	CHECK(frame_classify("[unknown]_[k]") == FRAME_CLASS_UNKNOWN, "classify: kernel [unknown]");
	CHECK(frame_classify("libfoo.so+0x1a2b") == FRAME_CLASS_UNKNOWN, "classify: module+offset");
	CHECK(frame_classify("main") == FRAME_CLASS_USER, "classify: user");
	CHECK(frame_classify("Engine.gear_a (prog.py)") == FRAME_CLASS_PYTHON, "classify: Python QUALNAME (FILE)");
	CHECK(frame_classify("<module> (<frozen runpy>)") == FRAME_CLASS_PYTHON, "classify: Python, a file in <>");
	CHECK(frame_classify("[unknown] (python)") == FRAME_CLASS_UNKNOWN, "classify: an unnamed Python frame");
	CHECK(frame_classify("f (a(b))") == FRAME_CLASS_USER && frame_classify("f()") == FRAME_CLASS_USER &&
		      frame_classify("x ()") == FRAME_CLASS_USER && frame_classify("(p)") == FRAME_CLASS_USER,
	      "classify: not Python: parentheses in the file, none, an empty file, no name");
}

static void test_json(void)
{
	char *s = NULL;
	struct tree *t;

	CAPTURE(s, json_write_string(f_, "a\"b\\c\n\x01"));
	CHECK(!strcmp(s, "\"a\\\"b\\\\c\\u000a\\u0001\""), "json: escapes quotes, backslashes, controls (%s)", s);
	free(s);
	CAPTURE(s, json_write_string(f_, "caf\xc3\xa9 \xff\xc3"));
	CHECK(!strcmp(s, "\"caf\xc3\xa9 \\ufffd\\ufffd\""), "json: keeps UTF-8, replaces invalid bytes (%s)", s);
	free(s);
	CAPTURE(s, json_write_string(f_, "\xed\xa0\x80"));
	CHECK(!strcmp(s, "\"\\ufffd\\ufffd\\ufffd\""), "json: a UTF-16 surrogate is invalid (%s)", s);
	free(s);

	tree_new(NULL, &t);
	tree_add(t, "p", "m;x", 3, TREE_NEW);
	tree_add(t, "p", "m;y", 1, TREE_NEW);
	tree_finish(t);
	CAPTURE(s, render_json_tree(f_, t, false, UNIT_SAMPLES));
	CHECK(!strcmp(s, "{\"name\":\"all\",\"unit\":\"samples\",\"value\":4,\"children\":[{\"name\":\"p\",\"value\":4,\"children\":["
			 "{\"name\":\"m\",\"value\":4,\"children\":[{\"name\":\"x\",\"value\":3,\"children\":[]},"
			 "{\"name\":\"y\",\"value\":1,\"children\":[]}]}]}]}\n"),
	      "json: tree as {name, value, children} (%s)", s);
	free(s);
	tree_free(t);

	/* diff: base has x 1, y 3 (total 4) -> scaled by 4/4; delta x +2, y -2 */
	tree_new(NULL, &t);
	tree_add(t, "p", "m;x", 3, TREE_NEW);
	tree_add(t, "p", "m;y", 1, TREE_NEW);
	tree_add(t, "p", "m;x", 2, TREE_BASE);
	tree_add(t, "p", "m;y", 6, TREE_BASE);
	tree_finish(t);
	CAPTURE(s, render_json_tree(f_, t, true, UNIT_MICROS));
	CHECK(strstr(s, "{\"name\":\"x\",\"value\":3,\"delta\":2,") && strstr(s, "{\"name\":\"y\",\"value\":1,\"delta\":-2,") &&
		      strstr(s, "\"name\":\"all\",\"unit\":\"microseconds\",\"value\":4,\"delta\":0,"),
	      "json: diff deltas against the base scaled to the same total (%s)", s);
	free(s);
	tree_free(t);
}

/* Stacks given as frames: a Python frame's node keeps its file and first line and its samples by line,
 * as the JSON tree writes them; a stack by text joins the same nodes. */
static void test_sources(void)
{
	const struct tree_frame at23[] = { { .name = "main" },
					   { .name = "tooth (a.py)", .file = "/a.py", .start_line = 20, .line = 23 } };
	const struct tree_frame at22[] = { { .name = "main" },
					   { .name = "tooth (a.py)", .file = "/a.py", .start_line = 20, .line = 22 } };
	const struct tree_node *tooth;
	struct tree *t;
	char *s = NULL;

	tree_new(NULL, &t);
	CHECK(tree_add_frames(t, "py", at23, 2, 5, TREE_NEW) == 0 && tree_add_frames(t, "py", at22, 2, 2, TREE_NEW) == 0 &&
		      tree_add_frames(t, "py", at23, 2, 1, TREE_NEW) == 0 &&
		      tree_add(t, "py", "main;tooth (a.py)", 1, TREE_NEW) == 0,
	      "sources: stacks added as frames and as text");
	CHECK(tree_add_frames(t, "py", at23, 0, 1, TREE_NEW) == -EINVAL &&
		      tree_add_frames(t, "py", (const struct tree_frame[]){ { .name = "" } }, 1, 1, TREE_NEW) == -EINVAL,
	      "sources: no frames, or an empty name, refused");
	tree_finish(t);
	tooth = child_named(child_named(child_named(tree_root(t), "py"), "main"), "tooth (a.py)");
	CHECK(tooth && tooth->value[TREE_NEW] == 9 && tooth->file && !strcmp(tooth->file, "/a.py") &&
		      tooth->start_line == 20 && tooth->nlines == 2 && tooth->lines[0].line == 22 &&
		      tooth->lines[0].value[TREE_NEW] == 2 &&
		      tooth->lines[1].line == 23 && tooth->lines[1].value[TREE_NEW] == 6,
	      "sources: one node, its file and first line, its samples by line sorted (the text's sample has no line)");
	CAPTURE(s, render_json_tree(f_, t, false, UNIT_SAMPLES));
	CHECK(strstr(s, "{\"name\":\"tooth (a.py)\",\"value\":9,\"file\":\"/a.py\",\"start_line\":20,"
			"\"lines\":[[22,2],[23,6]],\"children\":[]}") &&
		      strstr(s, "{\"name\":\"main\",\"value\":9,\"children\""),
	      "sources: the JSON tree gives a Python node its file, first line and lines; others nothing more (%s)", s);
	free(s);
	tree_free(t);
}

static void test_top(void)
{
	struct top *t;
	size_t n;
	const struct top_entry *e;
	char *s = NULL;

	CHECK(top_new(0, &t) == 0, "top: new");
	top_add(t, "main;rec;rec;rec;leaf", 5);
	top_add(t, "main;other", 3);
	top_add(t, "main;rec", 1);
	CHECK(top_add(t, "", 1) == -EINVAL, "top: empty stack rejected");
	e = top_sorted(t, &n);
	CHECK(n == 4 && !strcmp(e[0].name, "leaf") && e[0].self == 5 && e[0].total == 5, "top: leaf first by self");
	CHECK(!strcmp(e[1].name, "other") && e[1].self == 3, "top: then other");
	CHECK(!strcmp(e[2].name, "rec") && e[2].self == 1 && e[2].total == 6,
	      "top: a recursive function counts once per stack in total (%llu)", (unsigned long long)e[2].total);
	CHECK(!strcmp(e[3].name, "main") && e[3].self == 0 && e[3].total == 9, "top: main total 9");
	CHECK(top_samples(t) == 9, "top: 9 samples");
	CAPTURE(s, render_top_text(f_, t, 2, false, UNIT_SAMPLES));
	CHECK(!strcmp(s, "5\t5\tleaf\n3\t3\tother\n"), "top: plain text, limited (%s)", s);
	free(s);
	CAPTURE(s, render_top_text(f_, t, 1, true, UNIT_SAMPLES));
	CHECK(strstr(s, "SELF") && strstr(s, "55.56%") && strstr(s, "leaf"), "top: tty table with percentages (%s)", s);
	free(s);
	CAPTURE(s, render_top_text(f_, t, 1, true, UNIT_MICROS));
	CHECK(strstr(s, "5 us") && strstr(s, "55.56%"), "top: tty table of microseconds in time (%s)", s);
	free(s);
	CAPTURE(s, render_top_text(f_, t, 1, false, UNIT_MICROS));
	CHECK(!strcmp(s, "5\t5\tleaf\n"), "top: plain text of microseconds stays bare numbers (%s)", s);
	free(s);
	CAPTURE(s, render_top_json(f_, t, 1, UNIT_SAMPLES));
	CHECK(!strcmp(s, "{\"unit\":\"samples\",\"total\":9,\"dropped\":0,\"functions\":[{\"name\":\"leaf\",\"self\":5,\"total\":5}]}\n"),
	      "top: json (%s)", s);
	free(s);
	top_free(t);

	CHECK(top_new(2, &t) == 0, "top: bounded new");
	top_add(t, "a;b;c", 4);
	e = top_sorted(t, &n);
	CHECK(n == 2 && top_dropped(t) == 4 && e[0].total == 4, "top: frames past the bound are counted as dropped");
	top_free(t);
	top_free(NULL);
}

/* Values for people: samples with separators, microseconds in us, ms or s. */
static void test_units(void)
{
	static const struct {
		uint64_t v;
		enum unit u;
		const char *want;
	} cases[] = {
		{ 1, UNIT_SAMPLES, "1 sample" }, { 1234567, UNIT_SAMPLES, "1,234,567 samples" },
		{ 0, UNIT_MICROS, "0 us" }, { 999, UNIT_MICROS, "999 us" }, { 1000, UNIT_MICROS, "1.00 ms" },
		{ 12345, UNIT_MICROS, "12.35 ms" }, { 999994, UNIT_MICROS, "999.99 ms" },
		{ 999995, UNIT_MICROS, "1.00 s" }, { 3204999, UNIT_MICROS, "3.20 s" },
		{ 7200000000ULL, UNIT_MICROS, "7,200.00 s" }, { UINT64_MAX, UNIT_MICROS, "18,446,744,073,709.55 s" },
	};
	char buf[UNIT_BUF];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(!strcmp(unit_amount(buf, cases[i].v, cases[i].u), cases[i].want), "unit: %llu is \"%s\" (got \"%s\")",
		      (unsigned long long)cases[i].v, cases[i].want, buf);
	CHECK(!strcmp(unit_name(UNIT_SAMPLES), "samples") && !strcmp(unit_name(UNIT_MICROS), "microseconds"),
	      "unit: names");
}

int main(void)
{
	test_units();
	test_sources();
	test_tree();
	test_classify();
	test_json();
	test_top();
	return CHECK_EXIT();
}
