/* test_pylines.c - py_line_of against every instruction of code compiled by each installed CPython (3.8 to
 * 3.13), and on crafted tables: extension entries, no-line entries, malformed and hostile tables. */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "syspython.h"
#include "testutil.h"
#include "python/pylines.h"

#define MIN_MINOR 8
#define MAX_MINOR 15
#define MAX_INTERPS 32
#define SHOWN_MISMATCHES 5 /* mismatches printed (as comments) per interpreter */
#define FAR_PAST 100000u   /* an instruction far past any table here */

/* An interpreter found here. */
struct interp {
	char path[PATH_MAX];
	unsigned minor;
};

/* Adds the interpreters matching pattern (python3.minor binaries) to list, once each by real path. */
static void add_glob(const char *pattern, unsigned minor, struct interp *list, size_t *n)
{
	char real[PATH_MAX], other[PATH_MAX];
	glob_t g;

	if (glob(pattern, 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc && *n < MAX_INTERPS; i++) {
		bool seen = false;

		if (access(g.gl_pathv[i], X_OK) != 0 || !realpath(g.gl_pathv[i], real))
			continue;
		for (size_t j = 0; j < *n && !seen; j++)
			seen = realpath(list[j].path, other) && strcmp(other, real) == 0;
		if (seen)
			continue;
		snprintf(list[*n].path, sizeof(list[*n].path), "%s", g.gl_pathv[i]);
		list[(*n)++].minor = minor;
	}
	globfree(&g);
}

/* Every CPython 3.8 to 3.15 here: the system's python3 first (a SKIP where its version is not one of
 * them), the others in /usr/bin, pyenv's builds ($PYENV_ROOT, /root/.pyenv). A minor version with none is
 * said in a comment. Returns how many were found. */
static size_t find_interps(struct interp *list)
{
	const char *root = getenv("PYENV_ROOT");
	char pattern[PATH_MAX];
	struct system_python py;
	size_t n = 0;

	if (system_python_under_test(&py, MIN_MINOR, MAX_MINOR) == 0)
		add_glob(py.path, py.minor, list, &n);
	for (unsigned minor = MIN_MINOR; minor <= MAX_MINOR; minor++) {
		size_t found = 0;

		snprintf(pattern, sizeof(pattern), "/usr/bin/python3.%u", minor);
		add_glob(pattern, minor, list, &n);
		if (root && *root) {
			snprintf(pattern, sizeof(pattern), "%s/versions/3.%u.*/bin/python3.%u", root, minor, minor);
			add_glob(pattern, minor, list, &n);
		}
		snprintf(pattern, sizeof(pattern), "/root/.pyenv/versions/3.%u.*/bin/python3.%u", minor, minor);
		add_glob(pattern, minor, list, &n);
		for (size_t i = 0; i < n; i++)
			found += list[i].minor == minor;
		if (!found)
			printf("# python3.%u: not installed here, not tested\n", minor);
	}
	return n;
}

/* The dump script: compiles a module with known line structure and prints, for each of its code objects
 * (co_consts walked recursively), "code NAME FIRSTLINENO UNITS TABLE_HEX" and "lines L0 L1 ..." (the line
 * of each code unit; "-" for none): from co_lines() (3.10+, byte ranges), else from dis.findlinestarts (a
 * line applies from its start to the next start). */
static const char dump_py[] =
	"import dis, sys, types\n"
	"V = sys.version_info\n"
	"def subject():\n"
	"    p = ['import os\\n']\n"
	"    p.append('def multi(a, b,\\n          c):\\n    x = (a +\\n         b *\\n         c)\\n'\n"
	"             '    y = [a,\\n         b]\\n    return (x,\\n            y)\\n')\n"
	"    p.append('def loops(n):\\n    t = 0\\n    for i in range(n):\\n        if i % 2:\\n'\n"
	"             '            continue\\n        t += i\\n    while t > 10:\\n        t -= 3\\n'\n"
	"             '    else:\\n        t += 1\\n    return t\\n')\n"
	"    p.append('def outer(k):\\n    def inner(j):\\n        return j + k\\n    f = lambda q: (q *\\n'\n"
	"             '                   2)\\n    return [inner(v) for v in range(k) if v] + '\n"
	"             'list(map(f, {w for w in range(3)}))\\n')\n"
	"    p.append('def gen():\\n    try:\\n        yield 1\\n    except ValueError:\\n        pass\\n'\n"
	"             '    finally:\\n        print(1)\\n    with open(\"x\") as fh:\\n        yield fh\\n')\n"
	"    p.append('async def coro(x):\\n    await x\\n    async for y in x:\\n        pass\\n')\n"
	"    p.append('class K:\\n    attr = 1\\n    def meth(self):\\n        return self.attr\\n')\n"
	/* line deltas past 127 and 255, one line with over 255 bytes of bytecode, a negative delta */
	"    body = ['def longfn(a):\\n', '    x = 1\\n'] + ['    # filler\\n'] * 300 + ['    x = x + 2\\n']\n"
	"    body += ['\\n'] * 130 + ['    y = [' + ', '.join('a + %d' % i for i in range(150)) + ']\\n']\n"
	"    body += ['    if a:\\n        return x\\n'] + ['    #\\n'] * 40 + ['    return y\\n']\n"
	"    p.append(''.join(body))\n"
	"    p.append('def wide(a):\\n    return ' + ' + '.join(['a'] * 400) + ' + len(str(a))\\n')\n"
	"    p.append('def backwards(a):\\n    return dict(\\n        x=a,\\n        y=a +\\n'\n"
	"             '          1,\\n    )\\n')\n"
	"    if V >= (3, 10):\n"
	"        p.append('def matcher(v):\\n    match v:\\n        case [a, b]:\\n            return a\\n'\n"
	"                 '        case {\"k\": c}:\\n            return c\\n'\n"
	"                 '        case _:\\n            return 0\\n')\n"
	"    if V >= (3, 11):\n"
	"        p.append('def groups():\\n    try:\\n        pass\\n    except* ValueError:\\n        x = 1\\n')\n"
	"    if V >= (3, 12):\n"
	"        p.append('def typed[T](x: T) -> T:\\n    return x\\n')\n"
	"    p.append('\\n' * 700 + 'def far(a):\\n    return a\\n')\n"
	"    p.append('multi(1, 2, 3)\\nloops(20)\\n')\n"
	"    return ''.join(p)\n"
	"def codes(co):\n"
	"    yield co\n"
	"    for c in co.co_consts:\n"
	"        if isinstance(c, types.CodeType):\n"
	"            yield from codes(c)\n"
	"def lines_of(co):\n"
	"    n = len(co.co_code) // 2\n"
	"    out = ['?'] * n\n"
	"    if V >= (3, 10):\n"
	"        for s, e, l in co.co_lines():\n"
	"            for u in range(s // 2, e // 2):\n"
	"                out[u] = '-' if l is None else str(l)\n"
	"        return out\n"
	"    starts = list(dis.findlinestarts(co))\n"
	"    si, cur = 0, '?'\n"
	"    for u in range(n):\n"
	"        while si < len(starts) and starts[si][0] <= u * 2:\n"
	"            cur = str(starts[si][1])\n"
	"            si += 1\n"
	"        out[u] = cur\n"
	"    return out\n"
	"print('version %d %d' % (V[0], V[1]))\n"
	"for co in codes(compile(subject(), 'subject.py', 'exec')):\n"
	"    t = co.co_lnotab if V < (3, 10) else co.co_linetable\n"
	"    name = co.co_name.replace(' ', '_')\n"
	"    print('code %s %d %d %s' % (name, co.co_firstlineno, len(co.co_code) // 2, t.hex() or '-'))\n"
	"    print('lines ' + ' '.join(lines_of(co)))\n";

/* Decodes hex (up to a space or the end; "-" is empty) into a malloc'd buffer of *len bytes. */
static uint8_t *unhex(const char *hex, size_t *len)
{
	size_t n = strcspn(hex, " ");
	uint8_t *out = malloc(n / 2 + 1);

	*len = 0;
	if (!out || (n == 1 && hex[0] == '-'))
		return out;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;

		if (n % 2 || sscanf(hex + 2 * i, "%2x", &v) != 1) {
			free(out);
			return NULL;
		}
		out[i] = (uint8_t)v;
	}
	*len = n / 2;
	return out;
}

/* What one interpreter's dump came to. */
struct tally {
	unsigned major, minor;
	size_t codes, instrs, mismatches, past_bad, no_line, bad_lines;
	bool codes_seen[16];       /* 3.11+: location entry codes in the tables */
	bool addr_ext, line_ext;   /* 3.8-3.10: extension entries (bytes over 255/254, lines over 127) */
	bool negative;             /* a negative line delta */
};

/* The line py_line_of should give for token tok of a "lines" line: a line (0 or "-": none, -ENOENT). */
static int expected_line(const char *tok)
{
	long v;

	if (tok[0] == '-')
		return -ENOENT;
	v = strtol(tok, NULL, 10);
	return v > 0 ? (int)v : -ENOENT;
}

/* Notes which features of its format a table uses (so the dump can be seen to exercise them). */
static void note_features(struct tally *t, enum py_linetable_kind kind, const uint8_t *tab, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (kind == PY_LINES_LOCATIONS) {
			if (tab[i] & 0x80)
				t->codes_seen[(tab[i] >> 3) & 15] = true;
			continue;
		}
		if (i % 2 == 0 && i + 1 < len) {
			int8_t d = (int8_t)tab[i + 1];

			t->addr_ext |= tab[i] >= 254 && d == 0;
			t->line_ext |= tab[i] == 0 && (d == 127 || d == -127);
			t->negative |= d < 0 && d != -128;
		}
	}
}

/* Compares py_line_of with the lines of one code object ("lines ..." in rest), past its end too. */
static void compare_code(struct tally *t, enum py_linetable_kind kind, const char *name, int first, unsigned units,
			 const uint8_t *tab, size_t len, const char *rest)
{
	const char *tok = rest;
	unsigned u;
	int got, want;

	note_features(t, kind, tab, len);
	for (u = 0; u < units && tok && *tok; u++) {
		want = expected_line(tok);
		got = py_line_of(kind, tab, len, first, u);
		t->instrs++;
		t->no_line += want == -ENOENT;
		if (got != want && t->mismatches++ < SHOWN_MISMATCHES)
			printf("# python%u.%u: %s (first line %d) unit %u: py_line_of %d, CPython %d\n", t->major,
			       t->minor, name, first, u, got, want);
		tok = strchr(tok, ' ');
		tok = tok ? tok + 1 : NULL;
	}
	if (u != units)
		t->bad_lines++;
	/* 3.10+ tables cover the code exactly; co_lnotab has no end (its last line runs on). */
	for (unsigned past = units; past <= units + FAR_PAST; past += FAR_PAST) {
		got = py_line_of(kind, tab, len, first, past);
		if (kind == PY_LINES_LNOTAB ? got <= 0 : got != -ENOENT) {
			if (t->past_bad++ < SHOWN_MISMATCHES)
				printf("# python%u.%u: %s unit %u past the end: %d\n", t->major, t->minor, name, past,
				       got);
		}
	}
}

/* The line table format of CPython 3.minor. */
static enum py_linetable_kind kind_of(unsigned minor)
{
	if (minor <= 9)
		return PY_LINES_LNOTAB;
	return minor == 10 ? PY_LINES_LINETABLE : PY_LINES_LOCATIONS;
}

/* Goes through a dump (text, NUL-terminated, modified) into t. */
static void parse_dump(char *text, struct tally *t)
{
	enum py_linetable_kind kind = 0;
	char name[128] = "", *save = NULL, *line;
	uint8_t *tab = NULL;
	size_t len = 0;
	unsigned units = 0;
	int first = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char hex_at[16];
		int off = 0;

		if (sscanf(line, "version %u %u", &t->major, &t->minor) == 2) {
			kind = kind_of(t->minor);
		} else if (sscanf(line, "code %127s %d %u %n%15s", name, &first, &units, &off, hex_at) == 4 && off) {
			free(tab);
			tab = unhex(line + off, &len);
			t->bad_lines += !tab;
			t->codes++;
		} else if (strncmp(line, "lines ", 6) == 0 && tab && kind) {
			compare_code(t, kind, name, first, units, tab, len, line + 6);
		} else {
			t->bad_lines++;
		}
	}
	free(tab);
}

/* Runs the dump script under one interpreter and checks py_line_of against all it printed. */
static void test_interp(const struct interp *in, const char *dir)
{
	char out[PATH_MAX];
	struct tally t = { 0 };
	unsigned char *text;
	size_t size = 0;
	char *s;
	int rc;

	snprintf(out, sizeof(out), "%s/lines-%u.txt", dir, in->minor);
	rc = run("'%s' '%s/dump.py' > '%s'", in->path, dir, out);
	text = rc == 0 ? read_all(out, &size) : NULL;
	s = text ? malloc(size + 1) : NULL;
	if (s) {
		memcpy(s, text, size);
		s[size] = '\0';
		parse_dump(s, &t);
	}
	free(s);
	free(text);
	CHECK(rc == 0 && t.major == 3 && t.minor == in->minor && t.codes >= 15 && t.bad_lines == 0,
	      "python3.%u (%s): the dump ran: %zu code objects, %zu malformed lines", in->minor, in->path, t.codes,
	      t.bad_lines);
	CHECK(t.instrs > 1000 && t.mismatches == 0,
	      "python3.%u: py_line_of agrees with CPython on all %zu instructions (%zu without a line): %zu differ",
	      in->minor, t.instrs, t.no_line, t.mismatches);
	CHECK(t.codes && t.past_bad == 0, "python3.%u: past a table's end: %s (%zu wrong)", in->minor,
	      in->minor <= 9 ? "co_lnotab's last line" : "-ENOENT", t.past_bad);
	if (in->minor >= 11) {
		size_t seen = 0;

		for (int c = 0; c < 16; c++)
			seen += t.codes_seen[c];
		CHECK(seen == 16 && t.no_line > 0,
		      "python3.%u: the tables use all 16 entry codes (%zu) and instructions without a line (%zu)",
		      in->minor, seen, t.no_line);
	} else {
		CHECK(t.addr_ext && t.line_ext && t.negative && (in->minor < 10 || t.no_line > 0),
		      "python3.%u: the tables use offset (%d) and line (%d) extension pairs, negative deltas (%d), "
		      "instructions without a line (%zu)",
		      in->minor, t.addr_ext, t.line_ext, t.negative, t.no_line);
	}
}

/* ---- crafted tables ---- */

/* One crafted case: the line at instr of table (kind, firstlineno). */
struct line_case {
	const char *what;
	enum py_linetable_kind kind;
	int first;
	unsigned instr;
	int want;
	size_t len;
	uint8_t table[16];
};

static void run_cases(const struct line_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct line_case *c = &cases[i];
		int got = py_line_of(c->kind, c->table, c->len, c->first, c->instr);

		CHECK(got == c->want, "crafted %s: unit %u is %d (got %d)", c->what, c->instr, c->want, got);
	}
}

#define LNOTAB_CASE(what, first, instr, want, ...) \
	{ what, PY_LINES_LNOTAB, first, instr, want, sizeof((uint8_t[]){ __VA_ARGS__ }), { __VA_ARGS__ } }
#define LT_CASE(what, first, instr, want, ...) \
	{ what, PY_LINES_LINETABLE, first, instr, want, sizeof((uint8_t[]){ __VA_ARGS__ }), { __VA_ARGS__ } }
#define LOC_CASE(what, first, instr, want, ...) \
	{ what, PY_LINES_LOCATIONS, first, instr, want, sizeof((uint8_t[]){ __VA_ARGS__ }), { __VA_ARGS__ } }

/* 3.8, 3.9: (byte increment, signed line increment) pairs. */
static void test_lnotab(void)
{
	static const struct line_case cases[] = {
		LNOTAB_CASE("lnotab 2,+1 4,+2", 10, 0, 10, 2, 1, 4, 2),
		LNOTAB_CASE("lnotab 2,+1 4,+2 (byte 2)", 10, 1, 11, 2, 1, 4, 2),
		LNOTAB_CASE("lnotab 2,+1 4,+2 (byte 4)", 10, 2, 11, 2, 1, 4, 2),
		LNOTAB_CASE("lnotab 2,+1 4,+2 (byte 6)", 10, 3, 13, 2, 1, 4, 2),
		LNOTAB_CASE("lnotab 2,+1 4,+2, far past the end: the last line", 10, UINT_MAX, 13, 2, 1, 4, 2),
		LNOTAB_CASE("lnotab 0,-1: a negative increment at offset 0", 10, 0, 9, 0, 0xff),
		/* lnotab_notes.txt's example: 300 bytes and 200 lines on, as 255,0 45,127 0,73 */
		LNOTAB_CASE("lnotab extension pairs: before", 1, 149, 1, 255, 0, 45, 127, 0, 73),
		LNOTAB_CASE("lnotab extension pairs: at byte 300", 1, 150, 201, 255, 0, 45, 127, 0, 73),
		LNOTAB_CASE("lnotab half pair: reached before it", 10, 0, 10, 2, 1, 4),
		LNOTAB_CASE("lnotab half pair: reached", 10, 1, -EINVAL, 2, 1, 4),
		LNOTAB_CASE("lnotab line past INT_MAX", INT_MAX - 10, 0, -EINVAL, 0, 127),
		LNOTAB_CASE("lnotab line below INT_MIN", INT_MIN + 5, 0, -EINVAL, 0, 0x80),
		LNOTAB_CASE("lnotab line below 1: none", 1, 0, -ENOENT, 0, 0x80),
	};
	int got;

	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
	got = py_line_of(PY_LINES_LNOTAB, NULL, 0, 42, 0);
	CHECK(got == 42, "crafted lnotab empty: every unit is the first line (got %d)", got);
	got = py_line_of(PY_LINES_LNOTAB, (const uint8_t *)"", 0, 42, UINT_MAX);
	CHECK(got == 42, "crafted lnotab empty: unit UINT_MAX too (got %d)", got);
}

/* 3.10: (byte length, signed line delta) entries, -128: no line. */
static void test_linetable(void)
{
#define LT_TABLE 4, 0, 6, 2, 2, 0x80, 4, 1 /* [0,4) 10, [4,10) 12, [10,12) none, [12,16) 13 */
	static const struct line_case cases[] = {
		LT_CASE("linetable", 10, 0, 10, LT_TABLE),
		LT_CASE("linetable", 10, 1, 10, LT_TABLE),
		LT_CASE("linetable", 10, 2, 12, LT_TABLE),
		LT_CASE("linetable", 10, 4, 12, LT_TABLE),
		LT_CASE("linetable (-128)", 10, 5, -ENOENT, LT_TABLE),
		LT_CASE("linetable (after -128, the line goes on from 12)", 10, 6, 13, LT_TABLE),
		LT_CASE("linetable", 10, 7, 13, LT_TABLE),
		LT_CASE("linetable past the end", 10, 8, -ENOENT, LT_TABLE),
		LT_CASE("linetable far past the end", 10, UINT_MAX, -ENOENT, LT_TABLE),
		LT_CASE("linetable: zero-length entries carry line deltas", 1, 0, 301, 0, 127, 0, 127, 6, 46),
		LT_CASE("linetable: 254-byte extensions", 1, 200, 2, 254, 1, 254, 0, 2, 0),
		LT_CASE("linetable half entry: reached before it", 10, 1, 10, 4, 0, 6),
		LT_CASE("linetable half entry: reached", 10, 2, -EINVAL, 4, 0, 6),
		LT_CASE("linetable line past INT_MAX", INT_MAX, 0, -EINVAL, 2, 1),
		LT_CASE("linetable line 0: none", 1, 0, -ENOENT, 2, 0xff),
	};
	int got;

	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
	got = py_line_of(PY_LINES_LINETABLE, NULL, 0, 42, 0);
	CHECK(got == -ENOENT, "crafted linetable empty: -ENOENT (got %d)", got);
#undef LT_TABLE
}

/* 3.11+: location entries. */
static void test_locations(void)
{
	/* short form (code 0, 2 units, line 10); one-line form (code 11: +1, 1 unit); no location (code 15,
	 * 3 units); no columns (code 13, svarint -2 = 5, 1 unit); long form (code 14, 8 units: svarint +200 =
	 * 400 = 0x50 0x06, end line +0, columns 1001 = 0x69 0x0f each). */
#define LOC_TABLE 0x81, 0x05, 0xd8, 3, 7, 0xfa, 0xe8, 0x05, 0xf7, 0x50, 0x06, 0x00, 0x69, 0x0f, 0x69, 0x0f
	static const struct line_case cases[] = {
		LOC_CASE("locations short form", 10, 0, 10, LOC_TABLE),
		LOC_CASE("locations short form", 10, 1, 10, LOC_TABLE),
		LOC_CASE("locations one-line form +1", 10, 2, 11, LOC_TABLE),
		LOC_CASE("locations no location", 10, 3, -ENOENT, LOC_TABLE),
		LOC_CASE("locations no location", 10, 5, -ENOENT, LOC_TABLE),
		LOC_CASE("locations no columns -2", 10, 6, 9, LOC_TABLE),
		LOC_CASE("locations long form +200: first unit", 10, 7, 209, LOC_TABLE),
		LOC_CASE("locations long form +200: last unit", 10, 14, 209, LOC_TABLE),
		LOC_CASE("locations past the end", 10, 15, -ENOENT, LOC_TABLE),
		LOC_CASE("locations far past the end", 10, UINT_MAX, -ENOENT, LOC_TABLE),
		LOC_CASE("locations truncated varint", 10, 0, -EINVAL, 0xe8, 0x45),
		LOC_CASE("locations varint cut by an entry's first byte", 10, 0, -EINVAL, 0xe8, 0x45, 0x81, 0x00),
		LOC_CASE("locations short form without its column byte", 10, 0, -EINVAL, 0x81),
		LOC_CASE("locations one-line form with one column byte", 10, 0, -EINVAL, 0xd8, 0x03),
		LOC_CASE("locations long form cut in its columns", 10, 0, -EINVAL, 0xf7, 0x50, 0x06, 0x00, 0x69),
		LOC_CASE("locations entry byte without bit 7", 10, 0, -EINVAL, 0x05),
		LOC_CASE("locations column byte with bit 7", 10, 0, -EINVAL, 0x81, 0x85),
		LOC_CASE("locations malformed after the unit: found first", 10, 1, 10, 0x81, 0x05, 0x05),
		LOC_CASE("locations malformed before the unit", 10, 2, -EINVAL, 0x81, 0x05, 0x05),
		LOC_CASE("locations 6-chunk varint", 10, 0, 10, 0xe8, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00),
		LOC_CASE("locations 7-chunk varint", 10, 0, -EINVAL, 0xe8, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00),
		LOC_CASE("locations delta -(2^35-1)", 10, 0, -EINVAL, 0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f),
		LOC_CASE("locations line at INT_MAX", INT_MAX, 0, INT_MAX, 0xd0, 0, 0),
		LOC_CASE("locations line past INT_MAX", INT_MAX, 0, -EINVAL, 0xe0, 0, 0),
		LOC_CASE("locations line 0 (module RESUME): none", 1, 0, -ENOENT, 0xe8, 0x03),
	};
	int got;

	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
	got = py_line_of(PY_LINES_LOCATIONS, NULL, 0, 42, 0);
	CHECK(got == -ENOENT, "crafted locations empty: -ENOENT (got %d)", got);
#undef LOC_TABLE
}

static void test_bad_args(void)
{
	static const uint8_t t[] = { 0x81, 0x05 };
	int a = py_line_of(0, t, sizeof(t), 1, 0), b = py_line_of(99, t, sizeof(t), 1, 0);
	int c = py_line_of(PY_LINES_LOCATIONS, NULL, 2, 1, 0);

	CHECK(a == -EINVAL && b == -EINVAL, "crafted: unknown kinds 0 and 99 are -EINVAL (%d, %d)", a, b);
	CHECK(c == -EINVAL, "crafted: a NULL table of length 2 is -EINVAL (%d)", c);
}

int main(void)
{
	char dir[] = "/tmp/test_pylines.XXXXXX", path[PATH_MAX];
	struct interp interps[MAX_INTERPS];
	size_t n;

	test_lnotab();
	test_linetable();
	test_locations();
	test_bad_args();
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return CHECK_EXIT();
	}
	snprintf(path, sizeof(path), "%s/dump.py", dir);
	CHECK(write_file(path, dump_py, sizeof(dump_py) - 1) == 0, "wrote the dump script");
	n = find_interps(interps);
	for (size_t i = 0; i < n; i++)
		test_interp(&interps[i], dir);
	run_quiet("rm -rf -- '%s'", dir);
	return CHECK_EXIT();
}
