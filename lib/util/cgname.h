/* cgname.h - a cgroup v2 path read into what people call it: systemd unit and slice, container, pod. */
#ifndef FLAMED_UTIL_CGNAME_H
#define FLAMED_UTIL_CGNAME_H

#include <stdbool.h>
#include <stddef.h>

#define CGNAME_PATH_MAX 512  /* bytes of a path kept (with its NUL); cgname_clean cuts longer ones */
#define CGNAME_FIELD_MAX 128 /* bytes of a unit or slice name kept (with NUL) */

/* What a cgroup path names. Every field is NUL-terminated; "" (or a static "") where the path does not
 * tell. Unit and slice names are taken only when every byte is one systemd allows in a unit name
 * (letters, digits, ":-_.\@"), so they hold no control character, ';' or '/'; one longer than
 * CGNAME_FIELD_MAX - 1 is left "" (not cut). */
struct cgname {
	char unit[CGNAME_FIELD_MAX];  /* innermost systemd unit (a component ending ".service" or ".scope") that is
				       * not a container's scope: "nginx.service", "user@1000.service",
				       * "session-3.scope"; a runtime's conmon scope is a unit
				       * ("crio-conmon-<id>.scope"); "" none */
	char slice[CGNAME_FIELD_MAX]; /* innermost ".slice" component: "system.slice", "app.slice",
				       * "kubepods-besteffort-pod<uid>.slice"; "" none */
	char container[65];           /* innermost container's id, 64 lowercase hex; "" none, or conmon's cgroup */
	const char *runtime;          /* static string: "docker", "containerd", "cri-o", "podman", or "" (none, or
				       * a cgroupfs kubepods container whose runtime the path does not tell) */
	char pod[37];                 /* Kubernetes pod uid, canonical: 8-4-4-4-12 lowercase hex, dashed; "" none */
	const char *qos;              /* static string: "guaranteed", "burstable", "besteffort", or "" (not a pod) */
};

/* Reads path (a cgroup v2 path, "/" first, as /proc/PID/cgroup's "0::" line gives it) into *out, which
 * it clears first. Recognised: systemd units and slices; container scopes "docker-", "cri-containerd-",
 * "crio-", "libpod-" + 64 lowercase hex + ".scope" (and "crio-conmon-", "libpod-conmon-": conmon, runtime
 * set, container ""); cgroupfs "/docker/<id>"; Kubernetes pods, systemd ("[X-]kubepods[-QOS]-pod<uid
 * with '_'>.slice", kind's "kubelet-kubepods-...") and cgroupfs ("kubepods/[QOS/]pod<uid>/<id>", or
 * "/crio-<id>") forms. A path none matches leaves every field "". Any length. Returns 0, or -EINVAL:
 * NULL, empty, or not starting with '/' (*out cleared where out is not NULL). Never reads past the NUL,
 * never builds a file path. */
int cgname_parse(const char *path, struct cgname *out);

/* Copies path into buf (cap bytes, cap >= 2; at most CGNAME_PATH_MAX are used) cleaned for storing and
 * showing: control characters (< 0x20, 0x7f, and C1 controls U+0080..U+009F) become '?', ';' becomes ':'
 * (folded stacks use ';'), each invalid UTF-8 byte becomes '?', cut at a UTF-8 character boundary to
 * fit. Returns 1 when it cut or changed something, 0 when copied as is, -EINVAL: path or buf NULL, or
 * cap < 2. */
int cgname_clean(const char *path, char *buf, size_t cap);

/* Whether path has a component equal to name ("/a/b.service/c" has "b.service"). False for a NULL
 * path or name, an empty name, or a name holding '/'. */
bool cgname_has_component(const char *path, const char *name);

/* Whether prefix is path itself or a leading run of its components ("/system.slice" of
 * "/system.slice/x.service", not of "/system.slicex"); trailing '/'s in prefix are allowed, "/" is a
 * prefix of every path. False for a NULL argument, or either not starting with '/'. */
bool cgname_has_prefix(const char *path, const char *prefix);

#endif
