/* utf8.h - UTF-8: a code point written, and the character at a string read and checked. */
#ifndef FLAMED_UTIL_UTF8_H
#define FLAMED_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Writes code point cp (at most U+10FFFF) as UTF-8 into b; returns its length, 1 to 4. */
static inline size_t utf8_encode(uint32_t cp, unsigned char b[4])
{
	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | cp >> 6);
		b[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		b[0] = (unsigned char)(0xe0 | cp >> 12);
		b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	b[0] = (unsigned char)(0xf0 | cp >> 18);
	b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	b[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The valid UTF-8 sequence at s: its length (1 to 4; 1 for the NUL too) with its code point in *cp, or
 * 0 when s does not start one (a stray or missing continuation byte, an overlong form, a UTF-16
 * surrogate, past U+10FFFF). Reads no byte past a NUL. */
static inline size_t utf8_decode(const unsigned char *s, uint32_t *cp)
{
	size_t n;

	*cp = s[0];
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, *cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, *cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, *cp = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) { /* stops at a NUL: it is no continuation byte */
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0; /* overlong, or a UTF-16 surrogate */
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0; /* overlong, or beyond U+10FFFF */
	return n;
}

#endif
