/* test_jitsyms.c - JIT symbols by address: found inside their range and not past it, the newest of
 * overlapping ones wins (memory reused for other code), names cut, the bounds held and counted; when
 * code last replaced other code. */
#include <string.h>

#include "check.h"
#include "symbolize/jitsyms.h"

int main(void)
{
	struct jitsyms *t = NULL;
	char longname[3000];
	const char *n;

	CHECK(jitsyms_new(4, 4096, &t) == 0 && t, "jitsyms_new");
	if (!t)
		return CHECK_EXIT();
	CHECK(jitsyms_find(t, 0x1000) == NULL, "an empty table names nothing");
	CHECK(jitsyms_add(t, 0x1000, 0x100, "first", 5) == 0, "first added");
	CHECK(jitsyms_add(t, 0x2000, 0x10, "second\0junk", 11) == 0, "second added (a NUL ends its name)");
	n = jitsyms_find(t, 0x10ff);
	CHECK(n && !strcmp(n, "first"), "inside the first range: first");
	CHECK(jitsyms_find(t, 0x1100) == NULL, "just past it: nothing");
	n = jitsyms_find(t, 0x2004);
	CHECK(n && !strcmp(n, "second"), "second, its name up to the NUL");
	CHECK(jitsyms_add(t, 0x1080, 0x100, "reused", 6) == 0, "code at memory reused, overlapping the first");
	n = jitsyms_find(t, 0x1090);
	CHECK(n && !strcmp(n, "reused"), "where they overlap, the newest wins");
	n = jitsyms_find(t, 0x1010);
	CHECK(n && !strcmp(n, "first"), "below the overlap, the first still");
	CHECK(jitsyms_add(t, UINT64_MAX - 4, 0x10, "wraps", 5) == 1, "a range that wraps is not added");
	CHECK(jitsyms_add(t, 0x3000, 0, "empty", 5) == 1, "a range of size 0 is not added");
	memset(longname, 'x', sizeof(longname));
	CHECK(jitsyms_add(t, 0x4000, 0x10, longname, sizeof(longname)) == 0, "a long name is added");
	n = jitsyms_find(t, 0x4000);
	CHECK(n && strlen(n) == JITSYMS_MAX_NAME - 1, "cut to %d bytes", JITSYMS_MAX_NAME - 1);
	CHECK(jitsyms_add(t, 0x5000, 0x10, "fifth", 5) == 1 && jitsyms_count(t) == 4,
	      "past max_symbols: not added (4 held)");
	jitsyms_free(t);
	CHECK(jitsyms_new(100, 16, &t) == 0 && jitsyms_add(t, 0x1000, 1, "abcdefghij", 10) == 0 &&
		      jitsyms_add(t, 0x2000, 1, "abcdefghij", 10) == 1,
	      "past max_name_bytes: not added");
	jitsyms_free(t);

	/* Code freed and its memory reused, told apart by when each was made. */
	CHECK(jitsyms_new(100, 4096, &t) == 0 && jitsyms_add_at(t, 0x1000, 0x100, 100, "old", 3) == 0 &&
		      jitsyms_add_at(t, 0x1000, 0x80, 200, "new", 3) == 0 &&
		      jitsyms_add_at(t, 0x1040, 0x10, 300, "newest", 6) == 0,
	      "three loads at one place, at times 100, 200, 300");
	n = jitsyms_find_before(t, 0x1010, 150);
	CHECK(n && !strcmp(n, "old"), "at 150: the code made at 100 (%s)", n ? n : "NULL");
	n = jitsyms_find_before(t, 0x1010, 250);
	CHECK(n && !strcmp(n, "new"), "at 250: the code made at 200 (%s)", n ? n : "NULL");
	n = jitsyms_find_before(t, 0x1044, 250);
	CHECK(n && !strcmp(n, "new"), "at 250, inside the code made later at 300: still 200's (%s)", n ? n : "NULL");
	n = jitsyms_find_before(t, 0x1044, 300);
	CHECK(n && !strcmp(n, "newest"), "at 300: 300's (%s)", n ? n : "NULL");
	n = jitsyms_find_before(t, 0x1090, 250);
	CHECK(n && !strcmp(n, "old"), "at 250 past the newer code's end: the old code's (%s)", n ? n : "NULL");
	n = jitsyms_find_before(t, 0x1010, 50);
	CHECK(n && !strcmp(n, "old"), "before any was made: the earliest (%s)", n ? n : "NULL");
	n = jitsyms_find_before(t, 0x1044, 0);
	CHECK(n && !strcmp(n, "newest") && !strcmp(jitsyms_find(t, 0x1044), "newest"),
	      "with no time: the newest, as jitsyms_find");
	CHECK(jitsyms_find_before(t, 0x1100, 250) == NULL, "past them all: nothing");
	CHECK(jitsyms_replaced_at(t) == 300, "replaced last at 300 (%llu)", (unsigned long long)jitsyms_replaced_at(t));
	CHECK(jitsyms_add_at(t, 0x2000, 0x10, 400, "elsewhere", 9) == 0 && jitsyms_replaced_at(t) == 300,
	      "code at new memory at 400: still 300");
	CHECK(jitsyms_add_at(t, 0x1040, 0x10, 500, "newest", 6) == 0 && jitsyms_replaced_at(t) == 300,
	      "the same code logged again at 500 (its name unchanged): still 300");
	CHECK(jitsyms_add_at(t, 0x1fff, 0x2, 600, "across", 6) == 0 && jitsyms_replaced_at(t) == 600,
	      "code over the last byte of the old code's memory at 600: 600");
	CHECK(jitsyms_add(t, 0x2008, 0x4, "unstamped", 9) == 0 && jitsyms_replaced_at(t) == UINT64_MAX,
	      "code over other code with no time: unknown (UINT64_MAX)");
	jitsyms_free(t);

	/* Loads at separate places, none over another, in any order: never replaced. */
	CHECK(jitsyms_new(100, 4096, &t) == 0, "jitsyms_new");
	for (int i = 0; t && i < 50; i++)
		jitsyms_add_at(t, 0x10000 + (uint64_t)((i * 37) % 50) * 0x100, 0x100, 1000 + (uint64_t)i, "f", 1);
	CHECK(jitsyms_replaced_at(t) == 0, "50 loads side by side: never replaced (%llu)",
	      (unsigned long long)jitsyms_replaced_at(t));
	CHECK(jitsyms_replaced_at(NULL) == 0, "no table: 0");
	jitsyms_free(t);
	return CHECK_EXIT();
}
