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
	rm -rf "$TMP"
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

# sum_samples FILE [REGEX]: sum of the counts of folded lines whose stack matches REGEX (awk ERE).
sum_samples() {
	awk -v re="${2:-.}" '{ n = $NF; sub(/ [0-9]+$/, ""); if ($0 ~ re) s += n } END { print s + 0 }' "$1"
}
