/* demangle.h - frame names as people read them: C++ (Itanium ABI) and Rust (legacy and v0) symbols
 * demangled by libiberty, GCC's demangler (the one c++filt, gdb and perf use). */
#ifndef FLAMED_DEMANGLE_H
#define FLAMED_DEMANGLE_H

#include <stddef.h>

enum demangle_mode {
	DEMANGLE_SHORT = 0, /* the default: without C++ parameter lists and clone suffixes, nor Rust's hash
			     * (heldout::geo::Grid<double>::relax, rs_work::pipeline::Stage::churn) */
	DEMANGLE_FULL,      /* as c++filt writes them: parameters, const, clones, Rust's hash */
	DEMANGLE_NONE,      /* as the binary names them */
};

/* The longest name demangled; a longer one stays as it is. */
#define DEMANGLE_MAX_NAME 4096

/* Parses "short", "full" or "none". Returns 0 or -EINVAL. */
int demangle_parse_mode(const char *s, enum demangle_mode *out);

/* A mode's name, as demangle_parse_mode() takes it ("?" for none). */
const char *demangle_mode_name(enum demangle_mode m);

/* Frame name (len bytes, not necessarily NUL-terminated) as mode writes it: a C++ or Rust symbol
 * demangled, its FlameGraph suffix (_[k], _[i], _[j]) kept, ';' and control characters (which the
 * folded format cannot carry) replaced. Returns a malloc'd string, or NULL when the name stays as it
 * is: not a mangled symbol (C, Python frames, "[unknown]"), refused by the demangler, DEMANGLE_NONE,
 * longer than DEMANGLE_MAX_NAME, or out of memory. Safe from several threads at once. */
char *demangle_frame(const char *name, size_t len, enum demangle_mode mode);

#endif
