#!/bin/bash
# test_answers.sh - flamectl reads flamed's JSON by field name, types checked (json-c): against a
# stand-in server (tests/workloads/standin.py), answers with their fields reordered, extra fields and
# numbers nested where a text search would find them first are read right (record's family size, top
# --watch's functions); a field of the wrong type is an error naming it, never a number made up.
. "$(dirname "$0")/lib.sh"
W=$(cd "$(dirname "$0")/../workloads" && pwd)

# standin MODE: starts the stand-in; sets S (its URL) and SPID.
standin() {
	rm -f "$TMP/port"
	python3 "$W/standin.py" "$1" "$TMP/port" &
	SPID=$!
	for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
	S=http://127.0.0.1:$(cat "$TMP/port")
}

standin reordered
cd "$TMP" || exit 1
"$BUILD/flamectl" --server "$S" record -o "$TMP/r.svg" -- true 2> "$TMP/record.err"
rc=$?
cat "$TMP/record.err"
check "record with answers reordered: exit 0" [ $rc -eq 0 ]
check "the family's size read by field: 2 processes, 42 samples (not a nested total, not a nested pid)" \
	grep -q '(2 processes, 42 samples)' "$TMP/record.err"
timeout 3 "$BUILD/flamectl" --server "$S" top --watch > "$TMP/top.txt" 2>&1
head -3 "$TMP/top.txt"
check "top --watch with answers reordered: the function with its self and total" \
	grep -Eq '^ *37\.5% +62\.5% +3 +5 +spin_here' "$TMP/top.txt"
kill $SPID
wait $SPID 2> /dev/null

standin wrongtype
"$BUILD/flamectl" --server "$S" record -o "$TMP/w.svg" -- true 2> "$TMP/record.err"
rc=$?
cat "$TMP/record.err"
check "record with a frequency given as a string: exit 1, naming the field and its type" \
	eval '[ $rc -eq 1 ] && grep -q "\"frequency\" is a string, not a whole number" "$TMP/record.err"'
check "and nothing was recorded" [ ! -e "$TMP/w.svg" ]
timeout 3 "$BUILD/flamectl" --server "$S" top --watch > "$TMP/top.txt" 2>&1
head -2 "$TMP/top.txt"
check "top --watch with a self given as a string: an error naming the field, no row" \
	eval 'grep -q "error: .*\"self\" is a string, not a whole number" "$TMP/top.txt" && ! grep -q spin_here "$TMP/top.txt"'
kill $SPID
wait $SPID 2> /dev/null
exit $FAILED
