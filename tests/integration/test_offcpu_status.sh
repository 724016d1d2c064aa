#!/bin/bash
# test_offcpu_status.sh - flamed --off-cpu against a real kernel: tests/workloads/waits.c (a thread that burns,
# sleeps and waits on a pipe a second thread answers) blocks for known times; after a flush,
# /api/v1/status ("off_cpu") and /metrics (flamed_offcpu_*) show the blocks counted and the time
# stored, which the database's off-CPU rows add up to.
. "$(dirname "$0")/lib.sh"

need_root offcpu
build_workload waits
# No timed flush in the test's few seconds: the one flush is the one it asks for.
run_flamed offcpu --db "$TMP/flamed.db" --off-cpu --off-cpu-min-us 1000 --flush-interval 60 --listen 127.0.0.1:0

# 2 s of 100 ms burn, 200 ms nanosleep, 300 ms pipe: the waiter is blocked about 1.6 s, the feeder
# about 2 s (waits of 200-600 ms, far above --off-cpu-min-us).
"$TMP/waits" 2 > "$TMP/waits.out"
check "the workload ran" grep -q '^sleep ' "$TMP/waits.out"
# /debug/pprof/profile flushes once its second is over: every wait of the workload has ended by then.
curl -sf -o /dev/null "$URL/debug/pprof/profile?seconds=1"
curl -sf "$URL/api/v1/status" > "$TMP/status.json"
curl -sf "$URL/metrics" > "$TMP/metrics"
jq -c .off_cpu "$TMP/status.json"

check "status: off_cpu enabled, its --off-cpu-min-us and the stacks it keeps" \
	jq -e '.off_cpu.enabled == true and .off_cpu.min_wait_us == 1000 and .off_cpu.max_stacks > 0' "$TMP/status.json"
# (Not walked + reused <= blocks: the per-CPU counters are read one after another while threads block.)
check "status: threads blocked, their stacks walked, their waits ended" \
	jq -e '.off_cpu.blocks > 0 and .off_cpu.walked > 0 and .off_cpu.waits > 0' "$TMP/status.json"
check "status: the losses by kind (no_storage, stack_evicted, counts_full)" \
	jq -e '.off_cpu.lost | keys == ["counts_full", "no_storage", "stack_evicted"]' "$TMP/status.json"
check "status: off-CPU keys stored, over a second of the workload's waits" \
	jq -e '.off_cpu.keys_stored > 0 and .off_cpu.us_stored > 1000000 and .off_cpu.us_unstored == 0' "$TMP/status.json"
us=$(jq .off_cpu.us_stored "$TMP/status.json")
db=$(sqlite3 -batch "$TMP/flamed.db" 'SELECT coalesce(sum(count), 0) FROM samples WHERE kind = 1')
check "status: the off-CPU time stored is the database's off-CPU rows ($us us, $db in the database)" [ "$us" = "$db" ]
wpid=$(awk '$1 == "pid" { print $2 }' "$TMP/waits.out")
mine=$(sqlite3 -batch "$TMP/flamed.db" "SELECT coalesce(sum(count), 0) FROM samples WHERE kind = 1 AND pid = ${wpid:-0}")
check "the workload's own waits are stored, over a second ($mine us)" [ "$mine" -gt 1000000 ]

metric() { awk -v n="$1" '$1 == n { print $2 }' "$TMP/metrics"; }
check "metrics: flamed_offcpu_enabled 1" [ "$(metric flamed_offcpu_enabled)" = 1 ]
check "metrics: flamed_offcpu_min_wait_seconds 0.001" [ "$(metric flamed_offcpu_min_wait_seconds)" = 0.001000 ]
check "metrics: flamed_offcpu_blocks_total > 0 ($(metric flamed_offcpu_blocks_total))" \
	awk '$1 == "flamed_offcpu_blocks_total" && $2 > 0 { ok = 1 } END { exit !ok }' "$TMP/metrics"
check "metrics: flamed_offcpu_seconds_total is the status' us_stored ($(metric flamed_offcpu_seconds_total) s)" \
	[ "$(metric flamed_offcpu_seconds_total)" = "$(awk -v u="$us" 'BEGIN { printf "%d.%06d", u / 1e6, u % 1e6 }')" ]
check "metrics: flamed_offcpu_lost_total by kind, with HELP and TYPE" \
	eval '[ "$(grep -c "^flamed_offcpu_lost_total{kind=\"[a-z_]*\"} [0-9]*$" "$TMP/metrics")" = 3 ] &&
	      grep -q "^# TYPE flamed_offcpu_lost_total counter$" "$TMP/metrics"'

stop_flamed
check "flamed --off-cpu exits 0 on SIGTERM" [ $? -eq 0 ]
exit $FAILED
