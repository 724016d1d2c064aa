/* window.h - parses the time windows users type: durations ("10m") and instants (unix seconds, RFC 3339). */
#ifndef FLAMED_WINDOW_H
#define FLAMED_WINDOW_H

#include <stdint.h>

/* Parses a duration: a positive whole number with an optional unit s, m, h or d ("90", "10m", "2h").
 * Returns 0 or -EINVAL (empty, negative, zero, unknown unit, trailing text, overflow). */
int window_parse_duration(const char *s, int64_t *out_seconds);

/* Parses an instant: unix seconds ("1795000000") or RFC 3339 ("2026-11-22T10:00:00Z",
 * "2026-11-22T10:00:00.5+01:00"; fractions are dropped). Returns 0 or -EINVAL. */
int window_parse_time(const char *s, int64_t *out_unix);

#endif
