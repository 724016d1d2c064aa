#!/bin/bash
# test_sent.sh - a CPU sample taken in user code, its stack walked by a walker program, is sent whole
# through the samples ring (struct sample_record) instead of being counted in two BPF hash maps; the
# drain reads the ring with the maps. Each sample is stored once however it came: sent, counted in the
# maps, or counted there because the ring was full (FLAMED_TEST_SENT_RING, tests only: a one-page ring).
. "$(dirname "$0")/lib.sh"

need_root sent
system_python
build_workload branches
FREQ=99

# status: "SAMPLES READ RING_FULL MALFORMED ENABLED RING_BYTES" of bpf.sent, after a flush.
status() {
	curl -sf -o /dev/null "$URL/api/v1/processes?flush=1"
	curl -sf "$URL/api/v1/status" |
		jq -r '.bpf.sent | "\(.samples) \(.read) \(.ring_full) \(.malformed) \(.enabled) \(.ring_bytes)"'
}

# one_case NAME: runs branches (2 CPU seconds) and, where its frames are read, pyspin.py (2 s) under the
# flamed started, and checks that each one's samples are all stored, once, with whole stacks.
one_case() {
	local name=$1 stolen cpu expected total chain
	steal_mark
	"$TMP/branches" 2 > "$TMP/branches.out" & local bpid=$!
	wait $bpid
	stolen=$(steal_factor)
	curl -sf "$URL/api/v1/profile?pid=$bpid&format=folded&from=-5m&flush=1" > "$TMP/b.folded"
	total=$(sum_samples "$TMP/b.folded")
	chain=$(sum_samples "$TMP/b.folded" ';main;run;(alpha|beta);leaf_spin(;|$)')
	cpu=$(awk '/cpu_seconds/ { print $2 }' "$TMP/branches.out")
	expected=$(awk -v c="$cpu" -v f=$FREQ 'BEGIN { printf "%d", c * f }')
	echo "# $name: branches $total samples for $cpu CPU seconds (about $expected, x $stolen stolen), $chain through main;run;alpha|beta;leaf_spin"
	check "$name: every sample of a C burner stored once: $total within 10% of $expected (x $stolen)" \
		awk -v t="$total" -v e="$expected" -v x="$stolen" 'BEGIN { exit !(e > 0 && t >= 0.9 * e && t <= 1.1 * e * x) }'
	check "$name: its stacks whole ($chain of $total through main;run;alpha|beta;leaf_spin)" \
		[ "$total" -gt 0 -a $((100 * chain)) -ge $((95 * total)) ]
	if ! py_supported "$SYSPY_VER"; then
		skip "$name: Python $SYSPY_VER's frames are not read"
		return
	fi
	steal_mark
	local ppid pytotal pychain
	"$SYSPY" "$(dirname "$0")/../workloads/pyspin.py" 2 > "$TMP/pyspin.out" & ppid=$!
	wait $ppid
	stolen=$(steal_factor)
	curl -sf "$URL/api/v1/profile?pid=$ppid&format=folded&from=-5m&flush=1" > "$TMP/p.folded"
	pytotal=$(sum_samples "$TMP/p.folded")
	pychain=$(sum_samples "$TMP/p.folded" ';(Engine\.)?crank \(pyspin\.py\);(Engine\.)?gear_[ab] \(pyspin\.py\);tooth \(pyspin\.py\)')
	echo "# $name: pyspin $pytotal samples, $pychain through crank;gear_a|gear_b;tooth"
	check "$name: a Python process's samples are stored with their Python frames ($pychain of $pytotal)" \
		[ "$pytotal" -gt 50 -a "$pychain" -gt 0 ]
}

# ---- The ring as flamed sizes it ----
run_flamed sent --db "$TMP/a.db" --listen 127.0.0.1:0 --frequency $FREQ --flush-interval 1
read -r s0 r0 f0 m0 on bytes <<< "$(status)"
one_case "ring"
read -r s1 r1 f1 m1 _ _ <<< "$(status)"
echo "# ring ($bytes bytes): sent +$((s1 - s0)), read +$((r1 - r0)), ring full +$((f1 - f0)), malformed +$((m1 - m0))"
check "the samples ring is on, sized ($on, $bytes bytes)" [ "$on" = true -a "$bytes" -ge 65536 ]
check "samples taken in user code were sent whole (+$((s1 - s0)) > 0)" [ $((s1 - s0)) -gt 0 ]
# A sample sent after the last drain is read at the next: a few may be in flight.
check "the drains read what was sent (+$((r1 - r0)) of +$((s1 - s0)), within 20)" \
	[ $((r1 - r0)) -le $((s1 - s0 + 20)) -a $((r1 - r0 + 20)) -ge $((s1 - s0)) ]
check "no record refused, the ring never full (malformed +$((m1 - m0)), full +$((f1 - f0)))" \
	[ $((m1 - m0)) -eq 0 -a $((f1 - f0)) -eq 0 ]
curl -sf "$URL/metrics" > "$TMP/metrics"
check "metrics: flamed_bpf_sent_samples_total and flamed_bpf_sent_ring_bytes, as the status says" \
	eval 'grep -q "^flamed_bpf_sent_samples_total [1-9][0-9]*$" "$TMP/metrics" &&
	      grep -q "^flamed_bpf_sent_ring_bytes $bytes$" "$TMP/metrics"'
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]

# ---- A ring of one page: full at once, its samples counted in the maps instead ----
FLAMED_TEST_SENT_RING=4096 run_flamed sent --db "$TMP/b.db" --listen 127.0.0.1:0 --frequency $FREQ --flush-interval 1
read -r s0 r0 f0 m0 on bytes <<< "$(status)"
one_case "full ring"
read -r s1 r1 f1 m1 _ _ <<< "$(status)"
echo "# full ring ($bytes bytes): sent +$((s1 - s0)), read +$((r1 - r0)), ring full +$((f1 - f0))"
check "a one-page ring fills: samples counted in the maps instead (ring full +$((f1 - f0)) > 0)" \
	[ "$bytes" -eq 4096 -a $((f1 - f0)) -gt 0 ]
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
exit $FAILED
