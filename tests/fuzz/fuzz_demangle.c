/* fuzz_demangle.c - libFuzzer target: any bytes as a frame name, demangled in each form
 * (demangle_frame): symbol names come from binaries, which are outside data. Whatever it makes of them
 * is a string folded text can carry: no ';', no control character, a bounded length. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "util/demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum demangle_mode modes[] = { DEMANGLE_SHORT, DEMANGLE_FULL, DEMANGLE_NONE };

	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		char *d = demangle_frame((const char *)data, size, modes[m]);

		if (!d)
			continue;
		FUZZ_ASSERT(modes[m] != DEMANGLE_NONE && size <= DEMANGLE_MAX_NAME + 4);
		for (const unsigned char *p = (const unsigned char *)d; *p; p++)
			FUZZ_ASSERT(*p != ';' && *p >= 0x20 && *p != 0x7f);
		free(d);
	}
	return 0;
}
