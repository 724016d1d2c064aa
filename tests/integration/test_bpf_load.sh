#!/bin/bash
# test_bpf_load.sh - the BPF programs against the real verifier. Every program flamed can attach (the CPU
# sampler, the exec and fork hooks, off-CPU's sched_switch and exit programs, the task iterator; Python
# frames on and off, unwind tables and frame pointers, the walker programs the sampler and sched_switch
# tail-call) loads with the verifier's work under a tenth of its bound of 1,000,000 instructions, built
# by this build's clang and by every other clang-14 to clang-19 installed here; the status and /metrics say how much each took. Then a program the kernel refuses
# (made to, through FLAMED_TEST_REFUSE, which only tests use) takes only its feature down: CPU samples
# still arrive, and the log, the status, the metrics and `flamectl record --off-cpu` say what is off and why.
. "$(dirname "$0")/lib.sh"

need_root bpf_load
LIMIT=1000000
# The programs of each run: the walkers load only where their features are asked for.
PROGRAMS="offcpu_exit offcpu_ongoing offcpu_switch offcpu_walk_native offcpu_walk_python process_exec process_fork profile_tick walk_native walk_python"
NO_PYTHON="offcpu_exit offcpu_ongoing offcpu_switch offcpu_walk_native process_exec process_fork profile_tick walk_native"
FP_ONLY="offcpu_exit offcpu_ongoing offcpu_switch process_exec process_fork profile_tick"
# Each program's verified instructions stay under a tenth of the bound (the walkers split by runtime keep
# each small); half would be the danger line.
TENTH=$((LIMIT / 10))

# loads LABEL BUILD_DIR PROGRAMS ARGS...: starts BUILD_DIR's flamed with ARGS; checks that the PROGRAMS
# (sorted, space-separated) loaded and that each one's verified instructions are above 0 and under a
# tenth of the kernel's bound.
loads() {
	local label=$1 build=$2 want=$3 names over
	shift 3
	BUILD=$build run_flamed "$label" --db "$TMP/load.db" --listen 127.0.0.1:0 "$@"
	curl -sf "$URL/api/v1/status" > "$TMP/status.json"
	jq -r '.bpf.programs[] | "#   \(.name): \(.verified_insns) instructions verified, \(.insns) loaded"' "$TMP/status.json"
	names=$(jq -r '[.bpf.programs[].name] | sort | join(" ")' "$TMP/status.json")
	check "$label: every program loads ($names)" [ "$names" = "$want" ]
	over=$(jq -r --argjson tenth $TENTH '[.bpf.programs[] | select(.verified_insns <= 0 or .verified_insns >= $tenth)
		| "\(.name) \(.verified_insns)"] | join(", ")' "$TMP/status.json")
	check "$label: each program's verified instructions are above 0 and under $TENTH${over:+ (not: $over)}" [ -z "$over" ]
	check "$label: the status gives the verifier's bound ($LIMIT) and nothing left out" \
		jq -e --argjson limit $LIMIT '.bpf.verified_insns_limit == $limit and .bpf.loads == 1 and
			([.bpf.features[] | select(.asked and (.on | not))] | length) == 0' "$TMP/status.json"
	curl -sf "$URL/metrics" > "$TMP/metrics"
	check "$label: /metrics has flamed_bpf_verified_instructions of each program, as the status says" \
		eval '[ "$(grep -c "^flamed_bpf_verified_instructions{program=\"[a-z_]*\"} [1-9][0-9]*$" "$TMP/metrics")" = $(wc -w <<< "$want") ] &&
		      grep -q "^flamed_bpf_verified_instructions{program=\"profile_tick\"} $(jq ".bpf.programs[] |
			select(.name == \"profile_tick\") | .verified_insns" "$TMP/status.json")$" "$TMP/metrics"'
	stop_flamed
	check "$label: flamed exits 0 on SIGTERM" [ $? -eq 0 ]
}

clang_major=$(clang -dumpversion 2> /dev/null | cut -d. -f1)
loads "clang $clang_major, --off-cpu" "$BUILD" "$PROGRAMS" --off-cpu
loads "clang $clang_major, --off-cpu --python off" "$BUILD" "$NO_PYTHON" --off-cpu --python off
loads "clang $clang_major, --off-cpu --unwind fp" "$BUILD" "$FP_ONLY" --off-cpu --unwind fp

# Every other clang installed: flamed again with the BPF object that clang builds (the rest of the build
# copied, only the object, its skeleton and the two files that include it made again).
SRC=$(cd "$(dirname "$0")/../.." && pwd)
for v in 14 15 16 17 18 19; do
	command -v "clang-$v" > /dev/null || continue
	[ "$(clang-$v -dumpversion | cut -d. -f1)" = "$clang_major" ] && continue
	strip=$(command -v "llvm-strip-$v" || command -v llvm-strip)
	dir=$TMP/build-clang$v
	cp -a "$BUILD" "$dir" && rm -f "$dir"/profile.bpf.o "$dir"/profile.skel.h "$dir"/daemon/sampler.o \
		"$dir"/daemon/bpfload.o "$dir"/flamed
	if make -s -C "$SRC" BUILD="$dir" CLANG="clang-$v" LLVM_STRIP="$strip" "$dir/flamed" > "$TMP/make-clang$v.log" 2>&1; then
		pass "clang $v builds the BPF programs with no warning"
		loads "clang $v, --off-cpu" "$dir" "$PROGRAMS" --off-cpu
	else
		fail "clang $v builds the BPF programs with no warning"
		sed 's/^/    /' "$TMP/make-clang$v.log" | tail -20
	fi
	rm -rf "$dir"
done

# ---- A feature the kernel refuses: off-CPU time ----
build_workload branches
FLAMED_TEST_REFUSE=offcpu_switch run_flamed refused --db "$TMP/refused.db" --listen 127.0.0.1:0 --off-cpu \
	--frequency 99 --flush-interval 1
check "log: off-CPU time is off, the program the kernel refused and why" \
	grep -q "^flamed: off-CPU time (--off-cpu) is off: the kernel refused offcpu_switch: Permission denied" "$TMP/flamed.log"
check "log: the verifier's own words" grep -q "invalid mem access" "$TMP/flamed.log"
"$TMP/branches" 1.5 > "$TMP/branches.out" & wpid=$!
wait $wpid
# At 99 Hz, a quarter of the samples its CPU time should get at least (the host may be busy).
want=$(awk '/cpu_seconds/ { printf "%d", $2 * 99 / 4 }' "$TMP/branches.out")
curl -sf -o /dev/null "$URL/api/v1/processes?flush=1"
curl -sf "$URL/api/v1/status" > "$TMP/status.json"
jq -c '(.off_cpu | {enabled, asked, refused}), .bpf.features.off_cpu' "$TMP/status.json" | cut -c1-300
check "CPU samples still arrive and are stored" jq -e '.samples > 0 and .samples_stored > 0' "$TMP/status.json"
curl -sf "$URL/api/v1/profile?pid=$wpid&format=folded&from=-1m" > "$TMP/w.folded"
check "the workload's CPU profile is there: $(sum_samples "$TMP/w.folded" 'leaf_spin') samples in leaf_spin (at least ${want:-?})" \
	[ "$(sum_samples "$TMP/w.folded" 'leaf_spin')" -ge "${want:-1}" -a "$(sum_samples "$TMP/w.folded" 'leaf_spin')" -gt 0 ]
check "status: off_cpu not enabled, though asked for, and why (the program and the kernel's error)" \
	jq -e '.off_cpu.enabled == false and .off_cpu.asked == true and
		(.off_cpu.refused | test("refused offcpu_switch: Permission denied"))' "$TMP/status.json"
check "status: bpf.features.off_cpu names the program, the error and the verifier's last words" \
	jq -e '.bpf.features.off_cpu | .asked and (.on | not) and .program == "offcpu_switch" and .errno == "EACCES"
		and (.log | test("invalid mem access"))' "$TMP/status.json"
check "status: the task iterator is off with it; the other features run" \
	jq -e '(.bpf.features.off_cpu_ongoing.on | not) and .bpf.features.python.on and .bpf.features.fork_hook.on
		and .bpf.features.unwind_tables.on and .bpf.loads == 2' "$TMP/status.json"
check "status: the programs loaded are the CPU sampler's and the fork hook" \
	jq -e '[.bpf.programs[].name] | sort == ["process_exec", "process_fork", "profile_tick", "walk_native", "walk_python"]' "$TMP/status.json"
curl -sf "$URL/metrics" > "$TMP/metrics"
check "metrics: flamed_bpf_feature_enabled{feature=\"off_cpu\"} 0 and flamed_offcpu_enabled 0" \
	eval 'grep -q "^flamed_bpf_feature_enabled{feature=\"off_cpu\"} 0$" "$TMP/metrics" &&
	      grep -q "^flamed_offcpu_enabled 0$" "$TMP/metrics"'
check "metrics: flamed_bpf_feature_refused names the feature, the program and the error" \
	grep -q '^flamed_bpf_feature_refused{feature="off_cpu",program="offcpu_switch",error="EACCES"} 1$' "$TMP/metrics"

# record --off-cpu through that flamed: it says off-CPU time cannot be recorded, and records CPU samples.
"$BUILD/flamectl" --server "$URL" record --off-cpu -o "$TMP/rec.folded" -- "$TMP/branches" 1 > /dev/null 2> "$TMP/rec.err"
rc=$?
sed 's/^/    /' "$TMP/rec.err"
check "record --off-cpu: runs the command (exit status $rc)" [ $rc -eq 0 ]
check "record --off-cpu: says off-CPU time cannot be recorded, and why" \
	grep -q "off-CPU time cannot be recorded on this host: the flamed at $URL was started with --off-cpu, but the kernel refused offcpu_switch: Permission denied; recording CPU samples only" "$TMP/rec.err"
check "record --off-cpu: writes the command's CPU profile" [ "$(sum_samples "$TMP/rec.folded" '^branches.*leaf_spin')" -gt 0 ]
stop_flamed
check "flamed with off-CPU refused exits 0 on SIGTERM" [ $? -eq 0 ]

# record --off-cpu with a flamed of its own, which the kernel refuses the same way.
FLAMED_TEST_REFUSE=offcpu_switch "$BUILD/flamectl" --server http://127.0.0.1:1 record --off-cpu -o "$TMP/own.folded" \
	-- "$TMP/branches" 1 > /dev/null 2> "$TMP/own.err"
rc=$?
sed 's/^/    /' "$TMP/own.err"
check "record --off-cpu, its own flamed: says off-CPU time cannot be recorded, and why" \
	grep -q "off-CPU time cannot be recorded on this host: flamectl's own flamed was started with --off-cpu, but the kernel refused offcpu_switch" "$TMP/own.err"
check "record --off-cpu, its own flamed: writes the command's CPU profile (exit status $rc)" \
	eval '[ $rc -eq 0 ] && [ "$(sum_samples "$TMP/own.folded" "^branches.*leaf_spin")" -gt 0 ]'

# ---- Python frames refused: the CPU sampler loads without them, off-CPU time keeps its programs ----
FLAMED_TEST_REFUSE=python run_flamed python-refused --db "$TMP/py.db" --listen 127.0.0.1:0 --off-cpu
curl -sf "$URL/api/v1/status" > "$TMP/status.json"
check "Python refused: python off and why; off-CPU time, its iterator and the unwind tables still on" \
	jq -e '.python.enabled == false and (.python.refused | test("refused walk_python")) and .off_cpu.enabled and
		.bpf.features.off_cpu_ongoing.on and .bpf.features.unwind_tables.on and (.bpf.programs | length) == 8' "$TMP/status.json"
check "Python refused: the log says so" grep -q "^flamed: naming Python frames (--python) is off: the kernel refused walk_python" "$TMP/flamed.log"
stop_flamed

# ---- The fork hook refused: parents are read from /proc; the rest runs ----
FLAMED_TEST_REFUSE=process_fork run_flamed fork-refused --db "$TMP/fork.db" --listen 127.0.0.1:0
curl -sf "$URL/api/v1/status" > "$TMP/status.json"
check "fork hook refused: fork_hook off and why, CPU sampling on" \
	jq -e '(.bpf.features.fork_hook.on | not) and .bpf.features.fork_hook.program == "process_fork" and
		([.bpf.programs[].name] | index("profile_tick")) != null' "$TMP/status.json"
stop_flamed

# ---- The CPU sampler itself refused: flamed does not start, and says which program and why ----
FLAMED_TEST_REFUSE=profile_tick "$BUILD/flamed" --db "$TMP/none.db" --listen none > "$TMP/none.log" 2>&1
rc=$?
check "CPU sampler refused: flamed exits non-zero ($rc)" [ $rc -ne 0 ]
check "CPU sampler refused: it says the kernel refused profile_tick, with the verifier's words" \
	eval 'grep -q "^flamed: the kernel refused the program profile_tick; the verifier said:" "$TMP/none.log" &&
	      grep -q "invalid mem access" "$TMP/none.log"'
exit $FAILED
