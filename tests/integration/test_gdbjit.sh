#!/bin/bash
# test_gdbjit.sh - JIT code with no perf map, named from what its JIT registered with the GDB JIT interface:
# a Python driver calling a function Numba compiled (Debian's python3-numba: LLVM's MCJIT keeps each object
# it compiles in memory, listed from __jit_debug_descriptor in libLLVM). At least 95% of the samples taken
# inside the compiled function name it (kernel_sum, demangled from Numba's __main__::kernel_sum[abi:...]),
# with the Python callers above it; the status and the metrics count what was read. Then a compiled function
# calling libm (numba_jit.py with libm): its code has no frame pointer and no CFI of its own, so its stacks are
# whole (from _start, through Numba's dispatcher) only with rows read from its JIT object (jitrows.c).
. "$(dirname "$0")/lib.sh"
FREQ=199

need_root gdbjit
system_python
if ! "$SYSPY" -c 'import numba' 2> /dev/null; then
	fail "the system's python3 imports numba (scripts/deps.sh test installs python3-numba)"
	exit 1
fi
W=$(dirname "$0")/../workloads

run_flamed gdbjit --db "$TMP/flamed.db" --frequency $FREQ --flush-interval 1 --listen 127.0.0.1:0
# JIT objects are read from the process: it is held alive (after its work) until its samples are named.
# Its first samples wait for libLLVM's table (deferred), seconds under a sanitizer: the tables are built,
# the samples walked, then a flush names them, all while it lives.
# numba_run NAME [ARG]: runs numba_jit.py for 4 s with ARG (PID its pid), its profile into $TMP/NAME.folded.
numba_run() {
	rm -f "$TMP/release"
	"$SYSPY" "$W/numba_jit.py" 4 "$TMP/release" $2 > "$TMP/$1.out" &
	PID=$!
	for _ in $(seq 600); do grep -q '^done' "$TMP/$1.out" && break; kill -0 $PID 2> /dev/null || break; sleep 0.1; done
	check "the Numba program ($1) ran its loop" grep -q '^done' "$TMP/$1.out"
	# (under ASan the unwinder may still be building the host's tables after wait_tables' 30 s: then the
	# samples still waiting are left out, and the counts below say how many there are)
	wait_tables || echo "# the unwinder still had requests after 30 s"
	sleep 1 # the deferred samples are walked within 200 ms of their tables
	curl -sf "$URL/api/v1/profile?pid=$PID&format=folded&from=-10m&flush=1" > "$TMP/$1.folded"
	touch "$TMP/release"
	wait $PID
	check "the Numba program ($1) exits 0" [ $? -eq 0 ]
}
numba_run numba

# Inside the compiled code: under the driver's Python frame, a leaf that is kernel_sum, or a frame of
# anonymous memory left unnamed ([unknown]) under Numba's dispatcher.
D='drive \(numba_jit\.py\);'
inside=$(sum_samples "$TMP/numba.folded" "${D}.*(kernel_sum[^;]*|\\[unknown\\])\$")
named=$(sum_samples "$TMP/numba.folded" "${D}.*kernel_sum[^;]*\$")
echo "# samples in the compiled function: $inside, named $named"
awk '{ n = $NF; sub(/ [0-9]+$/, ""); print n, substr($0, length($0) - 200) }' "$TMP/numba.folded" | sort -nr | head -4
check "enough samples inside the compiled function (>= 100: $inside)" [ "$inside" -ge 100 ]
check ">= 95% of them name it, under the Python driver ($named of $inside)" \
	[ $((100 * named)) -ge $((95 * inside)) ]
check "the name is Numba's function's, demangled and marked as JIT code (__main__::kernel_sum..._[j])" \
	grep -q ';__main__::kernel_sum[^;]*_\[j\] [0-9]*$' "$TMP/numba.folded"
check "the Python callers are above it: <module> and drive" \
	grep -Eq '<module> \(numba_jit\.py\);.*drive \(numba_jit\.py\);.*kernel_sum' "$TMP/numba.folded"
curl -sf "$URL/api/v1/profile?pid=$PID&format=folded&from=-10m&demangle=none" > "$TMP/raw.folded"
check "demangle=none: Numba's own symbol (_ZN8__main__10kernel_sum...)" grep -q ';_ZN8__main__10kernel_sum' "$TMP/raw.folded"

# JIT code calling libm: whole stacks, walked through the JIT frames with their objects' rows.
numba_run calls libm
J='__main__::outer[^;]*_\[j\]'
injit=$(sum_samples "$TMP/calls.folded" "$J")
whole=$(sum_samples "$TMP/calls.folded" "^[^;]*;_start;.*drive \(numba_jit\.py\);.*_dispatcher[^;]*;cpython::$J;$J")
echo "# samples in the compiled function (or what it calls): $injit, whole from _start through the dispatcher: $whole"
awk '{ n = $NF; sub(/ [0-9]+$/, ""); print n, substr($0, length($0) - 300) }' "$TMP/calls.folded" | sort -nr | head -3
check "enough samples in the compiled function (>= 100: $injit)" [ "$injit" -ge 100 ]
check ">= 95% of them whole: _start, the Python driver, Numba's dispatcher, its wrapper, the function ($whole of $injit)" \
	[ $((100 * whole)) -ge $((95 * injit)) ]
check "libm's frames below the JIT frame" grep -Eq "$J;(atan2|__ieee754_atan2|__fmod_finite|fmod)" "$TMP/calls.folded"

curl -sf "$URL/api/v1/status" > "$TMP/status.json"
jq -c .jit.gdb_jit "$TMP/status.json"
jq -c .unwind.jit "$TMP/status.json"
check "status: JIT objects read for unwind rows, their tables loaded, none refused" \
	jq -e '.unwind.jit.objects >= 1 and .unwind.jit.rows >= 2 and .unwind.jit.lists_read >= 1 and
		.unwind.jit.objects_bad == 0 and .unwind.jit.lists_cut == 0' "$TMP/status.json"
check "status: frames named from the GDB JIT interface, objects and symbols read, nothing refused" \
	jq -e '.jit.gdb_jit.named >= 1 and .jit.gdb_jit.lists_read >= 1 and .jit.gdb_jit.objects >= 1 and
		.jit.gdb_jit.symbols >= 1 and .jit.gdb_jit.objects_bad == 0 and .jit.gdb_jit.lists_cut == 0 and
		.jit.named >= .jit.gdb_jit.named' "$TMP/status.json"
curl -sf "$URL/metrics" > "$TMP/metrics"
check "metrics: flamed_jit_gdb_frames_named_total" grep -Eq '^flamed_jit_gdb_frames_named_total [1-9]' "$TMP/metrics"
check "metrics: flamed_jit_gdb_objects_total" grep -Eq '^flamed_jit_gdb_objects_total [1-9]' "$TMP/metrics"
check "metrics: flamed_unwind_jit_objects_total" grep -Eq '^flamed_unwind_jit_objects_total [1-9]' "$TMP/metrics"
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
exit $FAILED
