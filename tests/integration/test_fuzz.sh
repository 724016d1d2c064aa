#!/bin/bash
# test_fuzz.sh - every libFuzzer target (tests/fuzz/) runs once over its whole seed corpus, then fuzzes for
# 3 s on a copy of it; a crash fails the test and its input's path is printed.
. "$(dirname "$0")/lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SECONDS_EACH=3
CRASHES=$BUILD/fuzz/crashes

if ! out=$(make -s -C "$ROOT" BUILD="$BUILD" fuzz-build 2>&1); then
	fail "fuzz: make fuzz-build (clang's libFuzzer runtime is in libclang-rt-14-dev)"
	echo "$out" | tail -20 | sed 's/^/    /'
	exit 1
fi
mkdir -p "$CRASHES"

for src in "$ROOT"/tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	name=${name#fuzz_}
	bin=$BUILD/fuzz/fuzz_$name
	seeds=$ROOT/tests/fuzz/corpus/$name
	log=$TMP/$name.log

	# Each seed once: a crash names the file it ran last.
	if "$bin" -artifact_prefix="$CRASHES/$name-" "$seeds"/* > "$log" 2>&1; then
		pass "fuzz $name: $(find "$seeds" -type f | wc -l) seed inputs"
	else
		fail "fuzz $name: crashed on seed $(sed -n 's/^Running: //p' "$log" | tail -1)"
		grep -Ev '^(Running:|Executed) ' "$log" | tail -30 | sed 's/^/    /'
	fi

	# A short run on a copy of the seeds (new inputs are not written into the repository).
	mkdir -p "$TMP/corpus-$name"
	cp -r "$seeds/." "$TMP/corpus-$name/"
	if "$bin" -max_total_time=$SECONDS_EACH -timeout=30 -artifact_prefix="$CRASHES/$name-" \
		"$TMP/corpus-$name" > "$log" 2>&1; then
		pass "fuzz $name: ${SECONDS_EACH} s, $(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log") runs without a finding"
	else
		fail "fuzz $name: $(grep -o 'Test unit written to .*' "$log" || echo "exited without an input; see below")"
		tail -30 "$log" | sed 's/^/    /'
	fi
done
exit "$FAILED"
