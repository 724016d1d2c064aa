#!/bin/bash
# soak_http.sh - the HTTP API under load: wrk keeps 64 connections busy on loopback for 30 s (32 on
# /api/v1/profile, 32 on /api/v1/processes) while flamed samples a CPU burner: no failed request, no
# crash, sampling and storing go on; each endpoint's p99 latency is printed.
. "$(dirname "$0")/../integration/lib.sh"
FREQ=99
DURATION=${WRK_SECONDS:-30}
PIDS=()

# Stops the burner and wrk (SIGTERM: timeout passes it on to wrk), then lib.sh's cleanup.
stop_all() {
	local p
	for p in "${PIDS[@]}"; do
		{ kill -TERM "$p" && wait "$p"; } 2> /dev/null
	done
	cleanup
}
trap stop_all EXIT

need_root "http soak"
command -v wrk > /dev/null || { fail "http soak: wrk is missing (scripts/deps.sh test installs it)"; exit 1; }
build_workload branches
run_flamed "http soak" --db "$TMP/flamed.db" --frequency $FREQ --flush-interval 1 --listen 127.0.0.1:0
"$TMP/branches" $((DURATION + 30)) > /dev/null &
wpid=$!
PIDS+=("$wpid")
sleep 3 # a few flushes to query

status() { curl -sf --max-time 10 "$URL/api/v1/status"; }
cpu_ns() { awk '{ printf "%.0f\n", $1 }' "/proc/$1/schedstat"; }

# wrk_run NAME PATH: 32 connections on PATH for DURATION seconds, output in $TMP/wrk.NAME (run it in
# the background: it becomes timeout, which stops wrk if it overruns).
wrk_run() {
	exec timeout $((DURATION + 30)) wrk -t 1 -c 32 -d "${DURATION}s" --timeout 10s --latency "$URL$2" > "$TMP/wrk.$1" 2>&1
}
# p99 NAME: the 99% line of wrk's latency distribution.
p99() { awk '$1 == "99%" { print $2 }' "$TMP/wrk.$1"; }
requests() { awk '/requests in/ { print $1 }' "$TMP/wrk.$1"; }

s0=$(status)
c0=$(cpu_ns $wpid)
t0=$(date +%s)
wrk_run profile "/api/v1/profile?from=-5m" &
w1=$!
wrk_run processes "/api/v1/processes?from=-5m" &
w2=$!
PIDS+=("$w1" "$w2")
wait $w1
r1=$?
wait $w2
r2=$?
t1=$(date +%s)
c1=$(cpu_ns $wpid)
sleep 2.5 # the flush of the last second
s1=$(status)

for n in profile processes; do
	echo "wrk /api/v1/$n: $(requests $n) requests in ${DURATION} s ($(awk '/Requests\/sec/ { print $2 }' "$TMP/wrk.$n")/s)," \
		"p50 $(awk '$1 == "50%" { print $2 }' "$TMP/wrk.$n"), p99 $(p99 $n)"
	sed 's/^/    /' "$TMP/wrk.$n"
done
check "wrk ran its ${DURATION} s on both endpoints (exit $r1, $r2)" [ $r1 -eq 0 -a $r2 -eq 0 ]
for n in profile processes; do
	check "/api/v1/$n: requests answered ($(requests $n))" [ "$(requests $n)" -gt 0 ]
	check "/api/v1/$n: no non-2xx response" not grep -q 'Non-2xx' "$TMP/wrk.$n"
	check "/api/v1/$n: no socket error (connect, read, write, timeout)" not grep -q 'Socket errors' "$TMP/wrk.$n"
	check "/api/v1/$n: p99 latency reported ($(p99 $n))" [ -n "$(p99 $n)" ]
done
codes=$(curl -sf "$URL/metrics" | awk '/^flamed_http_requests_total\{/ && !/code="200"/ { s += $2 } END { print s + 0 }')
check "flamed's own counters: no response but 200 ($codes others)" [ "$codes" = 0 ]
check "flamed still answers /healthz after the load" [ "$(curl -sf "$URL/healthz")" = ok ]

flushes=$(($(echo "$s1" | jq .flushes) - $(echo "$s0" | jq .flushes)))
stored=$(($(echo "$s1" | jq .samples_stored) - $(echo "$s0" | jq .samples_stored)))
check "flushes went on during the load ($flushes in about $((t1 - t0 + 2)) s at --flush-interval 1)" \
	[ "$flushes" -ge $(((t1 - t0) * 8 / 10)) ]
check "samples were stored during the load ($stored)" [ "$stored" -gt 0 ]
got=$(sqlite3 -batch "$TMP/flamed.db" "SELECT coalesce(sum(count), 0) FROM samples WHERE pid = $wpid AND ts >= $t0 AND ts < $t1")
secs=$(sqlite3 -batch "$TMP/flamed.db" "SELECT count(DISTINCT ts) FROM samples WHERE pid = $wpid AND ts >= $t0 AND ts < $t1")
want=$(awk -v c0="$c0" -v c1="$c1" -v f=$FREQ 'BEGIN { printf "%d", (c1 - c0) / 1e9 * f }')
echo "the burner: $got samples stored over the $((t1 - t0)) s of load, its CPU time says $want; seen in $secs seconds"
check "the burner was sampled in every second of the load ($secs of $((t1 - t0)))" [ "$secs" -ge $((t1 - t0 - 1)) ]
check "none of its samples were lost: at least 90% of what its CPU time implies ($got vs $want)" \
	awk -v g="$got" -v w="$want" 'BEGIN { exit !(g >= 0.9 * w) }'
stop_flamed
check "flamed exits 0 on SIGTERM after the load" [ $? -eq 0 ]
exit $FAILED
