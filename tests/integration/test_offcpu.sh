#!/bin/bash
# test_offcpu.sh - off-CPU and wall-clock profiles for real (flamed --off-cpu): tests/workloads/waits.c,
# whose thread "waiter" burns, sleeps in nanosleep and blocks on a pipe in a known ratio and says how
# long it spent in each; a 30 s sleep seen while it lasts; Python threads blocked in time.sleep and on
# a lock keep their Python frames.
. "$(dirname "$0")/lib.sh"
FREQ=99
SECONDS_RUN=10
W=$(cd "$(dirname "$0")/../workloads" && pwd)

need_root offcpu
build_workload waits
run_flamed offcpu --db "$TMP/flamed.db" --frequency $FREQ --flush-interval 2 --off-cpu --listen 127.0.0.1:0
F=("$BUILD/flamectl" --server "$URL")

# The system's python3 first, the others in /usr/bin, pyenv's newest build of each minor version.
python_interps
interps=("${INTERPS[@]}")

# Each interpreter once, briefly, and the workload: their binaries' unwind tables are built before the
# measured runs (a wait keeps the stack walked when it began: one that begins before flamed knows the
# process's binaries keeps a shorter one).
warm=()
for py in "${interps[@]}"; do
	"$py" -c 'import time
end = time.time() + 0.3
while time.time() < end: pass' &
	warm+=($!)
done
"$TMP/waits" 0.5 50 50 50 > /dev/null & warm+=($!)
wait "${warm[@]}"
wait_tables

# --- the waits workload: 100 ms burn, 200 ms nanosleep, 300 ms pipe per cycle ---
# Its waiter thread starts once flamed knows the process (a CPU sample of its prelude walked whole,
# from _start): a wait that begins before then keeps a shorter stack, without its leaf (the first
# samples of a process, issue 29's subject, not this test's), and a busy machine can take a second
# or more to get there.
"$TMP/waits" $SECONDS_RUN 100 200 300 "$TMP/go" > "$TMP/waits.out" & wpid=$!
check "flamed walks the waits workload whole before its waits begin" \
	wait_walked $wpid ';_start;__libc_start_main;__libc_start_call_main;main;prelude_leaf'

# The 30 s sleep starts with the waits: it must be seen with 20 s off CPU before it ends.
sleep 30 & sleeper=$!
t0=$(date +%s)
touch "$TMP/go"
declare -A pypid
for py in "${interps[@]}"; do
	"$py" "$W/pywaits.py" 6 2 & pypid[$py]=$!
done
wait $wpid "${pypid[@]}"
sleep 3 # the flush that holds their last waits
cat "$TMP/waits.out"
wtid=$(awk '/^pid .* tid / { print $4 }' "$TMP/waits.out")
burn=$(awk '/^burn / { print $2 }' "$TMP/waits.out")
burn_wall=$(awk '/^burn_wall / { print $2 }' "$TMP/waits.out")
nap=$(awk '/^sleep/ { print $2 }' "$TMP/waits.out")
pipe=$(awk '/^pipe/ { print $2 }' "$TMP/waits.out")

"${F[@]}" query --kind offcpu --pid $wpid --tid $wtid --since 5m > "$TMP/off.folded"
check "flamectl query --kind offcpu exits 0" [ $? -eq 0 ]
off=$(sum_samples "$TMP/off.folded")
off_nap=$(sum_samples "$TMP/off.folded" ';nap_leaf;')
off_pipe=$(sum_samples "$TMP/off.folded" ';pipe_leaf;')
echo "waiter off CPU: $off us in all, nap_leaf $off_nap, pipe_leaf $off_pipe (measured: sleep $nap s, pipe $pipe s)"
check "off-CPU total within 10% of the time the thread slept ($off us vs $nap + $pipe s)" \
	awk -v o="$off" -v a="$nap" -v b="$pipe" 'BEGIN { m = 1e6 * (a + b); exit !(o >= 0.9 * m && o <= 1.1 * m) }'
check "off-CPU time in nap_leaf and pipe_leaf within 5 points of the measured ratio" \
	awk -v x="$off_nap" -v y="$off_pipe" -v a="$nap" -v b="$pipe" \
	'BEGIN { if (x + y == 0) exit 1; s = 100 * x / (x + y); m = 100 * a / (a + b); print s, m; exit !(s >= m - 5 && s <= m + 5) }'
check "the kernel frames of the nanosleep are there" \
	grep -qE ';nap_leaf;([^;]*;)*(do_nanosleep|hrtimer_nanosleep)_\[k\];([^;]*;)*__schedule_\[k\] [0-9]+$' "$TMP/off.folded"
check "the kernel frames of the pipe read are there" \
	grep -qE ';pipe_leaf;([^;]*;)*(anon_pipe_read|pipe_read)_\[k\];([^;]*;)*__schedule_\[k\] [0-9]+$' "$TMP/off.folded"
check "no off-CPU stack ends in the tracing that took it" not grep -qE '(bpf_trace_run[0-9]|__traceiter_sched_switch)_\[k\]' "$TMP/off.folded"

"${F[@]}" query --kind wall --pid $wpid --tid $wtid --since 5m > "$TMP/wall.folded"
wall=$(sum_samples "$TMP/wall.folded")
w_burn=$(sum_samples "$TMP/wall.folded" ';burn_leaf(;|$| )')
w_nap=$(sum_samples "$TMP/wall.folded" ';nap_leaf;')
w_pipe=$(sum_samples "$TMP/wall.folded" ';pipe_leaf;')
echo "waiter wall clock: $wall us; burn_leaf $w_burn, nap_leaf $w_nap, pipe_leaf $w_pipe"
# The burn as a profile sees it lies between its CPU time and its wall time (a cpu-clock sample also
# lands in time a hypervisor stole, which the thread's CPU time leaves out): each share is checked
# against the range the two give.
check "the wall-clock total within 10% of the thread's lifetime ($wall us vs $burn..$burn_wall + $nap + $pipe s)" \
	awk -v w="$wall" -v a="$burn" -v A="$burn_wall" -v b="$nap" -v c="$pipe" \
	'BEGIN { exit !(w >= 0.9e6 * (a + b + c) && w <= 1.1e6 * (A + b + c)) }'
for part in "burn:$w_burn" "nap:$w_nap" "pipe:$w_pipe"; do
	IFS=: read -r name got <<< "$part"
	check "wall-clock share of $name within 5 points of the measured one" \
		awk -v n="$name" -v g="$got" -v t="$wall" -v a="$burn" -v A="$burn_wall" -v b="$nap" -v c="$pipe" \
		'function share(x) { return 100 * (n == "burn" ? x : n == "nap" ? b : c) / (x + b + c) }
		BEGIN { s = 100 * g / t; lo = share(a); hi = share(A); if (lo > hi) { m = lo; lo = hi; hi = m }
			print s, lo, hi; exit !(t > 0 && s >= lo - 5 && s <= hi + 5) }'
done
"${F[@]}" query --kind cpu --pid $wpid --tid $wtid --since 5m > "$TMP/cpu.folded"
cpu=$(sum_samples "$TMP/cpu.folded")
echo "waiter CPU: $cpu samples at $FREQ Hz for $burn s burnt ($burn_wall s of wall time)"
check "a CPU profile counts samples, not time: $cpu within 20% of $burn..$burn_wall s x $FREQ Hz" \
	awk -v n="$cpu" -v b="$burn" -v B="$burn_wall" -v f=$FREQ 'BEGIN { exit !(n >= 0.8 * b * f && n <= 1.2 * B * f) }'

# Other outputs say their unit.
"${F[@]}" query --kind offcpu --pid $wpid --since 5m --format pprof -o "$TMP/off.pb.gz"
if command -v go > /dev/null; then
	check "pprof: the sample type is off_cpu/nanoseconds" \
		bash -c "go tool pprof -raw '$TMP/off.pb.gz' 2>/dev/null | grep -q '^off_cpu/nanoseconds'"
fi
"${F[@]}" flamegraph --kind offcpu --pid $wpid --since 5m -o "$TMP/off.svg"
check "SVG: tooltips give times (ms or s)" grep -qE '<title>pipe_leaf \([0-9.,]+ (ms|s), ' "$TMP/off.svg"
check "JSON: the tree says microseconds" \
	bash -c "curl -sf '$URL/api/v1/profile?pid=$wpid&from=-5m&kind=offcpu&format=json' | jq -e '.unit == \"microseconds\"'"
check "a bad kind= is refused with 400" \
	bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' '$URL/api/v1/profile?kind=idle')\" = 400 ]"
"$BUILD/flamectl" --db "$TMP/flamed.db" query --kind wall --pid $wpid --tid $wtid --since 5m > "$TMP/wall.db.folded"
check "flamectl --db reads the same wall-clock profile (the sampling period is in the database)" \
	cmp -s "$TMP/wall.folded" "$TMP/wall.db.folded"

# --- Python threads blocked in time.sleep and on a lock ---
for py in "${interps[@]}"; do
	"${F[@]}" query --kind offcpu --pid "${pypid[$py]}" --since 5m > "$TMP/py.folded"
	napper=$(sum_samples "$TMP/py.folded" ';nap_loop \(pywaits\.py\);doze \(pywaits\.py\);')
	locked=$(sum_samples "$TMP/py.folded" ';wait_for_lock \(pywaits\.py\);')
	holder=$(sum_samples "$TMP/py.folded" ';<module> \(pywaits\.py\);main \(pywaits\.py\);hold \(pywaits\.py\);')
	echo "$py: off CPU in doze $napper us, wait_for_lock $locked us, hold $holder us"
	check "$py: a thread in time.sleep shows nap_loop;doze (>= 4 s)" [ "$napper" -ge 4000000 ]
	check "$py: a thread blocked on a lock shows wait_for_lock (>= 4 s)" [ "$locked" -ge 4000000 ]
	check "$py: the main thread sleeping in hold shows <module>;main;hold (>= 4 s)" [ "$holder" -ge 4000000 ]
done

# --- the 30 s sleep, seen before it wakes ---
seen=0
while kill -0 $sleeper 2>/dev/null && [ $(($(date +%s) - t0)) -lt 29 ]; do
	seen=$("${F[@]}" processes --kind offcpu --from "$t0" --format json |
		jq --argjson p $sleeper '[.processes[] | select(.pid == $p) | .samples] | add // 0')
	[ "$seen" -ge 20000000 ] && break
	sleep 1
done
alive=$(kill -0 $sleeper 2>/dev/null && echo yes || echo no)
echo "sleep 30: $seen us off CPU seen after $(($(date +%s) - t0)) s, still sleeping: $alive"
check "a process sleeping 30 s is seen with >= 20 s off CPU before it wakes" [ "$seen" -ge 20000000 -a "$alive" = yes ]
kill $sleeper 2>/dev/null
wait $sleeper 2>/dev/null

stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
exit $FAILED
