#!/bin/bash
# test_pyroot.sh - Python frames of the interpreters of other distributions: Debian sid's python3.13 and
# python3.14 and experimental's python3.15, stripped as shipped (no -dbg package), each running
# tests/workloads/pyspin.py inside a private root (scripts/python-root.sh, made once and kept under
# /var/tmp), as a container runs a distribution's interpreter on this kernel. Their layout comes from
# the interpreter's own _Py_DebugOffsets. Checked on each: the main thread's whole chain from Py_RunMain
# to tooth, the 3:2 split, the C frames between sorter and its key function kept (no symbol names
# them), few samples left in the eval loop; the same under -X perf; and threads in time.sleep and
# zlib.compress with the GIL released keep their Python callers.
. "$(dirname "$0")/lib.sh"
FREQ=499
W=$(cd "$(dirname "$0")/../workloads" && pwd)
SCRIPTS=$(cd "$(dirname "$0")/../../scripts" && pwd)
ROOT=${FLAMED_PYROOT:-/var/tmp/flamed-pyroot}

need_root pyroot

# The root: made here on first use (about five minutes, from Debian's archive), kept for later runs.
if ! "$SCRIPTS/python-root.sh" --print "$ROOT" > /dev/null 2>&1; then
	echo "# making $ROOT (scripts/python-root.sh; log: $ROOT.log)"
	if ! "$SCRIPTS/python-root.sh" "$ROOT" > "$TMP/root.out" 2>&1; then
		skip "pyroot: the private root of Debian sid's and experimental's Pythons could not be made: $(tail -1 "$TMP/root.out")"
		exit 0
	fi
fi
interps=()
for v in 3.13 3.14 3.15; do
	if chroot "$ROOT" "python$v" -c pass 2> /dev/null; then
		interps+=("$v")
	else
		fail "pyroot: python$v runs in $ROOT"
	fi
done
[ ${#interps[@]} -gt 0 ] || exit 1
mkdir -p "$ROOT/tmp/flamed-test" && cp "$W/pyspin.py" "$ROOT/tmp/flamed-test/" || { fail "pyroot: copy pyspin.py into the root"; exit 1; }

# enough PART ALL PCT: PART >= PCT% of ALL, and ALL > 0.
enough() { [ "$2" -gt 0 ] && [ $((100 * $1)) -ge $(($2 * $3)) ]; }

run_flamed pyroot --db "$TMP/flamed.db" --frequency $FREQ --flush-interval 1 --listen 127.0.0.1:0

# Each interpreter once, briefly: its unwind table is built before the measured runs.
for v in "${interps[@]}"; do
	chroot "$ROOT" "python$v" -c 'import time
end = time.time() + 0.3
while time.time() < end: pass'
done
wait_tables
sleep 0.5

declare -A pid_of started
runs=()
for v in "${interps[@]}"; do runs+=("python:$v" "native:$v" "perf:$v"); done
run() {
	local mode=${1%%:*} v=${1#*:} args=()
	case $mode in
	python) args=(/tmp/flamed-test/pyspin.py 8 python) ;;
	native) args=(/tmp/flamed-test/pyspin.py 4 native) ;;
	perf) args=(-X perf /tmp/flamed-test/pyspin.py 8 python) ;;
	esac
	chroot "$ROOT" "python$v" "${args[@]}" > /dev/null &
	pid_of[$1]=$!
	started[$1]=$(date +%s)
}
# Two at a time (two threads of one process share its GIL: about one CPU each).
for ((i = 0; i < ${#runs[@]}; i += 2)); do
	run "${runs[$i]}"
	p1=${pid_of[${runs[$i]}]} p2=
	if [ $((i + 1)) -lt ${#runs[@]} ]; then
		run "${runs[$((i + 1))]}"
		p2=${pid_of[${runs[$((i + 1))]}]}
	fi
	wait $p1 $p2
done
# chroot execs python: the pid is the interpreter's. What -X perf left in the root's /tmp goes.
for spec in "${runs[@]}"; do rm -f "$ROOT/tmp/perf-${pid_of[$spec]}.map"; done
sleep 2 # the last flush
curl -sf "$URL/api/v1/status" > "$TMP/status.json"
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
jq -c '.python' "$TMP/status.json"
check "status: three interpreters found, none refused or unsupported" \
	jq -e ".python.interpreters >= ${#interps[@]} and .python.inconsistent == 0 and .python.unsupported == 0" "$TMP/status.json"

P='\(pyspin\.py\)'
for spec in "${runs[@]}"; do
	mode=${spec%%:*} v=${spec#*:} pid=${pid_of[$spec]}
	name="python$v from Debian ($mode)"
	out=$TMP/$pid.folded
	# From two seconds after it started: its first samples may come before the daemon has looked at it.
	"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid "$pid" --from $((started[$spec] + 2)) > "$out"
	total=$(sum_samples "$out")
	case $mode in
	python|perf)
		crank=$(sum_samples "$out" ";Engine\\.crank $P")
		# Under -X perf 3.15 passes each call through a static vectorcall helper no symbol names (the
		# evaluator that calls the trampoline is left out): it may stand between two Python frames.
		g=
		[ "$mode" = perf ] && g="(python$v\\+0x[0-9a-f]+;)?"
		chain_re=";Py_RunMain;([^;]*;)*<module> $P;${g}main $P;${g}Engine\\.crank $P;${g}Engine\\.gear_[ab] $P;${g}tooth $P(;[^;(]*)*$"
		glued=$(sum_samples "$out" "$P;python$v\\+0x[0-9a-f]+;Engine\\.gear_[ab] $P")
		chain=$(sum_samples "$out" "$chain_re")
		ga=$(sum_samples "$out" ";Engine\\.gear_a $P;${g}tooth")
		gb=$(sum_samples "$out" ";Engine\\.gear_b $P;${g}tooth")
		key=$(sum_samples "$out" ";key_of $P")
		# sorted's C frames: in a stripped interpreter no symbol names them, and they stay.
		callback=$(sum_samples "$out" ";sorter $P;[^;(]+;([^;(]*;)*key_of $P")
		eval_leaf=$(sum_samples "$out" ";_PyEval_EvalFrameDefault(\\.cold)?$")
		echo "$name: $total samples; crank $crank, whole chain $chain; gear_a $ga, gear_b $gb; key_of $key, C frames kept between $callback; ending in the eval loop $eval_leaf; an unnamed frame between crank and gear $glued"
		check "$name: >= 95% of crank's samples carry Py_RunMain;...;<module>;main;crank;gear_a|gear_b;tooth ($chain of $crank)" \
			enough "$chain" "$crank" 95
		enough "$chain" "$crank" 95 || awk -v re="$chain_re" -v crank=";Engine\\.crank $P" \
			'{ l = $0; sub(/ [0-9]+$/, "", l); if (l ~ crank && l !~ re) print $NF "\t" l }' "$out" |
			sort -rn | head -5 | cut -c1-700 | sed 's/^/    not the chain: /'
		check "$name: gear_a's share of gear_a + gear_b is 60% within 5 points ($ga vs $gb)" \
			awk -v a="$ga" -v b="$gb" 'BEGIN { exit !(a + b > 100 && (s = 100 * a / (a + b)) >= 55 && s <= 65) }'
		check "$name: >= 90% of key_of's samples keep sorter, C frames between, and key_of ($callback of $key)" \
			enough "$callback" "$key" 90
		enough "$callback" "$key" 90 || grep ";key_of $P" "$out" | grep -Ev ";sorter $P;[^;(]+;([^;(]*;)*key_of" |
			sort -t' ' -k2 -rn | head -3 | cut -c1-600 | sed 's/^/    not kept: /'
		check "$name: at most 5% of the samples end in the eval loop ($eval_leaf of $total)" \
			[ "$total" -gt 0 -a $((100 * eval_leaf)) -le $((5 * total)) ]
		;;
	native)
		# time.sleep(0) is time_sleep, unnamed here; its samples end in libc's clock_nanosleep.
		sleep=$(sum_samples "$out" ";(__)?clock_nanosleep[^;]*(;|$)")
		sleep_chain=$(sum_samples "$out" ";poller $P;poll_once $P;([^;]*;)*(__)?clock_nanosleep[^;]*(;|$)")
		zlib=$(sum_samples "$out" ";deflate(;|$)")
		zlib_chain=$(sum_samples "$out" ";packer $P;pack $P;([^;(]*;)*deflate(;|$)")
		echo "$name: $total samples; in clock_nanosleep $sleep (under poller;poll_once $sleep_chain); in deflate $zlib (under packer;pack $zlib_chain)"
		check "$name: >= 90% of the samples in time.sleep (GIL released) keep poller;poll_once above ($sleep_chain of $sleep)" \
			enough "$sleep_chain" "$sleep" 90
		check "$name: >= 90% of the samples in zlib.compress (GIL released) keep packer;pack above ($zlib_chain of $zlib)" \
			enough "$zlib_chain" "$zlib" 90
		;;
	esac
done
rm -rf "$ROOT/tmp/flamed-test"
exit $FAILED
