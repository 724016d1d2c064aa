#!/bin/bash
# test_toolchains.sh - whole stacks for programs as today's toolchains link them, without frame pointers:
# tests/workloads/branches.c built -O2 -g -fomit-frame-pointer and linked by ld.bfd, gold, lld and mold
# (lld and mold put the code in the read-only segment's page of the file, at another address), and
# tests/workloads/rs_work.rs built by every rustc here (Debian's links with cc, a rustup one with its own
# lld): at least 98% of each one's samples, from a second after its start (its first samples, before its
# tables are built, are walked by frame pointers), carry the whole chain from _start to the leaf.
. "$(dirname "$0")/lib.sh"

need_root linkers
W=$(cd "$(dirname "$0")/../workloads" && pwd)
SECONDS_RUN=4

# Each program: NAME (its file and process name) and how to build it.
names=()
build() {
	local name=$1
	shift
	if "$@" > "$TMP/build-$name.log" 2>&1; then
		names+=("$name")
		echo "# $name: $(readelf -p .comment "$TMP/$name" 2> /dev/null | grep -oE '(Linker|GCC|clang|rustc)[^]]*' | tr '\n' ' ')"
	else
		fail "build $name: $*"
		sed 's/^/    /' "$TMP/build-$name.log" | tail -5
	fi
}
for ld in bfd gold lld mold; do
	build "c_$ld" gcc -O2 -g -fomit-frame-pointer -fuse-ld=$ld "$W/branches.c" -o "$TMP/c_$ld"
done
build c_clang_lld clang -O2 -g -fomit-frame-pointer -fuse-ld=lld "$W/branches.c" -o "$TMP/c_clang_lld"
# Every rustc: Debian's (scripts/deps.sh installs it), and a rustup one (links with its own lld since 1.90).
rustcs=()
command -v /usr/bin/rustc > /dev/null && rustcs+=(/usr/bin/rustc)
for r in "${CARGO_HOME:-/root/.cargo}/bin/rustc" /usr/local/bin/rustc; do
	[ -x "$r" ] && [ "$(readlink -f "$r")" != "$(readlink -f /usr/bin/rustc 2> /dev/null)" ] && rustcs+=("$r")
done
[ ${#rustcs[@]} -gt 0 ] || fail "a rustc is installed (scripts/deps.sh test installs Debian's)"
i=0
for r in "${rustcs[@]}"; do
	i=$((i + 1))
	build "rs_$i" "$r" -O -g "$W/rs_work.rs" -o "$TMP/rs_$i"
	echo "#   rs_$i: $("$r" --version)"
done

run_flamed linkers --db "$TMP/flamed.db" --frequency 99 --flush-interval 1 --listen 127.0.0.1:0
# libc's table first (a process's first samples wait for every table it needs), then every program, two
# at a time (two CPUs).
"$TMP/c_bfd" 1 > /dev/null
START=$(date +%s)
for ((k = 0; k < ${#names[@]}; k += 2)); do
	pids=()
	for n in "${names[@]:k:2}"; do
		"$TMP/$n" $SECONDS_RUN > /dev/null & pids+=($!)
	done
	wait "${pids[@]}"
done
curl -sf -o /dev/null "$URL/api/v1/processes?flush=1"
curl -sf "$URL/api/v1/status" | jq -c '.unwind.samples'
stop_flamed

for name in "${names[@]}"; do
	pid=$("$BUILD/flamectl" --db "$TMP/flamed.db" processes --from "$START" --to $((START + 600)) |
		awk -v n="$name" '$2 == n { print $1; exit }')
	case $name in
	c_*) chain="^$name;_start;__libc_start_main;__libc_start_call_main;main;run;(alpha;|beta;)?leaf_spin$" ;;
	rs_*) chain="^$name;_start;__libc_start_main;__libc_start_call_main;main;.*(_ZN7rs_work4main|rs_work::main)[^;]*;(_ZN7rs_work3run|rs_work::run)[^;]*;(_ZN7rs_work8pipeline5Stage5churn|rs_work::pipeline::Stage::churn)[^;]*(;(_ZN7rs_work8pipeline3mix|rs_work::pipeline::mix)[^;]*)?$" ;;
	esac
	# The whole run, and from a second after its start (its pid's first second skipped).
	"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid "${pid:-0}" --from "$START" --to $((START + 600)) > "$TMP/$name.all"
	first=$("$BUILD/flamectl" --db "$TMP/flamed.db" processes --from "$START" --to $((START + 600)) --format json |
		jq --argjson p "${pid:-0}" '.processes[] | select(.pid == $p) | .first_seen')
	"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid "${pid:-0}" --from $((${first:-0} + 2)) --to $((START + 600)) > "$TMP/$name.folded"
	whole=$(sum_samples "$TMP/$name.folded" "$chain")
	total=$(sum_samples "$TMP/$name.folded")
	echo "$name: $whole of $total samples whole from a second on; $(sum_samples "$TMP/$name.all" "$chain") of $(sum_samples "$TMP/$name.all") in all"
	check "$name: at least 98% of its samples carry _start...main...leaf ($whole of $total)" \
		awk -v a="$whole" -v b="$total" 'BEGIN { exit !(b >= 50 && a * 100 >= b * 98) }'
	[ "$whole" -lt "$total" ] && sort -t' ' -k2 -nr "$TMP/$name.folded" | grep -vE "$chain" | head -3 | cut -c1-200 | sed 's/^/    /'
done
exit $FAILED
