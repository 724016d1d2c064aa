/* unit.c - a profile's values written for people, in samples or in time. */
#include <inttypes.h>
#include <stdio.h>

#include "render/unit.h"

const char *unit_name(enum unit u)
{
	return u == UNIT_MICROS ? "microseconds" : "samples";
}

const char *unit_count(char *buf, uint64_t v)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, v), j = 0;

	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[j++] = ',';
		buf[j++] = digits[i];
	}
	buf[j] = '\0';
	return buf;
}

/* v / div with two decimals, rounded, in integers (no locale, no float rounding at the edges). */
static void two_decimals(char *buf, uint64_t v, uint64_t div, const char *suffix)
{
	uint64_t hundredths = v / (div / 100) + (v % (div / 100) >= div / 200);
	char whole[32];

	snprintf(buf, UNIT_BUF, "%s.%02" PRIu64 " %s", unit_count(whole, hundredths / 100), hundredths % 100,
		 suffix);
}

const char *unit_amount(char *buf, uint64_t v, enum unit u)
{
	char n[32];

	if (u != UNIT_MICROS)
		snprintf(buf, UNIT_BUF, "%s sample%s", unit_count(n, v), v == 1 ? "" : "s");
	else if (v < 1000)
		snprintf(buf, UNIT_BUF, "%" PRIu64 " us", v);
	else if (v < 999995) /* past that, rounding would write 1,000.00 ms */
		two_decimals(buf, v, 1000, "ms");
	else
		two_decimals(buf, v, 1000000, "s");
	return buf;
}
