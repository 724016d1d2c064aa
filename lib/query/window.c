/* window.c - parses the time windows users type: durations ("10m") and instants (unix seconds, RFC 3339). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "query/window.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Reads exactly n digits at s; false when one of them is not a digit (stops at the end of s). */
static bool fixed_digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* Reads one or more digits at *sp as a non-negative number and moves *sp past them.
 * Returns 0, or -EINVAL when there is no digit or the number does not fit int64_t. */
static int read_number(const char **sp, int64_t *out)
{
	const char *s = *sp;
	int64_t v = 0;

	if (!is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		int d = *s - '0';

		if (v > (INT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*sp = s;
	*out = v;
	return 0;
}

int window_parse_duration(const char *s, int64_t *out_seconds)
{
	int64_t v, unit;

	if (!s || !out_seconds || read_number(&s, &v) < 0)
		return -EINVAL;
	switch (*s) {
	case '\0': unit = 1; break;
	case 's': unit = 1; s++; break;
	case 'm': unit = 60; s++; break;
	case 'h': unit = 60 * 60; s++; break;
	case 'd': unit = 24 * 60 * 60; s++; break;
	default: return -EINVAL;
	}
	if (*s != '\0' || v == 0 || v > INT64_MAX / unit)
		return -EINVAL;
	*out_seconds = v * unit;
	return 0;
}

static bool is_leap(int year)
{
	return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

static int days_in_month(int year, int month)
{
	static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	return month == 2 && is_leap(year) ? 29 : days[month - 1];
}

/* RFC 3339 date-time: YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm); 't', 'z' and a space for 'T'
 * are accepted as the RFC allows. A leap second (:60) counts as the next minute's first second. */
static int parse_rfc3339(const char *s, int64_t *out)
{
	int year, mon, day, hour, min, sec, off_h = 0, off_m = 0, sign = 0;
	struct tm tm = { 0 };
	const char *p;
	time_t t;

	/* Each test runs only when everything before it matched, so no read passes the string's end. */
	if (!fixed_digits(s, 4, &year) || s[4] != '-' || !fixed_digits(s + 5, 2, &mon) || s[7] != '-' ||
	    !fixed_digits(s + 8, 2, &day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    !fixed_digits(s + 11, 2, &hour) || s[13] != ':' || !fixed_digits(s + 14, 2, &min) ||
	    s[16] != ':' || !fixed_digits(s + 17, 2, &sec))
		return -EINVAL;
	p = s + 19;
	if (*p == '.') {
		if (!is_digit(*++p))
			return -EINVAL;
		while (is_digit(*p))
			p++;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '+' ? 1 : -1;
		if (!fixed_digits(p + 1, 2, &off_h) || p[3] != ':' || !fixed_digits(p + 4, 2, &off_m))
			return -EINVAL;
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p != '\0')
		return -EINVAL;
	if (mon < 1 || mon > 12 || day < 1 || day > days_in_month(year, mon) || hour > 23 || min > 59 ||
	    sec > 60 || off_h > 23 || off_m > 59)
		return -EINVAL;

	tm.tm_year = year - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	errno = 0;
	t = timegm(&tm);
	if (t == (time_t)-1 && errno)
		return -EINVAL; /* a 32-bit time_t cannot hold it */
	*out = (int64_t)t - sign * (int64_t)(off_h * 3600 + off_m * 60);
	return 0;
}

int window_parse_time(const char *s, int64_t *out_unix)
{
	const char *p = s;
	int64_t v;

	if (!s || !out_unix)
		return -EINVAL;
	if (read_number(&p, &v) == 0 && *p == '\0') {
		*out_unix = v;
		return 0;
	}
	return parse_rfc3339(s, out_unix);
}
