#!/bin/bash
# test_flamectl.sh - flamectl from the outside: usage errors, exit codes, exact query output on a known database.
# Uses $BUILD/flamectl and $BUILD/tests/test_store --make-fixture (BUILD: absolute build dir, default build).
# Needs no root. Prints "PASS: name" / "FAIL: name ..." per check; exits 1 if any failed.
set -u

BUILD=${BUILD:-build}
FLAMECTL=$BUILD/flamectl
FIXTURE=$BUILD/tests/test_store
failures=0

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; failures=$((failures + 1)); }

for bin in "$FLAMECTL" "$FIXTURE"; do
	if [ ! -x "$bin" ]; then
		echo "FAIL: flamectl tests: $bin is missing: build it first (make $bin)"
		exit 1
	fi
done

tmp=$(mktemp -d /tmp/test_flamectl.XXXXXX) || { echo "FAIL: flamectl tests: mktemp -d failed"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
DB=$tmp/flamed.db
unset FLAMED_DB FLAMED_URL

# run ARGS...: runs flamectl, leaving its exit code in $rc, stdout in $out, stderr in $err.
run() {
	"$FLAMECTL" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	out=$(cat "$tmp/out")
	err=$(cat "$tmp/err")
}

# expect_usage NAME ARGS...: flamectl exits 2, prints a reason and the help hint on stderr, nothing on stdout.
expect_usage() {
	local name=$1
	shift
	run "$@"
	if [ "$rc" -eq 2 ] && [ -z "$out" ] && [[ $err == flamectl:* ]] && [[ $err == *"try flamectl --help"* ]]; then
		pass "$name: exit 2 with a reason"
	else
		fail "$name: want exit 2 and a reason on stderr, got exit $rc, stdout '$out', stderr '$err'"
	fi
}

# expect_output NAME WANT ARGS...: flamectl exits 0 and prints exactly WANT, nothing on stderr.
expect_output() {
	local name=$1 want=$2
	shift 2
	run "$@"
	if [ "$rc" -eq 0 ] && [ "$out" == "$want" ] && [ -z "$err" ]; then
		pass "$name"
	else
		fail "$name: want exit 0 and
$want
got exit $rc, stdout
$out
stderr '$err'"
	fi
}

if "$FIXTURE" --make-fixture "$DB"; then
	pass "fixture database written"
else
	fail "fixture database written by $FIXTURE --make-fixture"
	exit 1
fi

# The fixture (tests/unit/test_store.c): pid 100 at 1700000000 + 0..60 (2023-11-14T22:13:20Z..),
# pid 200 named "a;b c", pid 300 one minute ago.
ALL_100="server;main;handle;parse 8
server;main;handle;write 4
server;main;idle 2
server;main;gc 1
sh;main;handle;parse 1"
WINDOW_100="server;main;handle;write 4
server;main;idle 2
sh;main;handle;parse 1"

# Help and version.
run --help
if [ "$rc" -eq 0 ] && [ -z "$err" ]; then pass "--help exits 0"; else fail "--help: exit $rc, stderr '$err'"; fi
for opt in --db --server --pid --tid --comm --since --from --to --base-pid --base-from --base-to --format --output \
	--reverse --title --width --minwidth --limit --step --per-thread --help --version \
	status processes threads query top flamegraph diff timeline FLAMED_DB FLAMED_URL folded json svg pprof; do
	if [[ $out == *"$opt"* ]]; then pass "--help mentions $opt"; else fail "--help does not mention $opt"; fi
done
run -h
if [ "$rc" -eq 0 ] && [[ $out == Usage:* ]]; then pass "-h prints the help"; else fail "-h: exit $rc"; fi
run query --pid 1 --help
if [ "$rc" -eq 0 ] && [[ $out == Usage:* ]]; then pass "--help after the command"; else fail "--help after the command: exit $rc"; fi
run --version
if [ "$rc" -eq 0 ] && [[ $out == "flamectl "* ]]; then pass "--version: $out"; else fail "--version: exit $rc, '$out'"; fi

# Bad usage: exit 2.
expect_usage "no arguments"
expect_usage "no command" --pid 100 --db "$DB"
expect_usage "unknown command" show --pid 100 --db "$DB"
expect_usage "extra argument" query extra --pid 100 --db "$DB"
expect_usage "missing --pid" query --db "$DB"
expect_usage "--pid without a value" query --pid
expect_usage "--pid abc" query --pid abc --db "$DB"
expect_usage "--pid -1" query --pid -1 --db "$DB"
expect_usage "--pid 12x (trailing garbage)" query --pid 12x --db "$DB"
expect_usage "--pid ' 12' (leading space)" query --pid " 12" --db "$DB"
expect_usage "--pid +12" query --pid +12 --db "$DB"
expect_usage "--pid too large" query --pid 99999999999999999999 --db "$DB"
expect_usage "--pid above the kernel's limit" query --pid 4194305 --db "$DB"
expect_usage "--tid abc" query --pid 100 --tid abc --db "$DB"
expect_usage "unknown long option" query --pid 100 --bogus --db "$DB"
expect_usage "unknown short option" query --pid 100 -x --db "$DB"
expect_usage "--kind idle" query --pid 100 --kind idle --db "$DB"
[[ $err == *"cpu, offcpu or wall"* ]] && pass "--kind idle names the kinds" || fail "--kind idle message: '$err'"
expect_usage "--format bmp" query --pid 100 --format bmp --db "$DB"
[[ $err == *"folded json svg pprof top"* ]] && pass "--format bmp names the formats query takes" || fail "--format bmp message: '$err'"
expect_usage "--format pprof for diff" diff --pid 100 --base-pid 200 --format pprof --db "$DB"
expect_usage "flamegraph without -o" flamegraph --pid 100 --db "$DB"
expect_usage "diff without a base" diff --pid 100 --db "$DB"
expect_usage "threads without --pid" threads --db "$DB"
expect_usage "--tid without --pid" top --tid 5 --db "$DB"
expect_usage "--db and --server together" query --pid 100 --db "$DB" --server http://127.0.0.1:1
expect_usage "--width out of range" query --pid 100 --format svg --width 5 --db "$DB"
expect_usage "--format unknown" query --pid 100 --format xml --db "$DB"
expect_usage "--since bad" query --pid 100 --since 10x --db "$DB"
expect_usage "--since 0" query --pid 100 --since 0 --db "$DB"
expect_usage "--from bad" query --pid 100 --from yesterday --db "$DB"
expect_usage "--from with a bad date" query --pid 100 --from 2023-02-30T00:00:00Z --db "$DB"
expect_usage "--to without --from" query --pid 100 --to 1700000060 --db "$DB"
expect_usage "--since with --from" query --pid 100 --since 1h --from 1700000000 --db "$DB"
expect_usage "--from equal to --to" query --pid 100 --from 1700000010 --to 1700000010 --db "$DB"
expect_usage "--from after --to" query --pid 100 --from 1700000060 --to 1700000010 --db "$DB"
expect_usage "--from in the future" query --pid 100 --from 99999999999 --db "$DB"

# Errors: exit 1 with a message.
run query --pid 100 --db "$tmp/none.db"
if [ "$rc" -eq 1 ] && [ -z "$out" ] && [[ $err == "flamectl: no database at $tmp/none.db: is flamed running? pass --db PATH or set FLAMED_DB" ]]; then
	pass "missing database: exit 1, says what to do"
else
	fail "missing database: exit $rc, stderr '$err'"
fi
if [ ! -e "$tmp/none.db" ]; then pass "missing database not created"; else fail "flamectl created $tmp/none.db"; fi
head -c 8192 /dev/urandom >"$tmp/garbage.db"
run query --pid 100 --db "$tmp/garbage.db"
if [ "$rc" -eq 1 ] && [ -z "$out" ] && [[ $err == flamectl:* ]]; then pass "garbage database: exit 1 ($err)"; else fail "garbage database: exit $rc, stderr '$err'"; fi
# The fixture was written by the store alone: no daemon recorded its sampling period.
run query --pid 100 --kind wall --from 1699999000 --to 1700001000 --db "$DB"
if [ "$rc" -eq 1 ] && [ -z "$out" ] && [[ $err == *"does not say what a CPU sample stands for"* ]]; then
	pass "--kind wall on a database without a sampling period: exit 1 with why"
else
	fail "--kind wall without a period: exit $rc, stdout '$out', stderr '$err'"
fi
run query --pid 100 --kind offcpu --from 1699999000 --to 1700001000 --db "$DB"
if [ "$rc" -eq 0 ] && [ -z "$out" ]; then pass "--kind offcpu of CPU samples only: nothing, exit 0"; else fail "--kind offcpu: exit $rc, stdout '$out'"; fi

# Queries.
expect_output "query pid 100: exact lines, most first" "$ALL_100" query --pid 100 --from 1700000000 --db "$DB"
expect_output "options before the command" "$ALL_100" --db "$DB" --pid 100 --from 1700000000 query
expect_output "options around the command" "$ALL_100" --db "$DB" query --from 1700000000 --pid 100
expect_output "--format folded" "$ALL_100" query --pid 100 --from 1700000000 --format folded --db "$DB"
expect_output "--db=PATH form" "$ALL_100" query --pid=100 --from=1700000000 --db="$DB"
FLAMED_DB=$DB expect_output "\$FLAMED_DB names the database" "$ALL_100" query --pid 100 --from 1700000000
FLAMED_DB=$tmp/none.db expect_output "--db wins over \$FLAMED_DB" "$ALL_100" query --pid 100 --from 1700000000 --db "$DB"
expect_output "pid 200: ';' in the process name becomes ':'" "a:b c;main;handle;parse 7" query --pid 200 --from 1700000000 --db "$DB"
expect_output "pid without data: exit 0, no output" "" query --pid 4242 --from 1700000000 --db "$DB"
expect_output "--tid 101" "server;main;handle;parse 3
server;main;idle 2" query --pid 100 --tid 101 --from 1700000000 --db "$DB"
expect_output "--tid of another process: nothing" "" query --pid 200 --tid 101 --from 1700000000 --db "$DB"
expect_output "--from/--to unix seconds: [from, to)" "$WINDOW_100" query --pid 100 --from 1700000010 --to 1700000060 --db "$DB"
expect_output "--from/--to RFC 3339 Z" "$WINDOW_100" query --pid 100 --from 2023-11-14T22:13:30Z --to 2023-11-14T22:14:20Z --db "$DB"
expect_output "--from/--to RFC 3339 offsets" "$WINDOW_100" query --pid 100 --from 2023-11-14T23:13:30+01:00 --to 2023-11-14T16:44:20.9-05:30 --db "$DB"
expect_output "--to is exclusive" "server;main;handle;parse 8" query --pid 100 --from 1700000000 --to 1700000010 --db "$DB"
expect_output "--from is inclusive" "server;main;gc 1" query --pid 100 --from 1700000060 --db "$DB"
expect_output "default window (1h) holds recent samples only" "recent;main;recent 9" query --pid 300 --db "$DB"
expect_output "default window (1h) leaves old samples out" "" query --pid 100 --db "$DB"
expect_output "--since 2h" "recent;main;recent 9" query --pid 300 --since 2h --db "$DB"
expect_output "--since 10s leaves a minute-old sample out" "" query --pid 300 --since 10s --db "$DB"

if [ ! -e "$DB-wal" ] && [ ! -e "$DB-shm" ]; then
	pass "queries leave no -wal or -shm file next to a database no writer has open"
else
	fail "queries left $(ls "$DB"-* 2>/dev/null | tr '\n' ' ')"
fi

# A user who may read the database but not write its directory, while flamed is stopped (no -wal,
# no -shm): flamectl must still read it.
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: read by an unprivileged user: needs root to switch to user nobody"
elif ! command -v runuser >/dev/null || ! id nobody >/dev/null 2>&1; then
	echo "SKIP: read by an unprivileged user: no runuser or no user nobody"
else
	# A copy of flamectl beside it: the checkout may sit in a directory only root can enter (/root).
	mkdir "$tmp/ro" && cp "$DB" "$tmp/ro/flamed.db" && cp "$FLAMECTL" "$tmp/flamectl" &&
		chmod 755 "$tmp" "$tmp/ro" "$tmp/flamectl" && chmod 644 "$tmp/ro/flamed.db"
	got=$(runuser -u nobody -- "$tmp/flamectl" query --pid 200 --from 1700000000 --db "$tmp/ro/flamed.db" 2>&1)
	if [ "$got" == "a:b c;main;handle;parse 7" ]; then
		pass "read by a user who cannot write the database's directory"
	else
		fail "read by a user who cannot write the database's directory: '$got'"
	fi
fi

echo "flamectl tests: $failures failed"
[ "$failures" -eq 0 ]
