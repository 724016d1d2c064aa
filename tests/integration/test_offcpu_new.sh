#!/bin/bash
# test_offcpu_new.sh - the waits of a process started after flamed, whole from its first: its blocks
# before its unwind tables are ready are deferred as its CPU samples are (copied in BPF, walked in the
# daemon once the tables are there), and their waits stored with the walk. tests/workloads/offwl.c,
# built as Debian builds C (no frame pointers), burns 0.2 s, sleeps 0.6 s in nap() and waits 0.3 s on a
# pipe in wait_pipe(), five times; it is started as soon as flamed serves. At least 95% of its time
# asleep is stored under its whole chain, from _start to nanosleep, and the sleep/pipe split is within
# 5 points of 2:1 (a first sleep walked by frame pointers alone would be a fifth of its sleep, without
# nap). The status and the metrics count the deferred blocks and the waits stored with their walks.
. "$(dirname "$0")/lib.sh"

need_root offcpu_new
W=$(dirname "$0")/../workloads
gcc -O2 -g "$W/offwl.c" -o "$TMP/offwl" || { fail "build offwl"; exit 1; }

run_flamed offcpu_new --db "$TMP/flamed.db" --frequency 99 --flush-interval 1 --off-cpu --listen 127.0.0.1:0
"$TMP/offwl" 5 & pid=$!
wait $pid
check "offwl ran its five cycles" [ $? -eq 0 ]
root='^offwl;_start;__libc_start_main;(__libc_start_call_main;)?main;' # wait_pipe is cycle's tail call
# Its waits are stored by a flush after it exits, those held for a walk still to come with the walk: on
# a loaded machine that may take a few flushes (the unwinder builds the tables of every program sampled
# since flamed started), so the profile is read again, up to 10 s, until its sleep is all there.
for try in $(seq 10); do
	sleep 1
	curl -sf "$URL/api/v1/profile?pid=$pid&kind=offcpu&format=folded&from=-5m&flush=1" > "$TMP/off.folded"
	[ "$(sum_samples "$TMP/off.folded" "${root}cycle;nap;(__)?(clock_)?nanosleep;")" -ge 2900000 ] && break
done
echo "# read $try s after it exited"
awk '{ n = $NF; sub(/ [0-9]+$/, ""); print "#", n, substr($0, 1, 240) }' "$TMP/off.folded" | sort -k2 -nr | head -8

all=$(sum_samples "$TMP/off.folded")
nap=$(sum_samples "$TMP/off.folded" ';nap;')
nap_whole=$(sum_samples "$TMP/off.folded" "${root}cycle;nap;(__)?(clock_)?nanosleep;")
pipe_whole=$(sum_samples "$TMP/off.folded" "${root}(cycle;)?wait_pipe;(__libc_)?read;")
echo "# offwl off CPU: $all us; nap $nap us, $nap_whole whole; wait_pipe's read $pipe_whole us whole"
echo "# not under its whole chain:"
awk -v re="$root" '{ n = $NF; sub(/ [0-9]+$/, ""); if ($0 !~ re) print "#", n, substr($0, 1, 240) }' "$TMP/off.folded" |
	sort -k2 -nr | head -5
check "its 3.0 s asleep are stored (2.9 to 3.3 s: $nap_whole us whole)" \
	[ "$nap_whole" -ge 2900000 ] && [ "$nap_whole" -le 3300000 ]
check "at least 95% of its off-CPU time asleep is under its whole chain, from _start to nanosleep" \
	[ $((100 * nap_whole)) -ge $((95 * $(sum_samples "$TMP/off.folded" 'nanosleep'))) ]
check "sleep/pipe within 5 points of 2:1" \
	awk -v a="$nap_whole" -v b="$pipe_whole" 'BEGIN { if (a + b == 0) exit 1; s = 100 * a / (a + b); print "# sleep share", s; exit !(s >= 61.67 && s <= 71.67) }'

curl -sf "$URL/api/v1/status" > "$TMP/status.json"
jq -c '{offcpu_deferred: .off_cpu.deferred, deferred: .deferred}' "$TMP/status.json"
check "status: off_cpu.deferred and the deferred blocks' counters are there" \
	jq -e '(.off_cpu.deferred | type) == "number" and (.deferred.offcpu_received | type) == "number" and
		.deferred.offcpu_unmatched == 0' "$TMP/status.json"
deferred=$(jq .off_cpu.deferred "$TMP/status.json")
if [ "$deferred" -gt 0 ]; then
	check "status: deferred blocks' records were received and their waits stored with the walks" \
		jq -e '.deferred.offcpu_received > 0 and .deferred.offcpu_stored > 0' "$TMP/status.json"
else
	echo "# no block was deferred: offwl's tables were ready before its first wait"
fi
curl -sf "$URL/metrics" > "$TMP/metrics"
check "metrics: flamed_offcpu_deferred_total and flamed_deferred_offcpu_stored_total" \
	eval 'grep -q "^flamed_offcpu_deferred_total [0-9]" "$TMP/metrics" &&
	      grep -q "^flamed_deferred_offcpu_stored_total [0-9]" "$TMP/metrics"'
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
exit $FAILED
