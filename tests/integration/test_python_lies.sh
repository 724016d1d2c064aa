#!/bin/bash
# test_python_lies.sh - what a traced process says is outside data: tests/workloads/pylies.c claims to be
# CPython 3.11 and hands out made-up frames (a cycle, a frame that is its own caller, code objects of
# random bytes, unmapped addresses). The Python walk must stay bounded, name nothing it cannot read,
# count each failure, and flamed must go on sampling and serving.
. "$(dirname "$0")/lib.sh"
FREQ=499
W=$(cd "$(dirname "$0")/../workloads" && pwd)

need_root python-lies
gcc -O2 -g -rdynamic "$W/pylies.c" -o "$TMP/pylies" -lpthread || { fail "build pylies"; exit 1; }

run_flamed python-lies --db "$TMP/flamed.db" --frequency $FREQ --flush-interval 1 --listen 127.0.0.1:0
"$TMP/pylies" cycle 0.3 > /dev/null # its unwind table is built before the measured runs
declare -A pid_of
for mode in cycle self garbage unmapped; do
	"$TMP/pylies" "$mode" 2 > /dev/null &
	pid_of[$mode]=$!
	wait "${pid_of[$mode]}"
done
sleep 2 # the last flush
curl -sf "$URL/api/v1/status" > "$TMP/status.json"
check "flamed still answers after the lies" [ -s "$TMP/status.json" ]
check "flamed took it for a 3.11 interpreter (status counts it)" jq -e '.python.interpreters >= 1' "$TMP/status.json"
jq -c '.python' "$TMP/status.json"

# deepest FILE: the most user frames of a stack in FILE (the process name and markers included).
deepest() {
	awk '{ $NF = ""; n = split($0, f, ";"); u = 0; for (i = 1; i <= n; i++) if (f[i] !~ /_\[k\] *$/) u++
		if (u > m) m = u } END { print m + 0 }' "$1"
}
# python_deep FILE N: samples of stacks in FILE with at least N Python frames.
python_deep() {
	awk -v want="$2" '{ c = $NF; $NF = ""; n = split($0, f, ";"); p = 0
		for (i = 1; i <= n; i++) if (f[i] ~ / \([^();]+\) *$/) p++
		if (p >= want) s += c } END { print s + 0 }' "$1"
}

for mode in cycle self garbage unmapped; do
	curl -sf "$URL/api/v1/profile?pid=${pid_of[$mode]}&from=-5m&format=folded" > "$TMP/$mode.folded"
	total=$(sum_samples "$TMP/$mode.folded")
	spun=$(sum_samples "$TMP/$mode.folded" ';main;')
	python=$(sum_samples "$TMP/$mode.folded" '\(python\)')
	echo "$mode: $total samples, $spun under main, $python with unnamed Python frames; deepest stack $(deepest "$TMP/$mode.folded") frames"
	check "$mode: its samples are stored ($total)" [ "$total" -gt 200 ]
	check "$mode: no stack is deeper than the 127 frames kept and the markers ($(deepest "$TMP/$mode.folded"))" \
		[ "$(deepest "$TMP/$mode.folded")" -le 130 ]
	check "$mode: no frame is named from a code object that is not one" not grep -qE ';[^;[]+ \([^)]*\.py\)' "$TMP/$mode.folded"
done
cyc=$(python_deep "$TMP/cycle.folded" 100)
check "cycle: the endless chain is cut at the frames a stack holds ($cyc samples with 100+ Python frames)" [ "$cyc" -gt 100 ]
self=$(sum_samples "$TMP/self.folded" ';main;')
check "self: a frame that is its own caller is written once, the native walk goes on to main ($self samples)" \
	[ "$self" -gt 100 ]
check "status counts walks cut at the most frames" jq -e '.python.truncated > 100' "$TMP/status.json"
check "status counts frames that could not be read" jq -e '.python.walk_errors.read_failed > 100' "$TMP/status.json"
check "status counts Python frames left unnamed, not code objects or unreadable" \
	jq -e '.python.frames_unnamed.not_code + .python.frames_unnamed.unreadable >= 3' "$TMP/status.json"
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
exit $FAILED
