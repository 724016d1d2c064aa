/* test_svg.c - the SVG flame graph: well-formed for any names, widths by samples, pruning, layout, colours, diffs. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "render/svg.h"
#include "render/tree.h"

#define FULL 1180.0 /* the default width (1200) less the margins */

struct stack {
	const char *folded;
	uint64_t count;
	enum tree_side side;
};

/* A rendered document, kept in a file (for xmllint) and in memory (for parsing). */
struct doc {
	char path[96];
	char *text;
	int rc;       /* render_svg()'s */
};

/* One drawn frame as parsed back from the document. */
struct frame {
	bool found;
	double x, w, y;
	unsigned r, g, b;
	char label[256]; /* "" when the frame has no label */
	char title[256];
};

static char tmpdir[] = "/tmp/test_svg.XXXXXX";
static int doc_seq;

/* Builds a finished tree from stacks (no process name frame unless to says so). NULL on error. */
static struct tree *build(const struct tree_opts *to, const struct stack *s, size_t n)
{
	struct tree_opts def = { .no_comm = true };
	struct tree *t = NULL;

	if (tree_new(to ? to : &def, &t))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (tree_add(t, "comm", s[i].folded, s[i].count, s[i].side)) {
			tree_free(t);
			return NULL;
		}
	}
	tree_finish(t);
	return t;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc((size_t)len + 1);
	if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[len] = '\0';
out:
	fclose(f);
	return buf;
}

/* Renders t into a new file under tmpdir and reads it back. Returns false on any failure. */
static bool render(const struct tree *t, const struct svg_opts *o, struct doc *d)
{
	FILE *f;

	memset(d, 0, sizeof(*d));
	snprintf(d->path, sizeof(d->path), "%s/%d.svg", tmpdir, doc_seq++);
	f = fopen(d->path, "w");
	if (!f)
		return false;
	d->rc = render_svg(f, t, o);
	if (fclose(f))
		return false;
	d->text = slurp(d->path);
	return d->text && d->rc == 0;
}

static void doc_free(struct doc *d)
{
	free(d->text);
	d->text = NULL;
}

static bool have_xmllint(void)
{
	return system("command -v xmllint >/dev/null 2>&1") == 0;
}

/* Checks that xmllint accepts the document (or skips, naming why). */
static void check_xml(const struct doc *d, const char *what)
{
	char cmd[256];
	int st;

	if (!have_xmllint()) {
		SKIP(what, "xmllint not installed (apt-get install libxml2-utils)");
		return;
	}
	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", d->path);
	st = system(cmd);
	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: xmllint --noout accepts it", what);
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Frames drawn: each is a <g> opening with its tooltip. */
static size_t frames(const struct doc *d)
{
	return count(d->text, "<g><title>");
}

/* Copies the value of attr="..." found in [p, end) into buf. */
static bool attr(const char *p, const char *end, const char *name, char *buf, size_t size)
{
	char key[32];
	const char *v, *q;

	snprintf(key, sizeof(key), " %s=\"", name);
	v = strstr(p, key);
	if (!v || v >= end)
		return false;
	v += strlen(key);
	q = strchr(v, '"');
	if (!q || q >= end || (size_t)(q - v) >= size)
		return false;
	memcpy(buf, v, (size_t)(q - v));
	buf[q - v] = '\0';
	return true;
}

/* Copies the element text between open (which starts at or after p) and its closing tag. */
static void element_text(const char *p, const char *end, const char *open, const char *close, char *buf,
			 size_t size)
{
	const char *s = strstr(p, open), *e;

	buf[0] = '\0';
	if (!s || s >= end || !(s = strchr(s, '>')) || !(e = strstr(++s, close)) || e > end)
		return;
	snprintf(buf, size, "%.*s", (int)(e - s), s);
}

/* Finds the frame whose tooltip starts with name (as written, i.e. escaped) and parses it. */
static struct frame find(const struct doc *d, const char *name)
{
	struct frame f = { 0 };
	char key[512], buf[64];
	const char *p, *end;

	snprintf(key, sizeof(key), "<g><title>%s (", name);
	p = strstr(d->text, key);
	if (!p || !(end = strstr(p, "</g>")))
		return f;
	element_text(p, end, "<title", "</title>", f.title, sizeof(f.title));
	p = strstr(p, "<rect");
	if (!p || p > end)
		return f;
	if (!attr(p, end, "x", buf, sizeof(buf)) || (f.x = strtod(buf, NULL), 0) ||
	    !attr(p, end, "y", buf, sizeof(buf)) || (f.y = strtod(buf, NULL), 0) ||
	    !attr(p, end, "width", buf, sizeof(buf)) || (f.w = strtod(buf, NULL), 0) ||
	    !attr(p, end, "fill", buf, sizeof(buf)) || sscanf(buf, "rgb(%u,%u,%u)", &f.r, &f.g, &f.b) != 3)
		return f;
	element_text(p, end, "<text", "</text>", f.label, sizeof(f.label));
	f.found = true;
	return f;
}

static bool near(double a, double b, double tol)
{
	return a - b <= tol && b - a <= tol;
}

static void test_layout(void)
{
	const struct stack s[] = {
		{ "main;d_long_function_name_for_label_test", 10, TREE_NEW },
		{ "main;a;b", 60, TREE_NEW },
		{ "main;a;c", 30, TREE_NEW },
	};
	struct tree *t = build(NULL, s, 3);
	struct svg_opts o = { .minwidth = -1 };
	struct frame all, main_, a, b, c, dd;
	struct doc d;

	CHECK(t != NULL, "layout: tree built");
	if (!t)
		return;
	CHECK(render(t, &o, &d), "layout: render_svg returns 0");
	if (!d.text)
		goto out;
	check_xml(&d, "layout");
	CHECK(!strncmp(d.text, "<?xml", 5) && strstr(d.text, "</svg>\n"), "layout: a whole XML document");
	CHECK(strstr(d.text, "<svg xmlns=\"http://www.w3.org/2000/svg\"") && strstr(d.text, " width=\"1200\"") &&
		      strstr(d.text, " viewBox=\"0 0 1200 "),
	      "layout: <svg> with namespace, width 1200 and a viewBox");
	CHECK(strstr(d.text, "<style>") && strstr(d.text, "<script><![CDATA[") && strstr(d.text, "]]></script>"),
	      "layout: embedded style and script (in CDATA)");
	CHECK(!strstr(d.text, "href") && !strstr(d.text, "src=") &&
		      count(d.text, "http") == count(d.text, "http://www.w3.org/2000/svg"),
	      "layout: no external references (only the SVG namespace)");
	CHECK(strstr(d.text, ">Flame Graph</text>") != NULL, "layout: default title");
	CHECK(strstr(d.text, ">Search</text>") && strstr(d.text, ">Reset Zoom</text>"), "layout: controls");
	CHECK(frames(&d) == 6, "layout: 6 frames drawn (got %zu)", frames(&d));
	all = find(&d, "all"), main_ = find(&d, "main"), a = find(&d, "a"), b = find(&d, "b"), c = find(&d, "c");
	dd = find(&d, "d_long_function_name_for_label_test");
	CHECK(all.found && main_.found && a.found && b.found && c.found && dd.found, "layout: every frame found");
	CHECK(near(all.w, FULL, 0.01) && near(main_.w, FULL, 0.01), "layout: all and main span the width");
	CHECK(near(a.w, FULL * 0.9, 1) && near(b.w, FULL * 0.6, 1) && near(c.w, FULL * 0.3, 1) &&
		      near(dd.w, FULL * 0.1, 1),
	      "layout: widths by samples (a %.2f b %.2f c %.2f d %.2f)", a.w, b.w, c.w, dd.w);
	CHECK(near(a.x, 10, 0.01) && near(dd.x, 10 + FULL * 0.9, 1) && near(c.x, 10 + FULL * 0.6, 1),
	      "layout: children left to right by name (a %.2f, d %.2f, c %.2f)", a.x, dd.x, c.x);
	CHECK(all.y > main_.y && main_.y > a.y && a.y > b.y && b.y == c.y && a.y == dd.y &&
		      near(main_.y - a.y, 16, 0),
	      "layout: root at the bottom, 16px rows");
	CHECK(strstr(all.title, "(100 samples, 100.00%)") && strstr(b.title, "(60 samples, 60.00%)"),
	      "layout: tooltips give samples and share (%s)", b.title);
	CHECK(!strcmp(main_.label, "main") && !strcmp(b.label, "b"), "layout: labels");
	doc_free(&d);
	o.unit = UNIT_MICROS;
	CHECK(render(t, &o, &d), "layout: render_svg in microseconds returns 0");
	if (!d.text)
		goto out;
	b = find(&d, "b");
	CHECK(b.found && strstr(b.title, "(60 us, 60.00%)") && strstr(d.text, "Total: 100 us"),
	      "layout: a graph of microseconds gives times in its tooltips and total (%s)", b.found ? b.title : "");
	CHECK(!strcmp(dd.label, "d_long_functi.."), "layout: a long label is cut to its rect (\"%s\")", dd.label);
	doc_free(&d);
out:
	tree_free(t);
}

static void test_minwidth(void)
{
	const struct stack s[] = {
		{ "main;big", 10000, TREE_NEW },
		{ "main;tiny;deeper", 1, TREE_NEW },
	};
	struct tree *t = build(NULL, s, 2);
	struct svg_opts wide = { .minwidth = 1 }, def = { .minwidth = -1 };
	struct frame m, big;
	struct doc d;

	CHECK(t != NULL, "minwidth: tree built");
	if (!t)
		return;
	if (render(t, &wide, &d)) {
		m = find(&d, "main"), big = find(&d, "big");
		CHECK(frames(&d) == 3, "minwidth 1: the 0.12px frame and its child are not drawn (%zu frames)",
		      frames(&d));
		CHECK(!find(&d, "tiny").found && !find(&d, "deeper").found, "minwidth 1: tiny and deeper absent");
		CHECK(m.found && near(m.w, FULL, 0.01), "minwidth 1: main keeps its full width (%.2f)", m.w);
		CHECK(big.found && near(big.w, FULL * 10000 / 10001, 0.01), "minwidth 1: big's width (%.2f)", big.w);
		check_xml(&d, "minwidth 1");
	} else {
		CHECK(0, "minwidth 1: render_svg returns 0");
	}
	doc_free(&d);
	if (render(t, &def, &d)) {
		CHECK(frames(&d) == 5, "minwidth default 0.1: the 0.12px frames are drawn (%zu frames)", frames(&d));
		CHECK(find(&d, "tiny").found && find(&d, "deeper").found, "minwidth default: tiny and deeper drawn");
	} else {
		CHECK(0, "minwidth default: render_svg returns 0");
	}
	doc_free(&d);
	if (render(t, NULL, &d))
		CHECK(frames(&d) == 5, "NULL options: defaults (%zu frames)", frames(&d));
	else
		CHECK(0, "NULL options: render_svg returns 0");
	doc_free(&d);
	tree_free(t);
}

/* A profile of many rare stacks stays small: only the frames that would be visible are written. */
static void test_large(void)
{
	struct tree_opts to = { .no_comm = true };
	struct svg_opts o = { .minwidth = -1 };
	struct tree *t = NULL;
	struct doc d;
	char stack[64];
	int err;

	err = tree_new(&to, &t);
	CHECK(!err, "large: tree_new");
	if (err)
		return;
	err = tree_add(t, NULL, "main;hot", 10000000, TREE_NEW);
	for (int i = 0; !err && i < 20000; i++) {
		snprintf(stack, sizeof(stack), "main;rare%d;leaf%d", i, i);
		err = tree_add(t, NULL, stack, 1, TREE_NEW);
	}
	CHECK(!err, "large: 20,001 stacks added");
	tree_finish(t);
	if (render(t, &o, &d)) {
		CHECK(frames(&d) == 3, "large: 40,000 sub-pixel frames left out (%zu frames drawn)", frames(&d));
		CHECK(strlen(d.text) < 20000, "large: the document stays small (%zu bytes)", strlen(d.text));
		CHECK(strstr(d.text, "Total: 10,020,000 samples") != NULL, "large: the total counts every sample");
		check_xml(&d, "large");
	} else {
		CHECK(0, "large: render_svg returns 0");
	}
	doc_free(&d);
	tree_free(t);
}

/* The y of the root and of the deepest frame, for a tree built with and drawn in either direction. */
static void test_reverse(void)
{
	const struct stack s[] = {
		{ "main;a;leaf", 3, TREE_NEW },
		{ "main;c", 1, TREE_NEW },
	};
	struct tree_opts to = { .no_comm = true, .reverse = true };
	struct tree *t = build(&to, s, 2);
	struct svg_opts o = { .minwidth = -1, .reverse = true };
	struct frame all, leaf, main_, c;
	struct doc d;

	CHECK(t != NULL, "reverse: tree built");
	if (!t)
		return;
	if (render(t, &o, &d)) {
		all = find(&d, "all"), leaf = find(&d, "leaf"), main_ = find(&d, "main"), c = find(&d, "c");
		CHECK(all.found && leaf.found && main_.found && c.found, "reverse: frames found");
		CHECK(all.y < leaf.y && all.y < c.y && leaf.y < main_.y && c.y < main_.y,
		      "reverse: root at the top, callers below (all %.0f leaf %.0f main %.0f)", all.y, leaf.y,
		      main_.y);
		CHECK(strstr(d.text, ">Icicle Graph</text>") != NULL, "reverse: default title");
		check_xml(&d, "reverse");
	} else {
		CHECK(0, "reverse: render_svg returns 0");
	}
	doc_free(&d);
	tree_free(t);

	t = build(NULL, s, 2);
	o.reverse = false;
	if (t && render(t, &o, &d)) {
		all = find(&d, "all"), leaf = find(&d, "leaf");
		CHECK(all.found && leaf.found && all.y > leaf.y, "not reverse: root at the bottom");
	} else {
		CHECK(0, "not reverse: rendered");
	}
	doc_free(&d);
	tree_free(t);
}

static bool is_user(struct frame f)
{
	return f.found && f.r >= 215 && f.g <= 190 && f.b <= 55;
}

static void test_colours(void)
{
	const struct stack s[] = {
		{ "main;foo", 1, TREE_NEW },
		{ "main;do_syscall_64_[k]", 1, TREE_NEW },
		{ "main;Interpreter_[j]", 1, TREE_NEW },
		{ "main;inl_fn_[i]", 1, TREE_NEW },
		{ "main;[unknown]", 1, TREE_NEW },
		{ "main;libc.so.6+0x1234", 1, TREE_NEW },
		{ "other;foo", 1, TREE_NEW },
		{ "main;Engine.gear_a (prog.py)", 1, TREE_NEW },
	};
	struct tree *t = build(NULL, s, 8);
	struct svg_opts o = { .minwidth = -1 };
	struct frame u, k, j, i, q, m, u2, py;
	const char *legend, *legend_end;
	struct doc d;
	char *p, *text;

	CHECK(t != NULL, "colours: tree built");
	if (!t || !render(t, &o, &d)) {
		CHECK(0, "colours: rendered");
		tree_free(t);
		return;
	}
	u = find(&d, "foo"), k = find(&d, "do_syscall_64_[k]"), j = find(&d, "Interpreter_[j]");
	i = find(&d, "inl_fn_[i]"), q = find(&d, "[unknown]"), m = find(&d, "libc.so.6+0x1234");
	py = find(&d, "Engine.gear_a (prog.py)");
	text = d.text;
	p = strstr(d.text, "<g><title>foo (");
	d.text = p ? p + 1 : d.text; /* the second foo, under "other" */
	u2 = find(&d, "foo");
	d.text = text;
	CHECK(is_user(u), "colours: user frame warm (rgb(%u,%u,%u))", u.r, u.g, u.b);
	CHECK(u2.found && u2.r == u.r && u2.g == u.g && u2.b == u.b, "colours: the same name, the same colour");
	CHECK(k.found && !is_user(k) && k.r >= 225 && k.g >= 135 && k.g <= 175 && k.b >= 80 && k.b <= 110 &&
		      k.r > k.g && k.g > k.b,
	      "colours: kernel frame orange, unlike user frames (rgb(%u,%u,%u))", k.r, k.g, k.b);
	CHECK(j.found && j.g > j.r + 60 && j.g > j.b + 60, "colours: JIT frame green (rgb(%u,%u,%u))", j.r, j.g,
	      j.b);
	CHECK(i.found && i.g >= 195 && i.b >= 195 && i.r <= 110, "colours: inlined frame aqua (rgb(%u,%u,%u))", i.r,
	      i.g, i.b);
	CHECK(q.found && q.r == q.g && q.g == q.b && m.found && m.r == m.g && m.g == m.b,
	      "colours: unknown frames grey (rgb(%u,%u,%u), rgb(%u,%u,%u))", q.r, q.g, q.b, m.r, m.g, m.b);
	CHECK(py.found && py.b >= 215 && py.b > py.r + 60 && py.b > py.g + 60,
	      "colours: Python frame blue (rgb(%u,%u,%u))", py.r, py.g, py.b);
	legend = strstr(d.text, "<g id=\"legend\">");
	legend_end = legend ? strstr(legend, "</g>") : NULL;
	CHECK(legend_end && strstr(legend, ">native</text>") < legend_end && strstr(legend, ">Python</text>") < legend_end &&
		      strstr(legend, ">kernel _[k]</text>") < legend_end && strstr(legend, ">unknown</text>") < legend_end,
	      "colours: the legend names each kind drawn, Python too");
	check_xml(&d, "colours");
	doc_free(&d);
	tree_free(t);
}

static void test_diff(void)
{
	const struct stack s[] = {
		{ "main;grow", 80, TREE_NEW },   { "main;shrink", 20, TREE_NEW }, { "main;same", 50, TREE_NEW },
		{ "main;grow", 20, TREE_BASE },  { "main;shrink", 80, TREE_BASE }, { "main;same", 50, TREE_BASE },
		{ "main;gone", 10, TREE_BASE },  { "main;new", 10, TREE_NEW },
	};
	const struct stack scaled[] = {
		{ "main;x", 100, TREE_NEW }, { "main;y", 100, TREE_NEW },
		{ "main;x", 50, TREE_BASE }, { "main;y", 50, TREE_BASE },
	};
	struct svg_opts o = { .minwidth = -1, .diff = true };
	struct tree *t = build(NULL, s, 8);
	struct frame g, sh, sa, x;
	struct doc d;

	if (!t || !render(t, &o, &d)) {
		CHECK(0, "diff: rendered");
		tree_free(t);
		return;
	}
	g = find(&d, "grow"), sh = find(&d, "shrink"), sa = find(&d, "same");
	CHECK(g.found && g.r == 255 && g.g < 120 && g.b < 120, "diff: grown frame red (rgb(%u,%u,%u))", g.r, g.g,
	      g.b);
	CHECK(sh.found && sh.b == 255 && sh.r < 120 && sh.g < 120, "diff: shrunk frame blue (rgb(%u,%u,%u))", sh.r,
	      sh.g, sh.b);
	CHECK(sa.found && sa.r >= 235 && sa.g >= 235 && sa.b >= 235, "diff: unchanged frame near white");
	CHECK(near(g.w, FULL * 80 / 160, 1), "diff: widths from the new side (%.2f)", g.w);
	CHECK(!find(&d, "gone").found, "diff: a frame only in the base is not drawn");
	CHECK(strstr(g.title, "base 20, 12.50%; +37.50 pts") && strstr(sh.title, "-37.50 pts"),
	      "diff: tooltips give the base count and the change in points (%s)", g.title);
	CHECK(strstr(d.text, ">Differential Flame Graph</text>") != NULL, "diff: default title");
	check_xml(&d, "diff");
	doc_free(&d);
	tree_free(t);

	t = build(NULL, scaled, 4);
	if (t && render(t, &o, &d)) {
		x = find(&d, "x");
		CHECK(x.found && x.r == x.b && x.r >= 235, "diff: the base is scaled to the new total (rgb(%u,%u,%u))",
		      x.r, x.g, x.b);
	} else {
		CHECK(0, "diff scaled: rendered");
	}
	doc_free(&d);
	tree_free(t);
}

static void test_escaping(void)
{
	static char longname[5001 + 5];
	static char want[4094 + 3], toolong[4096];
	const char *names[] = {
		"<script>&\"'", "a\x01" "b", "bad\xff\xfeutf8", "cut\xe2\x82", "surrogate\xed\xa0\x80", "]]>cdata",
		"tab\there", "del\x7f", "na\xc3\xafve_\xe5\x87\xbd\xe6\x95\xb0", "overlong\xc0\xaf", longname,
	};
	const size_t n = sizeof(names) / sizeof(names[0]);
	struct svg_opts o = { .minwidth = -1, .title = "A & B <x>", .subtitle = "pid 42 \"q\" \x02" };
	struct tree_opts to = { 0 };
	struct tree *t = NULL;
	struct doc d;
	char stack[6000];
	int err;

	memset(longname, 'x', 5000);
	memset(want, 'x', 4094);
	memcpy(want + 4094, "..", 3);
	memset(toolong, 'x', 4095);
	err = tree_new(&to, &t);
	for (size_t i = 0; !err && i < n; i++) {
		snprintf(stack, sizeof(stack), "main;%s", names[i]);
		err = tree_add(t, "comm <&>", stack, 1, TREE_NEW);
	}
	CHECK(!err, "escaping: nasty names added");
	if (err) {
		tree_free(t);
		return;
	}
	tree_finish(t);
	if (render(t, &o, &d)) {
		check_xml(&d, "escaping");
		CHECK(frames(&d) == 3 + n, "escaping: every frame drawn (%zu)", frames(&d));
		CHECK(!strstr(d.text, "<script>&") && strstr(d.text, "&lt;script&gt;&amp;&quot;&#39; ("),
		      "escaping: markup in names escaped");
		CHECK(strstr(d.text, "comm &lt;&amp;&gt; (") != NULL, "escaping: process name escaped");
		CHECK(strstr(d.text, "a\xef\xbf\xbd" "b (") && strstr(d.text, "bad\xef\xbf\xbd\xef\xbf\xbdutf8 (") &&
			      strstr(d.text, "cut\xef\xbf\xbd\xef\xbf\xbd (") && strstr(d.text, "del\xef\xbf\xbd ("),
		      "escaping: control bytes and invalid UTF-8 become U+FFFD");
		CHECK(strstr(d.text, "na\xc3\xafve_\xe5\x87\xbd\xe6\x95\xb0 (") != NULL, "escaping: valid UTF-8 kept");
		CHECK(strstr(d.text, want) && !strstr(d.text, toolong), "escaping: a 5000-character name cut to 4096");
		CHECK(strstr(d.text, ">A &amp; B &lt;x&gt;</text>") != NULL, "escaping: title escaped");
		CHECK(strstr(d.text, ">pid 42 &quot;q&quot; \xef\xbf\xbd</text>") != NULL, "escaping: subtitle escaped");
		CHECK(strstr(d.text, "]]>cdata") == NULL, "escaping: ]]> escaped");
	} else {
		CHECK(0, "escaping: render_svg returns 0");
	}
	doc_free(&d);
	tree_free(t);
}

static void test_empty(void)
{
	struct tree *t = build(NULL, NULL, 0);
	struct svg_opts o = { .minwidth = -1, .diff = true };
	struct doc d;

	if (!t || !render(t, NULL, &d)) {
		CHECK(0, "empty: rendered");
		tree_free(t);
		return;
	}
	check_xml(&d, "empty");
	CHECK(strstr(d.text, ">No samples</text>") != NULL, "empty: says there are no samples");
	CHECK(frames(&d) == 0, "empty: no frames (%zu)", frames(&d));
	CHECK(strstr(d.text, "</svg>\n") != NULL, "empty: a whole document");
	doc_free(&d);
	if (render(t, &o, &d)) {
		check_xml(&d, "empty diff");
		CHECK(strstr(d.text, ">No samples</text>") != NULL, "empty diff: says there are no samples");
	} else {
		CHECK(0, "empty diff: rendered");
	}
	doc_free(&d);
	tree_free(t);
}

/* A full disk is reported, not ignored. */
static void test_eio(void)
{
	const struct stack s[] = { { "main;a", 1, TREE_NEW } };
	struct tree *t = build(NULL, s, 1);
	FILE *f = fopen("/dev/full", "w");

	if (!f) {
		SKIP("eio: /dev/full", "cannot open /dev/full");
		tree_free(t);
		return;
	}
	CHECK(t && render_svg(f, t, NULL) == -EIO, "eio: a write error returns -EIO");
	fclose(f);
	tree_free(t);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		CHECK(0, "mkdtemp %s", tmpdir);
		return CHECK_EXIT();
	}
	test_layout();
	test_minwidth();
	test_large();
	test_reverse();
	test_colours();
	test_diff();
	test_escaping();
	test_empty();
	test_eio();
	if (!check_failures) {
		for (int i = 0; i < doc_seq; i++) {
			char path[128];

			snprintf(path, sizeof(path), "%s/%d.svg", tmpdir, i);
			unlink(path);
		}
		rmdir(tmpdir);
	} else {
		printf("documents kept in %s\n", tmpdir);
	}
	return CHECK_EXIT();
}
