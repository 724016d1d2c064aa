/* bpfload.h - loads profile.bpf.c into the kernel: the CPU sampler, which must load, and each optional
 * feature the kernel accepts. A feature whose program the kernel refuses is left out, and what was
 * refused and why is kept for the log, the status and the metrics. */
#ifndef FLAMED_BPFLOAD_H
#define FLAMED_BPFLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler.h"

/* What a load may leave out. The CPU sampler itself (profile_tick, process_exec) is not among them. */
enum bpf_feature {
	BPF_FEATURE_UNWIND = 0,     /* user stacks walked with unwind tables (--unwind auto|dwarf) */
	BPF_FEATURE_PYTHON,         /* Python frames in stacks (--python on) */
	BPF_FEATURE_FORKS,          /* the fork hook: each new process's parent as its fork recorded it */
	BPF_FEATURE_OFFCPU,         /* time blocked, on sched_switch and at exits (--off-cpu) */
	BPF_FEATURE_OFFCPU_ONGOING, /* the task iterator: waits still going on counted at each flush */
	BPF_FEATURE_MAX,
};

/* The end of a refused program's verifier log kept: its last lines, where the verifier says why. */
#define BPFLOAD_LOG_TAIL 1024
#define BPFLOAD_NAME_LEN 32
/* Programs in profile.bpf.c (more than there are). */
#define BPFLOAD_MAX_PROGS 12
/* The kernel's bound on the instructions the verifier may process for one program (privileged). */
#define BPFLOAD_INSNS_LIMIT 1000000u

struct bpf_feature_state {
	bool asked;                       /* the options ask for it */
	bool on;                          /* loaded (and attached) */
	char program[BPFLOAD_NAME_LEN];   /* asked but off: the program that could not load or attach */
	int error;                        /* ... the kernel's -errno */
	bool attach;                      /* ... it loaded, but could not be attached */
	int needs;                        /* ... or off with the feature it needs (enum bpf_feature; -1: none) */
	char log[BPFLOAD_LOG_TAIL];       /* ... the last lines of the verifier's log ("" when none) */
};

struct bpf_program_state {
	char name[BPFLOAD_NAME_LEN];
	uint32_t verified_insns; /* instructions the verifier processed to accept it (0: not told, before 5.16) */
	uint32_t insns;          /* its instructions as loaded */
};

struct bpfload_report {
	struct bpf_feature_state feature[BPF_FEATURE_MAX];
	struct bpf_feature_state cpu; /* a load that failed: the CPU sampler's program refused, and why */
	struct bpf_program_state prog[BPFLOAD_MAX_PROGS]; /* the programs loaded */
	unsigned nprogs;
	unsigned loads;     /* attempts it took: one, and one more per feature left out */
	bool preallocated;  /* the kernel refused on-demand stacks maps (before 6.1): they are preallocated */
};

struct profile; /* the skeleton (profile.skel.h) */

/* The feature's name in logs, the status and the metrics ("off_cpu", "python", ...). */
const char *bpfload_feature_name(enum bpf_feature f);

/* Opens, sizes and loads profile.bpf.c as opts ask, leaving out each feature whose program the kernel
 * refuses (loading the rest again without it). FLAMED_TEST_REFUSE, for tests only, names programs
 * (and "python") the verifier is made to refuse. On success *out holds the loaded skeleton (a struct
 * profile, freed with profile__destroy) and rep what loaded and what was left out. Returns 0, or -errno
 * when the CPU sampler itself cannot load (rep->cpu then says which program and why, when one was
 * refused). */
int bpfload_load(const struct sampler_opts *opts, struct profile **out, struct bpfload_report *rep);

/* Marks feature f off: its program name loaded but could not be attached (-errno err). */
void bpfload_detached(struct bpfload_report *rep, enum bpf_feature f, const char *program, int err);

/* bpffeature.c: the features in words. */

/* One line saying why f is off though asked ("the kernel refused offcpu_switch: Argument list too long",
 * "it needs off_cpu, which is off"), into buf. */
void bpfload_why(const struct bpf_feature_state *f, char *buf, size_t len);

/* Logs each feature asked for and left out: why, and the verifier's last lines. */
void bpffeature_log(const struct bpfload_report *rep);

/* Logs why the CPU sampler could not load (-errno err): the error, and the program the kernel refused
 * with the verifier's last lines when it refused one (cpu: bpfload_report.cpu). */
void bpffeature_log_sampler(const struct bpf_feature_state *cpu, int err);

/* The service manager's message once sampling runs on cpus CPUs at hz: READY=1, a STATUS= line for
 * `systemctl status` naming the features left out, and an X_FLAMED_REFUSED=NAME: WHY line for each
 * (flamectl record reads them), into msg (cut at len). */
void bpffeature_ready(const struct bpfload_report *rep, unsigned cpus, unsigned hz, char *msg, size_t len);

#endif
