/* textparse.h - number scanning shared by the /proc text parsers (maps, kallsyms, perf maps). */
#ifndef FLAMED_TEXTPARSE_H
#define FLAMED_TEXTPARSE_H

#include <errno.h>
#include <stdint.h>

/* Parses 1..max_digits digits of base (10 or 16) at *p and advances *p past them.
 * Returns 0, or -EINVAL (no digit, too many digits, overflow) leaving *p as it was. */
static inline int text_parse_uint(const char **p, unsigned base, unsigned max_digits, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	unsigned n = 0, d;

	for (;; s++, n++) {
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (n >= max_digits || v > (UINT64_MAX - d) / base)
			return -EINVAL;
		v = v * base + d;
	}
	if (n == 0)
		return -EINVAL;
	*out = v;
	*p = s;
	return 0;
}

#endif
