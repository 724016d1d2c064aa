#!/bin/bash
# test_tree.sh - process trees for real: a shell that starts two busy children (one through a shell
# that is never sampled) and one that outlives it (its parent gone before its first sample: handed to
# init, its fork still names the shell); children=1 and merge=1 over the API and flamectl --children
# and --merge, against the processes' own profiles; flush=1 stores what was sampled before answering;
# the status and metrics of where parents came from; bad requests refused.
. "$(dirname "$0")/lib.sh"

need_root tree
build_workload branches
# A long flush interval: only flush=1 stores samples within the test's waits.
run_flamed tree --db "$TMP/flamed.db" --frequency 99 --flush-interval 60 --listen 127.0.0.1:0
F=("$BUILD/flamectl" --server "$URL")
B=$TMP/branches

T0=$(date +%s)
sh -c "'$B' 3 > /dev/null & sh -c \"'$B' 3 > /dev/null; true\" & wait" & root=$!
sh -c "'$B' 3 > /dev/null &" & orphan_parent=$!
sleep 0.5
wait $root $orphan_parent
sleep 3 # the orphan's 3 s
T1=$(($(date +%s) + 1))
W="from=$T0&to=$T1"

code() { curl -s -o "$TMP/body" -w '%{http_code}' "$URL$1"; }

# Nothing is flushed yet (60 s): a plain query sees nothing, flush=1 sees the samples.
curl -sf "$URL/api/v1/profile?pid=$root&children=1&$W" > "$TMP/before.folded"
check "without flush=1 the samples are not stored yet (60 s flushes)" [ ! -s "$TMP/before.folded" ]
curl -sf "$URL/api/v1/processes?pid=$root&children=1&$W&flush=1" > "$TMP/family.json"
check "processes?flush=1: stored first, then answered" jq -e '.processes | length > 0' "$TMP/family.json"
check "status: the flush was asked for (flushes_asked)" \
	eval '[ "$(curl -sf "$URL/api/v1/status" | jq .flushes_asked)" -ge 1 ]'

kids=$(jq -r '[.processes[] | select(.comm == "branches") | .pid] | sort | join(" ")' "$TMP/family.json")
echo "family of $root: $(jq -c '[.processes[] | {pid, comm, ppid, parent, samples}]' "$TMP/family.json")"
check "processes?pid=&children=1: both busy children of the shell, one through an unsampled shell ($kids)" \
	eval '[ "$(echo $kids | wc -w)" -eq 2 ]'
check "processes: every member names a recorded parent (ppid)" jq -e '[.processes[].ppid] | all(. > 0)' "$TMP/family.json"
check "processes: the grandchild's ppid is the shell between (not $root)" \
	jq -e "[.processes[] | select(.comm == \"branches\") | .ppid] | any(. != $root)" "$TMP/family.json"

# The family's profile is the sum of its members' own.
sum=0
for p in $(jq -r '.processes[].pid' "$TMP/family.json"); do
	n=$(curl -sf "$URL/api/v1/profile?pid=$p&$W" | awk '{ s += $NF } END { print s + 0 }')
	sum=$((sum + n))
done
curl -sf "$URL/api/v1/profile?pid=$root&children=1&$W" > "$TMP/family.folded"
fam=$(sum_samples "$TMP/family.folded")
check "profile children=1: the family's samples are its members' own ($fam = $sum)" \
	eval '[ "$fam" -eq "$sum" ] && [ "$fam" -gt 200 ]'
check "profile children=1: each stack's root names its process and pid" \
	eval 'awk -F";" "\$1 !~ / \\[[0-9]+\\]\$/ { bad = 1 } END { exit bad }" "$TMP/family.folded"'
for p in $kids; do
	check "profile children=1: branches [$p] has its own root with leaf_spin" grep -q "^branches \[$p\];.*leaf_spin" "$TMP/family.folded"
done
curl -sf "$URL/api/v1/profile?pid=$root&children=1&merge=1&$W" > "$TMP/merged.folded"
roots=$(cut -d';' -f1 "$TMP/merged.folded" | sort -u)
check "profile merge=1: one tree (root ${roots//$'\n'/, }), the same total" \
	eval '[ "$(echo "$roots" | wc -l)" -eq 1 ] && [ "$(sum_samples "$TMP/merged.folded")" -eq "$fam" ]'
curl -sf "$URL/api/v1/timeline?pid=$root&children=1&$W&step=1" > "$TMP/tl.json"
check "timeline children=1: adds up to the family's profile" jq -e "[.points[].count] | add == $fam" "$TMP/tl.json"
curl -sf "$URL/api/v1/timeline?pid=$root&children=1&$W&step=1&per_thread=1" > "$TMP/tlt.json"
pids=$(jq -r '[.points[].pid] | unique | join(" ")' "$TMP/tlt.json")
check "timeline children=1 per_thread: each thread with its pid, the busy children's among them ($pids)" \
	eval 'for p in $kids; do jq -e "[.points[] | select(.pid == $p and .tid == $p)] | length > 0" "$TMP/tlt.json" > /dev/null || exit 1; done &&
	      jq -e "([.points[].count] | add == $fam) and all(.points[]; .pid > 0)" "$TMP/tlt.json" > /dev/null'
curl -sf "$URL/api/v1/top?pid=$root&children=1&$W" > "$TMP/top.json"
check "top children=1: leaf_spin first, the family's total" \
	jq -e ".total == $fam and .functions[0].name == \"leaf_spin\"" "$TMP/top.json"
curl -sf "$URL/api/v1/profile?pid=$root&children=1&$W&format=svg" > "$TMP/family.svg"
check "profile children=1 svg: well-formed, a frame per process" \
	eval 'xmllint --noout "$TMP/family.svg" && grep -q "branches \[" "$TMP/family.svg"'

# The orphan: its parent exited at once; its fork still names it.
orphan=$(curl -sf "$URL/api/v1/processes?pid=$orphan_parent&children=1&$W" | jq -r '[.processes[] | select(.comm == "branches") | .pid] | first // empty')
check "a child whose parent exited before its first sample is still its parent's ($orphan_parent -> ${orphan:-none})" \
	[ -n "$orphan" ]
check "... its recorded parent is that shell, not init" \
	eval 'curl -sf "$URL/api/v1/processes?$W" | jq -e ".processes[] | select(.pid == $orphan) | .ppid == $orphan_parent"'

# flamectl: --children and --merge, over HTTP and from the database, the same.
"${F[@]}" query --pid $root --children --from $T0 --to $T1 > "$TMP/ctl.folded"
"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid $root --children --from $T0 --to $T1 > "$TMP/db.folded"
check "flamectl query --children: the API's answer, and the database's" \
	eval 'cmp -s "$TMP/ctl.folded" "$TMP/family.folded" && cmp -s "$TMP/db.folded" "$TMP/family.folded"'
"${F[@]}" query --pid $root --children --merge --from $T0 --to $T1 > "$TMP/ctlm.folded"
check "flamectl query --children --merge: the API's merged answer" cmp -s "$TMP/ctlm.folded" "$TMP/merged.folded"
"${F[@]}" processes --pid $root --children --format json --from $T0 --to $T1 > "$TMP/ctlp.json"
check "flamectl processes --pid --children: the family" \
	eval '[ "$(jq -r "[.processes[].pid] | sort | join(\" \")" "$TMP/ctlp.json")" = "$(jq -r "[.processes[].pid] | sort | join(\" \")" "$TMP/family.json")" ]'
"${F[@]}" query --pid $root --merge > /dev/null 2>&1
check "flamectl --merge without --children: usage (2)" [ $? -eq 2 ]
"${F[@]}" query --children > /dev/null 2>&1
check "flamectl --children without --pid: usage (2)" [ $? -eq 2 ]
"${F[@]}" processes --pid $root > /dev/null 2>&1
check "flamectl processes --pid without --children: usage (2)" [ $? -eq 2 ]

# Bad requests.
check "children=1 without pid: 400" eval '[ "$(code "/api/v1/profile?children=1")" = 400 ] && grep -q "children: needs pid" "$TMP/body"'
check "merge=1 without children: 400" eval '[ "$(code "/api/v1/profile?pid=1&merge=1")" = 400 ]'
check "children=1 with tid: 400" eval '[ "$(code "/api/v1/profile?pid=1&tid=1&children=1")" = 400 ]'
check "processes?pid= without children: 400" eval '[ "$(code "/api/v1/processes?pid=1")" = 400 ]'
check "children=2: 400" eval '[ "$(code "/api/v1/top?pid=1&children=2")" = 400 ]'
check "threads takes no children: 400" eval '[ "$(code "/api/v1/threads?pid=1&children=1")" = 400 ]'

# Status and metrics.
curl -sf "$URL/api/v1/status" > "$TMP/status.json"
check "status: processes noted, parents learnt and written" \
	jq -e '.processes.noted > 0 and .processes.written > 0 and .processes.known > 0 and (.processes.from_forks + .processes.from_event) > 0' "$TMP/status.json"
curl -sf "$URL/metrics" > "$TMP/metrics"
check "metrics: flamed_processes_parents_total by source, flamed_flushes_asked_total" \
	eval 'grep -q "^flamed_processes_parents_total{source=\"fork\"} [0-9]" "$TMP/metrics" && grep -q "^flamed_flushes_asked_total [1-9]" "$TMP/metrics" && grep -q "^flamed_processes_forgotten_total 0" "$TMP/metrics"'

stop_flamed
check "the parents are in the database after flamed stops" \
	eval '[ "$(sqlite3 "$TMP/flamed.db" "SELECT count(*) FROM parents WHERE ppid = $root")" -ge 1 ]'
exit $FAILED
