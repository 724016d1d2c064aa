#!/bin/bash
# test_jitdump.sh - JIT code named from the jitdump file its runtime writes, without a perf map: Node.js
# with --perf-prof (V8 writes jit-PID.dump in the working directory, maps it, and writes no perf map) runs
# a recursive fib V8 optimizes (tests/workloads/jsfib.js). V8 writes the file through a 2 MiB buffer, so
# code it made lately is on disk only later (at the latest at exit): such frames are stored as
# jit-PID.dump+0xADDR and named when read. After the program exits, >= 95% of its samples in JIT code name
# it (fib among them, marked _[j]); the status and the metrics count what was read and named late.
. "$(dirname "$0")/lib.sh"
FREQ=199

need_root jitdump
if ! command -v node > /dev/null; then
	fail "node is installed (scripts/deps.sh test installs nodejs)"
	exit 1
fi
W=$(cd "$(dirname "$0")/../workloads" && pwd)

run_flamed jitdump --db "$TMP/flamed.db" --frequency $FREQ --flush-interval 1 --listen 127.0.0.1:0
(cd "$TMP" && exec node --perf-prof "$W/jsfib.js" 5) > "$TMP/node.out" 2>&1 &
PID=$!
NODE_PID=$PID
sleep 3
curl -sf "$URL/api/v1/profile?pid=$PID&format=folded&from=-10m&flush=1" > "$TMP/live.folded"
wait $PID
check "node ran its loop" grep -q '^done' "$TMP/node.out"
check "V8 wrote jit-$PID.dump" test -s "$TMP/jit-$PID.dump"
check "and no perf map" not test -e "/tmp/perf-$PID.map"
curl -sf "$URL/api/v1/profile?pid=$PID&format=folded&from=-10m&flush=1" > "$TMP/node.folded"

# In JIT code: a leaf named from the dump (_[j]), one stored as jit-PID.dump+0x... and not named yet, or
# anonymous memory left unnamed.
inside=$(sum_samples "$TMP/node.folded" ";([^;]*_\\[j\\]|jit-$PID\\.dump\\+0x[0-9a-f]+|\\[unknown\\])\$")
named=$(sum_samples "$TMP/node.folded" ";[^;]*_\\[j\\]\$")
node_named=$named
fib=$(sum_samples "$TMP/node.folded" ";[^;]*fib[^;]*_\\[j\\]\$")
live_late=$(sum_samples "$TMP/live.folded" "jit-$PID\\.dump\\+0x")
echo "# samples in JIT code: $inside, named $named (fib $fib); while it ran, $live_late samples had a frame not yet in the dump"
awk '{ n = $NF; sub(/ [0-9]+$/, ""); print n, substr($0, length($0) - 160) }' "$TMP/node.folded" | sort -nr | head -4
check "enough samples in JIT code (>= 100: $inside)" [ "$inside" -ge 100 ]
check ">= 95% of them named from the dump ($named of $inside)" [ $((100 * named)) -ge $((95 * inside)) ]
check "fib among them, marked as JIT code" [ "$fib" -ge 1 ]
# Frames the dump never names stay jit-PID.dump+0x... (code V8 made before it opened the file, or never
# writes down): few.
left=$(sum_samples "$TMP/node.folded" "jit-$PID\\.dump\\+0x")
total=$(sum_samples "$TMP/node.folded")
check "at most 5% of node's samples keep a frame the dump never named, once it exited ($left of $total)" \
	[ "$total" -gt 0 -a $((100 * left)) -le $((5 * total)) ]

curl -sf "$URL/api/v1/status" > "$TMP/status.json"
jq -c '.jit.jitdump, .debuginfod' "$TMP/status.json"
check "status: the dump read, code loads counted, none bad" \
	jq -e '.jit.jitdump.files_read >= 1 and .jit.jitdump.loads >= 1 and .jit.jitdump.files_bad == 0 and
		.jit.jitdump.records_bad == 0' "$TMP/status.json"
check "status: frames named from the dump, at ingest or when read" \
	jq -e '.jit.jitdump.named + .debuginfod.jit_named_at_read >= 1' "$TMP/status.json"
curl -sf "$URL/metrics" > "$TMP/metrics"
check "metrics: flamed_jit_dump_loads_total" grep -Eq '^flamed_jit_dump_loads_total [1-9]' "$TMP/metrics"
# V8 writes an unwinding-information record before each code load, most with no .eh_frame; its code keeps
# frame pointers and is walked by them, not by rows from the dump.
check "status: V8's unwinding records read, none refused, no JIT table from them" \
	jq -e '.unwind.jit.dump_unwind_records >= 1 and .unwind.jit.dump_unwind_bad == 0 and .unwind.jit.objects == 0' \
	"$TMP/status.json"
check "metrics: flamed_jit_dump_named_at_read_total" grep -Eq '^flamed_jit_dump_named_at_read_total [0-9]' "$TMP/metrics"

# CPython 3.13's -X perf_jit: a trampoline per Python function (py::fib:PATH), in /tmp/jit-PID.dump.
pyenv=${PYENV_ROOT:-/root/.pyenv}
PY313=$(ls -d "$pyenv"/versions/3.1[3-9].*/bin/python3.1[3-9] 2> /dev/null | sort -V | head -1)
# pyjit_run NAME [MORE]: runs pyjitfib.py under -X perf_jit for 4 s, its profile into $TMP/NAME.folded.
pyjit_run() {
	"$PY313" -X perf_jit "$W/pyjitfib.py" 4 ${2:-0} > "$TMP/$1.out" 2>&1 &
	PID=$!
	wait $PID
	check "$1: $PY313 -X perf_jit ran" grep -q '^done' "$TMP/$1.out"
	check "$1: it wrote /tmp/jit-$PID.dump" test -s "/tmp/jit-$PID.dump"
	# (under a sanitizer, and after node's, its tables may still be building: its deferred samples
	# are walked once they are, within 200 ms)
	wait_tables || echo "# the unwinder still had requests after 30 s"
	sleep 1
	curl -sf "$URL/api/v1/profile?pid=$PID&format=folded&from=-10m&flush=1" > "$TMP/$1.folded"
	rm -f "/tmp/jit-$PID.dump" "/tmp/perf-$PID.map"
}
if [ -x "$PY313" ]; then
	# With the Python walk (the default) each trampoline is stood for by the Python frames of the call it
	# makes, and stepped over by its layout: the stacks run through every one of them (a fib 20 deep
	# calls through 20) to _start, also those sampled as a call starts or ends (its frames pushed or
	# popped), in a trampoline, or before the tables were built (walked later).
	pyjit_run python
	total=$(sum_samples "$TMP/python.folded")
	whole=$(sum_samples "$TMP/python.folded" "^[^;]*;_start;")
	echo "# $PY313 -X perf_jit: $whole of $total samples walked to _start"
	grep -v ';_start;' "$TMP/python.folded" | awk '{ print $NF "\t" $0 }' | sort -rn | head -3 | cut -f2 |
		cut -c1-300 | sed 's/^/    not whole: /'
	check "python: >= 97% of its samples walked through the trampolines to _start ($whole of $total)" \
		[ "$total" -ge 200 -a $((100 * whole)) -ge $((97 * total)) ]
	check "python: fib's Python frames under <module>, under PyEval_EvalCode" \
		grep -Eq ';PyEval_EvalCode;<module> \(pyjitfib\.py\);fib \(pyjitfib\.py\);fib \(pyjitfib\.py\)' \
		"$TMP/python.folded"
	curl -sf "$URL/api/v1/status" > "$TMP/status.json"
	jq -c '.python | {calls_starting_or_ending, trampoline_leaves}' "$TMP/status.json"
	jq -c '{deferred: .deferred | {received, walked, given_up, dropped}, pending: .unwind.requests_pending}' \
		"$TMP/status.json"
	check "status: eval-loop calls sampled starting or ending counted" \
		jq -e '.python.calls_starting_or_ending > 0' "$TMP/status.json"
fi
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
# Read from the database directly, the frames written late are named the same way.
"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid "$NODE_PID" --since 1h --format folded > "$TMP/db.folded"
dnamed=$(sum_samples "$TMP/db.folded" ";[^;]*_\\[j\\]\$")
check "flamectl --db: as many of node's JIT samples named ($dnamed, $node_named through the API)" [ "$dnamed" -ge "$node_named" ]

if [ ! -x "$PY313" ]; then
	skip "CPython -X perf_jit: no CPython 3.13 or later here (pyenv install 3.13)"
	exit $FAILED
fi
# Without the Python walk (--python off) the trampolines are frames of their own, named from the dump, and
# walked through with the rows of the unwinding information CPython writes for each (no frame pointer).
# CPython writes the file through a buffer: pyjitfib.py makes 300 more functions after fib's first call, so
# that fib's records are in the file while it runs.
run_flamed jitdump-nopython --db "$TMP/nopy.db" --frequency $FREQ --flush-interval 1 --listen 127.0.0.1:0 --python off
pyjit_run nopython 300
# Trampoline frames: named from the dump (py::...), or stored by address (jit-PID.dump+0x...) and not named
# when read. ([unknown] is not counted: a walk that lost its way meets it too.)
tramp=$(sum_samples "$TMP/nopython.folded" "(py::[^;]*_\\[j\\]|jit-$PID\\.dump\\+0x[0-9a-f]+)(;|\$)")
named=$(awk -v re="jit-$PID\\.dump\\+0x" '$0 ~ /py::[^;]*_\[j\](;| [0-9]+$)/ && $0 !~ re { s += $NF } END { print s + 0 }' \
	"$TMP/nopython.folded")
echo "# --python off: $(sum_samples "$TMP/nopython.folded") samples, $tramp through a trampoline, $named named"
check "python off: samples through a trampoline (>= 100: $tramp)" [ "$tramp" -ge 100 ]
[ $((100 * named)) -ge $((95 * tramp)) ] || grep -E "jit-$PID\\.dump\\+0x" "$TMP/nopython.folded" |
	awk '{ print $NF "\t" $0 }' | sort -rn | head -4 | cut -f2 | cut -c1-400 | sed 's/^/    not named: /'
check "python off: >= 95% of them name it from the dump, py::fib:...pyjitfib.py_[j] among them ($named of $tramp)" \
	[ $((100 * named)) -ge $((95 * tramp)) -a "$(sum_samples "$TMP/nopython.folded" "py::fib:[^;]*pyjitfib\\.py_\\[j\\]")" -ge 1 ]
total=$(sum_samples "$TMP/nopython.folded")
whole=$(sum_samples "$TMP/nopython.folded" "^[^;]*;_start;.*py::fib")
echo "# --python off: $whole of $total samples walked through fib's trampolines to _start"
check "python off: >= 90% of the samples walked through the trampolines to _start, by the dump's rows ($whole of $total)" \
	[ "$total" -ge 200 -a $((100 * whole)) -ge $((90 * total)) ]
curl -sf "$URL/api/v1/status" > "$TMP/status.json"
jq -c '.unwind.jit' "$TMP/status.json"
check "status: unwinding information read from the dump, none refused" \
	jq -e '.unwind.jit.dump_unwind_records >= 100 and .unwind.jit.dump_unwind_bad == 0 and
		.unwind.jit.dump_files_bad == 0 and .unwind.jit.objects >= 100' "$TMP/status.json"
curl -sf "$URL/metrics" > "$TMP/metrics"
check "metrics: flamed_unwind_jit_dump_unwind_records_total" \
	grep -Eq '^flamed_unwind_jit_dump_unwind_records_total [1-9]' "$TMP/metrics"
stop_flamed
check "flamed --python off exits 0 on SIGTERM" [ $? -eq 0 ]
exit $FAILED
