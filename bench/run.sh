#!/bin/bash
# run.sh - make bench: flamed's overhead next to perf, ingest rate, off-CPU profiling's cost next to perf and bpftrace, query latency, storage and memory; prints one table and writes docs/BENCHMARKS.md.
# Usage: [QUICK=1] [BENCH_REPEAT=N] [BENCH_PARTS="overhead python ab firstsamples debuginfod jit cgroups ingest offcpu query storage memory"] [BENCH_AB=COMMIT] [BUILD=DIR] [BENCH_TMP=DIR] [BPFTRACE=PATH] [PYTHON=PATH [PYROOT=DIR]] bench/run.sh
#        (root; `make bench` builds first). BENCH_PARTS runs only the parts named (query, storage and
#        memory share one generated history); the report says which ran. BENCH_REPEAT sets the rounds
#        of the parts that compare medians (3 by default): more where two medians sit within noise.
#        BENCH_AB names the earlier commit the ab part builds and alternates with this build (2b9fcd0
#        by default). PYROOT runs the python part's PYTHON inside that root (scripts/python-root.sh makes one with
#        sid's 3.13 and 3.14 and experimental's 3.15:
#        `PYROOT=$(scripts/python-root.sh --print) PYTHON=/usr/bin/python3.14`).
# shellcheck disable=SC2154 # G_* (gen_history) and Q_* (query_bench) are set by parse_kv
set -euo pipefail
export LC_ALL=C

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${BUILD:-$PWD/build}
QUICK=${QUICK:-0}
[ "$QUICK" = 1 ] || QUICK=0
OUT=docs/BENCHMARKS.md
ALL_PARTS="overhead python ab firstsamples debuginfod jit cgroups ingest offcpu query storage memory"
PYTHON=${PYTHON:-$(readlink -f /usr/bin/python3 2> /dev/null || true)} # the system's python3 (its real path)
PYROOT=${PYROOT:-}      # a root PYTHON runs in (its path is then the root's)
PYBURN=bench/pyburn.py # the Python workload, as PYTHON sees it
PYV=                   # PYTHON's version (3.11): the python part's rows are that version's
PY_DEPTH=21            # pyburn.py's handler recursion: with <module>, main and spin, 25 Python frames
SERVE_T=10             # seconds of wrk on each URL (the ab part's serve window)
AB_BASE=${BENCH_AB:-2b9fcd0} # the earlier commit the ab part builds beside this build
PY=()                  # the command that runs PYTHON (in PYROOT: chroot, which execs it in the same process)
BPFTRACE=${BPFTRACE:-bpftrace}
PARTS=${BENCH_PARTS:-$ALL_PARTS}
STARTED=()
TMP=
BPF_STATS_WAS=
TRACEFS_MOUNTED=
CGMNT=                 # the cgroups part's cgroup2 mount, while it holds one
declare -A DETAIL=()
FLAMED_PID='' TIME_PID='' BURN_UNITS=''
BURN=${BUILD}/bench/burn # the burners' program (the debuginfod part runs a stripped copy)
. bench/lib.sh

if [ "$QUICK" = 1 ]; then
	T=5 INGEST_T=12 INGEST_HZ="999 9999" HISTORY=70m RETENTION=1h WINDOW_H=1 REPEAT=3 PY_T=5 PY_ROUNDS=1
	OFFCPU_T=3 OFFCPU_ROUNDS=3 OFFCPU_MEM_FLUSHES=2
else
	T=30 INGEST_T=30 INGEST_HZ="999 1999 4999 9999" HISTORY=25h RETENTION=24h WINDOW_H=24 REPEAT=3 PY_T=20 PY_ROUNDS=3
	OFFCPU_T=10 OFFCPU_ROUNDS=5 OFFCPU_MEM_FLUSHES=3
fi
REPEAT=${BENCH_REPEAT:-$REPEAT}
[[ "$REPEAT" =~ ^[1-9][0-9]?$ ]] || die "BENCH_REPEAT: a number of rounds, 1 to 99 (got '$REPEAT')"
OVERHEAD_HZ="19 99"
FLUSH_INTERVAL=10   # flamed's default, used by every run
INGEST_MAX_KEYS=1048576
OFFCPU_TOOLS="flamed perf bpftrace"
OFFCPU_SETTLE=1     # seconds between perf's or bpftrace's attaching and the storm
OFFCPU_STOP_S=30    # seconds perf or bpftrace may take to exit after SIGINT (then another, then SIGKILL)
BPFTRACE_PROG='tracepoint:sched:sched_switch { @[kstack, ustack] = count(); }'
CLK_TCK=$(getconf CLK_TCK)

cleanup() {
	kill_tracked
	if [ -n "$BPF_STATS_WAS" ]; then sysctl -q kernel.bpf_stats_enabled="$BPF_STATS_WAS" || true; fi
	if [ -n "$TRACEFS_MOUNTED" ]; then umount /sys/kernel/tracing 2> /dev/null || true; fi
	if [ -n "$CGMNT" ]; then
		find "$CGMNT" -mindepth 1 -depth -type d -exec rmdir {} + 2> /dev/null
		umount "$CGMNT" 2> /dev/null || true
	fi
	if [ -n "$TMP" ] && [ -z "${BENCH_KEEP:-}" ]; then rm -rf "$TMP"; fi
	if [ -n "$PYROOT" ]; then rm -rf "$PYROOT/tmp/flamed-bench"; fi
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
set -E # the ERR trap in functions too
trap 'log "stopped: line $LINENO failed: $BASH_COMMAND"' ERR

# want PART: whether BENCH_PARTS names it.
want() { [[ " $PARTS " == *" $1 "* ]]; }

check_setup() {
	local missing=() c p v
	for p in $PARTS; do [[ " $ALL_PARTS " == *" $p "* ]] || die "BENCH_PARTS: no part '$p' (parts: $ALL_PARTS)"; done
	[ "$(id -u)" -eq 0 ] || die "needs root: it loads BPF programs, runs perf -a and drops the page cache (sudo make bench)"
	for c in bpftool jq curl /usr/bin/time; do command -v "$c" > /dev/null || missing+=("$c"); done
	if want overhead; then command -v perf > /dev/null || missing+=(perf); fi
	[ ${#missing[@]} -eq 0 ] || die "missing ${missing[*]}: apt-get install linux-perf bpftool jq curl time"
	for c in flamed bench/burn bench/gen_history bench/query_bench; do
		[ -x "$BUILD/$c" ] || die "no $BUILD/$c: run make bench, not bench/run.sh alone"
	done
	if want python || want ab; then
		if [ -n "$PYROOT" ]; then
			[ -x "$PYROOT$PYTHON" ] || die "no $PYTHON in $PYROOT (scripts/python-root.sh makes a root with sid's Pythons)"
			mkdir -p "$PYROOT/tmp/flamed-bench" && cp bench/pyburn.py "$PYROOT/tmp/flamed-bench/" ||
				die "cannot copy bench/pyburn.py into $PYROOT/tmp"
			PYBURN=/tmp/flamed-bench/pyburn.py
			PY=(chroot "$PYROOT")
		else
			[ -x "$PYTHON" ] || die "no ${PYTHON:-/usr/bin/python3} for the python part: apt-get install python3"
		fi
		PY+=("$PYTHON")
		PYV=$("${PY[@]}" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || die "$PYTHON does not run"
		[[ $PYV =~ ^3\.([89]|1[0-5])$ ]] ||
			die "$PYTHON is Python $PYV: flamed reads the Python frames of CPython 3.8 to 3.15 (set PYTHON=PATH to one)"
	fi
	if want offcpu; then
		[ -x "$BUILD/bench/storm" ] || die "no $BUILD/bench/storm: run make bench, not bench/run.sh alone"
		command -v perf > /dev/null || log "no perf: the offcpu part skips its perf row (apt-get install linux-perf)"
		command -v "$BPFTRACE" > /dev/null || log "no $BPFTRACE: the offcpu part skips its bpftrace row (apt-get install bpftrace)"
	fi
	TMP=$(mktemp -d "${BENCH_TMP:-/var/tmp}/flamed-bench.XXXXXX")
	: > "$TMP/rows.tsv"
	BPF_STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
}

# start_flamed DIR ARGS...: flamed under /usr/bin/time (its CPU at exit), logging to DIR/flamed.log;
# returns once it samples. Sets FLAMED_PID and TIME_PID.
start_flamed() {
	local dir=$1
	shift
	/usr/bin/time -f '%e %U %S %M' -o "$dir/flamed.time" "${FLAMED_BIN:-$BUILD/flamed}" "$@" > "$dir/flamed.log" 2>&1 &
	TIME_PID=$!
	track "$TIME_PID"
	FLAMED_PID=$(child_of "$TIME_PID") || die "flamed did not start"
	wait_log "$dir/flamed.log" '^flamed: sampling' "$FLAMED_PID" 60 ||
		die "flamed did not start sampling: $(tail -3 "$dir/flamed.log")"
}

# stop_flamed DIR: SIGTERM (flamed stores what is pending), bounded wait. Sets R_TOTAL_CPU (seconds).
stop_flamed() {
	kill -TERM "$FLAMED_PID"
	wait_pid "$TIME_PID" 300 || die "flamed failed: $(tail -3 "$1/flamed.log")"
	R_TOTAL_CPU=$(tail -1 "$1/flamed.time" | awk '{ print $2 + $3 }')
}

# burn_workload SECONDS DIR: the overhead runs' workload, two bench/burn of 256 call chains, with
# short-lived processes beside them (short_lived), as a host starts them.
burn_workload() {
	local sl
	short_lived "$1" &
	sl=$!
	track "$sl"
	run_burners "$1" 4 4 "$2"
	wait "$sl"
}

# run_pyburners SECONDS DIR: two bench/pyburn.py at once (one per core). Sets BURN_UNITS (units/s, summed)
# and PYBURN_PIDS.
run_pyburners() {
	local pids=() i
	for i in 1 2; do
		"${PY[@]}" "$PYBURN" "$1" "$PY_DEPTH" > "$2/pyburn$i.out" &
		pids+=($!)
		track $!
	done
	PYBURN_PIDS="${pids[*]}"
	for i in 0 1; do wait "${pids[$i]}" || die "the Python workload failed"; done
	BURN_UNITS=$(awk '/^units_per_second/ { s += $2 } END { printf "%.0f", s }' "$2/pyburn1.out" "$2/pyburn2.out")
}

# run_pyshort SECONDS DIR: run_pyburners with short-lived processes beside them (short_lived), as a host
# starts them: the Python parts' and the A/B's load.
run_pyshort() {
	local sl
	short_lived "$1" &
	sl=$!
	track "$sl"
	run_pyburners "$1" "$2"
	wait "$sl"
}

# run_nodes SECONDS DIR: two node tests/workloads/jsfib.js at once, with NODE_ARGS (--perf-prof: V8 writes a
# jitdump file). Sets BURN_UNITS (fib(25) calls/s, summed).
run_nodes() {
	local pids=() i
	for i in 1 2; do
		(cd "$2" && exec node $NODE_ARGS "$OLDPWD/tests/workloads/jsfib.js" "$1") > "$2/node$i.out" &
		pids+=($!)
		track $!
	done
	for i in 0 1; do wait "${pids[$i]}" || die "the node workload failed"; done
	BURN_UNITS=$(awk -v t="$1" '/^done/ { s += $2 / t } END { printf "%.0f", s }' "$2/node1.out" "$2/node2.out")
}

# flamed_window DIR BURN_ARGS...: with flamed started (-v), runs the workload's program for a second
# and waits for flamed's first flush (the symbols and unwind tables of the programs and libraries that
# run are then cached: the steady state of a daemon that runs for days, which has long seen libc and
# the host's programs), runs the burners and measures flamed over them (their new processes included):
# R_DAEMON_S (CPU from then to its exit, the final flush included), R_BPF_S, R_BPF_RUNS, R_UNITS,
# R_RSS/R_HWM (KiB, just before stopping), R_WALL (seconds from the end of the first flush to the exit),
# R_STORED (samples stored from then). BURN_ARGS: python (run_pyburners), pyshort (run_pyshort), node
# (run_nodes), burn (burn_workload), else run_burners' FANOUT DEPTH after SECONDS.
flamed_window() {
	local dir=$1 t0 b0 b1 n0 n1 w0 s0
	shift
	if [ "$1" = python ] || [ "$1" = pyshort ]; then
		"${PY[@]}" "$PYBURN" 1 "$PY_DEPTH" > /dev/null || die "the Python workload failed"
	elif [ "$1" = node ]; then
		run_nodes 1 "$dir"
	elif [ "$1" = burn ]; then
		"$BURN" --fanout 4 --depth 4 1 > /dev/null || die "the burn workload failed"
	else
		"$BURN" --fanout "$2" --depth "$3" 1 > /dev/null || die "the burn workload failed"
	fi
	wait_log "$dir/flamed.log" 'flushed [0-9]+ samples' "$FLAMED_PID" $((FLUSH_INTERVAL + 30)) ||
		die "flamed did not flush: $(tail -3 "$dir/flamed.log")"
	w0=$EPOCHREALTIME
	s0=$(flushed_samples "$dir/flamed.log")
	# From here to the stop, the bench starts no process of its own (see cpu_ticks in lib.sh).
	cpu_ticks "$FLAMED_PID" t0
	bpf_run "$FLAMED_PID" b0 n0
	case $1 in
	python) run_pyburners "$T" "$dir" ;;
	pyshort) run_pyshort "$T" "$dir" ;;
	node) run_nodes "$T" "$dir" ;;
	burn) burn_workload "$T" "$dir" ;;
	*) run_burners "$@" "$dir" ;;
	esac
	bpf_run "$FLAMED_PID" b1 n1
	status_kb "$FLAMED_PID" VmRSS R_RSS
	status_kb "$FLAMED_PID" VmHWM R_HWM
	stop_flamed "$dir"
	[ "$n1" -gt 0 ] || die "no BPF program of flamed's ran: none in /proc/$FLAMED_PID/fdinfo, or kernel.bpf_stats_enabled is 0"
	R_WALL=$(calc "$EPOCHREALTIME - $w0")
	R_DAEMON_S=$(calc "$R_TOTAL_CPU - $t0 / $CLK_TCK")
	R_BPF_S=$(calc "($b1 - $b0) / 1e9")
	R_BPF_RUNS=$((n1 - n0))
	R_UNITS=$BURN_UNITS
	R_STORED=$(($(flushed_samples "$dir/flamed.log") - s0))
}

# run_burners SECONDS FANOUT DEPTH DIR: two bench/burn at once. Sets BURN_UNITS (units/s, summed).
# Waits for them with a plain wait, bounded by timeout: polling (wait_pid) started ten `sleep`
# processes a second inside the measured window, about 30 of which a 30 s run at 99 Hz sampled: work
# for the profilers that is not the workload's (flamed's daemon CPU 41-42 -> 54-72 ms in two runs).
run_burners() {
	local pids=() i
	for i in 1 2; do
		timeout -s KILL $(($1 + 60)) "$BURN" --fanout "$2" --depth "$3" "$1" > "$4/burn$i.out" &
		pids+=($!)
		track $!
	done
	for i in 0 1; do wait "${pids[$i]}" || die "the burn workload failed"; done
	BURN_UNITS=$(awk '/^units_per_second/ { s += $2 } END { printf "%.0f", s }' "$4/burn1.out" "$4/burn2.out")
}

# perf_window HZ MODE DIR [WORKLOAD]: perf record (MODE fp: -g; dwarf: --call-graph dwarf) over the
# workload (burn_workload; run_pyburners), then perf script | fold. Sets R_REC_S, R_SCRIPT_S (CPU seconds),
# R_UNITS, R_SAMPLES, R_DATA_BYTES.
perf_window() {
	local hz=$1 dir=$3 cg=(-g) pid workload=${4:-burn_workload}
	[ "$2" = dwarf ] && cg=(--call-graph dwarf)
	/usr/bin/time -f '%e %U %S %M' -o "$dir/record.time" \
		perf record -a "${cg[@]}" -F "$hz" -o "$dir/perf.data" -- sleep "$T" > "$dir/record.log" 2>&1 &
	pid=$!
	track "$pid"
	"$workload" "$T" "$dir"
	wait_pid "$pid" $((T + 600)) || die "perf record failed: $(tail -3 "$dir/record.log")"
	# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
	/usr/bin/time -f '%e %U %S %M' -o "$dir/script.time" timeout 3600 \
		bash -c 'perf script -i "$1" 2> /dev/null | awk -f bench/fold.awk > "$2"' _ "$dir/perf.data" "$dir/folded" ||
		die "perf script failed"
	R_REC_S=$(tail -1 "$dir/record.time" | awk '{ print $2 + $3 }')
	R_SCRIPT_S=$(tail -1 "$dir/script.time" | awk '{ print $2 + $3 }')
	R_SAMPLES=$(awk '{ s += $NF } END { print s + 0 }' "$dir/folded")
	R_DATA_BYTES=$(stat -c %s "$dir/perf.data")
	R_UNITS=$BURN_UNITS
	rm -f "$dir/perf.data"
}

# pct SECONDS: CPU seconds over T as % of one core.
pct() { fmt 2 "100 * ($1) / $T"; }
# change UNITS BASE: throughput change in %, signed.
change() { fmt 1 "100 * ($1 / $2 - 1)" | sed 's/^\([0-9]\)/+\1/'; }

# overhead HZ: no profiler, flamed, perf -g, perf dwarf, one after the other, the same workload.
overhead() {
	local hz=$1 d=$TMP/overhead-$1 base f_pct f_units g_pct g_units w_pct w_units ratio
	local daemon_pct bpf_pct bpf_us g_detail w_detail
	mkdir -p "$d"/{base,flamed,fp,dwarf}
	log "overhead at $hz Hz: no profiler, flamed, perf -g, perf dwarf ($T s each)"
	burn_workload "$T" "$d/base"
	base=$BURN_UNITS

	start_flamed "$d/flamed" --db "$d/flamed/flamed.db" --listen none --frequency "$hz" -v
	flamed_window "$d/flamed" burn
	f_pct=$(pct "$R_DAEMON_S + $R_BPF_S") f_units=$R_UNITS
	MEM_ROWS+=("flamed at $hz Hz, overhead run ($T s)	$R_RSS	$R_HWM")
	daemon_pct=$(pct "$R_DAEMON_S") bpf_pct=$(pct "$R_BPF_S")
	bpf_us=$(fmt 2 "$R_BPF_RUNS ? 1e6 * $R_BPF_S / $R_BPF_RUNS : 0")

	perf_window "$hz" fp "$d/fp"
	g_pct=$(pct "$R_REC_S + $R_SCRIPT_S") g_units=$R_UNITS
	g_detail="record $(pct "$R_REC_S")%, script+fold $(pct "$R_SCRIPT_S")%; $R_SAMPLES samples, $((R_DATA_BYTES / 1024)) KiB perf.data"
	perf_window "$hz" dwarf "$d/dwarf"
	w_pct=$(pct "$R_REC_S + $R_SCRIPT_S") w_units=$R_UNITS
	w_detail="record $(pct "$R_REC_S")%, script+fold $(pct "$R_SCRIPT_S")%; $R_SAMPLES samples, $((R_DATA_BYTES / 1024)) KiB perf.data"

	ratio=$(fmt 3 "$g_pct > 0 ? $f_pct / $g_pct : 0")
	row "1. Overhead $hz Hz" "flamed: daemon CPU + BPF run time, per wall second" \
		"$f_pct% of a core (daemon $daemon_pct%, BPF $bpf_pct%: $R_BPF_RUNS runs, $bpf_us µs each) = ${ratio}x perf -g, $(fmt 3 "$w_pct > 0 ? $f_pct / $w_pct : 0")x perf dwarf" \
		"≤ 0.20x perf record -a -g" "$(status_of "$ratio <= 0.20")"
	row "1. Overhead $hz Hz" "BPF run time per sample over the C burners (and the short-lived processes)" "$bpf_us µs" \
		"≤ 4 µs" "$(status_of "$bpf_us <= 4")"
	[ "$hz" = 99 ] && row "1. Overhead $hz Hz" "flamed: daemon CPU + BPF run time, per wall second" \
		"$f_pct% of a core" "< 1% of a core" "$(status_of "$f_pct < 1")"
	row "1. Overhead $hz Hz" "perf record -a -g, then perf script into bench/fold.awk" "$g_pct% of a core ($g_detail)" "—" "—"
	row "1. Overhead $hz Hz" "perf record -a --call-graph dwarf, then perf script into bench/fold.awk" \
		"$w_pct% of a core ($w_detail)" "—" "—"
	row "1. Overhead $hz Hz" "workload throughput against no profiler (2 burners, $base units/s)" \
		"flamed $(change "$f_units" "$base")%, perf -g $(change "$g_units" "$base")%, perf dwarf $(change "$w_units" "$base")%" "—" "—"
}

# median VALUES...: the median (the lower middle of an even count).
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# python_overhead: the overhead part over Python: two bench/pyburn.py (a loop PY_DEPTH + 4 Python frames deep),
# short-lived processes beside them (run_pyshort), with no profiler, then PY_ROUNDS rounds of flamed, flamed --python off and perf -g at 99 Hz, PY_T s each, one
# after the other (the medians stand: runs on this VM differ by up to 50%); the BPF program's cost per
# sample with and without the Python walk; how many of flamed's samples carry the whole Python chain.
python_overhead() {
	local hz=99 d=$TMP/python base r on=() daemon=() bpf=() on_us=() off_us=() perf=() f_units g_units
	local total chain pid f_pct g_pct ratio saved_t=$T
	mkdir -p "$d/base"
	log "python at $hz Hz: no profiler, then $PY_ROUNDS rounds of flamed, flamed --python off, perf -g ($PY_T s each) over two $PYTHON${PYROOT:+ in $PYROOT}"
	run_pyshort "$PY_T" "$d/base"
	base=$BURN_UNITS
	T=$PY_T # pct() and the windows use T
	for r in $(seq "$PY_ROUNDS"); do
		mkdir -p "$d/$r"/{on,off,fp}
		start_flamed "$d/$r/on" --db "$d/$r/on/flamed.db" --listen none --frequency "$hz" -v
		flamed_window "$d/$r/on" pyshort
		on+=("$(pct "$R_DAEMON_S + $R_BPF_S")") daemon+=("$(pct "$R_DAEMON_S")") bpf+=("$(pct "$R_BPF_S")")
		on_us+=("$(fmt 2 "$R_BPF_RUNS ? 1e6 * $R_BPF_S / $R_BPF_RUNS : 0")")
		f_units=$R_UNITS
		[ "$r" = 1 ] && MEM_ROWS+=("flamed at $hz Hz over two Python $PYV processes ($PY_T s)	$R_RSS	$R_HWM")
		if [ "$r" = 1 ]; then
			for pid in $PYBURN_PIDS; do
				"$BUILD/flamectl" --db "$d/1/on/flamed.db" query --pid "$pid" --since 1h || die "flamectl query failed"
			done > "$d/on.folded"
		fi
		start_flamed "$d/$r/off" --db "$d/$r/off/flamed.db" --listen none --frequency "$hz" --python off -v
		flamed_window "$d/$r/off" pyshort
		off_us+=("$(fmt 2 "$R_BPF_RUNS ? 1e6 * $R_BPF_S / $R_BPF_RUNS : 0")")
		perf_window "$hz" fp "$d/$r/fp" run_pyshort
		perf+=("$(pct "$R_REC_S + $R_SCRIPT_S")")
		g_units=$R_UNITS
	done
	T=$saved_t
	read -r total chain < <(awk '/^python3[.0-9]*;.*;Py_RunMain;/ {
		c = $NF; t += c; l = $0
		if (gsub(/;handler \(pyburn\.py\)/, "", l) == handlers && /;main \(pyburn\.py\);handler/ && /;spin \(pyburn\.py\)/) k += c
	} END { print t + 0, k + 0 }' handlers=$((PY_DEPTH + 1)) "$d/on.folded")
	f_pct=$(median "${on[@]}") g_pct=$(median "${perf[@]}")
	ratio=$(fmt 3 "$g_pct > 0 ? $f_pct / $g_pct : 0")
	row "1. Overhead Python $PYV $hz Hz" "flamed: daemon CPU + BPF run time, per wall second, over two Python processes and short-lived ones (median of $PY_ROUNDS)" \
		"$f_pct% of a core (daemon $(median "${daemon[@]}")%, BPF $(median "${bpf[@]}")%) = ${ratio}x perf -g ($g_pct% of a core); each run: flamed ${on[*]}%, perf -g ${perf[*]}%" \
		"≤ 0.25x perf record -a -g" "$(status_of "$ratio <= 0.25")"
	row "1. Overhead Python $PYV $hz Hz" "BPF run time per sample: Python frames walked / --python off (median of $PY_ROUNDS)" \
		"$(median "${on_us[@]}") µs / $(median "${off_us[@]}") µs (each run: ${on_us[*]} / ${off_us[*]})" "≤ 6 µs walked" \
		"$(status_of "$(median "${on_us[@]}") <= 6")"
	row "1. Overhead Python $PYV $hz Hz" "flamed's samples under Py_RunMain carrying main and the $((PY_DEPTH + 1)) handler frames to spin" \
		"$chain of $total ($(fmt 1 "$total > 0 ? 100 * $chain / $total : 0")%)" "—" "—"
	row "1. Overhead Python $PYV $hz Hz" "workload throughput against no profiler (2 x pyburn.py, $base units/s), last round" \
		"flamed $(change "$f_units" "$base")%, perf -g $(change "$g_units" "$base")%" "—" "—"
}

# api_port DIR: the port of the HTTP API flamed (started with --listen 127.0.0.1:0) logged in DIR/flamed.log.
api_port() {
	wait_log "$1/flamed.log" '\(port [0-9]+\)' "$FLAMED_PID" 10 || die "flamed did not serve its API"
	sed -n 's/.*serving the HTTP API on .* (port \([0-9]*\)).*/\1/p' "$1/flamed.log" | head -1
}

# first_run PORT NAME COMM ROOT_ERE CMD...: runs CMD once under the flamed at PORT and sets F_ROW to how
# many of COMM's samples (those with a user frame) have a user stack rooted at ROOT_ERE, and how many
# samples were deferred on the host meanwhile and how long they waited for their tables on average (the
# status's counters count every process's: the bench's curl and sleep too).
first_run() {
	local port=$1 name=$2 comm=$3 re=$4 s0 s1 whole all t0
	shift 4
	s0=$(curl -fsS "http://127.0.0.1:$port/api/v1/status" | jq -c .deferred) || die "status failed"
	t0=$(date +%s)
	"$@" > /dev/null || die "$name failed"
	sleep 1
	curl -fsS "http://127.0.0.1:$port/api/v1/profile?comm=$comm&format=folded&from=$t0&to=$(($(date +%s) + 1))&flush=1" > "$TMP/first.folded" ||
		die "profile failed"
	s1=$(curl -fsS "http://127.0.0.1:$port/api/v1/status" | jq -c .deferred) || die "status failed"
	read -r whole all < <(awk -v re="$re" '{ n = $NF; sub(/ [0-9]+$/, ""); if ($0 ~ /^[^;]*;[^;]*_\[k\]/) next
		t += n; if ($0 ~ re) w += n } END { print w + 0, t + 0 }' "$TMP/first.folded")
	F_PCT=$(fmt 1 "$all ? 100 * $whole / $all : 0")
	F_ROW="$F_PCT% whole ($whole of $all); $(jq -rn --argjson a "$s0" --argjson b "$s1" '($b.walked - $a.walked) as $n
		| "on the host meanwhile \($n) samples deferred and walked (\($b.given_up - $a.given_up) given up), after \(if $n > 0 then (($b.wait_seconds - $a.wait_seconds) / $n * 1000 | floor) else 0 end) ms on average"')"
}

# firstsamples: whole stacks from a process's first sample. A fresh flamed (99 Hz, no table built yet),
# then each program once (cold: its tables are built while it runs, its samples meanwhile deferred),
# again (warm: built), and once more after a restart of flamed (cached: the tables read from the disk
# cache); the share of its samples whole and how long the deferred ones waited. The table memory of
# libc, the system's python3 and libLLVM, and their build and cache read times, from flamed's logs.
firstsamples() {
	local d=$TMP/firstsamples port sys py opt lib re kib cached run w=tests/workloads
	mkdir -p "$d"
	sys=$(readlink -f /usr/bin/python3) || die "no /usr/bin/python3: apt-get install python3"
	py=$(basename "$sys")
	log "first samples: short.c (libc), $sys and opt (libLLVM), each once on a fresh flamed and once more"
	gcc -O2 -g -fomit-frame-pointer "$w/short.c" -o "$d/short" || die "cannot build short.c"
	opt=$(command -v opt || true)
	if [ -n "$opt" ] && ldd "$opt" | grep -q libLLVM; then
		awk -v n=1500 -f "$w/bigc.awk" > "$d/big.c"
		clang -O0 -S -emit-llvm -Xclang -disable-O0-optnone "$d/big.c" -o "$d/big.ll" || die "cannot make the IR"
	else
		opt=
	fi
	start_flamed "$d" --db "$d/flamed.db" --listen 127.0.0.1:0 --frequency 99 --flush-interval 1 -v
	port=$(api_port "$d")
	for run in cold warm cached; do
		if [ "$run" = cached ]; then
			stop_flamed "$d"
			mv "$d/flamed.log" "$d/flamed-first.log"
			start_flamed "$d" --db "$d/flamed.db" --listen 127.0.0.1:0 --frequency 99 --flush-interval 1 -v
			port=$(api_port "$d")
		fi
		first_run "$port" short.c short '^short;(_start;__libc_start_main|ld-linux[^;]*;_dl_start)' "$d/short" 1
		row "7. First samples" "short.c (libc only, no frame pointers), 1 s, $run: samples whole from the first; deferred samples" \
			"$F_ROW" "≥ 99% whole" "$(status_of "$F_PCT >= 99")"
		re="^${py//./\\.};(_start;__libc_start_main|ld-linux[^;]*;_dl_start)"
		first_run "$port" "$py" "$py" "$re" "$sys" "$w/pyonesec.py" 1
		row "7. First samples" "pyonesec.py on the system's $py, 1 s, $run: samples whole from the first; deferred samples" \
			"$F_ROW" "≥ 99% whole" "$(status_of "$F_PCT >= 99")"
		if [ -n "$opt" ]; then
			first_run "$port" opt opt '^opt;(_start;__libc_start_main|ld-linux[^;]*;_dl_start)' "$opt" -O3 "$d/big.ll" -o /dev/null
			row "7. First samples" "opt -O3 (libLLVM), $run: samples whole from the first; deferred samples" \
				"$F_ROW" "≥ 95% whole" "$(status_of "$F_PCT >= 95")"
		fi
	done
	stop_flamed "$d"
	for lib in libc.so.6 "$py" libLLVM; do
		kib=$(grep -m1 "unwind table of [^:]*/$lib[^/:]*:" "$d/flamed-first.log" | sed 's/.*: \([0-9]*\) rows, \([0-9]*\) KiB, [a-z]*, \([0-9.]*\) ms.*/\1 rows, \2 KiB, built in \3 ms/')
		cached=$(grep -m1 "unwind table of [^:]*/$lib[^/:]*: .*(from the cache)" "$d/flamed.log" | sed 's/.*, \([0-9.]*\) ms$/\1/')
		[ -n "$kib" ] && row "7. First samples" "unwind table of $lib: rows, kernel memory, build time; read from the disk cache after a restart" \
			"$kib; read and loaded in ${cached:-(not read)} ms" "—" "—"
	done
	row "7. First samples" "disk cache after the runs (every process's tables: the host's too)" \
		"$(find "$d/unwind-cache" -name '*.rows' | wc -l) tables, $(($(du -sk "$d/unwind-cache" | cut -f1) / 1024)) MiB" "≤ 256 MiB (--unwind-cache-mb)" "—"
	[ -n "$opt" ] || row "7. First samples" "opt (libLLVM)" "skipped: no opt linked against libLLVM (apt-get install llvm)" "—" "—"
}

# debuginfod: the daemon's share at 99 Hz over a stripped copy of bench/burn, REPEAT rounds of flamed
# without and with --debuginfod (a local debuginfod serving the copy's debug file; every other binary of
# the host a miss), medians; and how long the fetches and the flushes took.
debuginfod_part() {
	local d=$TMP/debuginfod port r off=() on=() fl_off=() fl_on=() total
	mkdir -p "$d/srv"
	log "debuginfod: flamed without and with --debuginfod, $REPEAT rounds of $T s over a stripped bench/burn"
	command -v debuginfod > /dev/null || { row "8. debuginfod" "daemon share" "skipped: no debuginfod (apt-get install debuginfod)" "—" "—"; return; }
	cp "$BUILD/bench/burn" "$d/burn"
	objcopy --only-keep-debug "$d/burn" "$d/srv/burn.debug" && strip --strip-all "$d/burn" || die "cannot strip bench/burn"
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	env -u DEBUGINFOD_URLS debuginfod -F -p "$port" -d "$d/srv.sqlite" -t 0 -g 0 "$d/srv" > "$d/srv.log" 2>&1 &
	track $!
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/metrics" && break; sleep 0.1; done
	BURN=$d/burn
	for r in $(seq "$REPEAT"); do
		rm -rf "$d/off" "$d/on" && mkdir -p "$d/off" "$d/on"
		start_flamed "$d/off" --db "$d/off/flamed.db" --listen none --frequency 99 --debuginfod none -v
		flamed_window "$d/off" "$T" 4 4
		off+=("$(pct "$R_DAEMON_S")")
		fl_off+=("$(awk '$1 == "flamed:" && $2 == "flushed" { print $(NF - 4) }' "$d/off/flamed.log" | sort -g | tail -1)")
		start_flamed "$d/on" --db "$d/on/flamed.db" --listen none --frequency 99 -v \
			--debuginfod "http://127.0.0.1:$port" --debuginfod-cache "$d/on/cache"
		flamed_window "$d/on" "$T" 4 4
		on+=("$(pct "$R_DAEMON_S")")
		fl_on+=("$(awk '$1 == "flamed:" && $2 == "flushed" { print $(NF - 4) }' "$d/on/flamed.log" | sort -g | tail -1)")
	done
	BURN=$BUILD/bench/burn
	total=$(sqlite3 "$d/on/flamed.db" "SELECT coalesce(sum(s.count), 0) FROM samples s JOIN names n ON n.id = s.comm_id WHERE n.name = 'burn'")
	row "8. debuginfod" "flamed's daemon CPU at 99 Hz over a stripped bench/burn, without and with --debuginfod (median of $REPEAT)" \
		"$(median "${off[@]}")% -> $(median "${on[@]}")% of a core (rounds: ${off[*]} / ${on[*]})" "unchanged within noise" "—"
	row "8. debuginfod" "longest flush of each round, without and with (ms)" "${fl_off[*]} / ${fl_on[*]}" "—" "—"
	row "8. debuginfod" "the last round with: debug files fetched, misses (the host's other stripped binaries)" \
		"$(grep -c . < <(find "$d/on/cache" -name debuginfo -size +0)) fetched, $(grep -c . < <(find "$d/on/cache" -name debuginfo -size 0)) missed; $total burn samples" "—" "—"
}

# jit: the daemon's share at 99 Hz over two Node.js programs whose JIT code is most of their time
# (tests/workloads/jsfib.js), REPEAT rounds of node without and with --perf-prof (V8 writes jit-PID.dump:
# flamed reads it on each flush, and stores the code written late by address), medians; how many of the
# samples in JIT code were named in the last round.
jit_part() {
	local d=$TMP/jit r plain=() prof=() inside named pid
	command -v node > /dev/null || { row "9. JIT" "daemon share" "skipped: no node (apt-get install nodejs)" "—" "—"; return; }
	log "jit: flamed over two node jsfib.js, without and with --perf-prof, $REPEAT rounds of $T s"
	for r in $(seq "$REPEAT"); do
		rm -rf "$d" && mkdir -p "$d/plain" "$d/prof"
		NODE_ARGS=
		start_flamed "$d/plain" --db "$d/plain/flamed.db" --listen none --frequency 99 -v
		flamed_window "$d/plain" node
		plain+=("$(pct "$R_DAEMON_S")")
		NODE_ARGS=--perf-prof
		start_flamed "$d/prof" --db "$d/prof/flamed.db" --listen none --frequency 99 -v
		flamed_window "$d/prof" node
		prof+=("$(pct "$R_DAEMON_S")")
	done
	: > "$d/prof.folded"
	for pid in $("$BUILD/flamectl" --db "$d/prof/flamed.db" processes --since 1h | awk -F'\t' '$2 == "node" { print $1 }'); do
		"$BUILD/flamectl" --db "$d/prof/flamed.db" query --pid "$pid" --format folded --since 1h >> "$d/prof.folded"
	done
	inside=$(awk '$0 ~ /;([^;]*_\[j\]|jit-[0-9]+\.dump\+0x[0-9a-f]+|\[unknown\]) [0-9]+$/ { s += $NF } END { print s + 0 }' "$d/prof.folded")
	named=$(awk '$0 ~ /;[^;]*_\[j\] [0-9]+$/ { s += $NF } END { print s + 0 }' "$d/prof.folded")
	rm -f /tmp/perf-*.map
	row "9. JIT" "flamed's daemon CPU at 99 Hz over two node jsfib.js, without and with --perf-prof (jitdump; median of $REPEAT)" \
		"$(median "${plain[@]}")% -> $(median "${prof[@]}")% of a core (rounds: ${plain[*]} / ${prof[*]})" "unchanged within noise" "—"
	row "9. JIT" "samples in JIT code named, last round with --perf-prof (read with flamectl --db)" \
		"$named of $inside" "—" "—"
}

# flushed_samples LOG: the samples flamed -v says it stored, summed over its flushes.
flushed_samples() { awk '{ for (i = 1; i < NF; i++) if ($i == "flushed") s += $(i + 1) } END { print s + 0 }' "$1"; }

# short_lived SECONDS: a few short-lived processes a second for SECONDS (a 20 ms bench/burn and a sleep,
# about three times a second), as a host's cron jobs and health checks start them.
short_lived() {
	local end=$((SECONDS + $1))
	while [ $SECONDS -lt "$end" ]; do
		"$BURN" --fanout 1 --depth 1 0.02 > /dev/null
		sleep 0.3
	done
}

# ab_build: AB_BASE's flamed built from its tree (git archive) in $TMP/ab. Sets AB_FLAMED; returns 1 (the
# reason in AB_WHY) when the commit is not here or does not build.
ab_build() {
	local src=$TMP/ab/src
	AB_FLAMED= AB_WHY=
	mkdir -p "$src"
	if ! git rev-parse -q --verify "$AB_BASE^{commit}" > /dev/null 2>&1; then
		AB_WHY="commit $AB_BASE is not in this repository (BENCH_AB=COMMIT)"
		return 1
	fi
	git archive "$AB_BASE" | tar -x -C "$src" || { AB_WHY="git archive $AB_BASE failed"; return 1; }
	if ! make -s -C "$src" BUILD="$TMP/ab/build" "$TMP/ab/build/flamed" > "$TMP/ab/make.log" 2>&1; then
		AB_WHY="$AB_BASE does not build: $(tail -1 "$TMP/ab/make.log")"
		return 1
	fi
	AB_FLAMED=$TMP/ab/build/flamed
}

# ab_window DIR FLAMED: flamed_window of FLAMED (a flamed binary) at 99 Hz over run_pyshort.
ab_window() {
	mkdir -p "$1"
	FLAMED_BIN=$2 start_flamed "$1" --db "$1/flamed.db" --listen none --frequency 99 -v
	flamed_window "$1" pyshort
}

# serve_window DIR FLAMED: FLAMED (a flamed binary) at 99 Hz with its API on loopback, over run_pyshort for
# T s, then 64 connections of wrk for SERVE_T s on /metrics and as long on the last 5 minutes' profile
# (folded). Sets R_RSS (KiB, before wrk), R_HWM (KiB, after it), R_REQS ("metrics N/s, profile N/s").
serve_window() {
	local dir=$1 url m p
	mkdir -p "$dir"
	FLAMED_BIN=$2 start_flamed "$dir" --db "$dir/flamed.db" --listen 127.0.0.1:0 --frequency 99 -v
	url=http://127.0.0.1:$(api_port "$dir")
	run_pyshort "$T" "$dir"
	status_kb "$FLAMED_PID" VmRSS R_RSS
	wrk -t2 -c64 -d"$SERVE_T"s "$url/metrics" > "$dir/wrk-metrics.out" 2>&1 || die "wrk failed: $(tail -3 "$dir/wrk-metrics.out")"
	wrk -t2 -c64 -d"$SERVE_T"s "$url/api/v1/profile?from=-5m&format=folded" > "$dir/wrk-profile.out" 2>&1 ||
		die "wrk failed: $(tail -3 "$dir/wrk-profile.out")"
	status_kb "$FLAMED_PID" VmHWM R_HWM
	m=$(awk '/^Requests\/sec/ { printf "%.0f", $2 }' "$dir/wrk-metrics.out")
	p=$(awk '/^Requests\/sec/ { printf "%.0f", $2 }' "$dir/wrk-profile.out")
	R_REQS="/metrics $m/s, profile $p/s"
	stop_flamed "$dir"
}

# ab_part: AB_BASE's flamed (A) and this build's (B), alternated over REPEAT rounds of the same load (ab_window):
# the daemon's CPU per stored sample, the BPF programs' time per sample and the resident memory, as medians,
# and B over A, so a regression shows as a ratio in one run.
ab_part() {
	local d=$TMP/ab r a_ms=() b_ms=() a_us=() b_us=() a_rss=() b_rss=() ma mb ua ub
	log "ab: building $AB_BASE beside this build"
	if ! ab_build; then
		row "11. A/B" "daemon CPU per stored sample, $AB_BASE against this build" "skipped: $AB_WHY" "—" "—"
		return
	fi
	log "ab: $AB_BASE (A) and this build (B), alternated, $REPEAT rounds of $T s over two pyburn.py and short-lived processes"
	for r in $(seq "$REPEAT"); do
		ab_window "$d/$r/a" "$AB_FLAMED"
		a_ms+=("$(fmt 3 "$R_STORED > 0 ? 1e6 * $R_DAEMON_S / $R_STORED : 0")")
		a_us+=("$(fmt 2 "$R_BPF_RUNS ? 1e6 * $R_BPF_S / $R_BPF_RUNS : 0")") a_rss+=("$R_RSS")
		ab_window "$d/$r/b" "$BUILD/flamed"
		b_ms+=("$(fmt 3 "$R_STORED > 0 ? 1e6 * $R_DAEMON_S / $R_STORED : 0")")
		b_us+=("$(fmt 2 "$R_BPF_RUNS ? 1e6 * $R_BPF_S / $R_BPF_RUNS : 0")") b_rss+=("$R_RSS")
		rm -f "$d/$r"/{a,b}/flamed.db*
	done
	ma=$(median "${a_ms[@]}") mb=$(median "${b_ms[@]}") ua=$(median "${a_us[@]}") ub=$(median "${b_us[@]}")
	row "11. A/B" "daemon CPU per stored sample (µs), $AB_BASE (A) against this build (B), alternated (median of $REPEAT)" \
		"A $ma, B $mb: B/A $(fmt 2 "$ma > 0 ? $mb / $ma : 0") (rounds: A ${a_ms[*]} / B ${b_ms[*]})" "B/A ≤ 1" \
		"$(status_of "$mb <= $ma")"
	row "11. A/B" "BPF run time per sample (µs), A against B (median of $REPEAT)" \
		"A $ua, B $ub: B/A $(fmt 2 "$ua > 0 ? $ub / $ua : 0") (rounds: A ${a_us[*]} / B ${b_us[*]})" "B ≤ 6 µs" \
		"$(status_of "$ub <= 6")"
	row "11. A/B" "flamed's resident memory at the end of the window (MB), A against B (median of $REPEAT)" \
		"A $(mb "$(median "${a_rss[@]}")"), B $(mb "$(median "${b_rss[@]}")")" "B ≤ 40 MB" \
		"$(status_of "$(median "${b_rss[@]}") * 1024 / 1e6 <= 40")"
	log "ab: A and B once more over the same load, then 64 connections of wrk on /metrics and profile queries"
	serve_window "$d/serve/a" "$AB_FLAMED"
	ma=$R_RSS ua=$R_HWM ub=$R_REQS
	serve_window "$d/serve/b" "$BUILD/flamed"
	row "11. A/B" "flamed under 64 connections of wrk ($SERVE_T s on /metrics, $SERVE_T s on a 5-minute profile) after the load: steady (VmRSS before) / peak (VmHWM after), MB" \
		"A $(mb "$ma") / $(mb "$ua") ($ub), B $(mb "$R_RSS") / $(mb "$R_HWM") ($R_REQS)" "B peak ≤ 60 MB" \
		"$(status_of "$R_HWM * 1024 / 1e6 <= 60")"
}

# cgroups_window DIR SPREAD: flamed (started, warmed up by a first flush) over 500 bench/burn processes for T
# seconds, SPREAD cgroups of the test's own (a cgroup v2 hierarchy mounted at $CGROOT), ten processes of each
# per cgroup when SPREAD is 50. Sets R_DAEMON_S (its CPU from then to its exit) and R_RSS (KiB, before stopping).
cgroups_window() {
	local dir=$1 spread=$2 i pids=() t0
	"$BURN" --fanout 4 --depth 4 1 > /dev/null || die "the burn workload failed"
	wait_log "$dir/flamed.log" 'flushed [0-9]+ samples' "$FLAMED_PID" $((FLUSH_INTERVAL + 30)) ||
		die "flamed did not flush: $(tail -3 "$dir/flamed.log")"
	cpu_ticks "$FLAMED_PID" t0
	for i in $(seq 0 499); do
		sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CGROOT/svc$((i % spread)).service" \
			timeout -s KILL $((T + 60)) "$BURN" --fanout 4 --depth 4 "$T" > /dev/null &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || die "the burn workload failed"; done
	status_kb "$FLAMED_PID" VmRSS R_RSS
	stop_flamed "$dir"
	R_DAEMON_S=$(calc "$R_TOTAL_CPU - $t0 / $CLK_TCK")
}

# cgroups_part: flamed's daemon share and memory with 500 processes in one cgroup, then in 50 (each
# sample's cgroup read into its path, stored by id; the paths learnt once each).
cgroups_part() {
	local d=$TMP/cgroups r one=() many=() rss_one=() rss_many=() n
	mkdir -p "$d/mnt"
	if ! mount -t cgroup2 none "$d/mnt" 2> /dev/null; then
		row "10. Services" "daemon share" "skipped: cannot mount a cgroup v2 hierarchy" "—" "—"
		return
	fi
	CGMNT=$d/mnt
	CGROOT=$d/mnt/flamed-bench-$$/system.slice
	for i in $(seq 0 49); do mkdir -p "$CGROOT/svc$i.service"; done
	log "cgroups: flamed over 500 burners in 1 cgroup, then in 50, $REPEAT rounds of $T s"
	for r in $(seq "$REPEAT"); do
		for n in 1 50; do
			rm -rf "$d/$n" && mkdir -p "$d/$n"
			start_flamed "$d/$n" --db "$d/$n/flamed.db" --listen none --frequency 99 -v
			cgroups_window "$d/$n" "$n"
			if [ "$n" = 1 ]; then one+=("$(pct "$R_DAEMON_S")"); rss_one+=("$R_RSS")
			else many+=("$(pct "$R_DAEMON_S")"); rss_many+=("$R_RSS"); fi
		done
	done
	n=$("$BUILD/flamectl" --db "$d/50/flamed.db" services --since 1h --format json | jq '[.services[] | select(.kind == "unit")] | length')
	find "$d/mnt/flamed-bench-$$" -depth -type d -exec rmdir {} + 2> /dev/null
	umount "$d/mnt"
	CGMNT=
	row "10. Services" "flamed's daemon CPU at 99 Hz over 500 processes in 1 cgroup -> in 50 (median of $REPEAT)" \
		"$(median "${one[@]}")% -> $(median "${many[@]}")% of a core (rounds: ${one[*]} / ${many[*]})" "unchanged within noise" "—"
	row "10. Services" "flamed's resident memory at the end, 1 cgroup -> 50 (median)" \
		"$(fmt 1 "$(median "${rss_one[@]}") / 1024") -> $(fmt 1 "$(median "${rss_many[@]}") / 1024") MiB" "unchanged within noise" "—"
	row "10. Services" "units the last round's services listing found of the 50" "$n" "50" "—"
}

# flush_stats LOG: from flamed -v's "flushed N samples in K keys in X ms" lines after the first (the
# warm-up flush): samples, flushes, largest keys, mean ms, max ms; the samples its "lost stacks or
# samples" lines count after the first flush; the first flush's ms (its samples came after its start).
flush_stats() {
	awk '
		match($0, /flushed [0-9]+ samples in [0-9]+ keys in [0-9.]+ ms/) && !warm {
			split(substr($0, RSTART, RLENGTH), w, " "); first = w[8]; warm = 1; next
		}
		!warm { next }
		match($0, /flushed [0-9]+ samples in [0-9]+ keys in [0-9.]+ ms/) {
			split(substr($0, RSTART, RLENGTH), w, " ")
			s += w[2]; n++; if (w[5] > k) k = w[5]; ms += w[8]; if (w[8] > mx) mx = w[8]
		}
		/lost stacks or samples:/ {
			t = $0; sub(/.*samples: /, "", t); c = split(t, parts, ", ")
			for (i = 1; i <= c; i++) lost += parts[i] + 0
		}
		END { printf "%d %d %d %.1f %.1f %d %.1f\n", s, n, k, n ? ms / n : 0, mx, lost, first }' "$1"
}

# ingest: flamed at rising frequencies over two burners of 65536 call chains each.
ingest() {
	local hz d best='' steps=() samples flushes keys mean max lost first rate ok
	log "ingest: flamed at $INGEST_HZ Hz, $INGEST_T s each"
	for hz in $INGEST_HZ; do
		d=$TMP/ingest-$hz
		mkdir -p "$d"
		start_flamed "$d" --db "$d/flamed.db" --listen none --frequency "$hz" --max-keys "$INGEST_MAX_KEYS" -v
		flamed_window "$d" "$INGEST_T" 16 4
		read -r samples flushes keys mean max lost first <<< "$(flush_stats "$d/flamed.log")"
		[ "$flushes" -gt 0 ] || die "no 'flushed N samples' lines in $d/flamed.log: did flamed -v change?"
		rate=$(fmt 0 "$samples / ($R_WALL + $first / 1000)")
		ok=$(status_of "$lost <= 0.001 * $samples && $max < $FLUSH_INTERVAL * 1000")
		steps+=("$hz Hz: $rate/s, $(pct_of "$R_DAEMON_S + $R_BPF_S" "$R_WALL")% CPU, flush mean $mean ms max $max ms, lost $lost")
		if [ "$ok" = PASS ]; then
			best="$rate samples/s at $hz Hz on $(nproc) CPUs ($keys keys in the largest flush)"
			BEST_FLUSH="mean $mean ms, max $max ms, every $FLUSH_INTERVAL s ($flushes flushes of $(fmt 0 "$samples / $flushes") samples on average)"
			BEST_MEM="flamed ingesting $rate samples/s ($hz Hz)	$R_RSS	$R_HWM"
		fi
	done
	row "2. Ingest" "most samples/s drained, symbolized and stored with ≤ 0.1% lost and flushes shorter than $FLUSH_INTERVAL s" \
		"${best:-none of the rates tried}" "—" "—"
	row "2. Ingest" "flush duration at that rate" "${BEST_FLUSH:-—}" "—" "—"
	row "2. Ingest" "each rate tried (--max-keys $INGEST_MAX_KEYS)" "$(join_by '; ' "${steps[@]}")" "—" "—"
	[ -n "${BEST_MEM:-}" ] && MEM_ROWS+=("$BEST_MEM")
	return 0
}

# storm_run DIR NAME: one bench/storm of OFFCPU_T s (DIR/NAME.out). Sets R_TRIPS (round trips/s) and
# R_SWITCHES (context switches/s of the whole host meanwhile, from the ctxt line of /proc/stat); counts in
# STATS_ON the runs that found kernel.bpf_stats_enabled set (by another process: it costs the storm ~7%).
storm_run() {
	local pid c0 c1 t0 t1
	[ "$(sysctl -n kernel.bpf_stats_enabled)" = 0 ] || STATS_ON=$((STATS_ON + 1))
	c0=$(awk '$1 == "ctxt" { print $2 }' /proc/stat) t0=$(date +%s.%N)
	timeout -s KILL $((OFFCPU_T + 60)) "$BUILD/bench/storm" "$OFFCPU_T" > "$1/$2.out" &
	pid=$!
	track "$pid"
	wait "$pid" || die "bench/storm failed"
	t1=$(date +%s.%N) c1=$(awk '$1 == "ctxt" { print $2 }' /proc/stat)
	R_TRIPS=$(awk '/^round_trips_per_second/ { print $2 }' "$1/$2.out")
	[ -n "$R_TRIPS" ] || die "bench/storm printed no round_trips_per_second: $(cat "$1/$2.out")"
	R_SWITCHES=$(fmt 0 "($c1 - $c0) / ($t1 - $t0)")
}

# tracepoint_ready: whether perf and bpftrace can find the tracepoint sched:sched_switch; mounts tracefs
# where it is not (unmounted again at exit).
tracepoint_ready() {
	local t
	for t in /sys/kernel/tracing /sys/kernel/debug/tracing; do
		[ -d "$t/events/sched/sched_switch" ] && return 0
	done
	mount -t tracefs tracefs /sys/kernel/tracing 2> /dev/null || return 1
	TRACEFS_MOUNTED=1
	[ -d /sys/kernel/tracing/events/sched/sched_switch ]
}

# offcpu_start TOOL DIR: starts the off-CPU profiler TOOL (flamed, perf, bpftrace) and returns once it
# is attached; sets PROF_PID. Fails, with the reason in SKIP_WHY, where perf or bpftrace does not attach.
offcpu_start() {
	local tool=$1 dir=$2 n _
	case $tool in
	flamed)
		start_flamed "$dir" --off-cpu --db "$dir/flamed.db" --listen none --flush-interval "$FLUSH_INTERVAL"
		PROF_PID=$FLAMED_PID
		return 0
		;;
	perf)
		perf record -e sched:sched_switch -a -g -o "$dir/perf.data" > "$dir/perf.log" 2>&1 &
		PROF_PID=$!
		track "$PROF_PID"
		# Attached once it holds an event for each CPU.
		for _ in $(seq 300); do
			n=$(find "/proc/$PROF_PID/fd" -lname 'anon_inode:?perf_event?' 2> /dev/null | wc -l)
			[ "$n" -ge "$(getconf _NPROCESSORS_ONLN)" ] && break
			kill -0 "$PROF_PID" 2> /dev/null || break
			sleep 0.1
		done
		[ "$n" -ge "$(getconf _NPROCESSORS_ONLN)" ] || SKIP_WHY="perf record did not attach: $(tail -1 "$dir/perf.log")"
		;;
	bpftrace)
		"$BPFTRACE" -e "$BPFTRACE_PROG" > "$dir/bpftrace.out" 2>&1 &
		PROF_PID=$!
		track "$PROF_PID"
		if ! wait_log "$dir/bpftrace.out" '^Attaching' "$PROF_PID" 60; then
			SKIP_WHY=$(grep ERROR "$dir/bpftrace.out" | grep -v RLIMIT_MEMLOCK | head -1 || true)
			SKIP_WHY="bpftrace did not attach: ${SKIP_WHY:-$(tail -1 "$dir/bpftrace.out")}"
		fi
		;;
	esac
	if [ -n "$SKIP_WHY" ]; then
		kill -KILL "$PROF_PID" 2> /dev/null || true
		wait "$PROF_PID" 2> /dev/null || true
		return 1
	fi
	# perf's events are open but not yet enabled, and bpftrace says "Attaching" before it attaches.
	sleep "$OFFCPU_SETTLE"
}

# offcpu_stop TOOL DIR: stops the profiler: SIGTERM to flamed; SIGINT to perf and bpftrace, which then
# write perf.data (its build-ids) or print their map, a few seconds as a rule. bpftrace 0.17 now and then
# misses the SIGINT and polls on (2 runs in about 30 here): after OFFCPU_STOP_S s, where it waits goes
# into DIR/hang.txt and the log, and it gets a second SIGINT, then SIGKILL after as long again. The
# run's throughput stands either way. Adds what it recorded to DETAIL[TOOL].
offcpu_stop() {
	local tool=$1 dir=$2 out note='' t
	if [ "$tool" = flamed ]; then
		stop_flamed "$dir"
		return 0
	fi
	kill -INT "$PROF_PID"
	t=$SECONDS
	while kill -0 "$PROF_PID" 2> /dev/null && [ $((SECONDS - t)) -lt "$OFFCPU_STOP_S" ]; do sleep 0.2; done
	if kill -0 "$PROF_PID" 2> /dev/null; then
		hang_report "$PROF_PID" > "$dir/hang.txt" 2>&1 || true
		log "offcpu: $tool (pid $PROF_PID) still running $OFFCPU_STOP_S s after SIGINT; a second SIGINT. Where it waited:"
		grep -E '^(wchan|\[<|#[0-9] )' "$dir/hang.txt" | head -12 >&2 || true
		kill -INT "$PROF_PID" 2> /dev/null || true
		note="exited on a second SIGINT: "
		t=$SECONDS
		while kill -0 "$PROF_PID" 2> /dev/null && [ $((SECONDS - t)) -lt "$OFFCPU_STOP_S" ]; do sleep 0.2; done
		if kill -0 "$PROF_PID" 2> /dev/null; then
			log "offcpu: $tool (pid $PROF_PID) still running $OFFCPU_STOP_S s after a second SIGINT; killing it"
			kill -KILL "$PROF_PID" 2> /dev/null || true
			note="killed, deaf to two SIGINTs: "
		fi
	fi
	wait "$PROF_PID" 2> /dev/null || true
	case $tool in
	perf)
		if grep -q 'Captured and wrote' "$dir/perf.log"; then
			out=$(sed -n 's/.*Captured and wrote \([0-9.]*\) MB .*(\([0-9]*\) samples).*/\2 samples in \1 MB/p' "$dir/perf.log")
		else
			out="no summary ($(tail -1 "$dir/perf.log"))"
		fi
		if grep -q 'lost [0-9]* chunks' "$dir/perf.log"; then out+=" ($(grep -o 'lost [0-9]* chunks' "$dir/perf.log" | head -1))"; fi
		rm -f "$dir/perf.data"
		;;
	bpftrace)
		if grep -q '^@\[' "$dir/bpftrace.out"; then
			out=$(grep -c '^@\[' "$dir/bpftrace.out")
		else
			out="no map printed ($(grep -v RLIMIT_MEMLOCK "$dir/bpftrace.out" | grep . | tail -1))"
		fi
		;;
	esac
	DETAIL[$tool]+="${DETAIL[$tool]:+, }$note$out"
}

# hang_report PID: where a process that does not exit waits: its wchan, its threads' kernel stacks and,
# with gdb, their user stacks.
hang_report() {
	echo "wchan: $(cat "/proc/$1/wchan")"
	cat /proc/"$1"/task/*/stack
	if command -v gdb > /dev/null; then timeout 60 gdb -p "$1" -batch -ex 'thread apply all bt' < /dev/null; fi
}

# offcpu_memory DIR: flamed --off-cpu -v over the storm (runs of 2 s one after the other, until a file
# says stop: no process is killed, and the last ends within 2 s) until its OFFCPU_MEM_FLUSHES-th flush,
# beside a flamed without --off-cpu (what the host's processes alone cost: unwind tables and symbols of
# every binary that runs). Sets R_RSS, R_HWM (KiB, then), R_CPU_RSS (the other's VmRSS) and R_FLUSHES
# (its flushes after the first, its last off-CPU keys).
offcpu_memory() {
	local d=$1 pid mean max keys limit=$(((OFFCPU_MEM_FLUSHES + 1) * FLUSH_INTERVAL + 60)) cpu_pids _
	mkdir -p "$d/cpu"
	start_flamed "$d/cpu" --db "$d/cpu/flamed.db" --listen none --flush-interval "$FLUSH_INTERVAL"
	cpu_pids="$FLAMED_PID $TIME_PID"
	start_flamed "$d" --off-cpu --db "$d/flamed.db" --listen none --flush-interval "$FLUSH_INTERVAL" -v
	# shellcheck disable=SC2016 # $1..$3 are the inner shell's
	bash -c 'for _ in $(seq $(($3 / 2))); do [ -e "$2" ] && break; "$1" 2 > /dev/null || exit 1; done' \
		_ "$BUILD/bench/storm" "$d/stop" "$limit" &
	pid=$!
	track "$pid"
	wait_count "$d/flamed.log" 'flushed [0-9]+ samples' "$OFFCPU_MEM_FLUSHES" "$FLAMED_PID" "$limit" ||
		die "flamed --off-cpu did not flush $OFFCPU_MEM_FLUSHES times: $(tail -3 "$d/flamed.log")"
	status_kb "$FLAMED_PID" VmRSS R_RSS
	status_kb "$FLAMED_PID" VmHWM R_HWM
	status_kb "${cpu_pids% *}" VmRSS R_CPU_RSS
	touch "$d/stop"
	wait_pid "$pid" 30 || die "bench/storm failed"
	stop_flamed "$d"
	read -r FLAMED_PID TIME_PID <<< "$cpu_pids"
	stop_flamed "$d/cpu"
	read -r _ _ _ mean max _ _ <<< "$(flush_stats "$d/flamed.log")"
	keys=$(grep -m"$OFFCPU_MEM_FLUSHES" 'off-CPU: [0-9]* keys' "$d/flamed.log" | tail -1 | sed 's/.*off-CPU: \([0-9]*\) keys.*/\1/')
	R_FLUSHES="flushes after the first: mean $mean ms, max $max ms; flush $OFFCPU_MEM_FLUSHES stored ${keys:-?} off-CPU keys"
}

# offcpu: bench/storm (two processes bouncing a byte over two pipes, each blocking in read between
# turns: about 90,000 context switches a second on 2 CPUs) with no profiler, flamed --off-cpu, perf
# record -e sched:sched_switch -a -g and bpftrace counting the switches by stacks. This VM's runs swing
# by ±8%, so each round runs a no-profiler run before each profiler's (none, flamed, none, perf, none,
# bpftrace), and the medians stand; kernel.bpf_stats_enabled is 0 throughout (set, it costs the storm ~7%).
offcpu() {
	local d=$TMP/offcpu r tool b base=() sw=() bm m hz='' label res target status t0=$SECONDS
	local -A runs=() pairs=() skip=()
	DETAIL=()
	STATS_ON=0
	mkdir -p "$d"
	sysctl -q kernel.bpf_stats_enabled=0
	command -v perf > /dev/null || skip[perf]="no perf (apt-get install linux-perf)"
	command -v "$BPFTRACE" > /dev/null || skip[bpftrace]="no $BPFTRACE (apt-get install bpftrace)"
	if { [ -z "${skip[perf]:-}" ] || [ -z "${skip[bpftrace]:-}" ]; } && ! tracepoint_ready; then
		for tool in perf bpftrace; do
			[ -n "${skip[$tool]:-}" ] ||
				skip[$tool]="no tracepoint sched:sched_switch: tracefs is not mounted, and mounting it on /sys/kernel/tracing failed"
		done
	fi
	for tool in perf bpftrace; do
		if [ -n "${skip[$tool]:-}" ]; then log "offcpu: $tool skipped: ${skip[$tool]}"; fi
	done
	log "offcpu: $OFFCPU_ROUNDS rounds of bench/storm ($OFFCPU_T s) with no profiler before each of flamed --off-cpu, perf, bpftrace"
	for r in $(seq "$OFFCPU_ROUNDS"); do
		for tool in $OFFCPU_TOOLS; do
			if [ -n "${skip[$tool]:-}" ]; then continue; fi
			mkdir -p "$d/$r/$tool"
			storm_run "$d/$r" "none-$tool"
			b=$R_TRIPS
			base+=("$b") sw+=("$R_SWITCHES")
			SKIP_WHY=
			if ! offcpu_start "$tool" "$d/$r/$tool"; then
				skip[$tool]=$SKIP_WHY
				log "offcpu: $tool skipped from round $r on: $SKIP_WHY"
				continue
			fi
			if [ "$tool" = flamed ] && [ -z "$hz" ]; then hz=$(sed -n 's/^flamed: sampling .* at \([0-9]*\) Hz.*/\1/p' "$d/$r/$tool/flamed.log"); fi
			storm_run "$d/$r/$tool" storm
			offcpu_stop "$tool" "$d/$r/$tool"
			runs[$tool]+=" $R_TRIPS" pairs[$tool]+="${pairs[$tool]:+, }$(change "$R_TRIPS" "$b")%"
			log "offcpu: round $r: no profiler $b, $tool $R_TRIPS round trips/s (at $((SECONDS - t0)) s)"
		done
	done
	offcpu_memory "$d/memory"
	log "offcpu: flamed --off-cpu at $(mb "$R_RSS") MB after $OFFCPU_MEM_FLUSHES flushes; the part took $((SECONDS - t0)) s"
	sysctl -q kernel.bpf_stats_enabled="$BPF_STATS_WAS"

	bm=$(median "${base[@]}")
	res="$bm/s (each run: ${base[*]}); $(median "${sw[@]}") context switches/s on $(nproc) CPUs (/proc/stat ctxt, median)"
	[ "$STATS_ON" = 0 ] || res+="; kernel.bpf_stats_enabled was found set by another process before $STATS_ON of the runs"
	row "6. Off-CPU" "bench/storm (2 processes bouncing a byte over 2 pipes), no profiler: round trips/s, median of ${#base[@]} runs of $OFFCPU_T s" \
		"$res" "—" "—"
	for tool in $OFFCPU_TOOLS; do
		target="—" status="—"
		case $tool in
		flamed)
			label="flamed --off-cpu (${hz:-its default} Hz, flush every $FLUSH_INTERVAL s)"
			target="drop ≤ 5%"
			;;
		perf) label="perf record -e sched:sched_switch -a -g -o FILE" ;;
		bpftrace) label="bpftrace -e '$BPFTRACE_PROG'" ;;
		esac
		if [ -z "${runs[$tool]:-}" ]; then
			row "6. Off-CPU" "bench/storm under $label" "skipped: ${skip[$tool]}" "$target" "—"
			continue
		fi
		# shellcheck disable=SC2086 # the runs, one word each
		m=$(median ${runs[$tool]})
		res="$m/s, $(change "$m" "$bm")% against no profiler (each run against the no-profiler run before it: ${pairs[$tool]})"
		case $tool in
		perf) res+="; perf.data of each run: ${DETAIL[perf]}" ;;
		bpftrace) res+="; stack pairs (kstack, ustack) printed by each run: ${DETAIL[bpftrace]}" ;;
		esac
		[ -z "${skip[$tool]:-}" ] || res+="; its later rounds not run: ${skip[$tool]}"
		[ "$tool" != flamed ] || status=$(status_of "$m >= 0.95 * $bm")
		row "6. Off-CPU" "bench/storm under $label: round trips/s, median of $(wc -w <<< "${runs[$tool]}") runs, change" \
			"$res" "$target" "$status"
	done
	row "6. Off-CPU" "flamed --off-cpu's memory over bench/storm after $OFFCPU_MEM_FLUSHES flushes: steady (VmRSS then) / peak (VmHWM)" \
		"$(mb "$R_RSS") MB / $(mb "$R_HWM") MB ($R_FLUSHES; a flamed without --off-cpu beside it: $(mb "$R_CPU_RSS") MB)" "steady < 50 MB" "$(status_of "$R_RSS * 1024 < 50e6")"
}

# pct_of SECONDS WALL: % of one core.
pct_of() { fmt 2 "100 * ($1) / ($2)"; }

# generate_history: the generated database every query and storage figure uses. Sets G_* from its key=value line.
# The history ends at the last 15:00 UTC before now, the peak of gen_history's daily curve: the last hour
# (raw rows, which queries read second by second) is the busiest of the day, and every run measures the
# same history whatever the hour it runs at (ending at the present, a run at 07:00 read 350k raw rows and
# one at 10:30 516k).
generate_history() {
	local out now end
	mkdir -p "$TMP/history"
	GEN_DB=$TMP/history/flamed.db
	now=$(date +%s)
	end=$((now - ((now - 15 * 3600) % 86400 + 86400) % 86400))
	log "history: generating $HISTORY of samples ending at $(date -u -d "@$end" '+%F %H:%M') UTC, retention $RETENTION"
	out=$(timeout 7200 "$BUILD/bench/gen_history" --db "$GEN_DB" --duration "$HISTORY" --retention "$RETENTION" \
		--end "$end") ||
		die "gen_history failed"
	parse_kv G_ "$out"
}

drop_caches() {
	sync
	if echo 3 2> /dev/null > /proc/sys/vm/drop_caches; then COLD=cold; else COLD="first (caches not dropped)"; fi
}

# query_row QUERY SCOPE_LABEL PID WINDOW_S TARGET_MS: one query_bench process (PID "": whole host).
query_row() {
	local q=$1 label=$2 pidargs=() win=$4 target=$5 out hours=$(($4 / 3600)) tcol='—' scol='—'
	[ -n "$3" ] && pidargs=(--pid "$3")
	drop_caches
	out=$(timeout 3600 "$BUILD/bench/query_bench" --db "$GEN_DB" --query "$q" "${pidargs[@]}" \
		--from $((G_to - win)) --to "$G_to" --repeat "$REPEAT") || die "query_bench $q failed"
	parse_kv Q_ "$out"
	[ "$Q_peak_rss_kb" -gt "$QUERY_PEAK_KB" ] && QUERY_PEAK_KB=$Q_peak_rss_kb
	if [ -n "$target" ]; then
		tcol="< $target ms" scol=$(status_of "$Q_first_ms < $target && $Q_warm_ms < $target")
	fi
	row "3. Query" "$q, $label, last $hours h" \
		"$COLD $Q_first_ms ms, warm $Q_warm_ms ms ($(fmt 0 "$Q_output_bytes / 1024") KiB of output)" "$tcol" "$scol"
}

queries() {
	local win q target
	QUERY_PEAK_KB=0
	log "queries: profile, top, timeline, diff; pid $G_top_pid and whole host; last 1 h$([ "$WINDOW_H" = 1 ] || echo " and $WINDOW_H h")"
	for win in 3600 $([ "$WINDOW_H" = 1 ] || echo $((WINDOW_H * 3600))); do
		for q in profile top timeline diff; do
			target=
			[ "$q" = profile ] && [ "$win" = 86400 ] && target=100
			query_row "$q" "one process ($G_top_comm, pid $G_top_pid)" "$G_top_pid" "$win" "$target"
			[ "$q" = profile ] && [ "$win" = 86400 ] && target=300
			query_row "$q" "whole host" "" "$win" "$target"
		done
	done
	[ "$WINDOW_H" = 1 ] && row "3. Query" "windows of 24 h" "not run: the quick history holds 1 h" "—" "—"
	return 0
}

storage() {
	local hours per_sample per_hour day ret
	hours=$(calc "$G_window_seconds / 3600")
	per_sample=$(fmt 1 "$G_db_bytes / $G_samples")
	per_hour=$(fmt 1 "$G_db_bytes / $hours / 1e6")
	case $G_retention in
	applied) ret="retention $RETENTION applied as flamed does (store_prune every minute of the generated time: retention, folds into minute and hour rollups, raw rows kept 1 h and minute rollups 1 d, flamed's defaults)" ;;
	*) ret="retention not applied (this store has no store_prune)" ;;
	esac
	row "4. Storage" "generated history (bench/gen_history, 99 Hz on 2 CPUs)" \
		"$HISTORY written, last $hours h kept: $G_samples samples ($(fmt 0 "100 * $G_samples / ($G_window_seconds * 198)")% busy), $G_rows raw rows and ${G_rollup_rows:-0} rollup rows, $G_stacks distinct stacks, $G_processes processes; $ret; written in $G_gen_seconds s" "—" "—"
	row "4. Storage" "database bytes per sample" "$per_sample bytes ($(fmt 1 "$G_db_bytes / 1e6") MB for $hours h)" "stated" "—"
	row "4. Storage" "database bytes per hour" "$per_hour MB (mean over the $hours h kept)" "—" "—"
	[ "${G_timed_prunes:-0}" -gt 0 ] && row "4. Storage" "retention and fold passes (store_prune, once a minute)" \
		"mean $G_prune_mean_ms ms, max $G_prune_max_ms ms over $G_timed_prunes passes, ${G_raw_folded:-0} raw rows folded (the mean is $(fmt 2 "$G_prune_mean_ms / 600")% of a core at one a minute)" "—" "—"
	if [ "$WINDOW_H" = 24 ]; then
		day=$(fmt 1 "$G_db_bytes / 1e6")
		row "4. Storage" "a day of this host (the 24 h database)" "$day MB" "< 100 MB" "$(status_of "$day < 100")"
	else
		row "4. Storage" "a day of this host" "not measured: the quick history holds $hours h (raw rows are kept an hour whatever the history, so 24 x it would count them 24 times)" "< 100 MB" "—"
	fi
}

# serve_queries: flamed on the generated database answering the same queries over HTTP (its memory).
serve_queries() {
	local d=$TMP/serve port url from=$((G_to - WINDOW_H * 3600)) mid scope args=()
	mkdir -p "$d"
	mid=$(((from + G_to) / 2))
	"$BUILD/flamed" --help | grep -q -- --max-db-size && args+=(--max-db-size 1024G)
	log "memory: flamed serving the queries over HTTP"
	start_flamed "$d" --db "$GEN_DB" --listen 127.0.0.1:0 --frequency 19 "${args[@]}"
	wait_log "$d/flamed.log" '\(port [0-9]+\)' "$FLAMED_PID" 10 || die "flamed did not report its port"
	port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$d/flamed.log" | head -1)
	for scope in "pid=$G_top_pid&" ""; do
		for url in "profile?${scope}from=$from&to=$G_to&format=folded" "top?${scope}from=$from&to=$G_to" \
			"timeline?${scope}from=$from&to=$G_to&step=$((WINDOW_H * 10))" \
			"diff?${scope}base_from=$from&base_to=$mid&from=$mid&to=$G_to&format=folded"; do
			curl -fsS --max-time 1200 -o /dev/null "http://127.0.0.1:$port/api/v1/$url" || die "GET $url failed"
		done
	done
	local rss hwm
	status_kb "$FLAMED_PID" VmRSS rss
	status_kb "$FLAMED_PID" VmHWM hwm
	stop_flamed "$d"
	MEM_ROWS+=("flamed serving the 8 queries of the last $WINDOW_H h over HTTP	$rss	$hwm")
}

memory() {
	local m what rss hwm
	for m in "${MEM_ROWS[@]}"; do
		IFS=$'\t' read -r what rss hwm <<< "$m"
		row "5. Memory" "$what: steady (VmRSS at the end) / peak (VmHWM)" "$(mb "$rss") MB / $(mb "$hwm") MB" \
			"steady < 50 MB" "$(status_of "$rss * 1024 < 50e6")"
	done
	want query && row "5. Memory" "query_bench (store and query.h in one process), largest peak" "$(mb "$QUERY_PEAK_KB") MB" "—" "—"
	return 0
}

# header LINES of the report.
header() {
	local commit
	commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
	git diff --quiet HEAD 2> /dev/null || commit="$commit with uncommitted changes"
	echo "# Benchmarks"
	echo
	if [ "$QUICK" = 1 ]; then
		echo "**Quick run** (\`make bench QUICK=1\`): ${T} s overhead runs, $OFFCPU_ROUNDS rounds of ${OFFCPU_T} s off-CPU runs and a 1 h history instead of 30 s, 5 rounds of 10 s and 24 h,"
		echo "on a machine shared with other jobs. It shows the format and checks the harness; its numbers are"
		echo "not the benchmark."
		echo
	fi
	echo "- Date: $(date -u +%Y-%m-%dT%H:%M:%SZ) (the run took $(((SECONDS + 59) / 60)) min)"
	echo "- Machine: $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) memory; load average before the run: $LOAD_BEFORE"
	echo "- Kernel: $(uname -r)"
	echo "- Command: \`$([ -n "${BENCH_REPEAT:-}" ] && echo "BENCH_REPEAT=$REPEAT ")$([ "$PARTS" != "$ALL_PARTS" ] && echo "BENCH_PARTS=\"$PARTS\" ")make bench$([ "$QUICK" = 1 ] && echo " QUICK=1")\` ($("$BUILD/flamed" --version), commit $commit$(command -v perf > /dev/null && echo "; $(perf --version)")$(want offcpu && command -v "$BPFTRACE" > /dev/null && echo "; bpftrace $("$BPFTRACE" --version | sed 's/^bpftrace //')"))"
	[ "$PARTS" != "$ALL_PARTS" ] && echo "- Parts run: $PARTS (BENCH_PARTS); the others were not run now"
	echo
}

notes() {
	local ab_which="the commit its rows name: the ab part did not run now"
	want ab && ab_which="$AB_BASE in this run"
	cat << EOF
How each figure is measured:

- Overhead: at each frequency, four runs of $T s one after the other: no profiler, \`flamed --frequency HZ\`
  (flush every $FLUSH_INTERVAL s), \`perf record -a -g -F HZ\` and \`perf record -a --call-graph dwarf -F HZ\`, each over
  the same workload: two \`bench/burn\` processes (one per core, 256 call chains) and, beside them, a 20 ms
  \`bench/burn\` and a \`sleep\` about three times a second (short-lived processes, as a host starts them). flamed's CPU is its utime + stime
  from its first flush (/proc/PID/stat; start-up, the first symbolization of running processes and a 1 s run
  of \`bench/burn\` before that flush left out, so the symbols and unwind tables of burn, libc and ld.so are
  built, as in a daemon that has run for a while; the two burners then start as new processes inside the
  measured window) to its exit (rusage; the last flush in), plus the \`run_time_ns\` of its BPF program over the run
  (\`kernel.bpf_stats_enabled=1\`). Inside that window the bench starts no process of its own (its readings of
  /proc and of the programs' run time are shell builtins): before
  29 November 2026 it ran \`bpftool\` and \`jq\` for each program at both ends of the window, about 20 new
  processes whose mappings flamed read and whose unwind tables it built, counted as flamed's. perf's is the user + sys time of \`perf record\` plus that of
  \`perf script | awk -f bench/fold.awk\`, which makes the folded stacks. Both are per second of wall time, in %
  of one core. perf's own sampling in interrupt context is charged to the interrupted processes, not to perf:
  it shows only in the throughput row.
- Overhead over Python: the same method at 99 Hz, $PY_ROUNDS rounds of $PY_T s (medians), with two \`bench/pyburn.py\` on $PYTHON${PYROOT:+ (in a root made by \`scripts/python-root.sh\`)} (a pure-Python
  loop under main and $((PY_DEPTH + 1)) calls of handler, so every sample walks $((PY_DEPTH + 4)) Python frames) and the
  same short-lived processes beside them, with \`flamed\`,
  \`flamed --python off\` (for the BPF program's cost per sample without the Python walk) and \`perf record -a -g\`;
  the chain row reads flamed's own database: of the workload's main-thread samples (under Py_RunMain), those
  whose Python frames run main, the $((PY_DEPTH + 1)) handlers and spin with nothing between.
- A/B (11): \`BENCH_AB=COMMIT\` ($ab_which) built from its own tree (\`git archive\`) beside this build,
  then $REPEAT rounds, each running A's flamed and then B's (this build) at 99 Hz for $T s over the same load: two
  \`bench/pyburn.py\` ($((PY_DEPTH + 4)) Python frames deep) and, beside them, a 20 ms \`bench/burn\` and a \`sleep\` about
  three times a second (short-lived processes, as a host starts them). Each flamed is warmed first by a 1 s
  pyburn.py and its first flush. The daemon's CPU (utime + stime from then to its exit) over the samples it
  stored meanwhile (its \`-v\` flush lines), the BPF programs' \`run_time_ns\` over their runs (a tail-called
  walker's time is its caller's), and VmRSS just before stopping; medians of the rounds, and B over A. Then each
  once more over the same load with its API on loopback, followed by \`wrk -t2 -c64\` for $SERVE_T s on \`/metrics\`
  and $SERVE_T s on \`/api/v1/profile?from=-5m&format=folded\`: VmRSS before wrk and VmHWM after.
- First samples: a fresh \`flamed --frequency 99 --flush-interval 1\` (no unwind table built yet), then each program
  once (cold: its tables are built while it runs), once more (warm: they are built), and once after flamed
  is restarted on the same database (cached: the tables read from the disk cache, \`unwind-cache/\`): \`tests/workloads/short.c\`
  built -O2 without frame pointers, 1 s; \`tests/workloads/pyonesec.py\` on the system's python3, 1 s; \`opt -O3\` on the IR of
  1500 generated functions (\`tests/workloads/bigc.awk\`; its work is in libLLVM). Whole: of the program's
  samples with a user frame, those whose user stack begins at \`_start\` (or the dynamic loader's start), as
  \`perf --call-graph dwarf\` shows them. The deferred samples' wait (from when the daemon read them to when
  their tables were there) comes from the status's \`deferred\` counters over the run. Table sizes, build
  times and cache read times (the file read and checked, and the rows loaded into the kernel) are the ones
  flamed logs; the cache's size is that of its directory after the runs.
- debuginfod: a stripped copy of \`bench/burn\` (its debug file kept apart with \`objcopy --only-keep-debug\`) run as the
  overhead part runs bench/burn, at 99 Hz, under \`flamed --debuginfod none\` and then under \`flamed --debuginfod URL\` of
  a local \`debuginfod -F\` serving that debug file ($REPEAT rounds of each, medians): the daemon's CPU per wall second
  from after its first flush to its exit, as in the overhead part; each flamed's longest flush from its log. The
  flamed with servers asks them about every binary of the host without symbols: those are the misses.
- JIT: two \`node tests/workloads/jsfib.js\` (a recursive fib V8 optimizes: its time is in JIT code) as the overhead part
  runs its burners, at 99 Hz, plain (its JIT frames unnamed) and with \`--perf-prof\` (V8 writes jit-PID.dump, which
  flamed reads on each flush; code written late is stored by address), $REPEAT rounds each, medians of the daemon's CPU.
- Services: 500 \`bench/burn --fanout 4 --depth 4\` processes at once for $T s, started each in a cgroup of a cgroup v2
  hierarchy the bench mounts: all in one, then ten in each of 50 (\`system.slice/svcN.service\`), at 99 Hz after a first
  flush, $REPEAT rounds each; medians of the daemon's CPU from then to its exit and of its resident memory at the end;
  the last round's \`flamectl services\` counts the units it stored.
- Ingest: \`flamed -v --max-keys $INGEST_MAX_KEYS\` at each frequency for $INGEST_T s over two \`bench/burn --fanout 16 --depth 4\`
  (65536 call chains each), after a first flush left out; samples/s counts every process on the host; flush
  durations and losses come from flamed's log. Sustained: at most 0.1% of samples lost and every flush done within
  the flush interval. The BPF program samples at most 10 kHz per CPU, so the rate tried tops out there.
- Query: \`bench/gen_history\` writes the history through the store API (store_begin/store_add/store_commit, one
  transaction per $FLUSH_INTERVAL s as flamed): services with a daily load curve and short jobs, every stack with its
  frames, binaries and build-ids. The history ends at the last 15:00 UTC, the curve's peak, so the last hour is the
  busiest and the windows (which end there) are the same on every run. \`bench/query_bench\` calls query.h:
  profile = folded stacks, top = 50 functions, timeline = 360 steps, diff = the window's second half against its first, folded. Cold: a new process after
  \`echo 3 > /proc/sys/vm/drop_caches\`, store_open included; warm: the median of $REPEAT more runs in that process.
  Targets apply to both.
- Storage: the database file after the generator closed it (WAL checkpointed). Raw rows (per second and
  thread) are kept 1 h, minute rollups 1 d, hour rollups as long as the retention, as flamed does by default;
  a query reads whole hours and minutes from the rollups and raw rows for the rest. "A day of this host" is
  the 24 h database itself (a quick run's 1 h history is not extrapolated).
- Off-CPU: \`bench/storm\` (two processes bouncing one byte over two pipes, each blocking in read() between
  turns), $OFFCPU_ROUNDS rounds of runs of $OFFCPU_T s. Runs on this VM swing by ±8%, so each round runs the storm with no profiler
  before each profiler's run (none, flamed, none, perf, none, bpftrace); the medians stand, and each profiler's
  runs are also given against the no-profiler run just before them. A profiler is started and attached before its
  run (flamed: its "sampling" log line; perf: an event open on every CPU; bpftrace: its "Attaching" line; then
  $OFFCPU_SETTLE s for either) and stopped after it, so its writing out and printing are not measured:
  \`flamed --off-cpu\` at its default frequency, flush every $FLUSH_INTERVAL s, a new database each run;
  \`perf record -e sched:sched_switch -a -g -o FILE\`; \`bpftrace -e '$BPFTRACE_PROG'\`.
  \`kernel.bpf_stats_enabled\` is 0 meanwhile (set, it costs the storm about 7%) and restored after. Context
  switches/s: the ctxt line of /proc/stat over the no-profiler runs (the whole host). Memory: \`flamed --off-cpu -v\`
  over the storm, VmRSS and VmHWM after its first $OFFCPU_MEM_FLUSHES flushes, beside a \`flamed\` without --off-cpu started
  with it (the VmRSS of a daemon that profiles this host's CPU alone). Without perf or bpftrace, or without
  tracefs for their tracepoint (the bench mounts it on /sys/kernel/tracing where it is not, and unmounts it
  after), that row says skipped and why.
- Memory: VmRSS at the end of each run (steady) and VmHWM (peak) of flamed, from /proc/PID/status; for queries,
  flamed (19 Hz) on the generated database answering the same 8 queries over its HTTP API (\`curl\`).

## How to reproduce

As root, on a host with nothing else running: \`make bench\` (about 40 minutes on 2 cores, a few of them
generating the 24 h history and about 6 the offcpu part; \`make bench QUICK=1\` takes about 7 minutes and
checks the harness; \`BENCH_PARTS="query storage memory"\` runs only those parts, of
$ALL_PARTS, and keeps the other rows of this file, marked
with the run that measured them; \`BENCH_REPEAT=N\` gives the parts that compare medians N rounds instead of
3). It needs
perf, bpftool, jq, curl and GNU time (\`apt-get install linux-perf bpftool jq curl time\`), and bpftrace for the
offcpu part's bpftrace row (\`apt-get install bpftrace\`; without it that row says skipped), prints the table
and writes this file. Scratch files, 1.5 GB at most, go to /var/tmp (\`BENCH_TMP=DIR\` to change,
\`BENCH_KEEP=1\` to keep them).
EOF
}

# part_of AREA MEASUREMENT: the part a row of the table belongs to.
part_of() {
	case "$1|$2" in
	"1. Overhead Python $PYV "*) echo python ;;
	"1. Overhead Python 3."*) echo python-other ;; # another version's: kept
	"1. Overhead Python"*) echo python ;;
	*"Python $PYV processes"*) echo python ;;
	*"Python 3."*" processes"*) echo python-other ;;
	*"Python processes"*) echo python ;;
	"1. "*) echo overhead ;;
	"7. "*) echo firstsamples ;;
	"8. "*) echo debuginfod ;;
	"9. "*) echo jit ;;
	"10. "*) echo cgroups ;;
	"11. "*) echo ab ;;
	"6. "*) echo offcpu ;;
	"2. "*) echo ingest ;;
	"3. "*) echo query ;;
	"4. "*) echo storage ;;
	*"overhead run"*) echo overhead ;;
	*ingesting*) echo ingest ;;
	*query_bench*) echo query ;;
	*) echo memory ;;
	esac
}

# kept_rows: the rows of $OUT (an earlier run) of the parts not run now, as tab-separated rows, their
# results marked [run of DATE] with the date of the run that measured them.
kept_rows() {
	local date line area what result target status
	[ -f "$OUT" ] || return 0
	date=$(sed -n 's/^- Date: \([^ ]*\).*/\1/p' "$OUT" | head -1)
	while IFS= read -r line; do
		line=${line//\\|/$'\1'}
		IFS=$'\t' read -r area what result target status <<< "$(sed 's/^| //; s/ |$//; s/ | /\t/g' <<< "$line")"
		want "$(part_of "$area" "$what")" && continue
		[[ $result == "[run of "* ]] || result="[run of $date] $result"
		printf '%s\t%s\t%s\t%s\t%s\n' "$area" "$what" "$result" "$target" "$status" | tr '\1' '|'
	done < <(grep -E '^\| [0-9]+\. ' "$OUT")
}

# kept_notes KEPT_TSV: one line per run whose rows are kept: its command and load, from $OUT (its own
# header, or the line an earlier report carried over).
kept_notes() {
	local date run
	date=$(sed -n 's/^- Date: \([^ ]*\).*/\1/p' "$OUT" | head -1)
	grep -o '\[run of [^]]*\]' "$1" | sort -u | sed 's/\[run of //; s/\]//' | while IFS= read -r run; do
		if grep -q "^- \[run of $run\]" "$OUT"; then
			grep "^- \[run of $run\]" "$OUT" | head -1
		elif [ "$run" = "$date" ]; then
			echo "- [run of $run]: $(sed -n 's/^- Command: //p' "$OUT" | head -1), load average before it: $(sed -n 's/.*load average before the run: //p' "$OUT" | head -1); not run now"
		fi
	done
}

report() {
	: > "$TMP/kept.tsv"
	[ "$PARTS" != "$ALL_PARTS" ] && kept_rows > "$TMP/kept.tsv"
	{
		header | sed '$d'
		[ -s "$TMP/kept.tsv" ] && kept_notes "$TMP/kept.tsv"
		echo
		echo "| Area | Measurement | Result | Target | Status |"
		echo "| --- | --- | --- | --- | --- |"
		cat "$TMP/kept.tsv" "$TMP/rows.tsv" | sort -s -t. -k1,1n |
			awk -F'\t' '{ for (i = 1; i <= 5; i++) gsub(/\|/, "\\|", $i)
			printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }'
		echo
		notes
	} > "$TMP/BENCHMARKS.md"
	cat "$TMP/BENCHMARKS.md"
	mkdir -p "$(dirname "$OUT")"
	cp "$TMP/BENCHMARKS.md" "$OUT"
	log "wrote $OUT"
}

main() {
	MEM_ROWS=()
	LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
	check_setup
	if want overhead || want python || want ab || want firstsamples || want debuginfod || want jit || want cgroups || want ingest; then
		sysctl -q kernel.bpf_stats_enabled=1
		if want overhead; then for hz in $OVERHEAD_HZ; do overhead "$hz"; done; fi
		if want python; then python_overhead; fi
		if want ab; then ab_part; fi
		if want firstsamples; then firstsamples; fi
		if want debuginfod; then debuginfod_part; fi
		if want jit; then jit_part; fi
		if want cgroups; then cgroups_part; fi
		if want ingest; then ingest; fi
		sysctl -q kernel.bpf_stats_enabled="$BPF_STATS_WAS"
	fi
	if want offcpu; then offcpu; fi
	if want query || want storage || want memory; then generate_history; fi
	if want query; then queries; fi
	if want storage; then storage; fi
	if want memory; then serve_queries; fi
	memory
	report
}

main
