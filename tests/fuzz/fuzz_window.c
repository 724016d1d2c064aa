/* fuzz_window.c - libFuzzer target: the time-window parsers (window_parse_time, window_parse_duration). */
#include <stdint.h>

#include "fuzz.h"
#include "query/window.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);
	int64_t v;

	if (window_parse_duration(s, &v) == 0)
		FUZZ_ASSERT(v > 0);
	window_parse_time(s, &v);
	free(s);
	return 0;
}
