/* test_cgname.c - cgroup v2 paths read into names (util/cgname.h): systemd units and slices, Docker,
 * containerd, CRI-O and Podman containers, Kubernetes pods in both drivers' forms, paths that name
 * nothing, hostile ones (long, control characters, "..", ids of the wrong length), and the cleaning
 * and component-wise matching of paths. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "util/cgname.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID2 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define UID "1a2b3c4d-5e6f-7a8b-9c0d-112233445566"
#define UID_ "1a2b3c4d_5e6f_7a8b_9c0d_112233445566"

/* path read: 0, and every field as wanted. */
static void expect(const char *path, const char *unit, const char *slice, const char *container, const char *runtime,
		   const char *pod, const char *qos)
{
	struct cgname c;
	int err = cgname_parse(path, &c);
	char shown[CGNAME_PATH_MAX];

	cgname_clean(path, shown, sizeof(shown));
	CHECK(err == 0 && !strcmp(c.unit, unit) && !strcmp(c.slice, slice) && !strcmp(c.container, container) &&
		      !strcmp(c.runtime, runtime) && !strcmp(c.pod, pod) && !strcmp(c.qos, qos),
	      "%s -> unit '%s' slice '%s' container '%s' runtime '%s' pod '%s' qos '%s' (got %d: '%s' '%s' '%s' '%s' "
	      "'%s' '%s')",
	      shown, unit, slice, container, runtime, pod, qos, err, c.unit, c.slice, c.container, c.runtime, c.pod,
	      c.qos);
}

/* Whether every field of c is NUL-terminated within its size and the static strings are set. */
static bool bounded(const struct cgname *c)
{
	return memchr(c->unit, 0, sizeof(c->unit)) && memchr(c->slice, 0, sizeof(c->slice)) &&
	       memchr(c->container, 0, sizeof(c->container)) && memchr(c->pod, 0, sizeof(c->pod)) && c->runtime &&
	       c->qos;
}

/* path cleaned into cap bytes: the return and the text wanted. */
static void expect_clean(const char *name, const char *path, size_t cap, int want_ret, const char *want)
{
	char buf[CGNAME_PATH_MAX + 16];
	int ret;

	memset(buf, 'X', sizeof(buf));
	ret = cgname_clean(path, buf, cap);
	CHECK(ret == want_ret && !strcmp(buf, want) && buf[cap < sizeof(buf) ? cap : sizeof(buf) - 1] == 'X',
	      "clean %s: %d '%s' (got %d '%s')", name, want_ret, want, ret, buf);
}

static void systemd(void)
{
	expect("/system.slice/nginx.service", "nginx.service", "system.slice", "", "", "", "");
	expect("/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-1234.scope",
	       "app-gnome-firefox-1234.scope", "app.slice", "", "", "", "");
	expect("/user.slice/user-1000.slice/session-3.scope", "session-3.scope", "user-1000.slice", "", "", "", "");
	expect("/system.slice/nginx.service/worker", "nginx.service", "system.slice", "", "", "", "");
	expect("/init.scope", "init.scope", "", "", "", "", "");
	expect("/system.slice/systemd-journald.service/", "systemd-journald.service", "system.slice", "", "", "", "");
	expect("/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service", "system-getty.slice", "",
	       "", "", "");
	expect("/system.slice/nginx.service/we;ird.scope", "nginx.service", "system.slice", "", "", "", "");
}

static void containers(void)
{
	expect("/system.slice/docker-" ID ".scope", "", "system.slice", ID, "docker", "", "");
	expect("/docker/" ID, "", "", ID, "docker", "", "");
	expect("/system.slice/docker.service", "docker.service", "system.slice", "", "", "", "");
	expect("/system.slice/docker.service/" ID, "docker.service", "system.slice", "", "", "", "");
	expect("/system.slice/cri-containerd-" ID ".scope", "", "system.slice", ID, "containerd", "", "");
	expect("/system.slice/crio-" ID ".scope", "", "system.slice", ID, "cri-o", "", "");
	expect("/system.slice/crio-conmon-" ID ".scope", "crio-conmon-" ID ".scope", "system.slice", "", "cri-o", "",
	       "");
	expect("/machine.slice/libpod-" ID ".scope", "", "machine.slice", ID, "podman", "", "");
	expect("/machine.slice/libpod-" ID ".scope/container", "", "machine.slice", ID, "podman", "", "");
	expect("/machine.slice/libpod-conmon-" ID ".scope", "libpod-conmon-" ID ".scope", "machine.slice", "", "podman",
	       "", "");
	expect("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope/container",
	       "user@1000.service", "user.slice", ID, "podman", "", "");
	expect("/system.slice/docker-" ID ".scope/system.slice/nginx.service", "nginx.service", "system.slice", ID,
	       "docker", "", "");
	expect("/docker/" ID "/docker/" ID2, "", "", ID2, "docker", "", "");
}

static void kubernetes(void)
{
	expect("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID
	       ".scope",
	       "", "kubepods-besteffort-pod" UID_ ".slice", ID, "containerd", UID, "besteffort");
	expect("/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" ID ".scope", "", "kubepods-pod" UID_ ".slice", ID,
	       "cri-o", UID, "guaranteed");
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/docker-" ID ".scope", "",
	       "kubepods-burstable-pod" UID_ ".slice", ID, "docker", UID, "burstable");
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice", "",
	       "kubepods-burstable-pod" UID_ ".slice", "", "", UID, "burstable");
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-conmon-" ID ".scope",
	       "crio-conmon-" ID ".scope", "kubepods-burstable-pod" UID_ ".slice", "", "cri-o", UID, "burstable");
	expect("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
	       "kubelet-kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope",
	       "", "kubelet-kubepods-besteffort-pod" UID_ ".slice", ID, "containerd", UID, "besteffort");
	expect("/kubepods/besteffort/pod" UID "/" ID, "", "", ID, "", UID, "besteffort");
	expect("/kubepods/burstable/pod" UID "/" ID, "", "", ID, "", UID, "burstable");
	expect("/kubepods/pod" UID "/" ID, "", "", ID, "", UID, "guaranteed");
	expect("/kubepods/burstable/pod" UID "/crio-" ID, "", "", ID, "cri-o", UID, "burstable");
	expect("/kubepods/burstable/pod" UID, "", "", "", "", UID, "burstable");
	/* near misses */
	expect("/kubepods.slice/kubepods-besteffort-pod1a2b3c4d-5e6f-7a8b-9c0d-112233445566.slice",
	       "", "kubepods-besteffort-pod1a2b3c4d-5e6f-7a8b-9c0d-112233445566.slice", "", "", "", "");
	expect("/kubepods.slice/kubepods-gold-pod" UID_ ".slice", "", "kubepods-gold-pod" UID_ ".slice", "", "", "",
	       "");
	expect("/kubepods.slice/xkubepods-pod" UID_ ".slice", "", "xkubepods-pod" UID_ ".slice", "", "", "", "");
	expect("/kubepods/besteffort/pod" UID_ "/" ID, "", "", "", "", "", "");
	expect("/kubepods/besteffort/pod1A2B3C4D-5E6F-7A8B-9C0D-112233445566/" ID, "", "", "", "", "", "");
	expect("/kubepods/gold/pod" UID "/" ID, "", "", "", "", "", "");
	expect("/pod" UID "/" ID, "", "", "", "", "", "");
	expect("/kubepods//pod" UID "/" ID, "", "", "", "", "", "");
}

static void nothing_and_hostile(void)
{
	static char big[4096 + 64];
	struct cgname c;
	size_t n;

	expect("/", "", "", "", "", "", "");
	expect("/foo/bar", "", "", "", "", "", "");
	expect("/.service/.scope/.slice", "", "", "", "", "", "");
	expect("/docker/" ID "0", "", "", "", "", "", "");
	expect("/docker/0123456789ab", "", "", "", "", "", "");
	expect("/docker/0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", "", "", "", "", "", "");
	expect("/system.slice/docker-" ID "0.scope", "docker-" ID "0.scope", "system.slice", "", "", "", "");
	expect("/system.slice/docker-0123456789ab.scope", "docker-0123456789ab.scope", "system.slice", "", "", "", "");
	expect("/system.slice/docker-xyz456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope",
	       "docker-xyz456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope", "system.slice", "", "",
	       "", "");
	expect("/docker/../" ID, "", "", "", "", "", "");
	expect("/../../system.slice/./nginx.service/..", "nginx.service", "system.slice", "", "", "", "");
	expect("/system.slice/ngi\nnx.service", "", "system.slice", "", "", "", "");
	expect("/system.slice/\x1b[31m.service", "", "system.slice", "", "", "", "");
	CHECK(cgname_parse(NULL, &c) == -EINVAL && bounded(&c) && !c.unit[0], "NULL path: -EINVAL, *out cleared");
	CHECK(cgname_parse("", &c) == -EINVAL, "empty path: -EINVAL");
	CHECK(cgname_parse("system.slice/x.service", &c) == -EINVAL, "no leading '/': -EINVAL");
	CHECK(cgname_parse("/", NULL) == -EINVAL, "NULL out: -EINVAL");

	/* a unit name longer than the field is left "", not cut */
	memset(big, 0, sizeof(big));
	big[0] = '/';
	memset(big + 1, 'a', 200);
	strcpy(big + 201, ".service");
	CHECK(cgname_parse(big, &c) == 0 && bounded(&c) && c.unit[0] == 0, "a 208-byte unit: left \"\"");
	memset(big + 1, 'a', 120);
	strcpy(big + 121, ".service");
	CHECK(cgname_parse(big, &c) == 0 && c.unit[0] == 0, "a 128-byte unit: left \"\"");
	strcpy(big + 120, ".service");
	CHECK(cgname_parse(big, &c) == 0 && strlen(c.unit) == CGNAME_FIELD_MAX - 1, "a 127-byte unit: kept");
	/* 4 KiB paths: one component, many components, slashes only, every byte value */
	memset(big, 0, sizeof(big));
	big[0] = '/';
	memset(big + 1, 'f', 4096);
	CHECK(cgname_parse(big, &c) == 0 && bounded(&c) && !c.container[0], "4 KiB of one component");
	for (n = 0; n + 8 < 4096; n += 8)
		memcpy(big + n, "/a.scope", 8);
	big[n] = '\0';
	CHECK(cgname_parse(big, &c) == 0 && bounded(&c) && !strcmp(c.unit, "a.scope"), "512 scopes: the last");
	memset(big, '/', 4096);
	CHECK(cgname_parse(big, &c) == 0 && bounded(&c) && !c.unit[0], "4 KiB of '/'");
	big[0] = '/';
	for (n = 1; n < 4096; n++)
		big[n] = (char)(n % 255 + 1);
	CHECK(cgname_parse(big, &c) == 0 && bounded(&c), "4 KiB of every byte value: bounded fields");
}

static void clean(void)
{
	static char big[4096 + 1];
	char buf[CGNAME_PATH_MAX + 16];

	expect_clean("as is", "/system.slice/nginx.service", sizeof(buf), 0, "/system.slice/nginx.service");
	expect_clean("';' to ':'", "/a;b", sizeof(buf), 1, "/a:b");
	expect_clean("control characters", "/a\nb\x1b[0m\x7f", sizeof(buf), 1, "/a?b?[0m?");
	expect_clean("a C1 control (U+009B)", "/a\xc2\x9b" "b", sizeof(buf), 1, "/a?b");
	expect_clean("UTF-8 kept", "/caf\xc3\xa9/\xe2\x82\xac", sizeof(buf), 0, "/caf\xc3\xa9/\xe2\x82\xac");
	expect_clean("invalid bytes, one '?' each", "/\xff\xfe\xc3", sizeof(buf), 1, "/???");
	expect_clean("overlong and surrogate", "/\xc0\xaf\xed\xa0\x80", sizeof(buf), 1, "/?????");
	expect_clean("cut to fit", "/abcdef", 4, 1, "/ab");
	expect_clean("exact fit", "/ab", 4, 0, "/ab");
	expect_clean("cut before a 2-byte character", "/a\xc3\xa9", 4, 1, "/a");
	expect_clean("cut before a 3-byte character", "/\xe2\x82\xac", 4, 1, "/");
	expect_clean("cap 2", "/x", 2, 1, "/");
	expect_clean("empty", "", 2, 0, "");
	CHECK(cgname_clean(NULL, buf, sizeof(buf)) == -EINVAL && cgname_clean("/", NULL, 8) == -EINVAL &&
		      cgname_clean("/", buf, 1) == -EINVAL && cgname_clean("/", buf, 0) == -EINVAL,
	      "clean: NULL, cap < 2 refused");
	memset(big, 'a', 4096);
	big[0] = '/';
	CHECK(cgname_clean(big, buf, sizeof(buf)) == 1 && strlen(buf) == CGNAME_PATH_MAX - 1,
	      "clean: 4 KiB cut to CGNAME_PATH_MAX - 1 bytes (got %zu)", strlen(buf));
	for (size_t i = 1; i < 4096; i++)
		big[i] = i % 3 ? '\xe2' : '\x82';
	CHECK(cgname_clean(big, buf, sizeof(buf)) == 1 && strlen(buf) < CGNAME_PATH_MAX && !strchr(buf, '\xe2'),
	      "clean: 4 KiB of broken sequences");
}

static void matching(void)
{
	CHECK(cgname_has_component("/a/b.service/c", "b.service"), "component: b.service in /a/b.service/c");
	CHECK(cgname_has_component("/a/b.service", "b.service"), "component: the last");
	CHECK(!cgname_has_component("/a/b.services/c", "b.service"), "component: not a longer one");
	CHECK(!cgname_has_component("/a/xb.service", "b.service"), "component: not a tail");
	CHECK(!cgname_has_component("/a/b", "a/b") && !cgname_has_component("/a", "") &&
		      !cgname_has_component(NULL, "a") && !cgname_has_component("/a", NULL),
	      "component: '/' in name, empty, NULL refused");
	CHECK(cgname_has_prefix("/system.slice/x.service", "/system.slice"), "prefix: /system.slice");
	CHECK(cgname_has_prefix("/system.slice/x.service", "/system.slice/"), "prefix: a trailing '/'");
	CHECK(cgname_has_prefix("/system.slice", "/system.slice"), "prefix: the path itself");
	CHECK(cgname_has_prefix("/system.slice/x.service", "/system.slice/x.service/"), "prefix: the path and '/'");
	CHECK(!cgname_has_prefix("/system.slicex", "/system.slice"), "prefix: not of /system.slicex");
	CHECK(!cgname_has_prefix("/system.slice", "/system.slice/x.service"), "prefix: not longer than the path");
	CHECK(cgname_has_prefix("/a/b", "/") && cgname_has_prefix("/", "/"), "prefix: '/' of every path");
	CHECK(!cgname_has_prefix("/a", "a") && !cgname_has_prefix("a", "/") && !cgname_has_prefix(NULL, "/") &&
		      !cgname_has_prefix("/a", NULL) && !cgname_has_prefix("/a", ""),
	      "prefix: no leading '/', NULL, empty refused");
}

int main(void)
{
	systemd();
	containers();
	kubernetes();
	nothing_and_hostile();
	clean();
	matching();
	return CHECK_EXIT();
}
