#!/bin/bash
# test_inline.sh - --inline: functions inlined into the sampled code get frames of their own, marked
# _[i], from the binary's DWARF (here its own -g), as perf report shows them.
. "$(dirname "$0")/lib.sh"
need_root inline
build_workload inlined

run_flamed inline --db "$TMP/flamed.db" --frequency 199 --flush-interval 1 --listen 127.0.0.1:0 --inline
T0=$(date +%s)
"$TMP/inlined" 3 & ipid=$!
wait $ipid
curl -sf -o /dev/null "$URL/debug/pprof/profile?seconds=1"
curl -sf "$URL/api/v1/profile?pid=$ipid&from=$T0&to=$(($(date +%s) + 2))&format=folded" > "$TMP/i.folded"
total=$(sum_samples "$TMP/i.folded")
chain=$(sum_samples "$TMP/i.folded" ';host;outer_inl_\[i\];inner_inl_\[i\](;|$)')
echo "inlined: $chain of $total samples under host;outer_inl_[i];inner_inl_[i]"
check "inlined functions are frames of their own, outermost first ($chain of $total samples)" \
	[ "$total" -gt 100 -a $((10 * chain)) -ge $((8 * total)) ]
stop_flamed

run_flamed inline --db "$TMP/plain.db" --frequency 199 --flush-interval 1 --listen 127.0.0.1:0
"$TMP/inlined" 2 & ipid=$!
wait $ipid
curl -sf -o /dev/null "$URL/debug/pprof/profile?seconds=1"
curl -sf "$URL/api/v1/profile?pid=$ipid&from=$T0&format=folded" > "$TMP/p.folded"
check "without --inline, no _[i] frames and host is the leaf" \
	eval '! grep -q "_\[i\]" "$TMP/p.folded" && grep -q ";host$\|;host [0-9]" "$TMP/p.folded"'
stop_flamed
exit $FAILED
