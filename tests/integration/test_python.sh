#!/bin/bash
# test_python.sh - Python functions in every stack: tests/workloads/pyspin.py, whose main thread runs
# main -> Engine.crank -> Engine.gear_a / gear_b (3:2) -> tooth and whose thread 'sorter' sorts with a
# Python key function (Python -> C -> Python), profiled on the system's python3 (python3.11 on Debian 12,
# python3.13 on Debian 13), every other CPython 3.8 to 3.15 in /usr/bin and every pyenv interpreter 3.8 to
# 3.13 present, with -X perf on 3.12+ and -X perf_jit on 3.13, and in C calls that release the GIL.
. "$(dirname "$0")/lib.sh"
FREQ=499
W=$(cd "$(dirname "$0")/../workloads" && pwd)
SCRIPTS=$(cd "$(dirname "$0")/../../scripts" && pwd)

need_root python

# The system's python3 first, the others in /usr/bin, pyenv's newest build of each minor version.
python_interps
interps=("${INTERPS[@]}")
if [ ${#interps[@]} -eq 0 ]; then
	skip "python: no CPython flamed reads here (3.8 to 3.15; the system's python3 is $SYSPY_VER)"
	exit 0
fi

# The 3.14 builds Debian does not ship (scripts/python-build.sh, from sid's source), where made: the
# tail-calling interpreter is profiled as the others are; the free-threaded python3.14t is not walked
# yet, and must be counted as unsupported, with the reason.
if tail=$("$SCRIPTS/python-build.sh" --print tailcall 2> /dev/null); then
	interps+=("$tail")
else
	echo "# python3.14 with the tail-calling interpreter: not built here (scripts/python-build.sh tailcall)"
fi
ft=$("$SCRIPTS/python-build.sh" --print t 2> /dev/null) ||
	{ ft=; echo "# python3.14t (free-threaded): not built here (scripts/python-build.sh t)"; }

# version PY: "3.11" of interpreter PY.
version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }

run_flamed python --db "$TMP/flamed.db" --frequency $FREQ --flush-interval 1 --listen 127.0.0.1:0

# Each interpreter once, briefly: its binaries' unwind tables are built before the measured runs.
warm=()
for py in "${interps[@]}"; do
	"$py" -c 'import time
end = time.time() + 0.3
while time.time() < end: pass' &
	warm+=($!)
done
wait "${warm[@]}"
# Their tables may still be building (seconds under ASan): the measured runs start once none waits.
wait_tables
sleep 0.5

# The measured runs, two at a time (two threads of one process share its GIL: about one CPU each).
declare -A pid_of started
runs=()
for py in "${interps[@]}"; do
	runs+=("python:$py")
	runs+=("native:$py")
	case $(version "$py") in 3.12) runs+=("perf:$py") ;; 3.13) runs+=("perf:$py" "perfjit:$py") ;; esac
done
# run SPEC: starts one run ("mode:interpreter") in the background; its pid in pid_of[SPEC].
# The Python-mode runs last 8 s: the gear split is read from their samples after the first two seconds,
# and at 4 s an ASan build gave about 450 (a 2.3-point standard deviation against the 5 points allowed).
run() {
	local mode=${1%%:*} py=${1#*:}
	case $mode in
	python) "$py" "$W/pyspin.py" 8 python > /dev/null & ;;
	native) "$py" "$W/pyspin.py" 4 native > /dev/null & ;;
	perf) "$py" -X perf "$W/pyspin.py" 8 python > /dev/null & ;;
	perfjit) "$py" -X perf_jit "$W/pyspin.py" 8 python > /dev/null & ;;
	esac
	pid_of[$1]=$!
	started[$1]=$(date +%s)
}
for ((i = 0; i < ${#runs[@]}; i += 2)); do
	run "${runs[$i]}"
	p1=${pid_of[${runs[$i]}]}
	p2=
	if [ $((i + 1)) -lt ${#runs[@]} ]; then
		run "${runs[$((i + 1))]}"
		p2=${pid_of[${runs[$((i + 1))]}]}
	fi
	wait $p1 $p2
done
# What -X perf and -X perf_jit leave behind for perf.
for spec in "${runs[@]}"; do
	case $spec in perf:*|perfjit:*) rm -f "/tmp/perf-${pid_of[$spec]}.map" "/tmp/jit-${pid_of[$spec]}.dump" ;; esac
done
if [ -n "$ft" ]; then
	"$ft" -c 'import time
end = time.time() + 1
while time.time() < end: pass'
fi
sleep 2 # the last flush
curl -sf "$URL/api/v1/status" > "$TMP/status.json"
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
if [ -n "$ft" ]; then
	check "python3.14t ($ft): counted as unsupported, for being free-threaded (status)" \
		jq -e '.python.unsupported_by_reason.free_threaded >= 1 and (.python.unsupported_last | endswith("t"))' \
		"$TMP/status.json"
fi

# A Python frame in the folded text: "NAME (pyspin.py)"; before 3.11 NAME is co_name, not qualified.
for spec in "${runs[@]}"; do
	mode=${spec%%:*} py=${spec#*:} pid=${pid_of[$spec]}
	v=$(version "$py")
	name="python $v ($py${mode:+, $mode})"
	out=$TMP/$pid.folded
	# From a second after it started on (the whole second after the next): its first samples may come
	# before the daemon has looked at it and given it unwind tables (some milliseconds; under ASan, with
	# a flush in the way, up to a second), and then have only their Python frames.
	"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid "$pid" --from $((started[$spec] + 2)) > "$out"
	case $mode in
	python|perf|perfjit)
		# The main thread: native main through Py_RunMain, then only Python frames down to tooth; the
		# sorter thread with sorted's C sort (named: a frame with "sort" in it) under it.
		pyspin_python_checks "$name" "$out" '(Engine\.)?' '' '([^;(]*;)*[^;(]*sort[^;(]*;([^;(]*;)*'
		;;
	native)
		# Samples in the C functions the threads called, GIL released: their Python callers stay.
		pyspin_native_checks "$name" "$out" '([^;(]*;)*' 'time_sleep(\.[^;]*)?'
		;;
	esac
done

check "status counts stacks with Python frames" jq -e '.python.stacks > 1000' "$TMP/status.json"
# Most code objects are named when first sampled (the code events), not at the flush; how many there are
# depends on the interpreters present (about 20 with the system's python3 alone).
check "status counts code objects named when first sampled (most of them)" \
	jq -e '.python.code_prefetched > 0 and .python.code_prefetched * 2 >= .python.code_objects' "$TMP/status.json"
check "status counts stacks folded once and reused in other keys of their flush" \
	jq -e '.fold_cache.hits > 0 and .fold_cache.misses > 0' "$TMP/status.json"
jq -c '.python' "$TMP/status.json"

# Lines: a Python frame's file, first line and line run reach pprof (go tool pprof -list shows the
# source), the JSON tree and top by line, for the first interpreter (the system's python3, where flamed reads
# its version) and every 3.13.
line_of() { grep -n "$1" "$W/pyspin.py" | head -1 | cut -d: -f1; }
for spec in "${runs[@]}"; do
	case $spec in "python:${interps[0]}"|python:*3.13*) ;; *) continue ;; esac
	pid=${pid_of[$spec]}
	[ -n "$pid" ] || continue
	v=$(version "${spec#*:}")
	"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid "$pid" --since 10m --format pprof -o "$TMP/$pid.pprof"
	(cd "$TMP" && HOME=$TMP GOCACHE=$TMP/go go tool pprof -list 'gear_a' "$pid.pprof") > "$TMP/$pid.list" 2>&1
	call=$(grep -E "^ +[^ ]+ +[0-9.]+[a-z]* +$(line_of 'return tooth(2000)'):" "$TMP/$pid.list" | head -1)
	check "python $v: go tool pprof -list gear_a shows its source, the call of tooth with its samples ($call)" \
		eval '[ -n "$call" ] || { head -20 "$TMP/$pid.list"; false; }'
	"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid "$pid" --since 10m --format json > "$TMP/$pid.json"
	# Every tooth node has its file and first line; its lines are those of the samples whose instruction
	# has one (not all do: a sample where the line is not known counts in no line). Python reads it: a
	# stack cut at --python-frames nests deeper than jq 1.6 parses (256 levels).
	check "python $v: the JSON tree gives tooth its file, first line and samples by line run" \
		python3 - "$TMP/$pid.json" "$W/pyspin.py" "$(line_of 'def tooth')" "$(line_of 's += i \* i')" <<'PY'
import json, sys
path, src, first, body = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
todo, teeth = [json.load(open(path))], []
while todo:
    node = todo.pop()
    if node.get("name") == "tooth (pyspin.py)":
        teeth.append(node)
    todo.extend(node.get("children", []))
ok = teeth and all(t.get("file") == src and t.get("start_line") == first for t in teeth) and \
    any(line == body and n > 0 for t in teeth for line, n, *_ in t.get("lines", []))
if not ok:
    print([{k: t.get(k) for k in ("file", "start_line", "value", "lines")} for t in teeth][:8])
sys.exit(0 if ok else 1)
PY
	"$BUILD/flamectl" --db "$TMP/flamed.db" top --pid "$pid" --since 10m --lines > "$TMP/$pid.top"
	check "python $v: top --lines ranks the loop's line of tooth apart (tooth (pyspin.py:$(line_of 's += i \* i')))" \
		grep -q "tooth (pyspin.py:$(line_of 's += i \* i'))" "$TMP/$pid.top"
done

# A script that ends long before the flush: its code objects are read when first sampled, while it lives.
run_flamed python-short --db "$TMP/short.db" --frequency $FREQ --flush-interval 60 --listen none
"${interps[0]}" -c 'import time
end = time.time() + 0.3
while time.time() < end: pass' # the interpreter's unwind table, first
"${interps[0]}" "$W/pyspin.py" 0.8 > /dev/null & spid=$!
wait $spid
stop_flamed
check "flamed with a 60 s flush exits 0 on SIGTERM" [ $? -eq 0 ]
"$BUILD/flamectl" --db "$TMP/short.db" query --pid $spid --since 10m > "$TMP/short.folded"
py=$(sum_samples "$TMP/short.folded" ' \([^();]+\)(;|$)')
unnamed=$(sum_samples "$TMP/short.folded" '\[unknown\] \(python\)')
echo "a 0.8 s script, flushed after it ended: $py samples with Python frames, $unnamed with unnamed ones"
check "a script gone before the flush keeps its Python names (unnamed in at most 5%: $unnamed of $py)" \
	[ "$py" -gt 100 -a $((100 * unnamed)) -le $((5 * py)) ]
exit $FAILED
