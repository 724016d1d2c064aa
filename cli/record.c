/* record.c - flamectl record: runs a command (or follows a running process) and, when it ends, writes
 * the profile of it and every process it started over exactly its life: from the flamed that answers,
 * or from a private one run for the purpose (private.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <json-c/json.h>

#include "cli.h"
#include "jsonread.h"
#include "private.h"

#define PROBE_TIMEOUT_S 3    /* how long a running flamed may take to answer its status */
#define DEFAULT_HZ 99        /* a private flamed's frequency (py-spy samples at 100) */
#define TITLE_MAX 200        /* bytes of the command line in the title */

/* The signal that stopped recording (SIGINT, SIGTERM, ...), 0: none. */
static volatile sig_atomic_t stop_signal;
static volatile pid_t child_pid;

/* Passes a signal sent to flamectl on to the command; one from the terminal (Ctrl-C) reached the whole
 * process group already. Either way the profile is still written. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	stop_signal = sig;
	if (child_pid > 0 && (si->si_code == SI_USER || si->si_code == SI_QUEUE) && si->si_pid != child_pid)
		kill(child_pid, sig);
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads a status answer (len bytes at body) into hz, off_cpu and refused. Returns 0, or -EBADMSG
 * with what is wrong said (a field missing or of another type). */
static int read_status(const char *url, const char *body, size_t len, unsigned *hz, bool *off_cpu,
		       char *refused, size_t refused_len)
{
	struct json_object *st = NULL, *oc;
	const char *why_not = "";
	char why[256];
	uint64_t freq;
	int err;

	if ((err = jr_parse(body, len, &st, why, sizeof(why))) || (err = jr_u64(st, "frequency", &freq, why, sizeof(why))) ||
	    (err = jr_object(st, "off_cpu", &oc, why, sizeof(why))) || (err = jr_bool(oc, "enabled", off_cpu, why, sizeof(why))) ||
	    (json_object_object_get_ex(oc, "refused", NULL) && (err = jr_string(oc, "refused", &why_not, why, sizeof(why))))) {
		fprintf(stderr, "flamectl: %s answered /api/v1/status in another shape: %s\n", url, why);
		json_object_put(st);
		return err == -ENOMEM ? err : -EBADMSG;
	}
	*hz = freq > 1000000 ? 0 : (unsigned)freq;
	snprintf(refused, refused_len, "%s", why_not);
	json_object_put(st);
	return 0;
}

/* What the flamed at url does, from its status: answered (0), its frequency, whether it counts off-CPU
 * time, and why not when it was asked to but the kernel refused (refused, "" otherwise); -errno when
 * none answers (-EACCES: it wants a token we lack; -EBADMSG: it answered in another shape, said). */
static int probe(const struct options *o, const char *url, unsigned *hz, bool *off_cpu, char *refused,
		 size_t refused_len)
{
	char *body = NULL, err_body[512];
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);
	int status = 0, err;

	if (!f)
		return -ENOMEM;
	err = api_get(o, url, "/api/v1/status?format=json", PROBE_TIMEOUT_S, f, &status, err_body, sizeof(err_body));
	fclose(f);
	refused[0] = '\0';
	if (!err && status == 401)
		err = -EACCES;
	else if (!err && status / 100 != 2)
		err = -EPROTO;
	else if (!err)
		err = read_status(url, body ? body : "", body ? len : 0, hz, off_cpu, refused, refused_len);
	free(body);
	return err;
}

/* The command line, space-separated, cut at TITLE_MAX bytes. */
static void command_text(char *const *cmd, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; cmd[i] && n + 1 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " " : "", cmd[i]);
	if (n >= len && len > 4)
		strcpy(buf + len - 4, "...");
}

/* Whether name can be run (as execvp would find it): 0 or -errno. */
static int runnable(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4096];
	int err = -ENOENT;

	if (strchr(name, '/'))
		return access(name, X_OK) ? -errno : 0;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path, *e; *p; p = *e ? e + 1 : e) {
		e = strchrnul(p, ':');
		if ((size_t)snprintf(buf, sizeof(buf), "%.*s/%s", (int)(e - p), e == p ? "." : p, name) >= sizeof(buf))
			continue;
		if (access(buf, X_OK) == 0)
			return 0;
		if (errno == EACCES)
			err = -EACCES;
	}
	return err;
}

/* Starts cmd with the caller's terminal and environment; -errno when it cannot run (said already). */
static int start_command(char **cmd, pid_t *pid)
{
	int pipefd[2], e = 0;
	ssize_t n;

	/* A pipe closed by exec tells the parent the command started, or carries exec's errno. */
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	*pid = fork();
	if (*pid < 0) {
		e = errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return -e;
	}
	if (*pid == 0) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		close(pipefd[0]);
		sigemptyset(&dfl.sa_mask);
		for (int sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				sigaction(sig, &dfl, NULL);
		execvp(cmd[0], cmd);
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	do
		n = read(pipefd[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == sizeof(e)) {
		waitpid(*pid, NULL, 0);
		fprintf(stderr, "flamectl: cannot run %s: %s\n", cmd[0], strerror(e));
		return -e;
	}
	return 0;
}

/* Waits for the command; its exit status as a shell gives it (128 + signal when killed). */
static int wait_command(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* Follows a process that is not ours until it ends, --duration passes or a signal comes. 0, or
 * -ESRCH when there is no such process. */
static int follow_pid(pid_t pid, int64_t duration)
{
	double end = duration ? now_mono() + (double)duration : 0;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0 && errno == ESRCH)
		return -ESRCH;
	while (!stop_signal && (!end || now_mono() < end)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int ms = end ? (int)((end - now_mono()) * 1e3) + 1 : 1000;

		if (ms > 1000 || ms <= 0)
			ms = 1000;
		if (fd >= 0 ? poll(&pfd, 1, ms) > 0 : (usleep((useconds_t)ms * 1000), kill(pid, 0) < 0 && errno == ESRCH))
			break; /* it ended */
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

/* The output file: -o, else flamed-record-PID.EXT here. */
static void output_name(const struct options *o, pid_t pid, char *buf, size_t len)
{
	static const struct {
		enum query_format fmt;
		const char *ext;
	} exts[] = { { QUERY_SVG, "svg" }, { QUERY_FOLDED, "folded" }, { QUERY_JSON, "json" }, { QUERY_PPROF, "pb.gz" },
		     { QUERY_TOP, "txt" } };
	const char *ext = "svg";

	if (o->output) {
		snprintf(buf, len, "%s", o->output);
		return;
	}
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		if (exts[i].fmt == o->fmt)
			ext = exts[i].ext;
	snprintf(buf, len, "flamed-record-%d.%s", (int)pid, ext);
}

/* Where the profile comes from. */
struct source {
	const char *url;                 /* a running flamed's API, or NULL */
	struct private_flamed *private;  /* else ours */
	unsigned hz;                     /* its sampling frequency (0: not known) */
};

/* Off-CPU time cannot be recorded (who, the flamed, says why): says so, and records CPU samples. */
static void cpu_only(struct options *o, const char *who, const char *why)
{
	fprintf(stderr, "flamectl: off-CPU time cannot be recorded on this host: %s was started with --off-cpu, but "
		"%s; recording CPU samples only\n", who, why);
	o->off_cpu = false;
	o->kind = STORE_CPU;
}

/* Picks the flamed to ask: the one at the API URL when it answers and records what is asked (else
 * ours, when root), or a private one for --db. Returns 0 or an exit code's negation. */
static int pick_source(struct options *o, struct source *src)
{
	const char *url = server_url(o);
	unsigned hz = 0;
	bool off_cpu = false;
	char reason[256], refused[256] = "";
	int err = o->db ? -ENOENT : probe(o, url, &hz, &off_cpu, refused, sizeof(refused));
	const char *why = NULL;

	if (err == -EACCES) {
		fprintf(stderr, "flamectl: %s wants a token: pass --token-file PATH or set FLAMED_TOKEN\n", url);
		return -EXIT_ERROR;
	}
	if (err == -EBADF || err == -EBADMSG)
		return -EXIT_ERROR; /* said */
	/* Started with --off-cpu, but its program refused: a flamed of ours would be refused too. */
	if (!err && o->off_cpu && !off_cpu && refused[0]) {
		snprintf(reason, sizeof(reason), "the flamed at %s", url);
		cpu_only(o, reason, refused);
	}
	if (!err && o->off_cpu && !off_cpu)
		why = "it does not record off-CPU time (flamed --off-cpu)";
	else if (!err && o->frequency > 0 && (unsigned)o->frequency != hz)
		why = "it samples at another frequency";
	if (!err && !why) {
		src->url = url;
		src->hz = hz;
		return 0;
	}
	if (!err)
		snprintf(reason, sizeof(reason), "the flamed at %s does not do: %s", url, why);
	else if (!o->db)
		snprintf(reason, sizeof(reason), "no flamed answers at %s (%s)", url, strerror(-err));
	if (geteuid() != 0) {
		fprintf(stderr, "flamectl: %s; as root, record runs a flamed of its own (sudo flamectl record ...)\n",
			o->db ? "--db records with a flamed of its own, which needs root" : reason);
		return -EXIT_ERROR;
	}
	if (!o->db)
		fprintf(stderr, "flamectl: %s: recording with a flamed of its own\n", reason);
	src->hz = o->frequency > 0 ? (unsigned)o->frequency : DEFAULT_HZ;
	err = private_start(&(struct private_opts){ .db = o->db, .off_cpu = o->off_cpu, .frequency = src->hz },
			    &src->private);
	if (err)
		return -EXIT_ERROR;
	if (o->off_cpu && private_refused(src->private, "off_cpu"))
		cpu_only(o, "flamectl's own flamed", private_refused(src->private, "off_cpu"));
	return 0;
}

/* Runs o's query from the source into out; the exit code. */
static int run_query(const struct options *o, const struct source *src, FILE *out)
{
	return src->url ? run_server(o, src->url, out) : run_local(o, private_db(src->private), out);
}

/* How much the family holds (its processes' values summed) and how many processes it has. */
static void family_size(const struct options *o, const struct source *src, uint64_t *total, unsigned *procs)
{
	struct options q = *o;
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);

	*total = 0;
	*procs = 0;
	if (!f)
		return;
	q.command = CMD_PROCESSES;
	q.format = "json";
	q.merge = q.flush = q.reverse = q.lines = false;
	q.title = NULL;
	q.width = q.limit = -1;
	q.minwidth = -1;
	if (run_query(&q, src, f) == EXIT_OK && fflush(f) == 0 && body) {
		struct json_object *all = NULL, *list;
		char why[256];
		size_t n = 0;

		if (jr_parse(body, len, &all, why, sizeof(why)) || jr_u64(all, "total", total, why, sizeof(why)) ||
		    jr_array(all, "processes", &list, &n, why, sizeof(why))) {
			fprintf(stderr, "flamectl: the family's processes: %s\n", why);
			*total = 0;
		} else {
			*procs = (unsigned)n;
		}
		json_object_put(all);
	}
	fclose(f);
	free(body);
}

/* Writes the profile of pid's family over [from, to) to path (out), and the family's size. Returns the
 * exit code. */
static int write_profile(struct options *o, struct source *src, pid_t pid, int64_t from, int64_t to,
			 const char *path, FILE *out, uint64_t *total, unsigned *procs)
{
	int code;

	o->command = CMD_QUERY;
	o->pid = pid;
	o->children = true;
	o->from = from;
	o->to = to;
	if (src->url) {
		o->flush = true; /* its samples up to now stored first: the command's last ones among them */
	} else if (private_stop(src->private)) {
		return EXIT_ERROR;
	}
	code = run_query(o, src, out);
	o->flush = false;
	if (code == EXIT_OK)
		family_size(o, src, total, procs);
	if (fflush(out) || ferror(out)) {
		fprintf(stderr, "flamectl: cannot write %s: %s\n", path, strerror(errno));
		code = EXIT_ERROR;
	}
	return code;
}

int record_main(struct options *o)
{
	struct source src = { 0 };
	char path[4096], what[TITLE_MAX + 64], title[TITLE_MAX + 64];
	pid_t pid = o->cmd ? 0 : (pid_t)o->pid;
	int64_t from, to;
	double t0, took;
	uint64_t total = 0;
	unsigned procs = 0;
	int code, status = 0;
	FILE *out;

	if (!o->cmd && kill(pid, 0) < 0 && errno == ESRCH) {
		fprintf(stderr, "flamectl: no process %d\n", (int)pid);
		return EXIT_ERROR;
	}
	if (o->cmd && (code = runnable(o->cmd[0])) < 0) {
		fprintf(stderr, "flamectl: cannot run %s: %s\n", o->cmd[0], strerror(-code));
		return 127;
	}
	catch_signals();
	code = -pick_source(o, &src);
	if (code)
		return code;
	from = (int64_t)time(NULL);
	t0 = now_mono();
	if (o->cmd) {
		if (start_command(o->cmd, &pid) < 0) {
			private_free(src.private);
			return 127;
		}
		child_pid = pid;
		status = wait_command(pid);
		command_text(o->cmd, what, sizeof(what));
	} else {
		follow_pid(pid, o->duration);
		snprintf(what, sizeof(what), "pid %d", (int)pid);
	}
	to = (int64_t)time(NULL) + 1;
	took = now_mono() - t0;
	output_name(o, pid, path, sizeof(path));
	if (!o->title) {
		snprintf(title, sizeof(title), "flamectl record: %s", what);
		o->title = title;
	}
	out = fopen(path, "we");
	if (!out) {
		fprintf(stderr, "flamectl: cannot write %s: %s\n", path, strerror(errno));
		private_free(src.private);
		return status ? status : EXIT_ERROR;
	}
	code = write_profile(o, &src, pid, from, to, path, out, &total, &procs);
	fclose(out);
	private_free(src.private);
	if (code != EXIT_OK) {
		unlink(path);
		return status ? status : code;
	}
	fprintf(stderr, "flamectl: recorded %s for %.1f s%s (%u process%s, %llu %s): %s\n", what, took,
		stop_signal ? ", stopped by a signal" : "", procs, procs == 1 ? "" : "es", (unsigned long long)total,
		o->kind == STORE_CPU ? "samples" : "us", path);
	if (!total && src.hz && took * src.hz < 10)
		fprintf(stderr, "flamectl: no samples of it: it ran %.2f s, and at %u Hz a CPU is sampled every %.0f ms "
			"(record a longer run, or pass --frequency)\n", took, src.hz, 1000.0 / src.hz);
	else if (!total && src.hz)
		fprintf(stderr, "flamectl: no samples of it: in %.1f s it was hardly ever on a CPU%s\n", took,
			o->kind == STORE_CPU ? " (it waited: --off-cpu records where)" : "");
	if (src.url)
		fprintf(stderr, "flamectl: in the dashboard: %.*s/#preset=custom&from=%lld&to=%lld&pid=%d&children=1%s%s%s\n",
			(int)(strlen(src.url) - (src.url[strlen(src.url) - 1] == '/')), src.url, (long long)from, (long long)to, (int)pid,
			o->merge ? "&merge=1" : "", o->kind != STORE_CPU ? "&kind=" : "", o->kind != STORE_CPU ? query_kind_name(o->kind) : "");
	return status;
}
