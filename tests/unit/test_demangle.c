/* test_demangle.c - frame names demangled (util/demangle.h): C++ (Itanium) and Rust (legacy and v0)
 * symbols in the short, full and no-demangling forms, FlameGraph suffixes kept, and what must stay as
 * it is: C and Python names, names the demangler refuses, truncated and overlong symbols, and a
 * pathologically nested one (libiberty's recursion bound). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/demangle.h"

/* name in mode: the demangled text, or NULL when it stays. */
static void expect(const char *name, enum demangle_mode mode, const char *want)
{
	char *got = demangle_frame(name, strlen(name), mode);

	CHECK(want ? got && !strcmp(got, want) : !got, "%s (%s) -> %s (got %s)", name, demangle_mode_name(mode),
	      want ? want : "as it is", got ? got : "as it is");
	free(got);
}

int main(void)
{
	enum demangle_mode m;
	char *big, *got;

	/* C++ */
	expect("_ZN7heldout3geo4GridIdE5relaxEi", DEMANGLE_SHORT, "heldout::geo::Grid<double>::relax");
	expect("_ZN7heldout3geo4GridIdE5relaxEi", DEMANGLE_FULL, "heldout::geo::Grid<double>::relax(int)");
	expect("_ZN7heldout3geo4GridIdE5relaxEi", DEMANGLE_NONE, NULL);
	expect("_ZNK7heldout3geo4GridIdE4cellEii", DEMANGLE_FULL, "heldout::geo::Grid<double>::cell(int, int) const");
	expect("_ZL9static_fnv.constprop.0", DEMANGLE_SHORT, "static_fn");
	expect("_ZL9static_fnv.constprop.0", DEMANGLE_FULL, "static_fn() [clone .constprop.0]");
	expect("_ZSt4sortIN9__gnu_cxx17__normal_iteratorIPiSt6vectorIiSaIiEEEEEvT_S7_", DEMANGLE_SHORT,
	       "std::sort<__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > > >");
	/* Rust, legacy (_ZN...17h<hash>E) and v0 (_R) */
	expect("_ZN7rs_work8pipeline5Stage5churn17h94cee0908c52b0a5E", DEMANGLE_SHORT, "rs_work::pipeline::Stage::churn");
	expect("_ZN7rs_work8pipeline5Stage5churn17h94cee0908c52b0a5E", DEMANGLE_FULL,
	       "rs_work::pipeline::Stage::churn::h94cee0908c52b0a5");
	expect("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h486551cbfee43495E", DEMANGLE_SHORT,
	       "std::rt::lang_start::{{closure}}");
	expect("_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal", DEMANGLE_SHORT, "std::rt::lang_start_internal");
	/* FlameGraph's suffixes are kept after the demangled name */
	expect("_ZN2ns1fEi_[i]", DEMANGLE_SHORT, "ns::f_[i]");
	expect("_ZN2ns1fEi_[j]", DEMANGLE_FULL, "ns::f(int)_[j]");
	/* What stays as it is */
	expect("leaf_spin", DEMANGLE_SHORT, NULL);
	expect("tooth (app.py)", DEMANGLE_SHORT, NULL);
	expect("[unknown]", DEMANGLE_SHORT, NULL);
	expect("libfoo.so+0x1234", DEMANGLE_SHORT, NULL);
	expect("schedule_[k]", DEMANGLE_SHORT, NULL);
	expect("_Z", DEMANGLE_SHORT, NULL);
	expect("_Zfoo", DEMANGLE_SHORT, NULL);
	expect("_ZN7heldout3geo4GridIdE5rel", DEMANGLE_SHORT, NULL); /* cut short */
	expect("_R", DEMANGLE_SHORT, NULL);
	expect("_RNvNtCs", DEMANGLE_SHORT, NULL);
	/* Only len bytes are read: the name need not end there. */
	got = demangle_frame("_ZN2ns1fEi;more", 10, DEMANGLE_SHORT);
	CHECK(got && !strcmp(got, "ns::f"), "only the name's own bytes are read (%s)", got ? got : "as it is");
	free(got);
	/* Longer than DEMANGLE_MAX_NAME: stays; deeply nested: libiberty's recursion bound refuses it, no crash */
	big = malloc(DEMANGLE_MAX_NAME + 64);
	if (big) {
		memset(big, 'a', DEMANGLE_MAX_NAME + 63);
		memcpy(big, "_ZN2ns1fEi", 10);
		big[DEMANGLE_MAX_NAME + 63] = '\0';
		got = demangle_frame(big, strlen(big), DEMANGLE_SHORT);
		CHECK(!got, "a name longer than %d bytes stays as it is", DEMANGLE_MAX_NAME);
		free(got);
		strcpy(big, "_Z1f");
		for (size_t i = 4; i + 3 < DEMANGLE_MAX_NAME; i += 2)
			memcpy(big + i, "PF", 2);
		strcpy(big + DEMANGLE_MAX_NAME - 2, "v");
		got = demangle_frame(big, strlen(big), DEMANGLE_FULL);
		CHECK(1, "a symbol nested %d deep is demangled or refused, without a crash (%s)", DEMANGLE_MAX_NAME / 2,
		      got ? "demangled" : "refused");
		free(got);
		free(big);
	}
	CHECK(demangle_parse_mode("short", &m) == 0 && m == DEMANGLE_SHORT && demangle_parse_mode("full", &m) == 0 &&
	      m == DEMANGLE_FULL && demangle_parse_mode("none", &m) == 0 && m == DEMANGLE_NONE,
	      "short, full and none parse");
	CHECK(demangle_parse_mode("Short", &m) == -EINVAL && demangle_parse_mode("", &m) == -EINVAL &&
	      demangle_parse_mode(NULL, &m) == -EINVAL, "anything else is -EINVAL");
	return CHECK_EXIT();
}
