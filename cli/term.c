/* term.c - the terminal under flamectl top --watch: raw keys, the alternate screen, its size, and the
 * signals, which stay blocked but while term_wait waits, so none is lost between a check and a wait. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "term.h"

#define MAX_ROWS 1000
#define MAX_COLS 1000

/* The signals caught, and what each means to term_wait; the last three on a terminal only. SIGQUIT
 * (Ctrl-\) too quits: its core dump would leave the terminal raw on the alternate screen. */
static const struct {
	int sig, event;
} caught[TERM_SIGNALS] = {
	{ SIGINT, TERM_QUIT }, { SIGTERM, TERM_QUIT }, { SIGHUP, TERM_QUIT }, { SIGQUIT, TERM_QUIT },
	{ SIGWINCH, TERM_RESIZE }, { SIGTSTP, TERM_SUSPEND }, { SIGCONT, TERM_REDRAW },
};
#define ALWAYS_CAUGHT 4

/* The TERM_* bits of the signals caught since term_wait last looked: set by the handler, which runs
 * only inside term_wait's ppoll (the signals are blocked elsewhere), so a plain |= is safe. */
static volatile sig_atomic_t pending;

static void on_signal(int sig)
{
	for (size_t i = 0; i < TERM_SIGNALS; i++)
		if (caught[i].sig == sig)
			pending |= caught[i].event;
}

static size_t signals_used(const struct term *t)
{
	return t->screen ? TERM_SIGNALS : ALWAYS_CAUGHT;
}

int term_init(struct term *t)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block;

	memset(t, 0, sizeof(*t));
	t->screen = isatty(STDOUT_FILENO);
	t->keys = t->screen && isatty(STDIN_FILENO);
	sigemptyset(&block);
	for (size_t i = 0; i < signals_used(t); i++)
		sigaddset(&block, caught[i].sig);
	sa.sa_mask = block; /* no handler interrupts another */
	if (sigprocmask(SIG_BLOCK, &block, &t->old_mask))
		return -errno;
	t->wait_mask = t->old_mask;
	for (size_t i = 0; i < signals_used(t); i++) {
		sigdelset(&t->wait_mask, caught[i].sig);
		if (sigaction(caught[i].sig, &sa, &t->old_act[i])) {
			int err = -errno;

			while (i--)
				sigaction(caught[i].sig, &t->old_act[i], NULL);
			sigprocmask(SIG_SETMASK, &t->old_mask, NULL);
			return err;
		}
	}
	pending = 0;
	return 0;
}

int term_enter(struct term *t)
{
	if (!t->screen)
		return 0;
	if (t->keys) {
		if (!t->raw_on) {
			if (tcgetattr(STDIN_FILENO, &t->saved))
				return -errno;
			t->raw = t->saved;
			t->raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
			t->raw.c_cc[VMIN] = 1;
			t->raw.c_cc[VTIME] = 0;
		}
		if (tcsetattr(STDIN_FILENO, TCSANOW, &t->raw))
			return -errno;
		t->raw_on = true;
	}
	if (!t->screen_on) {
		t->screen_on = true; /* set first: a failed write is still undone */
		fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
		if (fflush(stdout))
			return -errno;
	}
	return 0;
}

void term_leave(struct term *t)
{
	if (t->screen_on) {
		fputs("\033[m\033[?25h\033[?1049l", stdout);
		fflush(stdout);
		t->screen_on = false;
	}
	if (t->raw_on) {
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
		t->raw_on = false;
	}
}

void term_done(struct term *t)
{
	/* the signals stay caught and blocked: flamectl ends right after, and a second SIGINT on the way
	 * out (a terminal's Ctrl-C reaches the whole process group; timeout(1) signals the child, then
	 * the group) must not turn a clean exit into death by signal */
	term_leave(t);
}

void term_size(const struct term *t, unsigned *rows, unsigned *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (!t->screen || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || !ws.ws_row || !ws.ws_col)
		return;
	*rows = ws.ws_row < MAX_ROWS ? ws.ws_row : MAX_ROWS;
	*cols = ws.ws_col < MAX_COLS ? ws.ws_col : MAX_COLS;
}

int term_wait(struct term *t, int timeout_ms, int fd, char *keys, size_t cap, size_t *nkeys)
{
	/* stdin when keys are read (else a negative fd, which poll skips), then fd */
	struct pollfd pfd[2] = { { .fd = t->keys ? STDIN_FILENO : -1, .events = POLLIN }, { .fd = fd, .events = POLLIN } };
	struct timespec ts = { .tv_sec = timeout_ms / 1000, .tv_nsec = (long)(timeout_ms % 1000) * 1000000 };
	int n, events;

	*nkeys = 0;
	n = ppoll(pfd, 2, timeout_ms < 0 ? NULL : &ts, &t->wait_mask);
	if (n < 0 && errno != EINTR)
		return -errno;
	events = pending;
	pending = 0;
	if (n > 0 && fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
		events |= TERM_READY;
	if (n > 0 && t->keys && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t got = read(STDIN_FILENO, keys, cap);

		if (got > 0) {
			*nkeys = (size_t)got;
			events |= TERM_KEYS;
		} else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
			t->keys = false; /* stdin is gone: Ctrl-C still ends the view */
		}
	}
	return events;
}

int term_suspend(struct term *t)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, mine;
	sigset_t tstp;

	term_leave(t);
	sigemptyset(&tstp);
	sigaddset(&tstp, SIGTSTP);
	sigemptyset(&dfl.sa_mask);
	if (sigaction(SIGTSTP, &dfl, &mine))
		return -errno;
	/* unblocked with its default action, it stops the process before raise returns */
	sigprocmask(SIG_UNBLOCK, &tstp, NULL);
	raise(SIGTSTP);
	sigprocmask(SIG_BLOCK, &tstp, NULL);
	if (sigaction(SIGTSTP, &mine, NULL))
		return -errno;
	return term_enter(t);
}
