#!/bin/bash
# test_profile.sh - the whole data path for real: flamed samples a workload with a known chain and a
# 3:2 split through BPF, stores it in SQLite, and flamectl reads back that chain and that split.
. "$(dirname "$0")/lib.sh"
FREQ=99

need_root profile
build_workload branches
run_flamed profile --db "$TMP/flamed.db" --frequency $FREQ --flush-interval 1

"$TMP/branches" 6 > "$TMP/branches.out" & wpid=$!
"$TMP/branches" --syscalls 2 > "$TMP/syscalls.out" & spid=$!
wait $wpid $spid
sleep 1.5
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]

"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid $wpid --since 10m > "$TMP/w.folded"
check "flamectl query exits 0" [ $? -eq 0 ]

total=$(sum_samples "$TMP/w.folded")
cpu=$(awk '/cpu_seconds/ { print $2 }' "$TMP/branches.out")
expected=$(awk -v c="$cpu" -v f=$FREQ 'BEGIN { printf "%d", c * f }')
echo "workload: $total samples for $cpu CPU seconds at $FREQ Hz (expected about $expected)"
check "every sample is stored once: $total samples within 10% of $expected" \
	awk -v t="$total" -v e="$expected" 'BEGIN { exit !(t >= 0.9 * e && t <= 1.1 * e) }'
# (before exec the pid still carries the shell's name, so a sample or two may be rooted there)
rooted=$(sum_samples "$TMP/w.folded" '^branches;')
check "the root frame is the process name ($rooted of $total samples)" [ $((100 * rooted)) -ge $((98 * total)) ]

a=$(sum_samples "$TMP/w.folded" ';main;run;alpha;leaf_spin(;|$)')
b=$(sum_samples "$TMP/w.folded" ';main;run;beta;leaf_spin(;|$)')
echo "alpha;leaf_spin $a, beta;leaf_spin $b"
check "the full chain main;run;alpha|beta;leaf_spin carries >= 90% of samples ($((a + b)) of $total)" \
	[ $((10 * (a + b))) -ge $((9 * total)) ]
check "alpha's share is 60% within 10 points ($a vs $b)" \
	awk -v a="$a" -v b="$b" 'BEGIN { s = 100 * a / (a + b); exit !(a + b > 0 && s >= 50 && s <= 70) }'

# libc.so.6 is stripped to .dynsym; this static function is only in libc6-dbg's file under
# /usr/lib/debug/.build-id, found by libc's build-id.
check "libc's static __libc_start_call_main is named from its separate debug file" \
	grep -q ';__libc_start_call_main;main;' "$TMP/w.folded"

"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid $wpid --tid $wpid --since 10m > "$TMP/t.folded"
check "--tid of the only thread gives the same profile" cmp -s "$TMP/w.folded" "$TMP/t.folded"

"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid $spid --since 10m > "$TMP/s.folded"
k=$(sum_samples "$TMP/s.folded" ';main;.*_\[k\]')
st=$(sum_samples "$TMP/s.folded")
echo "syscalls workload: $k of $st samples with kernel frames under main"
check "kernel frames are named and marked _[k] under the user stack" \
	grep -qE ';main;.*;(ksys_write|vfs_write|__x64_sys_write)_\[k\]' "$TMP/s.folded"
check "most samples of a write(2) loop are in the kernel ($k of $st)" [ $((2 * k)) -ge "$st" ]
# Every sample has a user and a kernel stack here, thousands of distinct kernel ones: none may be
# dropped for want of room (a BPF stack-trace map's bucket collisions lost whole hot stacks).
lost=$(sum_samples "$TMP/s.folded" '\[unknown\]')
check "stacks of the write(2) loop are kept: $lost of $st samples have an [unknown] frame (<= 2%)" \
	[ $((50 * lost)) -le "$st" ]

"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid 0 --since 10m > "$TMP/idle.folded"
check "idle (pid 0) is left out by default" [ ! -s "$TMP/idle.folded" ]
exit $FAILED
