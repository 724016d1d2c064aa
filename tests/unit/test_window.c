/* test_window.c - durations and instants as users type them: good ones to exact seconds, bad ones refused. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "query/window.h"

struct good {
	const char *in;
	int64_t want;
};

static const struct good good_durations[] = {
	{ "1", 1 },
	{ "90", 90 },
	{ "30s", 30 },
	{ "10m", 600 },
	{ "2h", 7200 },
	{ "7d", 604800 },
	{ "0010m", 600 },
	{ "9223372036854775807", INT64_MAX },
	{ "153722867280912930m", INT64_C(9223372036854775800) },
	{ "106751991167300d", INT64_C(9223372036854720000) },
};

static const char *const bad_durations[] = {
	"", "0", "0s", "00m", "-5", "+5", " 5", "5 ", "5x", "5M", "5H", "m", "s5", "1.5h", "10mm", "1e3", "10m5s",
	"0x10", "9223372036854775808", "153722867280912931m", "2562047788015216h", "106751991167301d",
	"99999999999999999999999",
};

static const struct good good_times[] = {
	{ "0", 0 },
	{ "1700000000", 1700000000 },
	{ "9223372036854775807", INT64_MAX },
	{ "2023-11-14T22:13:20Z", 1700000000 },
	{ "2023-11-14t22:13:20z", 1700000000 },
	{ "2023-11-14 22:13:20Z", 1700000000 },
	{ "2023-11-14T22:13:20.5Z", 1700000000 },
	{ "2023-11-14T22:13:20.999999999Z", 1700000000 },
	{ "2023-11-14T23:13:20+01:00", 1700000000 },
	{ "2023-11-14T16:43:20-05:30", 1700000000 },
	{ "2023-11-15T07:58:20+09:45", 1700000000 },
	{ "2023-11-14T22:13:20+00:00", 1700000000 },
	{ "2023-11-14T22:13:20-00:00", 1700000000 },
	{ "2023-11-14T23:13:20.25+01:00", 1700000000 },
	{ "2023-11-15T00:13:20+23:59", 1700000000 - 23 * 3600 - 59 * 60 + 2 * 3600 },
	{ "1970-01-01T00:00:00Z", 0 },
	{ "1969-12-31T23:59:59Z", -1 },
	{ "1970-01-01T01:00:00+01:00", 0 },
	{ "2024-02-29T00:00:00Z", 1709164800 },
	{ "2000-02-29T12:00:00Z", 951825600 },
	{ "2016-12-31T23:59:60Z", 1483228800 }, /* leap second: the next minute's first */
	{ "2026-11-22T10:00:00Z", 1795341600 },
	{ "9999-12-31T23:59:59Z", INT64_C(253402300799) },
};

static const char *const bad_times[] = {
	"", " ", "abc", "-1", "+1", " 1", "1 ", "1700000000x", "1.5", "99999999999999999999",
	"2023-11-14", "2023-11-14T22:13:20", "2023-11-14T22:13Z", "2023-11-14T22:13:20 Z",
	"2023-13-01T00:00:00Z", "2023-00-01T00:00:00Z", "2023-01-00T00:00:00Z", "2023-01-32T00:00:00Z",
	"2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2023-04-31T00:00:00Z", "2023-11-14T24:00:00Z",
	"2023-11-14T22:60:00Z", "2023-11-14T22:13:61Z", "2023-11-14T22:13:20+24:00", "2023-11-14T22:13:20+01:60",
	"2023-11-14T22:13:20+0100", "2023-11-14T22:13:20+01", "2023-11-14T22:13:20+1:00", "2023-11-14T22:13:20.Z",
	"2023-11-14T22:13:20.5", "2023-11-14T22:13:20Zjunk", "2023-11-14T22:13:20+01:00x", "23-11-14T22:13:20Z",
	"2023-1-14T22:13:20Z", "2023-11-4T22:13:20Z", "2023-11-14T2:13:20Z", "2023/11/14T22:13:20Z",
	"2023-11-14X22:13:20Z", "2023-11-14T22-13-20Z", "+2023-11-14T22:13:20Z", "2023-11-14T22:13:20UTC",
	"2023-11-14T22:13:20Z ",
};

int main(void)
{
	int64_t v;
	int err;

	for (size_t i = 0; i < sizeof(good_durations) / sizeof(good_durations[0]); i++) {
		v = -12345;
		err = window_parse_duration(good_durations[i].in, &v);
		CHECK(err == 0 && v == good_durations[i].want, "duration '%s' = %" PRId64 " (got %d, %" PRId64 ")",
		      good_durations[i].in, good_durations[i].want, err, v);
	}
	for (size_t i = 0; i < sizeof(bad_durations) / sizeof(bad_durations[0]); i++) {
		v = -12345;
		err = window_parse_duration(bad_durations[i], &v);
		CHECK(err == -EINVAL && v == -12345, "duration '%s' refused, output untouched", bad_durations[i]);
	}
	CHECK(window_parse_duration(NULL, &v) == -EINVAL && window_parse_duration("1", NULL) == -EINVAL,
	      "duration: NULL arguments refused");

	for (size_t i = 0; i < sizeof(good_times) / sizeof(good_times[0]); i++) {
		v = -12345;
		err = window_parse_time(good_times[i].in, &v);
		CHECK(err == 0 && v == good_times[i].want, "time '%s' = %" PRId64 " (got %d, %" PRId64 ")",
		      good_times[i].in, good_times[i].want, err, v);
	}
	for (size_t i = 0; i < sizeof(bad_times) / sizeof(bad_times[0]); i++) {
		v = -12345;
		err = window_parse_time(bad_times[i], &v);
		CHECK(err == -EINVAL && v == -12345, "time '%s' refused, output untouched", bad_times[i]);
	}
	CHECK(window_parse_time(NULL, &v) == -EINVAL && window_parse_time("1", NULL) == -EINVAL,
	      "time: NULL arguments refused");
	return CHECK_EXIT();
}
