# lib.sh - shared by the integration tests: PASS/FAIL/SKIP lines, a temp dir, starting flamed.
BUILD=${BUILD:-$(pwd)/build}
FAILED=0
TMP=$(mktemp -d /tmp/flamed-test.XXXXXX)
FLAMED_PID=

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILED=1; }
not() { ! "$@"; }
skip() { echo "SKIP: $*"; }
# check NAME COND...: PASS when the command COND succeeds; its output is shown only on failure.
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name"; [ -n "$out" ] && echo "$out" | head -20 | sed 's/^/    /'; fi
}

cleanup() {
	[ -n "$FLAMED_PID" ] && kill -9 "$FLAMED_PID" 2>/dev/null
	if [ -n "$KEEP_TMP" ]; then echo "KEEP_TMP: kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# start_flamed ARGS...: starts build/flamed in the background, logging to $TMP/flamed.log, and waits
# until it samples. Returns 0 when running, 77 when the kernel refused BPF (EPERM), 1 otherwise.
start_flamed() {
	"$BUILD/flamed" "$@" > "$TMP/flamed.log" 2>&1 &
	FLAMED_PID=$!
	for _ in $(seq 100); do
		grep -q '^flamed: sampling' "$TMP/flamed.log" && return 0
		if ! kill -0 "$FLAMED_PID" 2>/dev/null; then
			wait "$FLAMED_PID"
			FLAMED_PID=
			cat "$TMP/flamed.log"
			grep -q 'Operation not permitted' "$TMP/flamed.log" && return 77
			return 1
		fi
		sleep 0.1
	done
	cat "$TMP/flamed.log"
	return 1
}

# stop_flamed: SIGTERM, wait; returns flamed's exit status.
stop_flamed() {
	local rc
	kill -TERM "$FLAMED_PID"
	wait "$FLAMED_PID"
	rc=$?
	FLAMED_PID=
	return $rc
}

# steal_mark: notes the CPUs' busy and stolen time so far (/proc/stat). steal_factor then prints how
# many more samples than its CPU time gives a process running since the mark may get: a cpu-clock
# sample also lands in time the hypervisor stole from a busy vCPU, which the process's CPU time leaves
# out (busy + stolen over busy, since the mark; 1.000 where nothing was stolen).
steal_mark() {
	STEAL_MARK=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $9 }' /proc/stat)
}
steal_factor() {
	awk -v m="${STEAL_MARK:-0 0}" '/^cpu / { split(m, a, " "); b = $2 + $3 + $4 + $7 + $8 - a[1]; s = $9 - a[2]
		printf "%.3f\n", (b > 0 && s > 0) ? (b + s) / b : 1 }' /proc/stat
}

# sum_samples FILE [REGEX]: sum of the counts of folded lines whose stack matches REGEX (awk ERE).
sum_samples() {
	awk -v re="${2:-.}" '{ n = $NF; sub(/ [0-9]+$/, ""); if ($0 ~ re) s += n } END { print s + 0 }' "$1"
}

# wait_tables: waits (up to 30 s) until flamed's unwinder has no request waiting: the tables of the
# processes started so far are built.
wait_tables() {
	for _ in $(seq 100); do
		[ "$(curl -sf "$URL/api/v1/status" | jq '.unwind.requests_pending')" = 0 ] && return 0
		sleep 0.3
	done
	return 1
}

# wait_walked PID ERE: waits (up to 30 s) until PID's profile, stored up to now (flush=1), holds a folded
# line matching ERE (grep -E): a stack walked whole says flamed knows the process and its tables.
wait_walked() {
	for _ in $(seq 60); do
		curl -sf "$URL/api/v1/profile?pid=$1&format=folded&from=-1m&flush=1" | grep -qE "$2" && return 0
		sleep 0.5
	done
	return 1
}

# need_root WHAT: skips the whole test (exit 0) unless root: loading BPF programs needs it.
need_root() {
	if [ "$(id -u)" -ne 0 ]; then
		skip "$1: loading BPF programs needs root (or CAP_BPF and CAP_PERFMON)"
		exit 0
	fi
}

# py_supported VER: VER ("3.13") is a CPython whose Python frames flamed reads (3.8 to 3.15).
py_supported() {
	[[ $1 =~ ^3\.([89]|1[0-5])$ ]]
}

# system_python: the system's own python3 (/usr/bin/python3, not the first on PATH, which may be a pyenv
# shim), the interpreter the tests are about first: SYSPY its real path (/usr/bin/python3.11 on Debian 12,
# /usr/bin/python3.13 on Debian 13), SYSPY_NAME its file name (the name of a process it runs, the root
# frame of its stacks) and SYSPY_VER its version ("3.13"). Fails the test (exit 1) when there is none.
system_python() {
	SYSPY=$(readlink -f /usr/bin/python3 2> /dev/null)
	SYSPY_NAME=${SYSPY##*/}
	SYSPY_VER=
	[ -x "$SYSPY" ] && SYSPY_VER=$("$SYSPY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2> /dev/null)
	if [ -z "$SYSPY_VER" ]; then
		fail "the system's python3 (/usr/bin/python3) runs and says its version (scripts/deps.sh test installs it)"
		exit 1
	fi
	echo "# the system's python3: $SYSPY (Python $SYSPY_VER)"
}

# python_interps: INTERPS, the interpreters whose Python frames are checked: the system's python3 first
# (system_python; a SKIP line where flamed does not read its version yet), then every other CPython 3.8
# to 3.15 in /usr/bin, then pyenv's newest build of each ($PYENV_ROOT, else /root/.pyenv). Debian sid's
# and experimental's in a private root: test_pyroot.sh.
python_interps() {
	local pyenv=${PYENV_ROOT:-/root/.pyenv} v p
	[ -n "$SYSPY" ] || system_python
	INTERPS=()
	if py_supported "$SYSPY_VER"; then
		INTERPS+=("$SYSPY")
	else
		skip "python $SYSPY_VER ($SYSPY, the system's python3): flamed reads the Python frames of CPython 3.8 to 3.15, not $SYSPY_VER yet"
	fi
	for v in 3.8 3.9 3.10 3.11 3.12 3.13 3.14 3.15; do
		p=$(readlink -f "/usr/bin/python$v" 2> /dev/null)
		[ -x "$p" ] && [ "$p" != "$SYSPY" ] && INTERPS+=("$p")
	done
	for v in 3.8 3.9 3.10 3.11 3.12 3.13 3.14 3.15; do
		p=$(ls -d "$pyenv"/versions/"$v".*/bin/python"$v" 2> /dev/null | sort -V | tail -1)
		if [ -x "$p" ]; then INTERPS+=("$p"); else echo "# python$v (pyenv): not installed here, not tested"; fi
	done
}

# pyspin_enough PART ALL PCT: PART >= PCT% of ALL, and ALL > 0.
pyspin_enough() { [ "$2" -gt 0 ] && [ $((100 * $1)) -ge $(($2 * $3)) ]; }

# pyspin_python_checks NAME OUT E G BETWEEN: the checks of a tests/workloads/pyspin.py run in its python
# mode, from its folded stacks OUT: the main thread's whole chain from Py_RunMain to tooth in >= 95% of
# crank's samples, the 3:2 split of gear_a and gear_b within 5 points, >= 90% of key_of's samples under
# sorter with BETWEEN (the C frames of sorted, an ERE ending in ";") between, at most 5% of the samples
# ending in the eval loop. E: what precedes crank, gear_a and gear_b ("(Engine\.)?" where co_name is all
# a frame has); G: what may stand between two frames of the chain ("" for nothing).
pyspin_python_checks() {
	local name=$1 out=$2 E=$3 g=$4 between=$5 P='\(pyspin\.py\)' total crank chain_re chain ga gb key callback eval_leaf glued=
	total=$(sum_samples "$out")
	crank=$(sum_samples "$out" ";${E}crank $P")
	chain_re=";Py_RunMain;([^;]*;)*<module> $P;${g}main $P;${g}${E}crank $P;${g}${E}gear_[ab] $P;${g}tooth $P(;[^;(]*)*$"
	chain=$(sum_samples "$out" "$chain_re")
	ga=$(sum_samples "$out" ";${E}gear_a $P;${g}tooth")
	gb=$(sum_samples "$out" ";${E}gear_b $P;${g}tooth")
	key=$(sum_samples "$out" ";key_of $P")
	callback=$(sum_samples "$out" ";sorter $P;${between}key_of $P")
	eval_leaf=$(sum_samples "$out" ";_PyEval_EvalFrameDefault(\\.cold)?$")
	[ -n "$g" ] && glued="; with a frame between crank and gear $(sum_samples "$out" "$P;${g%\?}${E}gear_[ab] $P")"
	echo "$name: $total samples; crank $crank, whole chain $chain; gear_a $ga, gear_b $gb; key_of $key, C frames kept under sorter $callback; ending in the eval loop $eval_leaf$glued"
	check "$name: >= 95% of crank's samples carry Py_RunMain;...;<module>;main;crank;gear_a|gear_b;tooth${g:+ (at most one frame between each two)} ($chain of $crank)" \
		pyspin_enough "$chain" "$crank" 95
	# What the others are, most samples first.
	pyspin_enough "$chain" "$crank" 95 || awk -v re="$chain_re" -v crank=";${E}crank $P" \
		'{ l = $0; sub(/ [0-9]+$/, "", l); if (l ~ crank && l !~ re) print $NF "\t" l }' "$out" |
		sort -rn | head -5 | cut -c1-700 | sed 's/^/    not the chain: /'
	check "$name: gear_a's share of gear_a + gear_b is 60% within 5 points ($ga vs $gb)" \
		awk -v a="$ga" -v b="$gb" 'BEGIN { exit !(a + b > 100 && (s = 100 * a / (a + b)) >= 55 && s <= 65) }'
	check "$name: >= 90% of key_of's samples keep sorter, the C frames of sorted between, and key_of ($callback of $key)" \
		pyspin_enough "$callback" "$key" 90
	pyspin_enough "$callback" "$key" 90 || grep ";key_of $P" "$out" | grep -Ev ";sorter $P;${between}key_of" |
		sort -t' ' -k2 -rn | head -3 | cut -c1-600 | sed 's/^/    not kept: /'
	check "$name: at most 5% of the samples end in the eval loop ($eval_leaf of $total)" \
		[ "$total" -gt 0 -a $((100 * eval_leaf)) -le $((5 * total)) ]
}

# pyspin_native_checks NAME OUT SLEEP_MID SLEEP: the checks of a pyspin.py run in its native mode: >= 90%
# of the samples in time.sleep (leaf frame SLEEP, an ERE) keep poller;poll_once above, with SLEEP_MID
# between, and >= 90% of those in zlib's deflate keep packer;pack: threads with the GIL released keep
# their Python callers.
pyspin_native_checks() {
	local name=$1 out=$2 mid=$3 leaf=$4 P='\(pyspin\.py\)' total sleep sleep_chain zlib zlib_chain
	total=$(sum_samples "$out")
	sleep=$(sum_samples "$out" ";$leaf(;|$)")
	sleep_chain=$(sum_samples "$out" ";poller $P;poll_once $P;$mid$leaf(;|$)")
	zlib=$(sum_samples "$out" ";deflate(;|$)")
	zlib_chain=$(sum_samples "$out" ";packer $P;pack $P;([^;(]*;)*deflate(;|$)")
	echo "$name: $total samples; in time.sleep $sleep (under poller;poll_once $sleep_chain); in zlib's deflate $zlib (under packer;pack $zlib_chain)"
	check "$name: >= 90% of the samples in time.sleep (GIL released) keep poller;poll_once above ($sleep_chain of $sleep)" \
		pyspin_enough "$sleep_chain" "$sleep" 90
	check "$name: >= 90% of the samples in zlib.compress (GIL released) keep packer;pack above ($zlib_chain of $zlib)" \
		pyspin_enough "$zlib_chain" "$zlib" 90
}

# build_workload NAME: compiles tests/workloads/NAME.c to $TMP/NAME with frame pointers everywhere.
build_workload() {
	clang -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls \
		"$(dirname "${BASH_SOURCE[0]}")/../workloads/$1.c" -o "$TMP/$1" || { fail "build workload $1"; exit 1; }
}

# run_flamed WHAT ARGS...: start_flamed, or skip the test (exit 0) where the kernel refuses BPF, or
# fail it (exit 1). With --listen ADDR:0 among ARGS, sets URL to the API's address.
run_flamed() {
	local what=$1 rc port
	shift
	start_flamed "$@"
	rc=$?
	if [ $rc -eq 77 ]; then skip "$what: the kernel refused to load BPF programs (EPERM)"; exit 0; fi
	check "flamed starts" [ $rc -eq 0 ]
	[ $rc -eq 0 ] || exit 1
	for _ in $(seq 50); do grep -q '(port [0-9]' "$TMP/flamed.log" && break; sleep 0.1; done
	port=$(sed -n 's/.*serving the HTTP API on .* (port \([0-9]*\)[,)].*/\1/p' "$TMP/flamed.log")
	local scheme=http
	grep -q '(port [0-9]*, HTTPS)' "$TMP/flamed.log" && scheme=https
	URL=${port:+$scheme://127.0.0.1:$port}
}
