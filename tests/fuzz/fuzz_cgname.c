/* fuzz_cgname.c - libFuzzer target: any bytes as a cgroup path (util/cgname.h; /proc/PID/cgroup is a
 * process's own choice of names), read into names, cleaned into buffers of several sizes and matched by
 * component and prefix. Bytes after a first NUL are the name and prefix matched. Whatever comes out is
 * bounded and NUL-terminated, an id or pod uid is hex of its length, a name is one of the path's. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "util/cgname.h"
#include "util/utf8.h"

/* Whether s is n lowercase hex digits, with '-' at 8, 13, 18 and 23 where uid. */
static bool is_hex_form(const char *s, size_t n, bool uid)
{
	if (strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool dash = uid && (i == 8 || i == 13 || i == 18 || i == 23);

		if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

/* Whether s holds only bytes systemd allows in a unit name. */
static bool is_unit_text(const char *s)
{
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@") == strlen(s);
}

static void check_parse(const char *path)
{
	struct cgname c;
	int err = cgname_parse(path, &c);

	FUZZ_ASSERT(err == (path[0] == '/' ? 0 : -EINVAL));
	FUZZ_ASSERT(memchr(c.unit, 0, sizeof(c.unit)) && memchr(c.slice, 0, sizeof(c.slice)));
	FUZZ_ASSERT(!c.unit[0] || cgname_has_component(path, c.unit));
	FUZZ_ASSERT(!c.slice[0] || cgname_has_component(path, c.slice));
	FUZZ_ASSERT(is_unit_text(c.unit) && is_unit_text(c.slice));
	FUZZ_ASSERT(!c.container[0] || (is_hex_form(c.container, 64, false) && strstr(path, c.container)));
	FUZZ_ASSERT(!c.pod[0] || is_hex_form(c.pod, 36, true));
	FUZZ_ASSERT(!strcmp(c.runtime, "") || !strcmp(c.runtime, "docker") || !strcmp(c.runtime, "containerd") ||
		    !strcmp(c.runtime, "cri-o") || !strcmp(c.runtime, "podman"));
	FUZZ_ASSERT(!c.container[0] || c.runtime[0] || strstr(path, "pod"));
	if (c.pod[0])
		FUZZ_ASSERT(!strcmp(c.qos, "guaranteed") || !strcmp(c.qos, "burstable") || !strcmp(c.qos, "besteffort"));
	else
		FUZZ_ASSERT(!strcmp(c.qos, ""));
}

static void check_clean(const char *path)
{
	static const size_t caps[] = { 2, 3, 5, 17, 64, CGNAME_PATH_MAX, CGNAME_PATH_MAX + 100 };
	char buf[CGNAME_PATH_MAX + 100 + 1], again[CGNAME_PATH_MAX];

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		size_t cap = caps[i], len;
		int ret;
		uint32_t cp;

		buf[cap] = 'X';
		ret = cgname_clean(path, buf, cap);
		FUZZ_ASSERT(ret == 0 || ret == 1);
		FUZZ_ASSERT(buf[cap] == 'X');
		len = strnlen(buf, cap);
		FUZZ_ASSERT(len < cap && len < CGNAME_PATH_MAX);
		FUZZ_ASSERT(ret == 1 || !strcmp(buf, path));
		for (size_t o = 0, n; o < len; o += n) {
			n = utf8_decode((const unsigned char *)buf + o, &cp);
			FUZZ_ASSERT(n > 0 && cp >= 0x20 && !(cp >= 0x7f && cp <= 0x9f) && cp != ';');
		}
		FUZZ_ASSERT(cgname_clean(buf, again, sizeof(again)) == 0 && !strcmp(again, buf));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path = fuzz_string(data, size);
	const char *name = path + strlen(path) < path + size ? path + strlen(path) + 1 : "";

	check_parse(path);
	check_clean(path);
	if (path[0] == '/')
		FUZZ_ASSERT(cgname_has_prefix(path, path) && cgname_has_prefix(path, "/"));
	if (cgname_has_prefix(path, name)) { /* name, less its trailing '/'s, then the end or a '/' of path */
		size_t k = strlen(name);

		while (k > 0 && name[k - 1] == '/')
			k--;
		FUZZ_ASSERT(name[0] == '/' && !strncmp(path, name, k) && (!path[k] || path[k] == '/'));
	}
	if (cgname_has_component(path, name))
		FUZZ_ASSERT(*name && !strchr(name, '/') && strstr(path, name));
	free(path);
	return 0;
}
