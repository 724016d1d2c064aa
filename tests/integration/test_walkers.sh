#!/bin/bash
# test_walkers.sh - a CPU sample's user stack goes to the walker program its process needs, by tail call:
# a native-only process's samples never run the Python walker (walk_python), a Python process's do, and
# both keep their whole stacks. The same for off-CPU blocks (--off-cpu: offcpu_switch tail-calls the
# off-CPU walkers): a native-only sleeper's blocks never run offcpu_walk_python, a Python sleeper's do, and
# their waits keep the whole stack. The status (bpf.walkers) and /metrics count each walker's samples.
. "$(dirname "$0")/lib.sh"

need_root walkers
system_python
build_workload branches
gcc -O2 -g "$(dirname "$0")/../workloads/offwl.c" -o "$TMP/offwl" || { fail "build offwl"; exit 1; }
run_flamed walkers --db "$TMP/w.db" --listen 127.0.0.1:0 --frequency 99 --flush-interval 1 --off-cpu

# counts: "NATIVE PYTHON MISSING PYPROCS" from the status (PYPROCS: Python processes flamed tracks now).
counts() {
	curl -sf -o /dev/null "$URL/api/v1/processes?flush=1"
	curl -sf "$URL/api/v1/status" |
		jq -r '"\(.bpf.walkers.native) \(.bpf.walkers.python) \(.bpf.walkers.missing) \(.python.processes)"'
}
# offcounts: "NATIVE PYTHON MISSING" off-CPU blocks handed to each walker, from the status.
offcounts() {
	curl -sf "$URL/api/v1/status" | jq -r '.bpf.walkers.off_cpu | "\(.native) \(.python) \(.missing)"'
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

# ---- Off-CPU: a native-only sleeper's blocks, then a Python one's ----
read -r on0 op0 om0 <<< "$(offcounts)"
read -r _ _ _ procs2 <<< "$(counts)"
"$TMP/offwl" 1 > /dev/null & opid=$!
wait $opid
read -r _ _ _ procs3 <<< "$(counts)"
read -r on1 op1 om1 <<< "$(offcounts)"
# offcpu_sum PID PATTERN MIN: the off-CPU time of PID under PATTERN, read again (up to 10 s) until it is at
# least MIN: a wait held for a deferred walk is stored with the walk, a flush or more later.
offcpu_sum() {
	local n=0
	for _ in $(seq 10); do
		curl -sf "$URL/api/v1/profile?pid=$1&kind=offcpu&format=folded&from=-5m&flush=1" > "$TMP/off.folded"
		n=$(sum_samples "$TMP/off.folded" "$2")
		[ "$n" -ge "$3" ] && break
		sleep 1
	done
	echo "$n"
}
onap=$(offcpu_sum $opid ';cycle;nap;(__)?(clock_)?nanosleep;' 500000)
echo "# off-CPU native window: native walker +$((on1 - on0)), python walker +$((op1 - op0)), missing +$((om1 - om0)); offwl asleep $onap us under cycle;nap;nanosleep"
check "the off-CPU native walker walked the native sleeper's blocks (+$((on1 - on0)))" [ $((on1 - on0)) -gt 0 ]
if [ "$procs2" = 0 ] && [ "$procs3" = 0 ]; then
	check "no block of the window ran the off-CPU Python walker (+$((op1 - op0))): no Python process ran" [ "$op1" -eq "$op0" ]
else
	skip "the off-CPU Python walker's count over the native window: $procs3 Python processes of the host are tracked"
fi
check "every off-CPU walker was there: none missing (+$((om1 - om0)))" [ "$om1" -eq "$om0" ]
check "the native sleeper's wait keeps its stack: 0.5 to 0.7 s under cycle;nap;nanosleep ($onap us)" \
	[ "$onap" -ge 500000 -a "$onap" -le 700000 ]
if py_supported "$SYSPY_VER"; then
	"$SYSPY" "$(dirname "$0")/../workloads/pynap.py" 1 > /dev/null & qpid=$!
	wait $qpid
	read -r on2 op2 om2 <<< "$(offcounts)"
	pysleep=$(offcpu_sum $qpid ';nap_sleep \(pynap\.py\);' 900000)
	echo "# off-CPU Python window: native walker +$((on2 - on1)), python walker +$((op2 - op1)); pynap asleep $pysleep us under nap_sleep"
	check "the off-CPU Python walker walked the Python sleeper's blocks (+$((op2 - op1)))" [ $((op2 - op1)) -gt 0 ]
	check "its sleep is under its Python frame: 0.9 to 1.2 s under nap_sleep ($pysleep us)" \
		[ "$pysleep" -ge 900000 -a "$pysleep" -le 1200000 ]
fi

curl -sf "$URL/metrics" > "$TMP/metrics"
check "metrics: flamed_bpf_walker_offcpu_blocks_total for each walker, as the status says" \
	eval 'grep -q "^flamed_bpf_walker_offcpu_blocks_total{walker=\"native\"} [1-9][0-9]*$" "$TMP/metrics" &&
	      grep -q "^flamed_bpf_walker_offcpu_blocks_total{walker=\"python\"} [0-9]*$" "$TMP/metrics" &&
	      grep -q "^flamed_bpf_walker_offcpu_missing_total 0$" "$TMP/metrics"'
check "metrics: flamed_bpf_walker_samples_total for each walker, as the status says" \
	eval 'grep -q "^flamed_bpf_walker_samples_total{walker=\"native\"} [1-9][0-9]*$" "$TMP/metrics" &&
	      grep -q "^flamed_bpf_walker_samples_total{walker=\"python\"} [0-9]*$" "$TMP/metrics" &&
	      grep -q "^flamed_bpf_walker_missing_total 0$" "$TMP/metrics"'
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
exit $FAILED
