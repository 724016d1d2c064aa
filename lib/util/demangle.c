/* demangle.c - C++ and Rust symbols demangled with libiberty, in the short or the full form, with
 * FlameGraph's frame suffixes kept and the output made safe for folded text. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "util/demangle.h"

static const char *const names[] = { [DEMANGLE_SHORT] = "short", [DEMANGLE_FULL] = "full", [DEMANGLE_NONE] = "none" };

int demangle_parse_mode(const char *s, enum demangle_mode *out)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (s && !strcmp(s, names[i])) {
			*out = (enum demangle_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *demangle_mode_name(enum demangle_mode m)
{
	return (unsigned)m < sizeof(names) / sizeof(names[0]) ? names[m] : "?";
}

/* The length of name's FlameGraph suffix ("_[k]", "_[i]", "_[j]"), or 0. */
static size_t suffix_len(const char *name, size_t len)
{
	if (len > 4 && name[len - 4] == '_' && name[len - 3] == '[' && name[len - 1] == ']' &&
	    strchr("kij", name[len - 2]))
		return 4;
	return 0;
}

/* Whether the symbol (len bytes) is one the demangler reads: C++'s _Z..., Rust's _ZN...E and _R... */
static bool mangled(const char *s, size_t len)
{
	return len > 2 && s[0] == '_' && (s[1] == 'Z' || s[1] == 'R');
}

char *demangle_frame(const char *name, size_t len, enum demangle_mode mode)
{
	/* c++filt's own options for the full form; without parameters, libiberty leaves out C++'s parameter
	 * lists, const and clone suffixes, and Rust's hash. */
	int options = mode == DEMANGLE_FULL ? DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE : DMGL_ANSI;
	size_t sfx = suffix_len(name, len), base = len - sfx, dlen;
	char sym[DEMANGLE_MAX_NAME + 1], *d, *out;

	if (mode == DEMANGLE_NONE || base > DEMANGLE_MAX_NAME || !mangled(name, base))
		return NULL;
	memcpy(sym, name, base);
	sym[base] = '\0';
	d = cplus_demangle(sym, options | DMGL_AUTO);
	if (!d)
		return NULL;
	dlen = strlen(d);
	out = malloc(dlen + sfx + 1);
	if (out) {
		for (size_t i = 0; i < dlen; i++) {
			unsigned char c = (unsigned char)d[i];

			out[i] = c == ';' ? ':' : c < 0x20 || c == 0x7f ? '?' : (char)c;
		}
		memcpy(out + dlen, name + base, sfx);
		out[dlen + sfx] = '\0';
	}
	free(d);
	return out;
}
