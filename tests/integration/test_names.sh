#!/bin/bash
# test_names.sh - frames profilers often lose are named: processes that live 30 ms and exit before
# the flush, binaries that exist only inside another mount namespace or were deleted after start.
. "$(dirname "$0")/lib.sh"

need_root names
build_workload short
build_workload branches

# A long flush interval: every short process is gone long before its samples are drained.
run_flamed names --db "$TMP/flamed.db" --frequency 199 --flush-interval 30 --listen 127.0.0.1:0
T0=$(date +%s)

# 1. 200 processes of about 30 ms each.
for _ in $(seq 200); do "$TMP/short"; done

# 2. A binary only another mount namespace has: a tmpfs mounted inside it, the binary copied there.
unshare --mount --pid --fork sh -c "mount -t tmpfs none /mnt && cp '$TMP/branches' /mnt/inns && /mnt/inns 2" > /dev/null 2>&1
ns_rc=$?

# 3. A binary deleted while it runs (an upgrade in place).
cp "$TMP/branches" "$TMP/upgraded"
"$TMP/upgraded" 3 > /dev/null & upid=$!
sleep 0.5
rm -f "$TMP/upgraded"
wait $upid

# 4. JIT code: Node.js writing /tmp/perf-PID.map (--perf-basic-prof), if node is here.
if command -v node > /dev/null; then
	(cd "$TMP" && exec node --perf-basic-prof -e '
		function flamedHotLoop(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i * 7.5) % 3; return s; }
		const end = Date.now() + 3000; let t = 0; while (Date.now() < end) t += flamedHotLoop(200000);
		console.log(t > 0 ? "done" : "");') > /dev/null & npid=$!
	wait $npid
fi

curl -sf -o /dev/null "$URL/debug/pprof/profile?seconds=1" # flushes now
T1=$(($(date +%s) + 2))

# The share of user frames (not the process name, not _[k]) that are named.
named_share() {
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
	       for (i = 2; i <= k; i++) { if (f[i] ~ /_\[k\]$/) continue; all += n; if (f[i] !~ /^\[unknown\]$|\+0x/) ok += n } }
	     END { if (all) printf "%d %d %.1f\n", ok, all, 100 * ok / all; else print "0 0 0" }' "$1"
}

# When a share falls short: the unnamed frames that weigh most, and what the unwinder and the symbolizer
# said, so that a failure in CI can be told apart (tables not built, mappings not captured, ...).
explain() {
	[ "$(awk -v p="$2" 'BEGIN { print (p >= 95) }')" = 1 ] && return
	echo "$1: the heaviest stacks with an unnamed frame:"
	grep -E '\[unknown\]|\+0x' "$TMP/$1.folded" | awk '{ print $NF "\t" $0 }' | sort -rn | head -5 | cut -f2 | cut -c1-400
	echo "$1: /api/v1/status:"
	curl -sf "$URL/api/v1/status" | cut -c1-4000
}

curl -sf "$URL/api/v1/profile?comm=short&from=$T0&to=$T1&format=folded" > "$TMP/short.folded"
read -r ok all pct <<< "$(named_share "$TMP/short.folded")"
echo "short-lived: $ok of $all user frames named ($pct%)"
explain short "$pct"
check "short-lived processes: >= 95% of user frames named ($pct%)" awk -v p="$pct" -v a="$all" 'BEGIN { exit !(a >= 100 && p >= 95) }'
check "short-lived processes: their chain main;burn;spin is there" grep -q ';main;burn;spin' "$TMP/short.folded"

if [ $ns_rc -ne 0 ]; then
	skip "mount namespace: unshare --mount --pid --fork failed here"
else
	curl -sf "$URL/api/v1/profile?comm=inns&from=$T0&to=$T1&format=folded" > "$TMP/ns.folded"
	read -r ok all pct <<< "$(named_share "$TMP/ns.folded")"
	echo "other mount namespace: $ok of $all user frames named ($pct%)"
	explain ns "$pct"
	check "a binary only another mount namespace has: its chain is named ($pct%)" \
		eval 'grep -q ";main;run;alpha;leaf_spin" "$TMP/ns.folded" && awk -v p="$pct" "BEGIN { exit !(p >= 95) }"'
fi

curl -sf "$URL/api/v1/profile?pid=$upid&from=$T0&to=$T1&format=folded" > "$TMP/up.folded"
read -r ok all pct <<< "$(named_share "$TMP/up.folded")"
echo "deleted binary: $ok of $all user frames named ($pct%)"
explain up "$pct"
check "a binary deleted while it runs: its chain is named ($pct%)" \
	eval 'grep -q ";main;run;beta;leaf_spin" "$TMP/up.folded" && awk -v p="$pct" "BEGIN { exit !(p >= 95) }"'

if [ -n "${npid:-}" ]; then
	curl -sf "$URL/api/v1/profile?pid=$npid&from=$T0&to=$T1&format=folded" > "$TMP/node.folded"
	total=$(sum_samples "$TMP/node.folded")
	jit=$(sum_samples "$TMP/node.folded" 'flamedHotLoop[^;]*_\[j\]')
	echo "node: $jit of $total samples in flamedHotLoop, named from its perf map"
	check "JIT frames from /tmp/perf-PID.map are named and marked _[j] ($jit of $total samples in flamedHotLoop)" \
		[ "$total" -gt 0 -a $((2 * jit)) -ge "$total" ]
else
	skip "JIT perf maps: node is not installed"
fi

stop_flamed
check "flamed exits 0" [ $? -eq 0 ]
exit $FAILED
