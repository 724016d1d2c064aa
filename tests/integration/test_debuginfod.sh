#!/bin/bash
# test_debuginfod.sh - binaries with no symbols named from debug files a debuginfod server holds: a
# program and its library (tests/workloads/stripped_main.c, stripped_lib.c) built with build-ids, their
# debug files kept apart (objcopy --only-keep-debug) and served by a real debuginfod (Debian's) on
# loopback, the binaries stripped (strip --strip-all: their static functions lose their names).
#   before: flamed --debuginfod none stores the program's frames as stripped_main+0x... (unnamed);
#   fetched: restarted on the same database with --debuginfod URL, it fetches both debug files in the
#     background; >= 95% of the samples in the program's and the library's code taken after are named,
#     and so are >= 95% of those stored before (named when read); status and metrics count it;
#   server down: a port nothing listens on: counted as failed or missed, every flush still stores,
#     frames stay unnamed;
#   slow server: a server that hangs (tests/workloads/slowhttp.py, DEBUGINFOD_TIMEOUT=2): flamed keeps
#     flushing while the fetch waits, and counts it failed.
# Usage: test_debuginfod.sh [fetched|down|slow]...   (default: all; before runs first with fetched)
. "$(dirname "$0")/lib.sh"
FREQ=199
PIDS=() # what this test started: the workload, debuginfod, the slow server

stop_all() {
	local p
	for p in "${PIDS[@]}" $FLAMED_PID; do
		{ kill -9 "$p" && wait "$p"; } 2> /dev/null
	done
	FLAMED_PID=
	cleanup
}
trap stop_all EXIT

need_root debuginfod
system_python
if ! [ -x /usr/bin/debuginfod ] || ! command -v debuginfod-find > /dev/null; then
	fail "debuginfod and debuginfod-find are installed (scripts/deps.sh test installs debuginfod)"
	exit 1
fi
command -v sqlite3 > /dev/null || { fail "the sqlite3 command is installed (scripts/deps.sh test installs it)"; exit 1; }
# Nothing of the caller's environment decides where flamed (libdebuginfod) looks.
unset DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH DEBUGINFOD_TIMEOUT DEBUGINFOD_RETRY_LIMIT DEBUGINFOD_PROGRESS
W=$(dirname "$0")/../workloads

status() { curl -sf --max-time 10 "$URL/api/v1/status" | jq -r "$@"; }
# sql SQL: the answer of the database $DB (flamed stopped).
sql() { sqlite3 -batch "$DB" "$1"; }
# free_port: a TCP port of 127.0.0.1 nothing listens on now.
free_port() {
	"$SYSPY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# wait_until SECONDS COMMAND...: polls COMMAND every 0.2 s; fails when it never succeeds in time.
wait_until() {
	local n=$(($1 * 5))
	shift
	while ! "$@" > /dev/null 2>&1; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.2
	done
}
# enough PART ALL PCT MIN: PART >= PCT% of ALL, and ALL >= MIN.
enough() { [ "$2" -ge "$4" ] && [ $((100 * $1)) -ge $(($2 * $3)) ]; }

# The workload: built with build-ids (-g for the debug files), then split: debug files to $SRV (all the
# server holds), stripped binaries to $BIN (linked with an rpath to it, and no .gnu_debuglink).
BIN=$TMP/bin
SRV=$TMP/srv
mkdir -p "$BIN" "$SRV"
gcc -O1 -g -fno-omit-frame-pointer -fPIC -shared -Wl,--build-id "$W/stripped_lib.c" -o "$BIN/libstripped.so" &&
	gcc -O1 -g -fno-omit-frame-pointer -Wl,--build-id "$W/stripped_main.c" -o "$BIN/stripped_main" \
		-L"$BIN" -lstripped -Wl,-rpath,"$BIN" || { fail "build stripped_main and libstripped.so"; exit 1; }
objcopy --only-keep-debug "$BIN/stripped_main" "$SRV/stripped_main.debug" &&
	objcopy --only-keep-debug "$BIN/libstripped.so" "$SRV/libstripped.so.debug" &&
	strip --strip-all "$BIN/stripped_main" "$BIN/libstripped.so" || { fail "split the debug files, strip"; exit 1; }
build_id() { readelf -n "$1" 2> /dev/null | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p'; }
BID_MAIN=$(build_id "$BIN/stripped_main")
BID_LIB=$(build_id "$BIN/libstripped.so")
echo "# build-ids: stripped_main $BID_MAIN, libstripped.so $BID_LIB"
check "both binaries have a build-id, the same as their debug files'" \
	[ -n "$BID_MAIN" -a -n "$BID_LIB" -a "$BID_MAIN" = "$(build_id "$SRV/stripped_main.debug")" \
	-a "$BID_LIB" = "$(build_id "$SRV/libstripped.so.debug")" ]
check "stripped: no .symtab left in either binary (nm finds no symbols)" \
	eval '! nm "$BIN/stripped_main" 2> /dev/null | grep -q . && ! nm "$BIN/libstripped.so" 2> /dev/null | grep -q .'
check "stripped: .dynsym has none of the static functions, the library's sl_work only" \
	eval '! nm -D "$BIN/stripped_main" "$BIN/libstripped.so" | grep -Eq " (sm_spin_inner|sm_spin_outer|sl_hash_rounds|main)$" &&
		nm -D "$BIN/libstripped.so" | grep -q " T sl_work$"'
check "the debug files name them" \
	eval 'nm "$SRV/stripped_main.debug" | grep -q " t sm_spin_inner$" && nm "$SRV/libstripped.so.debug" | grep -q " t sl_hash_rounds$"'
# The functions each debug file names (an ERE of whole names): a leaf frame named one of them is named
# from the debug file (or, sl_work, from .dynsym).
fn_names() { nm "$1" | awk 'NF == 3 && $2 ~ /^[tTW]$/ { print $3 }' | sed 's/[.]/\\./g' | paste -sd'|'; }
NAMES_MAIN=$(fn_names "$SRV/stripped_main.debug")
NAMES_LIB=$(fn_names "$SRV/libstripped.so.debug")
STATIC_RE='sm_spin_inner|sm_spin_outer|sl_hash_rounds'

# leaf_share FILE MODULE NAMES: "INSIDE NAMED": the samples of folded FILE whose leaf frame is in MODULE's
# code (named one of NAMES, or MODULE+0x...) and, of those, the named ones.
leaf_share() {
	MOD=$2 NAMES=$3 awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); leaf = f[k]
		if (leaf ~ ("^(" ENVIRON["NAMES"] ")$")) { named += n; inside += n }
		else if (index(leaf, ENVIRON["MOD"] "+0x") == 1) inside += n }
		END { print inside + 0, named + 0 }' "$1"
}
# heaviest FILE: its five heaviest stacks, for a check that failed.
heaviest() { awk '{ print $NF "\t" $0 }' "$1" | sort -rn | head -5 | cut -f2 | cut -c1-300 | sed 's/^/    /'; }
# flushes_since LOG LINE: "FLUSHES EMPTY MS...": the -v log's flush lines after line LINE, how many
# stored no sample, and each one's duration in ms.
flushes_since() {
	tail -n +"$(($2 + 1))" "$1" | awk '$1 == "flamed:" && $2 == "flushed" { n++; if ($3 == 0) e++; ms = ms " " $(NF - 4) }
		END { printf "%d %d%s\n", n, e, ms }'
}

# The stripped program runs through every phase (killed at exit).
"$BIN/stripped_main" 3600 > "$TMP/stripped_main.out" &
PID=$!
PIDS+=("$PID")

# A real debuginfod serving $SRV (only the debug files): -F scans ELF/DWARF files (no RPM, DEB or
# archive scanners), once (-t 0: no rescans, -g 0: no grooming), one scanning thread; its own upstreams
# unset. It listens on every address (0.188 has no option for one; -p 0 is refused): the test asks it on
# 127.0.0.1. A port taken between free_port and its start is tried again. Sets DPORT and DFD_PID.
start_debuginfod() {
	local try a b t0
	for try in 1 2 3; do
		DPORT=$(free_port)
		env -u DEBUGINFOD_URLS /usr/bin/debuginfod -F -p "$DPORT" -d "$TMP/debuginfod-server.$try.sqlite" \
			-t 0 -g 0 -c 1 -v "$SRV" > "$TMP/debuginfod.log" 2>&1 &
		DFD_PID=$!
		PIDS+=("$DFD_PID")
		t0=$EPOCHREALTIME
		for _ in $(seq 150); do # 30 s
			kill -0 "$DFD_PID" 2> /dev/null || break
			a=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$DPORT/buildid/$BID_MAIN/debuginfo")
			b=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$DPORT/buildid/$BID_LIB/debuginfo")
			if [ "$a" = 200 ] && [ "$b" = 200 ]; then
				echo "# debuginfod on port $DPORT served both debug files $(since "$t0") s after its start"
				return 0
			fi
			sleep 0.2
		done
		{ kill -9 "$DFD_PID" && wait "$DFD_PID"; } 2> /dev/null
		echo "# debuginfod on port $DPORT: not serving both (last answers $a, $b); its log's end:"
		tail -5 "$TMP/debuginfod.log" | sed 's/^/    /'
	done
	return 1
}
# since T0: seconds from EPOCHREALTIME T0 to now, to a tenth.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# debuginfod_find ID...: debuginfod-find gets each from the server, into a cache of its own.
debuginfod_find() {
	local id
	for id in "$@"; do
		DEBUGINFOD_URLS=http://127.0.0.1:$DPORT DEBUGINFOD_CACHE_PATH=$TMP/find-cache \
			debuginfod-find debuginfo "$id" > /dev/null || return 1
	done
}
# has_offsets FILE: folded FILE holds frames stripped_main+0x... and libstripped.so+0x....
has_offsets() {
	grep -q ';stripped_main+0x[0-9a-f]*[; ]' "$1" && grep -q ';libstripped\.so+0x[0-9a-f]*[; ]' "$1"
}
# names_static FILE: folded FILE holds a frame named sm_spin_inner, sm_spin_outer or sl_hash_rounds.
names_static() { grep -Eq "(^|;)($STATIC_RE)(;| [0-9]+$)" "$1"; }
# both_in FILE [QUOTE]: FILE says sm_spin_inner and sl_hash_rounds (between QUOTEs: '"' for JSON strings).
both_in() { grep -q "${2}sm_spin_inner$2" "$1" && grep -q "${2}sl_hash_rounds$2" "$1"; }
# cached DIR ID: a file of a path holding ID under DIR, not empty.
cached() { [ -n "$(find "$1" -path "*$2*" -type f -size +0 2> /dev/null)" ]; }
# metric NAME: NAME's value in $TMP/metrics ("" when it is not there).
metric() { awk -v m="$1" '$1 == m { print $2 }' "$TMP/metrics"; }
# share_checks NAME FILE: >= 95% of the samples whose leaf is in each binary's code are named (>= 100 each).
share_checks() {
	local name=$1 file=$2 main_in main_named lib_in lib_named
	read -r main_in main_named <<< "$(leaf_share "$file" stripped_main "$NAMES_MAIN")"
	read -r lib_in lib_named <<< "$(leaf_share "$file" libstripped.so "$NAMES_LIB")"
	echo "# $name: in stripped_main's code $main_named of $main_in samples named; in libstripped.so's $lib_named of $lib_in"
	check "$name: >= 95% of the samples in stripped_main's code named ($main_named of $main_in)" \
		enough "$main_named" "$main_in" 95 100
	check "$name: >= 95% of the samples in libstripped.so's code named ($lib_named of $lib_in)" \
		enough "$lib_named" "$lib_in" 95 100
	enough "$main_named" "$main_in" 95 100 && enough "$lib_named" "$lib_in" 95 100 || heaviest "$file"
}

# before, then fetched: the same database, the program running all along.
test_fetched() {
	local p1_from p1_to t0 t_fetch main_in main_named lib_in lib_named n_then n_now
	DB=$TMP/flamed.db

	if start_debuginfod; then
		pass "debuginfod serves both debug files (GET /buildid/ID/debuginfo answers 200)"
	else
		fail "debuginfod serves both debug files (GET /buildid/ID/debuginfo answers 200)"
		return
	fi
	check "debuginfod-find fetches both from it" debuginfod_find "$BID_MAIN" "$BID_LIB"
	check "it does not serve the stripped binaries (it holds the debug files only)" \
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$DPORT/buildid/$BID_MAIN/executable")" = 404 ]

	# Before: no debuginfod.
	p1_from=$(date +%s)
	run_flamed debuginfod --db "$DB" --frequency $FREQ --flush-interval 1 --listen 127.0.0.1:0 -v --debuginfod none
	wait_tables || echo "# the unwinder still had requests after 30 s"
	sleep 3
	curl -sf "$URL/api/v1/profile?pid=$PID&from=$p1_from&format=folded&flush=1" > "$TMP/before.folded"
	status .debuginfod > "$TMP/before.status"
	stop_flamed
	check "before: flamed exits 0 on SIGTERM" [ $? -eq 0 ]
	p1_to=$(date +%s)
	cp "$TMP/flamed.log" "$TMP/before.log"
	echo "# before: status .debuginfod: $(jq -c . "$TMP/before.status")"
	check "before: --debuginfod none: status says debuginfod is off" jq -e '.enabled == false' "$TMP/before.status"
	read -r main_in main_named <<< "$(leaf_share "$TMP/before.folded" stripped_main "$NAMES_MAIN")"
	read -r lib_in lib_named <<< "$(leaf_share "$TMP/before.folded" libstripped.so "$NAMES_LIB")"
	echo "# before: leaf in stripped_main's code: $main_in samples, $main_named named; in libstripped.so's: $lib_in, $lib_named named (sl_work, from .dynsym)"
	check "before: samples in both binaries' code (>= 100 each: $main_in, $lib_in)" [ "$main_in" -ge 100 -a "$lib_in" -ge 100 ]
	check "before: the static functions are unnamed: no frame sm_spin_inner, sm_spin_outer or sl_hash_rounds" \
		not names_static "$TMP/before.folded"
	check "before: their frames are stripped_main+0x... and libstripped.so+0x..." has_offsets "$TMP/before.folded"
	check "before: the database stores them with their module's build-id" [ "$(sql "SELECT
		(SELECT count(*) FROM frames f JOIN modules m ON m.id = f.module_id
			WHERE f.name LIKE 'stripped_main+0x%' AND m.build_id = '$BID_MAIN') > 0 AND
		(SELECT count(*) FROM frames f JOIN modules m ON m.id = f.module_id
			WHERE f.name LIKE 'libstripped.so+0x%' AND m.build_id = '$BID_LIB') > 0")" = 1 ]

	# Fetched: the same database, the default cache (debuginfod beside the database).
	sleep 1.1 # the next flamed's samples fall in seconds after p1_to
	run_flamed debuginfod --db "$DB" --frequency $FREQ --flush-interval 1 --listen 127.0.0.1:0 -v \
		--debuginfod "http://127.0.0.1:$DPORT"
	t0=$EPOCHREALTIME
	check "fetched: both debug files fetched in the background (.debuginfod.fetched >= 2 within 30 s)" \
		wait_until 30 eval '[ "$(status .debuginfod.fetched)" -ge 2 ]'
	t_fetch=$(date +%s)
	echo "# fetched: $(since "$t0") s after flamed sampled: status .debuginfod: $(status -c .debuginfod)"
	check "fetched: the server answered 200 to both build-ids" \
		eval 'grep -q "GET /buildid/$BID_MAIN/debuginfo 200" "$TMP/debuginfod.log" &&
			grep -q "GET /buildid/$BID_LIB/debuginfo 200" "$TMP/debuginfod.log"'
	# Taken after the fetch (from the next second on): until each code has 100 samples (a loaded host
	# gave stripped_main's 82 in 4 s), 20 s at most.
	for _ in $(seq 20); do
		sleep 1
		curl -sf "$URL/api/v1/profile?pid=$PID&from=$((t_fetch + 1))&format=folded&flush=1" > "$TMP/after.folded"
		read -r main_in _ <<< "$(leaf_share "$TMP/after.folded" stripped_main "$NAMES_MAIN")"
		read -r lib_in _ <<< "$(leaf_share "$TMP/after.folded" libstripped.so "$NAMES_LIB")"
		[ "$main_in" -ge 100 ] && [ "$lib_in" -ge 100 ] && break
	done
	share_checks "after the fetch" "$TMP/after.folded"
	check "after the fetch: the chains main;sm_spin_outer;sm_spin_inner and main;sl_work;sl_hash_rounds" \
		eval 'grep -q ";main;sm_spin_outer;sm_spin_inner " "$TMP/after.folded" &&
			grep -q ";main;sl_work;sl_hash_rounds " "$TMP/after.folded"'

	# The samples stored before, read now: named when read.
	curl -sf "$URL/api/v1/profile?pid=$PID&from=$p1_from&to=$((p1_to + 1))&format=folded" > "$TMP/before-now.folded"
	n_then=$(sum_samples "$TMP/before.folded")
	n_now=$(sum_samples "$TMP/before-now.folded")
	echo "# stored before, read now: $n_now samples in the window ($n_then when read before)"
	share_checks "stored before, read now" "$TMP/before-now.folded"
	check "stored before, read now: the same samples as then, or more (stored at the SIGTERM): $n_now, $n_then" \
		[ "$n_now" -ge "$n_then" -a "$n_then" -gt 0 ]
	curl -sf "$URL/api/v1/profile?pid=$PID&from=$p1_from&to=$((p1_to + 1))&format=json" > "$TMP/before-now.json"
	check "stored before, read now: JSON names them too (\"sm_spin_inner\", \"sl_hash_rounds\")" \
		both_in "$TMP/before-now.json" '"'
	curl -sf "$URL/api/v1/top?pid=$PID&from=$p1_from&to=$((p1_to + 1))" > "$TMP/before-now.top"
	check "stored before, read now: so does /api/v1/top" \
		both_in "$TMP/before-now.top"

	curl -sf "$URL/api/v1/status" | jq .debuginfod > "$TMP/fetched.status"
	echo "# fetched: status .debuginfod: $(jq -c . "$TMP/fetched.status")"
	# (every field there; dropped may count other binaries of a busy host: not checked)
	check "status: on, its URL, >= 2 fetched and in the cache, stored frames named when read" \
		jq -e --arg u "http://127.0.0.1:$DPORT" '.enabled == true and (.urls | contains($u)) and .fetched >= 2 and
			.files >= 2 and .bytes > 0 and .named_at_read >= 1 and .dropped >= 0 and .queued >= 0 and
			(.fetching == 0 or .fetching == 1) and .missed >= 0 and .failed >= 0 and .evicted >= 0' "$TMP/fetched.status"
	curl -sf "$URL/metrics" > "$TMP/metrics"
	grep '^flamed_debuginfod_' "$TMP/metrics" | sed 's/^/# /'
	for m in fetched_total missed_total failed_total dropped_total cache_bytes cache_files named_at_read_total; do
		check "metrics: flamed_debuginfod_$m ($(metric flamed_debuginfod_$m))" grep -Eq "^flamed_debuginfod_$m [0-9]" "$TMP/metrics"
	done
	check "metrics: fetched_total >= 2, cache_files >= 2, cache_bytes > 0, named_at_read_total >= 1" \
		awk '$1 == "flamed_debuginfod_fetched_total" { f = $2 } $1 == "flamed_debuginfod_cache_files" { n = $2 }
			$1 == "flamed_debuginfod_cache_bytes" { b = $2 } $1 == "flamed_debuginfod_named_at_read_total" { r = $2 }
			END { exit !(f >= 2 && n >= 2 && b > 0 && r >= 1) }' "$TMP/metrics"
	check "the debug files are in the default cache, debuginfod beside the database ($TMP/debuginfod)" \
		eval 'cached "$TMP/debuginfod" "$BID_MAIN" && cached "$TMP/debuginfod" "$BID_LIB"'
	check "fetched: flamed still serves (/healthz)" [ "$(curl -sf "$URL/healthz")" = ok ]
	stop_flamed
	check "fetched: flamed exits 0 on SIGTERM" [ $? -eq 0 ]
	cp "$TMP/flamed.log" "$TMP/fetched.log"
	check "fetched: the samples flushed after the fetch were named as stored (frames sm_spin_inner, sl_hash_rounds in the database)" \
		[ "$(sql "SELECT count(DISTINCT name) FROM frames WHERE name IN ('sm_spin_inner', 'sl_hash_rounds')")" = 2 ]
	{ kill -9 "$DFD_PID" && wait "$DFD_PID"; } 2> /dev/null
	# Read from the database directly (flamed stopped, the server too): named from the files fetched.
	"$BUILD/flamectl" --db "$DB" query --pid "$PID" --since 1h --format folded > "$TMP/db.folded"
	share_checks "flamectl --db, the server gone" "$TMP/db.folded"
	echo "# debuginfod answered $(grep -c ' 200 [0-9]' "$TMP/debuginfod.log") requests 200, $(grep -c ' 404 [0-9]' "$TMP/debuginfod.log") 404"
}

# flushing_checks CASE LINE F0 S0 F1 S1: the -v log's flushes after line LINE are three or more, each
# stored samples, and samples_stored rose from S0 to S1 (status's flushes F0 to F1).
flushing_checks() {
	local name=$1 from=$2 f0=${3:-0} s0=${4:-0} f1=${5:-0} s1=${6:-0} n empty ms
	read -r n empty ms <<< "$(flushes_since "$TMP/flamed.log" "$from")"
	echo "# $name: $n flushes logged ($f0 -> $f1 in status), $empty without samples; samples stored $s0 -> $s1; flush durations (ms): ${ms:-none}"
	check "$name: flamed keeps flushing (>= 3 flushes: $n logged, $f0 -> $f1)" [ "$n" -ge 3 -a $((f1 - f0)) -ge 3 ]
	check "$name: each flush stored samples ($empty of $n stored none; $s0 -> $s1 stored)" [ "$empty" -eq 0 -a "$s1" -gt "$s0" ]
}

# unnamed_checks CASE FILE FROM: PID's frames since FROM (kept in $TMP/FILE.folded) stay
# stripped_main+0x..., none named from a debug file.
unnamed_checks() {
	curl -sf "$URL/api/v1/profile?pid=$PID&from=$3&format=folded&flush=1" > "$TMP/$2.folded"
	check "$1: the frames stay stripped_main+0x... and libstripped.so+0x..." has_offsets "$TMP/$2.folded"
	check "$1: sm_spin_inner, sm_spin_outer and sl_hash_rounds stay unnamed" not names_static "$TMP/$2.folded"
}

# Server down: a port nothing listens on, a cache of its own.
test_down() {
	local port t0 line f0 s0 f1 s1

	port=$(free_port)
	t0=$(date +%s)
	run_flamed debuginfod --db "$TMP/down.db" --frequency $FREQ --flush-interval 1 --listen 127.0.0.1:0 -v \
		--debuginfod "http://127.0.0.1:$port" --debuginfod-cache "$TMP/down-cache"
	check "server down: the fetches fail or miss (.debuginfod.failed + .missed >= 1 within 30 s)" \
		wait_until 30 eval '[ "$(status ".debuginfod.failed + .debuginfod.missed")" -ge 1 ]'
	echo "# server down: status .debuginfod: $(status -c .debuginfod)"
	line=$(wc -l < "$TMP/flamed.log")
	f0=$(status .flushes) s0=$(status .samples_stored)
	sleep 3.5
	f1=$(status .flushes) s1=$(status .samples_stored)
	flushing_checks "server down" "$line" "$f0" "$s0" "$f1" "$s1"
	unnamed_checks "server down" down "$t0"
	check "server down: on, nothing fetched" [ "$(status '.debuginfod.enabled and .debuginfod.fetched == 0')" = true ]
	check "server down: flamed still serves (/healthz)" [ "$(curl -sf "$URL/healthz")" = ok ]
	stop_flamed
	check "server down: flamed exits 0 on SIGTERM" [ $? -eq 0 ]
	cp "$TMP/flamed.log" "$TMP/down.log"
}

# Slow server: tests/workloads/slowhttp.py answers its first request (made here), then hangs each later
# one (a header a byte a second); libdebuginfod gives up after DEBUGINFOD_TIMEOUT=2 s without 100 KB/s
# (and tries again, DEBUGINFOD_RETRY_LIMIT times: 2 by default, so a fetch hangs about 6 s).
test_slow() {
	local sport spid t0 line f0 s0 f1 s1 fetching=0 failed

	echo '{}' > "$TMP/slow.body"
	: > "$TMP/slow.log"
	"$SYSPY" "$W/slowhttp.py" "$TMP/slow.body" "$TMP/slow.log" > "$TMP/slow.out" 2>&1 &
	spid=$!
	PIDS+=("$spid")
	wait_until 10 grep -q '^ready' "$TMP/slow.out"
	sport=$(awk '$1 == "ready" { print $2 }' "$TMP/slow.out")
	curl -sf --max-time 5 -o /dev/null "http://127.0.0.1:$sport/"
	check "slow server: listening, its one answer spent (every request from now on hangs)" grep -q answered "$TMP/slow.log"
	t0=$(date +%s)
	export DEBUGINFOD_TIMEOUT=2
	run_flamed debuginfod --db "$TMP/slow.db" --frequency $FREQ --flush-interval 1 --listen 127.0.0.1:0 -v \
		--debuginfod "http://127.0.0.1:$sport" --debuginfod-cache "$TMP/slow-cache"
	unset DEBUGINFOD_TIMEOUT
	check "slow server: flamed's request reached it and hangs (within 30 s)" wait_until 30 grep -q hanging "$TMP/slow.log"
	line=$(wc -l < "$TMP/flamed.log")
	f0=$(status .flushes) s0=$(status .samples_stored)
	for _ in $(seq 17); do # 3.4 s
		[ "$(status .debuginfod.fetching)" = 1 ] && fetching=1
		sleep 0.2
	done
	f1=$(status .flushes) s1=$(status .samples_stored)
	flushing_checks "slow server, while the request hangs" "$line" "$f0" "$s0" "$f1" "$s1"
	wait_until 30 eval '[ "$(status .debuginfod.failed)" -ge 1 ]'
	failed=$(status .debuginfod.failed)
	echo "# slow server: status .debuginfod: $(status -c .debuginfod); .fetching seen 1: $fetching; the server's log: $(paste -sd, "$TMP/slow.log")"
	check "slow server: the fetch was seen in flight (.fetching 1) or counted failed (${failed:-null})" \
		[ "$fetching" = 1 -o "${failed:-0}" -ge 1 ]
	check "slow server: the hung fetch is given up and counted failed within 30 s (${failed:-null})" [ "${failed:-0}" -ge 1 ]
	check "slow server: libdebuginfod left the hung request (DEBUGINFOD_TIMEOUT honoured)" grep -q 'client left' "$TMP/slow.log"
	unnamed_checks "slow server" slow "$t0"
	check "slow server: flamed still serves (/healthz)" [ "$(curl -sf "$URL/healthz")" = ok ]
	t0=$EPOCHREALTIME
	stop_flamed
	check "slow server: flamed exits 0 on SIGTERM" [ $? -eq 0 ]
	echo "# slow server: from SIGTERM to exit: $(since "$t0") s"
	cp "$TMP/flamed.log" "$TMP/slow-flamed.log"
	{ kill -9 "$spid" && wait "$spid"; } 2> /dev/null
}

[ $# -gt 0 ] || set -- fetched down slow
for t in "$@"; do
	SECONDS=0
	"test_$t"
	echo "# ($t: $SECONDS s)"
done
check "the stripped program ran all along" kill -0 "$PID"
exit $FAILED
