/* test_capstream.c - the bounded stream into memory: what fits is kept NUL-terminated across growth, a
 * write that would pass the bound fails (EFBIG, full) and leaves what was there. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/capstream.h"

int main(void)
{
	struct capstream b;
	char big[10000];
	FILE *f;
	int rc;

	f = capstream_open(&b, 20000);
	CHECK(f != NULL && b.data == NULL && b.len == 0, "opened empty");
	memset(big, 'x', sizeof(big));
	CHECK(fwrite(big, 1, sizeof(big), f) == sizeof(big) && fflush(f) == 0, "10000 bytes fit a bound of 20000");
	fputs("tail", f);
	CHECK(fclose(f) == 0 && b.len == 10004 && b.data[10003] == 'l' && b.data[10004] == '\0' && !b.full &&
		      !b.nomem,
	      "grown past its first allocation, the text whole and NUL-terminated (%zu bytes)", b.len);
	CHECK(b.alloc <= 20001, "it never holds more than the bound and its NUL (%zu allocated)", b.alloc);
	free(b.data);

	f = capstream_open(&b, 10000);
	CHECK(f != NULL && setvbuf(f, NULL, _IONBF, 0) == 0, "opened with a bound of 10000, unbuffered (a write each)");
	CHECK(fwrite(big, 1, 6000, f) == 6000, "6000 bytes fit");
	errno = 0;
	rc = fwrite(big, 1, 6000, f) == 6000;
	CHECK(!rc && errno == EFBIG && b.full, "6000 more would pass the bound: EFBIG, full");
	fclose(f);
	CHECK(b.len == 6000 && b.data[6000] == '\0' && b.alloc <= 10001, "what fitted stays, NUL-terminated (%zu bytes)",
	      b.len);
	free(b.data);

	f = capstream_open(&b, 4);
	CHECK(f != NULL && setvbuf(f, NULL, _IONBF, 0) == 0 && fputs("abcd", f) >= 0 && b.len == 4 &&
		      !strcmp(b.data, "abcd"),
	      "exactly the bound fits");
	CHECK(fputc('e', f) == EOF && b.full && !strcmp(b.data, "abcd"), "one byte past it does not");
	fclose(f);
	free(b.data);
	return CHECK_EXIT();
}
