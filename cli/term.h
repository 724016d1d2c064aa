/* term.h - the terminal under flamectl top --watch: keys read raw, the alternate screen, its size, and
 * the signals that end, resize and suspend the view. */
#ifndef FLAMECTL_TERM_H
#define FLAMECTL_TERM_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <termios.h>

/* What term_wait saw, as bits. */
enum {
	TERM_QUIT = 1,    /* SIGINT, SIGTERM, SIGHUP or SIGQUIT */
	TERM_RESIZE = 2,  /* SIGWINCH: the size changed */
	TERM_SUSPEND = 4, /* SIGTSTP (Ctrl-Z): call term_suspend */
	TERM_REDRAW = 8,  /* SIGCONT: continued after a stop, the screen may be anything */
	TERM_KEYS = 16,   /* keys were read */
	TERM_READY = 32,  /* the fd given to term_wait is readable */
};

#define TERM_SIGNALS 7

struct term {
	bool screen;             /* stdout is a terminal: the alternate screen, escape codes */
	bool keys;               /* stdin is a terminal too, still open: keys are read raw */
	bool raw_on, screen_on;  /* what term_enter set and term_leave undoes */
	struct termios saved;    /* stdin's settings before raw mode */
	struct termios raw;      /* and in it */
	sigset_t old_mask, wait_mask;          /* the mask before term_init; the one term_wait waits with */
	struct sigaction old_act[TERM_SIGNALS]; /* restored only when term_init fails */
};

/* Looks at stdin and stdout, catches SIGINT, SIGTERM, SIGHUP and SIGQUIT (and, on a terminal, SIGWINCH,
 * SIGTSTP and SIGCONT) and blocks them: they are seen by term_wait only. Writes nothing. Returns 0 or
 * -errno. */
int term_init(struct term *t);

/* On a terminal: stdin raw (no line editing, no echo; Ctrl-C still signals), the alternate screen,
 * the cursor hidden. Does nothing otherwise. Again after SIGCONT: sets raw mode again (a shell may
 * have reset it). Returns 0 or -errno. */
int term_enter(struct term *t);

/* Undoes term_enter: the normal screen, the cursor, stdin's settings. Safe to call twice. */
void term_leave(struct term *t);

/* Ends the view: term_leave. The signals stay caught and blocked until the process exits, which it
 * is to do next. Safe on a term term_init failed on. */
void term_done(struct term *t);

/* The terminal's rows and columns (24 x 80 when it cannot say), each at least 1 and bounded. */
void term_size(const struct term *t, unsigned *rows, unsigned *cols);

/* Waits up to timeout_ms (-1: until something happens) for a key, a signal or fd (>= 0) to be
 * readable. Keys read go to keys (up to cap bytes; *nkeys says how many). Returns the TERM_* bits of
 * what happened (0: the time passed), or -errno. */
int term_wait(struct term *t, int timeout_ms, int fd, char *keys, size_t cap, size_t *nkeys);

/* Ctrl-Z: gives the terminal back, stops until continued, then takes it again (term_enter). Returns
 * 0 or -errno. */
int term_suspend(struct term *t);

#endif
