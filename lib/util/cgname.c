/* cgname.c - reads a cgroup v2 path into its systemd unit and slice, container and Kubernetes pod. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "util/cgname.h"
#include "util/utf8.h"

#define ID_LEN 64  /* a container id: lowercase hex */
#define UID_LEN 36 /* a pod uid: 8-4-4-4-12 lowercase hex */

/* What the component before says of the next one, in the cgroupfs forms ("/docker/<id>",
 * "/kubepods/[QOS/]pod<uid>/<id>"). */
enum prev { PREV_OTHER, PREV_DOCKER, PREV_KUBEPODS, PREV_BESTEFFORT, PREV_BURSTABLE, PREV_POD };

/* The QoS class of a cgroupfs pod below each of those. */
static const char *const qos_below[] = {
	[PREV_KUBEPODS] = "guaranteed", [PREV_BESTEFFORT] = "besteffort", [PREV_BURSTABLE] = "burstable",
};

/* The runtimes' cgroups of a container (or of its conmon): "<prefix><64 hex>.scope". */
static const struct {
	const char *prefix;
	const char *runtime;
	bool conmon;
} scopes[] = {
	{ "docker-", "docker", false }, { "cri-containerd-", "containerd", false }, { "crio-", "cri-o", false },
	{ "crio-conmon-", "cri-o", true }, { "libpod-", "podman", false }, { "libpod-conmon-", "podman", true },
};

/* The bytes systemd allows in a unit name. */
#define UNIT_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@"

static bool is_word(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && !memcmp(s, word, n);
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* Whether s[0..n) ends with word as a whole dash-separated run ("kubepods" of "x-kubepods", not "xkubepods"). */
static bool ends_with_word(const char *s, size_t n, const char *word)
{
	size_t k = strlen(word);

	return ends_with(s, n, word) && (n == k || s[n - k - 1] == '-');
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Whether s[0..n) is a container id: 64 lowercase hex. */
static bool is_id(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && is_hex(s[i]))
		i++;
	return n == ID_LEN && i == n;
}

/* Copies s[0..n) into field (CGNAME_FIELD_MAX bytes), or leaves it "" when it does not fit. */
static void set_field(char *field, const char *s, size_t n)
{
	if (n >= CGNAME_FIELD_MAX)
		n = 0;
	memcpy(field, s, n);
	field[n] = '\0';
}

/* Copies the pod uid s[0..n) (36 bytes: sep at 8, 13, 18 and 23, lowercase hex elsewhere) into pod
 * with '-' as its separator. Returns false, pod untouched, when s is no uid. */
static bool take_uid(const char *s, size_t n, char sep, char pod[UID_LEN + 1])
{
	if (n != UID_LEN)
		return false;
	for (size_t i = 0; i < UID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != sep : !is_hex(s[i]))
			return false;
	}
	memcpy(pod, s, UID_LEN);
	pod[8] = pod[13] = pod[18] = pod[23] = '-';
	pod[UID_LEN] = '\0';
	return true;
}

/* The scopes[] entry s[0..n) (without ".scope") names with its id, or -1. */
static int runtime_of(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		size_t k = strlen(scopes[i].prefix);

		if (n == k + ID_LEN && !memcmp(s, scopes[i].prefix, k) && is_id(s + k, ID_LEN))
			return (int)i;
	}
	return -1;
}

/* Sets the container's id (ID_LEN bytes at id; NULL: none) and runtime. */
static void set_id(struct cgname *out, const char *id, const char *runtime)
{
	size_t n = id ? ID_LEN : 0;

	memcpy(out->container, id ? id : "", n);
	out->container[n] = '\0';
	out->runtime = runtime;
}

/* Sets the container from scopes[r] and its cgroup's name s; conmon's cgroup holds none. */
static void set_scope(struct cgname *out, int r, const char *s)
{
	set_id(out, scopes[r].conmon ? NULL : s + strlen(scopes[r].prefix), scopes[r].runtime);
}

/* A slice named stem[0..n) ("kubepods-besteffort-pod<uid with '_'>", without ".slice"): its pod. */
static void take_pod_slice(struct cgname *out, const char *stem, size_t n)
{
	const char *qos;
	size_t head;

	if (n < 4 + UID_LEN || memcmp(stem + n - UID_LEN - 4, "-pod", 4))
		return;
	head = n - UID_LEN - 4;
	if (ends_with_word(stem, head, "kubepods"))
		qos = "guaranteed";
	else if (ends_with_word(stem, head, "kubepods-besteffort"))
		qos = "besteffort";
	else if (ends_with_word(stem, head, "kubepods-burstable"))
		qos = "burstable";
	else
		return;
	if (take_uid(stem + n - UID_LEN, UID_LEN, '_', out->pod))
		out->qos = qos;
}

/* Reads the component s[0..n) (n > 0) into out; returns what it tells of the next one. */
static enum prev take(struct cgname *out, const char *s, size_t n, enum prev prev)
{
	bool unit_text = strspn(s, UNIT_CHARS) >= n; /* s[n] is '/' or the NUL, no unit byte */
	int r;

	if (unit_text && n > 6 && ends_with(s, n, ".slice")) {
		set_field(out->slice, s, n);
		take_pod_slice(out, s, n - 6);
		return PREV_OTHER;
	}
	if (unit_text && ((n > 6 && ends_with(s, n, ".scope")) || (n > 8 && ends_with(s, n, ".service")))) {
		r = ends_with(s, n, ".scope") ? runtime_of(s, n - 6) : -1;
		if (r >= 0)
			set_scope(out, r, s);
		if (r < 0 || scopes[r].conmon) /* a container's own scope is not its unit */
			set_field(out->unit, s, n);
		return PREV_OTHER;
	}
	switch (prev) {
	case PREV_DOCKER:
		if (is_id(s, n))
			set_id(out, s, "docker");
		break;
	case PREV_KUBEPODS:
		if (is_word(s, n, "besteffort"))
			return PREV_BESTEFFORT;
		if (is_word(s, n, "burstable"))
			return PREV_BURSTABLE;
		/* fall through - a guaranteed pod sits right below kubepods */
	case PREV_BESTEFFORT:
	case PREV_BURSTABLE:
		if (n > 3 && !memcmp(s, "pod", 3) && take_uid(s + 3, n - 3, '-', out->pod)) {
			out->qos = qos_below[prev];
			return PREV_POD;
		}
		break;
	case PREV_POD: /* a pod's container: "<id>" (runtime untold), or a runtime's "<prefix><id>" (CRI-O's) */
		if (is_id(s, n))
			set_id(out, s, "");
		else if ((r = runtime_of(s, n)) >= 0)
			set_scope(out, r, s);
		break;
	case PREV_OTHER:
		break;
	}
	if (is_word(s, n, "docker"))
		return PREV_DOCKER;
	if (is_word(s, n, "kubepods"))
		return PREV_KUBEPODS;
	return PREV_OTHER;
}

int cgname_parse(const char *path, struct cgname *out)
{
	enum prev prev = PREV_OTHER;

	if (out) {
		memset(out, 0, sizeof(*out));
		out->runtime = "";
		out->qos = "";
	}
	if (!path || !out || path[0] != '/')
		return -EINVAL;
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");

		prev = n ? take(out, p, n, prev) : PREV_OTHER; /* "//": an empty component breaks a cgroupfs form */
		p += n;
		if (*p)
			p++;
	}
	return 0;
}

int cgname_clean(const char *path, char *buf, size_t cap)
{
	const unsigned char *s = (const unsigned char *)path;
	size_t o = 0, n, len;
	uint32_t cp;
	int changed = 0;
	bool bad;

	if (!path || !buf || cap < 2)
		return -EINVAL;
	if (cap > CGNAME_PATH_MAX)
		cap = CGNAME_PATH_MAX;
	for (; *s; s += n) {
		n = utf8_decode(s, &cp);
		bad = n == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f); /* C0, DEL, C1 */
		len = bad ? 1 : n;
		if (o + len >= cap) {
			changed = 1;
			break;
		}
		if (bad || cp == ';') {
			buf[o++] = bad ? '?' : ':';
			changed = 1;
		} else {
			memcpy(buf + o, s, n);
			o += n;
		}
		if (n == 0)
			n = 1; /* an invalid byte: one '?' each */
	}
	buf[o] = '\0';
	return changed;
}

bool cgname_has_component(const char *path, const char *name)
{
	size_t k;

	if (!path || !name || !*name || strchr(name, '/'))
		return false;
	k = strlen(name);
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");

		if (n == k && !memcmp(p, name, k))
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

bool cgname_has_prefix(const char *path, const char *prefix)
{
	size_t k;

	if (!path || !prefix || path[0] != '/' || prefix[0] != '/')
		return false;
	k = strlen(prefix);
	while (k > 0 && prefix[k - 1] == '/')
		k--;
	return !strncmp(path, prefix, k) && (path[k] == '\0' || path[k] == '/');
}
