#!/bin/bash
# test_http.sh - the HTTP API and flamectl --server over loopback against a real, sampling flamed:
# every endpoint and format, cross-checked against each other and against go tool pprof.
. "$(dirname "$0")/lib.sh"

need_root http
build_workload branches
run_flamed http --db "$TMP/flamed.db" --frequency 99 --flush-interval 1 --listen 127.0.0.1:0
check "flamed says which port it serves on ($URL)" [ -n "$URL" ]
export FLAMED_URL=$URL

T0=$(date +%s)
"$TMP/branches" 4 > /dev/null & wpid=$!
live_pprof() { curl -sf -o "$TMP/live.pb.gz" "$URL/debug/pprof/profile?seconds=2"; }
sleep 1
live_pprof & live=$!
wait $wpid
check "/debug/pprof/profile?seconds=2 answers while sampling" wait $live
sleep 2.5 # one more flush
T1=$(($(date +%s) + 1))
W="from=$T0&to=$T1"

code() { curl -s -o "$TMP/body" -w '%{http_code}' "$URL$1"; }
check "/healthz is ok" [ "$(curl -sf "$URL/healthz")" = ok ]

code "/api/v1/status" > /dev/null
check "status: json with samples, cpus and the frequency" \
	jq -e ".samples > 0 and .cpus == $(nproc) and .frequency == 99 and .flushes > 0" "$TMP/body"
check "status: off_cpu off without --off-cpu, nothing counted" \
	jq -e '.off_cpu.enabled == false and .off_cpu.blocks == 0 and .off_cpu.keys_stored == 0' "$TMP/body"

curl -sf "$URL/api/v1/processes?$W" > "$TMP/procs.json"
check "processes: the workload is listed under its name" \
	jq -e ".processes[] | select(.pid == $wpid and .comm == \"branches\" and .samples > 100)" "$TMP/procs.json"

curl -sf "$URL/api/v1/profile?pid=$wpid&$W&format=folded" > "$TMP/http.folded"
"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid $wpid --from $T0 --to $T1 > "$TMP/db.folded"
"$BUILD/flamectl" query --pid $wpid --from $T0 --to $T1 > "$TMP/srv.folded"
total=$(sum_samples "$TMP/db.folded")
check "profile folded over HTTP = flamectl --db = flamectl --server ($total samples)" \
	eval 'cmp -s "$TMP/http.folded" "$TMP/db.folded" && cmp -s "$TMP/srv.folded" "$TMP/db.folded" && [ "$total" -gt 50 ]'
leaf=$(sum_samples "$TMP/db.folded" ';leaf_spin$')          # as the leaf
inleaf=$(sum_samples "$TMP/db.folded" ';leaf_spin(;|$)')    # anywhere (kernel frames may follow)

curl -sf "$URL/api/v1/profile?pid=$wpid&$W&format=json" > "$TMP/p.json"
check "profile json: a {name, value, children} tree whose root holds every sample" \
	jq -e ".name == \"all\" and .value == $total and (.children[0].children | length) > 0" "$TMP/p.json"
check "profile json: leaf_spin's nodes add up to its samples ($inleaf)" \
	jq -e "[.. | objects | select(.name == \"leaf_spin\") | .value] | add == $inleaf" "$TMP/p.json"

curl -sf "$URL/api/v1/profile?pid=$wpid&$W&format=svg&title=t%3Cx%3E" > "$TMP/p.svg"
check "profile svg: well-formed XML (xmllint)" xmllint --noout "$TMP/p.svg"
check "profile svg: shows leaf_spin and the escaped title" eval 'grep -q leaf_spin "$TMP/p.svg" && grep -q "t&lt;x&gt;" "$TMP/p.svg"'
curl -sf "$URL/api/v1/profile?pid=$wpid&$W&format=svg&reverse=1" > "$TMP/r.svg"
check "profile svg reverse=1: an icicle graph, well-formed" eval 'xmllint --noout "$TMP/r.svg" && ! cmp -s "$TMP/p.svg" "$TMP/r.svg"'

curl -sf "$URL/api/v1/profile?pid=$wpid&$W&format=pprof" > "$TMP/p.pb.gz"
export HOME=$TMP GOCACHE=$TMP/gocache GOPATH=$TMP/gopath
go tool pprof -top -sample_index=samples "$TMP/p.pb.gz" > "$TMP/pprof.top" 2>&1
pleaf=$(awk '$NF == "leaf_spin" { print $1 }' "$TMP/pprof.top")
check "pprof: go tool pprof reads it, leaf_spin flat = the folded count ($pleaf vs $leaf)" [ "$pleaf" = "$leaf" ]
go tool pprof -raw "$TMP/p.pb.gz" > "$TMP/pprof.raw" 2>&1
check "pprof: mappings carry the workload's build-id" \
	grep -q "$(readelf -n "$TMP/branches" | sed -n 's/.*Build ID: //p')" "$TMP/pprof.raw"

curl -sf "$URL/api/v1/top?pid=$wpid&$W&limit=3" > "$TMP/top.json"
check "top: leaf_spin first by self, its count as in folded" \
	jq -e ".functions[0].name == \"leaf_spin\" and .functions[0].self == $leaf and .functions[0].total == $inleaf and .total == $total" "$TMP/top.json"
check "top: main's total holds every sample of the chain" \
	jq -e "[.functions[] | select(.name == \"leaf_spin\")][0].total <= $total" "$TMP/top.json"

curl -sf "$URL/api/v1/timeline?pid=$wpid&$W&step=1" > "$TMP/tl.json"
check "timeline: per-second points add up to the profile" jq -e "[.points[].count] | add == $total" "$TMP/tl.json"
check "timeline: no second holds more than one CPU's 99 samples" jq -e "[.points[].count] | max > 0 and max <= 101" "$TMP/tl.json"
curl -sf "$URL/api/v1/timeline?pid=$wpid&$W&step=1&per_thread=1" > "$TMP/tlt.json"
check "timeline per_thread: points carry the tid and its pid" \
	jq -e "([.points[].tid] | unique == [$wpid]) and ([.points[].pid] | unique == [$wpid])" "$TMP/tlt.json"

curl -sf "$URL/api/v1/threads?pid=$wpid&$W" > "$TMP/th.json"
check "threads: the one thread with all samples" jq -e ".threads == [{\"tid\": $wpid, \"name\": \"branches\", \"samples\": $total}]" "$TMP/th.json"

mid=$(( (T0 + T1) / 2 ))
curl -sf "$URL/api/v1/diff?pid=$wpid&base_from=$T0&base_to=$mid&from=$mid&to=$T1&format=folded" > "$TMP/d.folded"
check "diff folded: 'stack base new' lines with leaf_spin" \
	awk 'NF < 3 || $(NF-1) !~ /^[0-9]+$/ || $NF !~ /^[0-9]+$/ { bad = 1 } /leaf_spin/ { seen = 1 } END { exit bad || !seen }' "$TMP/d.folded"
curl -sf "$URL/api/v1/diff?pid=$wpid&base_from=$T0&base_to=$mid&from=$mid&to=$T1&format=svg" > "$TMP/d.svg"
check "diff svg: well-formed" xmllint --noout "$TMP/d.svg"
curl -sf "$URL/api/v1/diff?pid=$wpid&base_from=$T0&base_to=$mid&from=$mid&to=$T1&format=json" > "$TMP/d.json"
check "diff json: deltas over the same shape" jq -e ".delta != null and .value > 0" "$TMP/d.json"

check "live pprof: go tool pprof reads it and sees leaf_spin" \
	eval 'go tool pprof -top -sample_index=samples "$TMP/live.pb.gz" 2>&1 | grep -q leaf_spin'

curl -sf "$URL/metrics" > "$TMP/metrics"
check "metrics: every sample line is 'name{labels} number'" \
	awk '/^#/ { next } !/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [-+0-9.eEInfa]+$/ { print "bad: " $0; bad = 1 } END { exit bad }' "$TMP/metrics"
check "metrics: samples counted" awk '/^flamed_samples_total / && $2 > 0 { ok = 1 } END { exit !ok }' "$TMP/metrics"
check "metrics: flamed_offcpu_enabled 0 without --off-cpu" grep -qx 'flamed_offcpu_enabled 0' "$TMP/metrics"
check "metrics: every metric has HELP and TYPE" \
	awk '/^# HELP/ { h[$3] = 1 } /^# TYPE/ { t[$3] = 1 } !/^#/ { n = $1; sub(/\{.*/, "", n); m[n] = 1 }
	     END { for (n in m) { b = n; sub(/_(bucket|sum|count)$/, "", b); if (!(n in h) && !(b in h) || !(n in t) && !(b in t)) { print "no HELP/TYPE: " n; bad = 1 } } exit bad }' "$TMP/metrics"
# The text format keeps a metric's lines together: its samples right after its TYPE, never after another
# metric's, and the metric nowhere else.
check "metrics: each metric's samples follow its own TYPE, all in one run" \
	awk '/^# TYPE/ { if ($3 in seen) { print "TYPE again: " $3; bad = 1 } cur = $3; seen[cur] = 1; next } /^#/ { next }
	     { n = $1; sub(/\{.*/, "", n); b = n; sub(/_(bucket|sum|count)$/, "", b)
	       if (n != cur && b != cur) { print "sample of " n " under the TYPE of " cur; bad = 1 } }
	     END { exit bad }' "$TMP/metrics"

for bad in "/api/v1/profile?pid=abc" "/api/v1/profile?pid=-1" "/api/v1/profile?from=20&to=10" \
	"/api/v1/profile?format=bmp" "/api/v1/profile?pid=1&pid=2" "/api/v1/profile?bogus=1" \
	"/api/v1/profile?title=$(head -c 300 /dev/zero | tr '\0' x)" "/api/v1/timeline?step=0" \
	"/api/v1/diff?format=pprof" "/api/v1/threads" "/debug/pprof/profile?seconds=0" "/nope"; do
	c=$(code "$bad")
	check "bad input $(echo "$bad" | cut -c1-60) -> 4xx with a JSON error ($c)" \
		eval '[ "${c:0:1}" = 4 ] && { [ "$c" = 404 ] || jq -e ".error | length > 0" "$TMP/body" > /dev/null; }'
done
check "the daemon still answers /healthz after the bad input" [ "$(curl -sf "$URL/healthz")" = ok ]

# flamectl --server: the other commands
"$BUILD/flamectl" processes --from $T0 --to $T1 > "$TMP/procs.tsv"
check "flamectl processes (piped): tab-separated, the workload listed" \
	awk -F'\t' -v p=$wpid '$1 == p && $2 == "branches" { ok = 1 } END { exit !ok }' "$TMP/procs.tsv"
"$BUILD/flamectl" flamegraph --pid $wpid --from $T0 --to $T1 -o "$TMP/fg.svg"
check "flamectl flamegraph -o FILE writes a valid SVG" xmllint --noout "$TMP/fg.svg"
"$BUILD/flamectl" top --pid $wpid --from $T0 --to $T1 --limit 1 > "$TMP/top.tsv"
want=$(printf '%s\t%s\tleaf_spin' "$leaf" "$inleaf")
check "flamectl top (piped): self, total, name" eval '[ "$(cat "$TMP/top.tsv")" = "$want" ] || { cat "$TMP/top.tsv"; false; }'
"$BUILD/flamectl" status > "$TMP/status.txt"
check "flamectl status" grep -q samples "$TMP/status.txt"
"$BUILD/flamectl" --server http://127.0.0.1:1 processes 2> "$TMP/err"
rc=$?
check "flamectl against no server: exit 1 and what to do" eval '[ $rc -eq 1 ] && grep -q "is flamed running" "$TMP/err"'

# Queries have the database open two at a time (each takes megabytes): 16 connections asking for
# profiles at once are all answered, in turn, and the turns waited for are counted.
if command -v wrk > /dev/null; then
	timeout 60 wrk -t 2 -c 16 -d 2s --timeout 10s "$URL/api/v1/profile?from=$T0&to=$T1&format=folded" > "$TMP/wrk" 2>&1
	grep -E 'Requests/sec|Non-2xx|Socket errors' "$TMP/wrk" | sed 's/^/# /'
	check "16 connections of profile queries: all answered 200, no socket error" \
		eval 'grep -q "Requests/sec" "$TMP/wrk" && ! grep -qE "Non-2xx|Socket errors" "$TMP/wrk"'
	curl -sf "$URL/metrics" > "$TMP/metrics"
	check "metrics: flamed_http_queries_max 2, and queries waited their turn" \
		eval 'grep -qx "flamed_http_queries_max 2" "$TMP/metrics" &&
		      awk "/^flamed_http_queries_waited_total / && \$2 > 0 { ok = 1 } END { exit !ok }" "$TMP/metrics"'
else
	skip "queries in turn: no wrk (apt-get install wrk)"
fi

stop_flamed
check "flamed exits 0 on SIGTERM with the API up" [ $? -eq 0 ]
exit $FAILED
