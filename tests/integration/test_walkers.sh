#!/bin/bash
# test_walkers.sh - a CPU sample's user stack goes to the walker program its process needs, by tail call:
# a native-only process's samples never run the Python walker (walk_python), a Python process's do, and
# both keep their whole stacks. The status (bpf.walkers) and /metrics count each walker's samples.
. "$(dirname "$0")/lib.sh"

need_root walkers
system_python
build_workload branches
run_flamed walkers --db "$TMP/w.db" --listen 127.0.0.1:0 --frequency 99 --flush-interval 1

# counts: "NATIVE PYTHON MISSING PYPROCS" from the status (PYPROCS: Python processes flamed tracks now).
counts() {
	curl -sf -o /dev/null "$URL/api/v1/processes?flush=1"
	curl -sf "$URL/api/v1/status" |
		jq -r '"\(.bpf.walkers.native) \(.bpf.walkers.python) \(.bpf.walkers.missing) \(.python.processes)"'
}
# stored PID: the samples stored for PID.
stored() { curl -sf "$URL/api/v1/profile?pid=$1&format=folded&from=-5m" | awk '{ s += $NF } END { print s + 0 }'; }

# ---- A native-only process: the native walker, never the Python one ----
read -r n0 p0 m0 procs0 <<< "$(counts)"
"$TMP/branches" 2 > "$TMP/branches.out" & bpid=$!
wait $bpid
read -r n1 p1 m1 procs1 <<< "$(counts)"
bsamples=$(stored $bpid)
chain=$(curl -sf "$URL/api/v1/profile?pid=$bpid&format=folded&from=-5m" | awk '/^branches;.*main;run;(alpha|beta);leaf_spin / { s += $NF } END { print s + 0 }')
echo "# native-only window: native walker +$((n1 - n0)), python walker +$((p1 - p0)), missing +$((m1 - m0)); branches $bsamples samples stored, $chain with main;run;alpha|beta;leaf_spin; Python processes tracked $procs0 -> $procs1"
check "the native walker took at least the native process's samples (+$((n1 - n0)) >= $bsamples > 0)" \
	[ "$bsamples" -gt 0 -a $((n1 - n0)) -ge "$bsamples" ]
if [ "$procs0" = 0 ] && [ "$procs1" = 0 ]; then
	check "no sample of the window ran the Python walker (+$((p1 - p0))): no Python process ran" [ "$p1" -eq "$p0" ]
else
	skip "the Python walker's count over the native window: $procs1 Python processes of the host are tracked"
fi
check "every walker was there: none missing (+$((m1 - m0)))" [ "$m1" -eq "$m0" ]
check "the native walker's stacks are whole: $chain of $bsamples under main;run;alpha|beta;leaf_spin" \
	[ $((100 * chain)) -ge $((95 * bsamples)) ]

# ---- A Python process: the Python walker, with its Python frames ----
if ! py_supported "$SYSPY_VER"; then
	skip "the Python walker: flamed does not read Python $SYSPY_VER's frames"
else
	"$SYSPY" "$(dirname "$0")/../workloads/pyspin.py" 3 > "$TMP/pyspin.out" & ppid=$!
	wait $ppid
	read -r n2 p2 m2 _ <<< "$(counts)"
	psamples=$(stored $ppid)
	pychain=$(curl -sf "$URL/api/v1/profile?pid=$ppid&format=folded&from=-5m" |
		awk '/;(Engine\.)?crank \(pyspin\.py\);(Engine\.)?gear_[ab] \(pyspin\.py\);tooth \(pyspin\.py\)/ { s += $NF }
		END { print s + 0 }')
	echo "# Python window: native walker +$((n2 - n1)), python walker +$((p2 - p1)); pyspin $psamples samples stored, $pychain through crank;gear_a|gear_b;tooth"
	# Its first samples, before flamed has read its interpreter, are the native walker's.
	check "the Python walker took most of the Python process's samples (+$((p2 - p1)) >= 80% of $psamples)" \
		[ "$psamples" -gt 0 -a $((100 * (p2 - p1))) -ge $((80 * psamples)) ]
	check "its Python frames are there ($pychain samples through crank;gear_a|gear_b;tooth)" [ "$pychain" -gt 0 ]
fi

curl -sf "$URL/metrics" > "$TMP/metrics"
check "metrics: flamed_bpf_walker_samples_total for each walker, as the status says" \
	eval 'grep -q "^flamed_bpf_walker_samples_total{walker=\"native\"} [1-9][0-9]*$" "$TMP/metrics" &&
	      grep -q "^flamed_bpf_walker_samples_total{walker=\"python\"} [0-9]*$" "$TMP/metrics" &&
	      grep -q "^flamed_bpf_walker_missing_total 0$" "$TMP/metrics"'
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
exit $FAILED
