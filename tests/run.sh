#!/bin/bash
# run.sh - runs every test (unit binaries, integration scripts), counts PASS/FAIL/SKIP lines,
# ends with "N passed, N failed, N skipped" and exits non-zero on any failure.
# Usage: tests/run.sh TEST...   (each TEST prints "PASS: x", "FAIL: x ..." or "SKIP: x: why")
set -u
passed=0 failed=0 skipped=0
for t in "$@"; do
	echo "== $t"
	out=$(mktemp)
	"$t" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	p=$(grep -c '^PASS: ' "$out")
	f=$(grep -c '^FAIL: ' "$out")
	s=$(grep -c '^SKIP: ' "$out")
	rm -f "$out"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL: $t exited with status $rc without naming a failed check"
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
		echo "FAIL: $t ran no check"
		f=1
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done
echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
