/* watch.c - flamectl top --watch: the functions burning CPU over the last seconds, redrawn every second
 * on the alternate screen (keys sort, pause and quit), or printed as plain blocks when stdout is not a
 * terminal. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bgfetch.h"
#include "cli.h"
#include "render/unit.h"
#include "term.h"
#include "topsource.h"
#include "util/utf8.h"

#define REFRESH_MS 1000
#define MIN_GAP_MS 200      /* from the end of a fetch to the next, however long it took */
#define PLAIN_ROWS 20       /* functions per block off a terminal, unless --limit */
#define LINE_MAX 4096       /* bytes of one line written */
#define ROW_PREFIX 39       /* columns before a function's name */
#define KEYS_MAX 64         /* bytes of keys read at once */

enum sort { SORT_SELF, SORT_TOTAL, SORT_NAME };

static const char *const sort_names[] = { [SORT_SELF] = "self", [SORT_TOTAL] = "total", [SORT_NAME] = "name" };

struct view {
	const struct options *o;
	struct term term;
	struct topsource *src;
	struct bgfetch *bg;        /* the fetches after the first, on a thread: keys are read meanwhile */
	struct top_snapshot snap;  /* the last one that arrived, sorted as asked */
	time_t snap_time;          /* when it arrived; 0: none yet */
	char error[512];           /* why the last fetch failed; "": it worked */
	enum sort sort;
	bool paused, clear;        /* clear: the screen may hold anything, erase it all */
	unsigned rows, cols, line; /* the screen's size and the line being written */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- text: every byte written is checked, every line fits --------------------------------------- */

/* The character at s: its length in bytes (0 at the end), its columns, and whether it must be shown as
 * '?' (a control character, or not UTF-8). */
static size_t char_at(const unsigned char *s, size_t *cols, bool *bad)
{
	uint32_t cp;
	size_t len;

	*cols = 1;
	*bad = false;
	if (!s[0])
		return 0;
	len = utf8_decode(s, &cp);
	if (!len || cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
		*bad = true;
		return 1;
	}
	*cols = cp >= 0x1100 ? 2 : 1; /* wide scripts take two; assumed so for all above U+1100 */
	return len;
}

static size_t text_cols(const char *s)
{
	size_t n = 0, len, w;
	bool bad;

	for (const unsigned char *p = (const unsigned char *)s; (len = char_at(p, &w, &bad)); p += len)
		n += w;
	return n;
}

/* Copies s into dst (cap bytes with the NUL), control characters and broken UTF-8 as '?', in at most
 * max_cols columns: a longer s is cut and ends in "..". Returns the columns written. */
static size_t clean_copy(char *dst, size_t cap, const char *s, size_t max_cols)
{
	bool cut = text_cols(s) > max_cols, bad;
	size_t budget = cut && max_cols >= 3 ? max_cols - 2 : max_cols, n = 0, cols = 0, len, w;

	for (const unsigned char *p = (const unsigned char *)s; (len = char_at(p, &w, &bad)); p += len) {
		if (cols + w > budget || n + len + 3 > cap)
			break;
		if (bad) {
			dst[n++] = '?';
		} else {
			memcpy(dst + n, p, len);
			n += len;
		}
		cols += w;
	}
	if (cut && max_cols >= 3 && n + 3 <= cap) {
		memcpy(dst + n, "..", 2);
		n += 2;
		cols += 2;
	}
	dst[n] = '\0';
	return cols;
}

/* Writes one line. On the screen: below the last one while rows remain, cut to the width; attr (an SGR
 * sequence) paints it padded to the width. Off it: whole, ending in a newline. */
__attribute__((format(printf, 3, 4))) static void line(struct view *v, const char *attr, const char *fmt, ...)
{
	char raw[LINE_MAX], clean[LINE_MAX];
	size_t cols;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	if (!v->term.screen) {
		clean_copy(clean, sizeof(clean), raw, SIZE_MAX);
		printf("%s\n", clean);
		return;
	}
	if (v->line >= v->rows)
		return;
	cols = clean_copy(clean, sizeof(clean), raw, v->cols);
	printf("%s\033[2K%s%s", v->line ? "\r\n" : "", attr ? attr : "", clean);
	if (attr) {
		for (; cols < v->cols; cols++)
			putchar(' ');
		fputs("\033[m", stdout);
	}
	v->line++;
}

/* A value of the table into buf (at least UNIT_BUF bytes): samples bare, microseconds as a time. */
static const char *amount(char *buf, uint64_t v, bool micros)
{
	if (micros)
		return unit_amount(buf, v, UNIT_MICROS);
	snprintf(buf, UNIT_BUF, "%llu", (unsigned long long)v);
	return buf;
}

static const char *percent(char *buf, uint64_t part, uint64_t whole)
{
	snprintf(buf, 16, "%.1f%%", whole ? 100.0 * (double)part / (double)whole : 0.0);
	return buf;
}

/* --- what the header says ---------------------------------------------------------------------------- */

/* What is watched: "all processes", "pid 42 (+children)", "thread 43 of pid 42", named or not. */
static void watched(const struct options *o, char *buf, size_t len)
{
	int n;

	if (o->tid >= 0)
		n = snprintf(buf, len, "thread %lld of pid %lld", (long long)o->tid, (long long)o->pid);
	else if (o->pid >= 0)
		n = snprintf(buf, len, "pid %lld%s", (long long)o->pid, o->children ? " (+children)" : "");
	else
		n = snprintf(buf, len, "all processes");
	if (o->comm && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " named %s", o->comm);
}

static void clock_text(time_t t, bool date, char *buf, size_t len)
{
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(buf, len, date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm))
		snprintf(buf, len, "%lld", (long long)t);
}

/* The window: "last 5 s", "last 2 min", "since 2026-11-22 10:00:00", "2026-... to 2026-...". */
static void window_text(const struct options *o, char *buf, size_t len)
{
	static const struct {
		int64_t seconds;
		const char *name;
	} units[] = { { 86400, "d" }, { 3600, "h" }, { 60, "min" }, { 1, "s" } };
	char from[32], to[32];
	size_t i = 0;

	if (o->from_s) {
		clock_text((time_t)o->from, true, from, sizeof(from));
		clock_text((time_t)o->to, true, to, sizeof(to));
		snprintf(buf, len, o->to_s ? "%s to %s" : "since %s", from, to);
		return;
	}
	while (o->since % units[i].seconds)
		i++;
	snprintf(buf, len, "last %lld %s", (long long)(o->since / units[i].seconds), units[i].name);
}

/* The window's total: "1,234 CPU samples", "12.50 s off CPU", "3.20 s of wall-clock time". */
static void total_text(const struct view *v, char *buf, size_t len)
{
	char n[UNIT_BUF];

	if (!v->snap.micros)
		snprintf(buf, len, "%s CPU sample%s", unit_count(n, v->snap.total), v->snap.total == 1 ? "" : "s");
	else
		snprintf(buf, len, "%s %s", amount(n, v->snap.total, true),
			 v->o->kind == STORE_OFFCPU ? "off CPU" : "of wall-clock time");
}

/* --- the table ---------------------------------------------------------------------------------------- */

static int by_self(const void *a, const void *b)
{
	const struct top_fn *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int by_total(const void *a, const void *b)
{
	const struct top_fn *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return by_self(a, b);
}

static int by_name(const void *a, const void *b)
{
	const struct top_fn *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : by_self(a, b);
}

static void sort_snapshot(struct view *v)
{
	static int (*const cmp[])(const void *, const void *) = { by_self, by_total, by_name };

	if (v->snap.n)
		qsort(v->snap.fn, v->snap.n, sizeof(*v->snap.fn), cmp[v->sort]);
}

/* The functions, as many as fit (the screen's rows, or PLAIN_ROWS off it; --limit at most). */
static void rows(struct view *v)
{
	size_t n = v->snap.n, width = v->term.screen && v->cols > ROW_PREFIX + 3 ? v->cols - ROW_PREFIX : 3;
	char ps[16], pt[16], s[UNIT_BUF], t[UNIT_BUF], name[LINE_MAX / 2];

	if (!v->term.screen)
		width = SIZE_MAX;
	if (!v->term.screen && n > PLAIN_ROWS && v->o->limit <= 0)
		n = PLAIN_ROWS;
	if (v->o->limit > 0 && n > (uint64_t)v->o->limit)
		n = (size_t)v->o->limit;
	for (size_t i = 0; i < n && (!v->term.screen || v->line < v->rows); i++) {
		const struct top_fn *f = &v->snap.fn[i];

		clean_copy(name, sizeof(name), f->name, width);
		line(v, NULL, "%7s %7s %10s %10s  %s", percent(ps, f->self, v->snap.total),
		     percent(pt, f->total, v->snap.total), amount(s, f->self, v->snap.micros),
		     amount(t, f->total, v->snap.micros), name);
	}
	if (v->snap_time && !v->snap.n)
		line(v, NULL, "%7s nothing recorded in the window%s", "",
		     v->o->kind == STORE_OFFCPU ? " (off-CPU time needs flamed --off-cpu)" : "");
}

/* The screen: what is watched, the sort and the keys, an error or a note, the column titles, the rows. */
static void draw_screen(struct view *v)
{
	char what[320], window[80], total[64], at[16], keys[128];
	const char *note = "";

	term_size(&v->term, &v->rows, &v->cols);
	v->line = 0;
	fputs(v->clear ? "\033[H\033[2J" : "\033[H", stdout);
	v->clear = false;
	watched(v->o, what, sizeof(what));
	window_text(v->o, window, sizeof(window));
	total_text(v, total, sizeof(total));
	if (v->snap_time)
		clock_text(v->snap_time, false, at, sizeof(at));
	else
		snprintf(at, sizeof(at), "--:--:--");
	line(v, "\033[1m", "flamectl top: %s, %s: %s at %s", what, window, v->snap_time ? total : "nothing yet", at);
	snprintf(keys, sizeof(keys), "sorted by %s   keys: s self  t total  n name  p pause  q quit",
		 sort_names[v->sort]);
	line(v, NULL, "%s%s", v->paused ? "PAUSED (p resumes)   " : "", keys);
	if (topsource_local(v->src))
		note = "; flamed stores samples every flush (10 s by default): the last seconds show up late";
	if (v->error[0])
		line(v, "\033[1;31m", "error: %s (retrying every second)", v->error);
	else if (v->snap.left_out)
		line(v, NULL, "from %s; %llu more functions left out", topsource_where(v->src),
		     (unsigned long long)v->snap.left_out);
	else
		line(v, NULL, "from %s%s", topsource_where(v->src), note);
	line(v, "\033[7m", "%7s %7s %10s %10s  %s", "%Self", "%Total", "Self", "Total", "Function");
	rows(v);
	if (v->line < v->rows)
		fputs("\r\n\033[J", stdout);
}

/* Off a terminal, a block: one line saying what and when (or what went wrong), the rows, a blank line. */
static void draw_plain(struct view *v)
{
	char what[320], window[80], total[64], at[16], more[64];

	watched(v->o, what, sizeof(what));
	window_text(v->o, window, sizeof(window));
	total_text(v, total, sizeof(total));
	clock_text(v->error[0] || !v->snap_time ? time(NULL) : v->snap_time, false, at, sizeof(at));
	if (v->error[0]) {
		line(v, NULL, "%s %s, %s: error: %s; retrying every second", at, what, window, v->error);
	} else {
		snprintf(more, sizeof(more), " (%llu more functions left out)", (unsigned long long)v->snap.left_out);
		line(v, NULL, "%s %s, %s: %s%s%s; by %s: %%Self %%Total Self Total Function", at, what, window, total,
		     topsource_local(v->src) ? " (in the database: stored every flush)" : "",
		     v->snap.left_out ? more : "", sort_names[v->sort]);
		rows(v);
	}
	putchar('\n');
}

/* Draws the view. Returns 0 or -errno (-EPIPE: the reader went away). */
static int draw(struct view *v)
{
	if (v->term.screen)
		draw_screen(v);
	else
		draw_plain(v);
	if (fflush(stdout) || ferror(stdout))
		return errno ? -errno : -EIO;
	return 0;
}

/* --- the loop -------------------------------------------------------------------------------------------- */

/* What a fetch ended with: a new snapshot replaces the one shown; on failure (err) the old one stays,
 * with the error already in v->error. */
static void landed(struct view *v, struct top_snapshot *snap, int err)
{
	if (err) {
		topsource_clear(snap);
		return;
	}
	topsource_clear(&v->snap);
	v->snap = *snap;
	v->snap_time = time(NULL);
	sort_snapshot(v);
}

/* The first fetch, waited for. Returns 0 or its error. */
static int fetch(struct view *v)
{
	struct top_snapshot snap = { 0 };
	int err = topsource_fetch(v->src, &snap, v->error, sizeof(v->error));

	landed(v, &snap, err);
	return err;
}

/* Starts the next fetch. Returns true when it started; else the error is shown. */
static bool start_fetch(struct view *v)
{
	int err = bgfetch_start(v->bg);

	if (err)
		snprintf(v->error, sizeof(v->error), "cannot start a request: %s", strerror(-err));
	return !err;
}

/* Takes the fetch that ended, if it did. Returns true when one was taken. */
static bool take_fetch(struct view *v)
{
	struct top_snapshot snap = { 0 };
	int err = bgfetch_take(v->bg, &snap, v->error, sizeof(v->error));

	if (err == -EAGAIN)
		return false;
	landed(v, &snap, err);
	return true;
}

/* Acts on the keys read. Returns true to quit. */
static bool keys(struct view *v, const char *k, size_t n, int64_t *next)
{
	for (size_t i = 0; i < n && k[i] != '\033'; i++) { /* from ESC on: an arrow's or function key's */
		switch (k[i]) {
		case 'q': case 'Q': case 3: /* Ctrl-C, should it arrive as a key */
			return true;
		case 's': case 'S': v->sort = SORT_SELF; break;
		case 't': case 'T': v->sort = SORT_TOTAL; break;
		case 'n': case 'N': v->sort = SORT_NAME; break;
		case 'p': case 'P': case ' ':
			v->paused = !v->paused;
			*next = now_ms(); /* on resuming, fetch at once */
			break;
		default: break;
		}
	}
	sort_snapshot(v);
	return false;
}

/* Refreshes every second until a key or a signal ends it: a fetch runs on its own thread while keys
 * and signals are waited for, so q and Ctrl-C act at once even while the daemon is slow to answer.
 * Returns the exit code. */
static int loop(struct view *v, int64_t next)
{
	char k[KEYS_MAX];
	size_t nk;
	bool dirty = true, busy;
	int64_t now, started = 0;
	int ev, err, timeout;

	for (;;) {
		if (!v->paused && !bgfetch_busy(v->bg) && now_ms() >= next) {
			started = now_ms();
			if (!start_fetch(v)) {
				next = started + REFRESH_MS;
				dirty = true;
			}
		}
		if (dirty && (err = draw(v))) {
			if (err == -EPIPE)
				return EXIT_OK;
			term_leave(&v->term);
			fprintf(stderr, "flamectl: cannot write the output: %s\n", strerror(-err));
			return EXIT_ERROR;
		}
		dirty = false;
		now = now_ms();
		busy = bgfetch_busy(v->bg);
		timeout = busy || v->paused ? -1 : next > now ? (int)(next - now) : 0;
		ev = term_wait(&v->term, timeout, busy ? bgfetch_fd(v->bg) : -1, k, sizeof(k), &nk);
		if (ev < 0) {
			term_leave(&v->term);
			fprintf(stderr, "flamectl: cannot wait for keys: %s\n", strerror(-ev));
			return EXIT_ERROR;
		}
		if (ev & TERM_QUIT)
			return EXIT_OK;
		if ((ev & TERM_READY) && take_fetch(v)) {
			now = now_ms();
			next = started + REFRESH_MS > now + MIN_GAP_MS ? started + REFRESH_MS : now + MIN_GAP_MS;
			dirty = true;
		}
		if ((ev & TERM_KEYS) && keys(v, k, nk, &next))
			return EXIT_OK;
		if (ev & (TERM_SUSPEND | TERM_REDRAW)) {
			err = ev & TERM_SUSPEND ? term_suspend(&v->term) : term_enter(&v->term);
			if (err) {
				term_leave(&v->term);
				fprintf(stderr, "flamectl: cannot take the terminal back: %s\n", strerror(-err));
				return EXIT_ERROR;
			}
			v->clear = true;
		}
		dirty = dirty || (ev & (TERM_KEYS | TERM_RESIZE | TERM_SUSPEND | TERM_REDRAW));
	}
}

int watch_main(const struct options *o)
{
	struct view v = { .o = o };
	int64_t start;
	int code = EXIT_ERROR, err;

	err = topsource_new(o, &v.src, v.error, sizeof(v.error));
	if (err) {
		fprintf(stderr, "flamectl: %s\n", err == -ENOMEM ? "out of memory" : v.error);
		return EXIT_ERROR;
	}
	/* a reader that goes away ends the view quietly (-EPIPE), not by the signal; the process ends soon
	 * after, so it is not restored */
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOFBF, 1 << 16); /* one write per frame */
	/* The first snapshot before the screen (and before the signals are caught: Ctrl-C meanwhile just
	 * ends flamectl), so that what no retry mends (a bad URL, no database) is said plainly; what may
	 * mend (flamed down or restarting) is shown and retried. */
	start = now_ms();
	err = fetch(&v);
	if (err == -EINVAL || (err && topsource_local(v.src))) {
		fprintf(stderr, "flamectl: %s\n", v.error);
		code = err == -EINVAL && !topsource_local(v.src) ? EXIT_USAGE : EXIT_ERROR;
		goto out;
	}
	/* the signals blocked before the fetch thread starts, so that they come to term_wait alone */
	if ((err = term_init(&v.term))) {
		fprintf(stderr, "flamectl: cannot catch signals: %s\n", strerror(-err));
		goto out;
	}
	if ((err = bgfetch_new(v.src, &v.bg))) {
		fprintf(stderr, "flamectl: %s\n", strerror(-err));
		goto out;
	}
	if ((err = term_enter(&v.term))) {
		term_leave(&v.term);
		fprintf(stderr, "flamectl: cannot set up the terminal: %s\n", strerror(-err));
		goto out;
	}
	code = loop(&v, start + REFRESH_MS);
out:
	term_done(&v.term);
	topsource_clear(&v.snap);
	if (!bgfetch_free(v.bg)) {
		/* A fetch still in flight (q while the daemon is slow to answer) uses the source and o: the
		 * process ends here, the thread with it, without unwinding what it reads. */
		fflush(stdout);
		_exit(code);
	}
	topsource_free(v.src);
	return code;
}
