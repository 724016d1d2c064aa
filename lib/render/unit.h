/* unit.h - what a profile's values count (CPU samples, or microseconds of time) and how they are written
 * for people: "1,234 samples", "850 us", "12.50 ms", "3.20 s". */
#ifndef FLAMED_RENDER_UNIT_H
#define FLAMED_RENDER_UNIT_H

#include <stddef.h>
#include <stdint.h>

enum unit {
	UNIT_SAMPLES = 0, /* CPU samples */
	UNIT_MICROS,      /* microseconds of time (off CPU, or wall clock) */
};

/* The unit's name in JSON outputs' "unit" field: "samples" or "microseconds". */
const char *unit_name(enum unit u);

/* Writes v for a reader into buf (at least UNIT_BUF bytes): samples with thousands separators and
 * " sample"/" samples"; microseconds in the largest of us, ms, s that keeps them readable, with two
 * decimals past us ("850 us", "12.50 ms", "3.20 s"). Returns buf. */
#define UNIT_BUF 48
const char *unit_amount(char *buf, uint64_t v, enum unit u);

/* Formats a count with thousands separators ("1,234,567") into buf (at least 32 bytes). Returns buf. */
const char *unit_count(char *buf, uint64_t v);

#endif
