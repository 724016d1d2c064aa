#!/bin/bash
# test_resilience.sh - flamed when things go wrong, for real: SIGTERM stores what is pending; kill -9
# during heavy writes leaves a sound database that the next start goes on with, losing at most one
# flush interval; full BPF maps are counted and shown; a full disk is logged once, sampling goes on in
# bounded memory and storing resumes; resident size stays under a cap while stacks and processes churn.
# Usage: test_resilience.sh [sigterm|kill9|mapsfull|diskfull|memory]...   (default: all of them)
# Knobs, turned up by tests/soak/: KILL_ROUNDS (5), CHURN_SECONDS (25), RSS_CAP_MIB (96);
# DEBUG_KEEP=DIR copies the temporary directory (logs, databases) there at exit.
. "$(dirname "$0")/lib.sh"

KILL_ROUNDS=${KILL_ROUNDS:-5}
CHURN_SECONDS=${CHURN_SECONDS:-25}
RSS_CAP_MIB=${RSS_CAP_MIB:-96}
# rss_check NAME COND...: a check of resident size, skipped in a sanitizer build (make test SANITIZE=1),
# where it measures AddressSanitizer's shadow memory and quarantine, not flamed.
rss_check() {
	case "$BUILD" in
	*build-san*) skip "$1: a sanitizer build's resident size is ASan's" ;;
	*) check "$@" ;;
	esac
}
PIDS=() # workloads to stop at exit
MNT=    # the small tmpfs of the disk-full test

# Stops what this test started (workloads, flamed, the tmpfs), then lib.sh's cleanup.
stop_all() {
	local p
	for p in "${PIDS[@]}" $FLAMED_PID; do
		{ kill -9 "$p" && wait "$p"; } 2> /dev/null
	done
	FLAMED_PID=
	[ -n "$MNT" ] && mountpoint -q "$MNT" && umount "$MNT"
	[ -n "$DEBUG_KEEP" ] && cp -r "$TMP" "$DEBUG_KEEP"
	cleanup
}
trap stop_all EXIT

# bg_workload NAME ARGS...: starts $TMP/NAME in the background, stopped at exit; sets WPID.
bg_workload() {
	local name=$1
	shift
	"$TMP/$name" "$@" > "$TMP/$name.$RANDOM.out" &
	WPID=$!
	PIDS+=("$WPID")
}

# stop_pid PID: SIGKILL and reap, without the shell's "Killed" notice.
stop_pid() {
	{ kill -9 "$1" && wait "$1"; } 2> /dev/null
}

# wait_until SECONDS COMMAND...: polls COMMAND every 0.1 s; fails when it never succeeds in time.
wait_until() {
	local n=$(($1 * 10))
	shift
	while ! "$@" > /dev/null 2>&1; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.1
	done
}

sql() { sqlite3 -batch "$1" "$2"; }
integrity() { sql "$1" 'PRAGMA integrity_check' 2>&1; }
status() { curl -sf --max-time 10 "$URL/api/v1/status" | jq -r "$1"; }
rss_kib() { awk -v k="${2:-VmRSS}:" '$1 == k { print $2 }' "/proc/$1/status"; }
# cpu_ns PID...: nanoseconds the processes (one thread each) have run, from /proc/PID/schedstat.
cpu_ns() {
	local p
	for p in "$@"; do cat "/proc/$p/schedstat"; done | awk '{ s += $1 } END { printf "%.0f\n", s }'
}
now() { date +%s.%N; }

# SIGTERM with a flush pending (the interval is longer than the test): exit 0, every sample stored.
test_sigterm() {
	local db=$TMP/sigterm.db freq=499 wpid flushes rc stored cpu expected stolen

	run_flamed sigterm --db "$db" --frequency $freq --flush-interval 600 --listen 127.0.0.1:0
	steal_mark
	"$TMP/branches" 3 > "$TMP/sigterm.out" &
	wpid=$!
	wait $wpid
	stolen=$(steal_factor)
	flushes=$(status .flushes)
	stop_flamed
	rc=$?
	check "SIGTERM: flamed exits 0" [ $rc -eq 0 ]
	check "SIGTERM: it says it stores what is pending" grep -q 'Terminated: storing what is pending' "$TMP/flamed.log"
	stored=$(sql "$db" "SELECT coalesce(sum(count), 0) FROM samples WHERE pid = $wpid")
	cpu=$(awk '/cpu_seconds/ { print $2 }' "$TMP/sigterm.out")
	expected=$(awk -v c="$cpu" -v f=$freq 'BEGIN { printf "%d", c * f }')
	echo "SIGTERM: $stored samples stored for $cpu CPU seconds at $freq Hz (expected about $expected; x $stolen for stolen time), $flushes flushes before"
	check "SIGTERM: the pending flush is stored: no flush before ($flushes), $stored samples within 10% of $expected (x $stolen)" \
		awk -v t="$stored" -v e="$expected" -v x="$stolen" -v f="$flushes" \
		'BEGIN { exit !(f == 0 && t >= 0.9 * e && t <= 1.1 * e * x) }'
	check "SIGTERM: integrity_check ok" [ "$(integrity "$db")" = ok ]
}

# launch ARGS...: starts flamed, its log lines appended to $TMP/flamed.log after the unix time they
# came (EPOCHREALTIME), and returns as soon as it samples (polled every 10 ms: the kill -9 rounds time
# what it samples from there).
launch() {
	local n0
	n0=$(grep -c ' flamed: sampling' "$TMP/flamed.log" 2> /dev/null)
	"$BUILD/flamed" "$@" 2> >(while IFS= read -r l; do echo "$EPOCHREALTIME $l"; done >> "$TMP/flamed.log") &
	FLAMED_PID=$!
	for _ in $(seq 1000); do
		[ "$(grep -c ' flamed: sampling' "$TMP/flamed.log")" -gt "${n0:-0}" ] && return 0
		kill -0 "$FLAMED_PID" 2> /dev/null || break
		sleep 0.01
	done
	tail -5 "$TMP/flamed.log" | sed 's/^/    /'
	return 1
}

# kill -9 at a random moment while two CPU burners and a churn of new stacks keep every one-second
# flush writing; then the database must pass integrity_check, the next flamed must go on in it, and
# each kill may lose at most one flush interval (and the flush under way) of the burners' samples:
# their CPU time times the frequency says how many were taken. flamed -v logs each flush, how long it
# took and when it drained the maps (its own clock: this shell reads its log late under load), so a
# round also knows when the last flush before the kill drained them: everything drained before that
# commit must be in the database. The burners' CPU time is read every few tens of ms meanwhile: their
# share of the CPUs swings with the flushes and the churn, so what they took after that drain is
# measured, not taken from their average rate.
test_kill9() {
	local db=$TMP/kill9.db freq=997 b1 b2 r c0 c1 t0 t1 ok after before=0 stored expected loss
	local from flush_ms window gap last cd cpid bound durable per_s lost_s max_lost_s=0 sampled_s=0 since early
	local lost_total=0 bound_total=0 expected_total=0 stored_total=0 dups stolen

	: > "$TMP/flamed.log"
	bg_workload branches 3600
	b1=$WPID
	bg_workload branches 3600
	b2=$WPID
	bg_workload churn -r 20 -t 1 -j 1 3600
	for r in $(seq "$KILL_ROUNDS"); do
		from=$(($(wc -l < "$TMP/flamed.log") + 1))
		if ! launch --db "$db" --frequency $freq --flush-interval 1 --listen none -v; then
			fail "kill -9 round $r: flamed starts on the database of the previous round"
			return
		fi
		c0=$(cpu_ns $b1 $b2)
		t0=$(now)
		steal_mark
		# "CPU_NS TIME", TIME taken after the CPU time was read: it was at most that by TIME.
		while :; do echo "$(cpu_ns $b1 $b2) $EPOCHREALTIME"; sleep 0.05; done > "$TMP/cpu.log" &
		cpid=$!
		sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 1.2 + 2.3 * r / 32767 }')"
		c1=$(cpu_ns $b1 $b2)
		t1=$(now)
		kill -9 "$FLAMED_PID"
		stolen=$(steal_factor)
		kill "$cpid"
		{ wait "$cpid"; } 2> /dev/null
		{ wait "$FLAMED_PID"; } 2> /dev/null
		FLAMED_PID=
		sleep 0.1 # the log's last lines
		ok=$(integrity "$db")
		after=$(sql "$db" "SELECT coalesce(sum(count), 0) FROM samples WHERE pid IN ($b1, $b2)")
		stored=$((after - before))
		before=$after
		# From the log: the longest flush, the time from the last committed flush's drain to the kill,
		# and the longest time between two drains. A line read by t1 was written before the kill.
		read -r flush_ms window gap last < <(tail -n +"$from" "$TMP/flamed.log" | awk -v t0="$t0" -v t1="$t1" '
			$2 == "flamed:" && $3 == "flushed" && $(NF - 2) == "drained" && $1 <= t1 {
				ms = $(NF - 4); d = $NF; if (ms > m) m = ms
				if (d > t0 && d - last > g) g = d - last; if (d > t0) last = d }
			BEGIN { last = t0 } END { printf "%d %.3f %.3f %.6f\n", m, t1 - last, g, last }')
		# The burners' CPU time read last by that drain (c0 when none was).
		cd=$(awk -v c="$c0" -v d="$last" 'NF == 2 && $2 <= d { c = $1 } END { print c }' "$TMP/cpu.log")
		# expected: the burners' CPU seconds times the frequency. durable: what they took since the last
		# committed drain; bound: in one flush interval (1 s) and the flush under way, at their average
		# rate. Both with 5% and 20 samples for the sampling's own jitter. The flush under way is not in
		# the log and may be the round's slowest (CI: 44 ms logged, killed 1.138 s after the last
		# drain): it has run for the longest logged flush or for what the kill came past the interval,
		# and at most 1 s, so a drain late by more than that still fails.
		read -r expected durable bound per_s < <(awk -v c0="$c0" -v c1="$c1" -v cd="$cd" -v t0="$t0" -v t1="$t1" \
			-v f=$freq -v ms="$flush_ms" -v w="$window" 'BEGIN { e = (c1 - c0) / 1e9 * f; rate = e / (t1 - t0);
				u = ms / 1e3; if (w - 1 > u) u = w - 1; if (u > 1) u = 1
				printf "%d %d %d %.1f\n", e, (c1 - cd) / 1e9 * f + 0.05 * e + 20, rate * (1 + u) + 0.05 * e + 20, rate }')
		loss=$((expected - stored))
		lost_s=$(awk -v l=$loss -v r="$per_s" 'BEGIN { printf "%.2f", l / r }')
		[ "$(awk -v a="$lost_s" -v b="$max_lost_s" 'BEGIN { print (a > b) }')" = 1 ] && max_lost_s=$lost_s
		echo "kill -9 round $r: killed $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s after it" \
			"started sampling, $window s after the last committed drain (flushes up to $flush_ms ms, drains" \
			"up to $gap s apart): $stored of $expected samples stored, $loss lost = $lost_s s of sampling"
		check "kill -9 round $r: integrity_check ok" [ "$ok" = ok ]
		check "kill -9 round $r: the restarted flamed stored into the same database ($after samples in all)" \
			[ "$stored" -gt 0 ]
		check "kill -9 round $r: every committed flush survived ($loss lost <= $durable taken since the last drain)" \
			[ "$loss" -le "$durable" ]
		check "kill -9 round $r: lost at most one flush interval and the flush under way ($loss <= $bound)" \
			[ "$loss" -le "$bound" ]
		# Sampling began before c0 was read (this shell reads the log late under load): what the burners
		# took from then, at their average rate, may be stored too.
		since=$(tail -n +"$from" "$TMP/flamed.log" | awk '$2 == "flamed:" && $3 == "sampling" && $4 == "since" { s = $5 } END { print s }')
		early=$(awk -v r="$per_s" -v a="${since:-$t0}" -v b="$t0" 'BEGIN { x = (b - a) * r; if (x < 0) x = 0; printf "%d", x }')
		check "kill -9 round $r: nothing counted twice ($stored <= $expected x $stolen for stolen time + $early taken before the first reading + 5% + 20)" \
			awk -v s="$stored" -v e="$expected" -v x="$stolen" -v y="$early" 'BEGIN { exit !(s <= 1.05 * e * x + y + 20) }'
		sampled_s=$(awk -v s="$sampled_s" -v a="$t0" -v b="$t1" 'BEGIN { print s + b - a }')
		lost_total=$((lost_total + loss)) bound_total=$((bound_total + bound))
		expected_total=$((expected_total + expected)) stored_total=$((stored_total + stored))
	done
	stop_pid $b1
	stop_pid $b2
	echo "kill -9: $KILL_ROUNDS kills, $stored_total of $expected_total samples stored, $lost_total lost:" \
		"$(awk -v l=$lost_total -v e=$expected_total -v s="$sampled_s" -v n="$KILL_ROUNDS" \
			'BEGIN { printf "%.2f", l / e * s / n }') s of sampling per kill on average, $max_lost_s s at most" \
		"(--flush-interval 1)"
	check "kill -9: in all, at most one flush interval lost per kill ($lost_total <= $bound_total)" \
		[ "$lost_total" -le "$bound_total" ]
	# A stack is its frames (frame_ids) or, for the few stored without, its text (schema 3 keeps no
	# text for stacks with frames).
	dups=$(sql "$db" 'SELECT count(*) - (SELECT count(*) FROM (SELECT DISTINCT folded, frame_ids FROM stacks)) FROM stacks')
	check "kill -9: each stack stored once across the restarts ($dups duplicates)" [ "$dups" = 0 ]
	launch --db "$db" --frequency $freq --flush-interval 1 --listen none
	sleep 1.5
	stop_flamed
	check "kill -9: flamed starts once more on it and exits 0 on SIGTERM" [ $? -eq 0 ]
	check "kill -9: integrity_check ok at the end" [ "$(integrity "$db")" = ok ]
}

# --max-keys 256 and --max-stacks 256 under churn: what does not fit is counted as lost, shown by
# /api/v1/status, /metrics and the log, and flamed goes on serving and storing. The samples ring is one
# page (FLAMED_TEST_SENT_RING): full at once, the samples it would take go to the maps (as where a host's
# samples outrun it), which fill.
test_mapsfull() {
	local db=$TMP/maps.db s1 s2 m full stored1 stored2 stackfull

	FLAMED_TEST_SENT_RING=4096 run_flamed mapsfull --db "$db" --frequency 499 --flush-interval 1 --max-keys 256 --max-stacks 256 \
		--listen 127.0.0.1:0
	bg_workload churn 8
	wait_until 10 eval '[ "$(status .samples_lost.counts_full)" -gt 0 ]'
	s1=$(curl -sf "$URL/api/v1/status")
	sleep 3
	m=$(curl -sf "$URL/metrics" | awk '/^flamed_samples_lost_total\{kind="counts_full"\}/ { print $2 }')
	s2=$(curl -sf "$URL/api/v1/status")
	full=$(echo "$s2" | jq .samples_lost.counts_full)
	stackfull=$(echo "$s2" | jq .samples_lost.stack_map_full)
	stored1=$(echo "$s1" | jq .samples_stored)
	stored2=$(echo "$s2" | jq .samples_stored)
	echo "maps full: $full samples lost to a full counts map, $stackfull stacks to a full stacks map;" \
		"$(echo "$s2" | jq .samples) counted, $stored2 stored"
	check "maps full: /api/v1/status counts the samples the full counts map dropped ($full)" [ "${full:-0}" -gt 0 ]
	check "maps full: and the stacks the full stacks map dropped ($stackfull)" [ "${stackfull:-0}" -gt 0 ]
	check "maps full: /metrics shows them too ($m, status $(echo "$s1" | jq .samples_lost.counts_full)..$full)" \
		eval '[ -n "$m" ] && [ "$m" -ge "$(echo "$s1" | jq .samples_lost.counts_full)" ] && [ "$m" -le "$full" ]'
	check "maps full: the log says what to raise" grep -q 'counts map full.*(raise --max-keys)' "$TMP/flamed.log"
	check "maps full: flamed keeps storing ($stored1 -> $stored2 samples stored)" [ "$stored2" -gt "$stored1" ]
	check "maps full: and serving (/healthz)" [ "$(curl -sf "$URL/healthz")" = ok ]
	check "maps full: the churn's samples are in the database" \
		[ "$(sql "$db" "SELECT count(*) FROM samples s JOIN names n ON n.id = s.comm_id WHERE n.name = 'churn'")" -gt 0 ]
	stop_pid "$WPID"
	stop_flamed
	check "maps full: flamed exits 0 on SIGTERM" [ $? -eq 0 ]
}

# The database on a 4 MiB tmpfs, filled up by another file while flamed stores a churn of new stacks:
# logged once, unstored samples counted, sampling goes on in bounded memory; once the file is gone,
# storing works again and the database is sound.
test_diskfull() {
	local db u1 u2 r1 r2 t_back s1 s2 n newer

	MNT=$TMP/small
	mkdir -p "$MNT"
	if ! mount -t tmpfs -o size=4m flamed-test "$MNT"; then
		MNT=
		skip "disk full: cannot mount a tmpfs"
		return
	fi
	db=$MNT/flamed.db
	run_flamed diskfull --db "$db" --frequency 499 --flush-interval 1 --listen 127.0.0.1:0
	bg_workload churn 3600
	check "disk full: flamed stores before the disk fills" wait_until 10 eval '[ "$(status .samples_stored)" -gt 0 ]'
	dd if=/dev/zero of="$MNT/filler" bs=16k 2> /dev/null
	check "disk full: flamed says it cannot store" wait_until 30 grep -q 'cannot store samples' "$TMP/flamed.log"
	u1=$(status .samples_unstored)
	r1=$(rss_kib "$FLAMED_PID")
	sleep 5
	u2=$(status .samples_unstored)
	r2=$(rss_kib "$FLAMED_PID")
	n=$(grep -c 'cannot store samples' "$TMP/flamed.log")
	echo "disk full: $(grep 'cannot store samples' "$TMP/flamed.log" | head -1)"
	echo "disk full: samples_unstored $u1 -> $u2 in 5 s; resident $r1 -> $r2 KiB"
	check "disk full: logged once ($n times)" [ "$n" -eq 1 ]
	check "disk full: it says the disk is full and what to do" grep -q 'the disk is full: free space' "$TMP/flamed.log"
	check "disk full: sampling goes on, what cannot be stored is counted ($u1 -> $u2 unstored)" [ "$u2" -gt "$u1" ]
	rss_check "disk full: resident size bounded ($r1 -> $r2 KiB: grows by < 8 MiB, stays < $RSS_CAP_MIB MiB)" \
		[ $((r2 - r1)) -lt 8192 -a "$r2" -lt $((RSS_CAP_MIB * 1024)) ]
	check "disk full: flamed still serves (/healthz)" [ "$(curl -sf "$URL/healthz")" = ok ]
	rm -f "$MNT/filler"
	t_back=$(date +%s)
	check "disk full: once there is room, it says storing works again" \
		wait_until 20 grep -q 'works again;' "$TMP/flamed.log"
	echo "disk full: $(grep 'works again;' "$TMP/flamed.log" | head -1)"
	s1=$(status .samples_stored)
	sleep 2.5
	s2=$(status .samples_stored)
	check "disk full: samples are stored again ($s1 -> $s2)" [ "$s2" -gt "$s1" ]
	stop_pid "$WPID"
	stop_flamed
	check "disk full: flamed exits 0 on SIGTERM" [ $? -eq 0 ]
	newer=$(sql "$db" "SELECT coalesce(sum(count), 0) FROM samples WHERE ts >= $t_back")
	check "disk full: the database holds samples from after the space came back ($newer)" [ "$newer" -gt 0 ]
	check "disk full: integrity_check ok" [ "$(integrity "$db")" = ok ]
	umount "$MNT" && MNT=
}

# flamed at 499 Hz with default limits while churn makes thousands of new stacks a minute in
# processes that live 60 ms: VmRSS, sampled every second, stays under RSS_CAP_MIB; in a run of two
# minutes or more, once the caches have filled, the last 40% of the run grows less than 16 MiB over
# the first 60%.
test_memory() {
	local db=$TMP/mem.db cpid i rss max=0 hwm early late stacks procs secs trace=""

	run_flamed memory --db "$db" --frequency 499 --flush-interval 2 --listen 127.0.0.1:0
	bg_workload churn -r 40 "$CHURN_SECONDS"
	cpid=$WPID
	: > "$TMP/rss"
	for ((i = 0; i < CHURN_SECONDS + 30; i++)); do
		kill -0 "$cpid" 2> /dev/null || break
		rss=$(rss_kib "$FLAMED_PID")
		echo "$i ${rss:-0}" >> "$TMP/rss"
		[ "${rss:-0}" -gt "$max" ] && max=$rss
		[ $((i % (CHURN_SECONDS / 5 > 0 ? CHURN_SECONDS / 5 : 1))) -eq 0 ] && trace="$trace ${i}s:$((rss / 1024))"
		sleep 1
	done
	wait "$cpid"
	sleep 2.5
	hwm=$(rss_kib "$FLAMED_PID" VmHWM)
	stop_flamed
	check "memory: flamed exits 0 on SIGTERM after the churn" [ $? -eq 0 ]
	secs=$(wc -l < "$TMP/rss")
	early=$(awk -v n="$secs" 'NR <= 0.6 * n && $2 > m { m = $2 } END { print m + 0 }' "$TMP/rss")
	late=$(awk -v n="$secs" 'NR > 0.6 * n && $2 > m { m = $2 } END { print m + 0 }' "$TMP/rss")
	stacks=$(sql "$db" "SELECT count(DISTINCT stack_id) FROM samples s JOIN names n ON n.id = s.comm_id WHERE n.name = 'churn'")
	procs=$(sql "$db" "SELECT count(DISTINCT pid) FROM samples s JOIN names n ON n.id = s.comm_id WHERE n.name = 'churn'")
	echo "memory: $secs s of churn: $stacks distinct stacks and $procs processes stored; VmRSS MiB by time:$trace;" \
		"max $((max / 1024)) MiB (first 60% $((early / 1024)), last 40% $((late / 1024))), VmHWM $((hwm / 1024)) MiB"
	check "memory: the churn made thousands of distinct stacks a minute ($stacks in $secs s)" \
		[ $((stacks * 60 / secs)) -ge 3000 ]
	check "memory: and processes came and went ($procs sampled)" [ $((procs * 60 / secs)) -ge 600 ]
	rss_check "memory: VmHWM $((hwm / 1024)) MiB stays under the cap of $RSS_CAP_MIB MiB" [ "$hwm" -lt $((RSS_CAP_MIB * 1024)) ]
	if [ "$secs" -ge 120 ]; then
		rss_check "memory: steady once the caches are full: the last 40% peaks $(((late - early) / 1024)) MiB over the first 60% (< 16)" \
			[ $((late - early)) -lt 16384 ]
	fi
}

need_root resilience
command -v sqlite3 > /dev/null || { fail "resilience: the sqlite3 command is missing (scripts/deps.sh test installs it)"; exit 1; }
build_workload branches
build_workload churn
[ $# -gt 0 ] || set -- sigterm kill9 mapsfull diskfull memory
for t in "$@"; do
	SECONDS=0
	"test_$t"
	echo "($t: $SECONDS s)"
done
exit $FAILED
