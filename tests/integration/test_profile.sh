#!/bin/bash
# test_profile.sh - the whole data path for real: flamed samples a workload with a known chain and a
# 3:2 split through BPF, stores it in SQLite, and flamectl reads back that chain and that split.
. "$(dirname "$0")/lib.sh"
FREQ=99

need_root profile
build_workload branches
run_flamed profile --db "$TMP/flamed.db" --frequency $FREQ --flush-interval 1 -v

steal_mark
"$TMP/branches" 6 > "$TMP/branches.out" & wpid=$!
"$TMP/branches" --syscalls 2 > "$TMP/syscalls.out" & spid=$!
wait $wpid $spid
stolen=$(steal_factor)
sleep 1.5
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
# stacks_read LOG: "BATCHED LOOKED_UP" from the last flush line of flamed -v.
stacks_read() {
	sed -n 's/.*stacks so far: \([0-9]*\) read in batches, \([0-9]*\) looked up one by one.*/\1 \2/p' "$1" | tail -1
}
read -r batched looked <<< "$(stacks_read "$TMP/flamed.log")"
echo "stacks: ${batched:-?} read in batches, ${looked:-?} looked up one by one"
check "at 99 Hz every stack comes from the drain's batched read ($batched), none from a lookup each ($looked)" \
	[ "${batched:-0}" -gt 100 -a "${looked:-1}" -eq 0 ]

"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid $wpid --since 10m > "$TMP/w.folded"
check "flamectl query exits 0" [ $? -eq 0 ]

total=$(sum_samples "$TMP/w.folded")
cpu=$(awk '/cpu_seconds/ { print $2 }' "$TMP/branches.out")
expected=$(awk -v c="$cpu" -v f=$FREQ 'BEGIN { printf "%d", c * f }')
echo "workload: $total samples for $cpu CPU seconds at $FREQ Hz (expected about $expected; x $stolen for stolen time)"
check "every sample is stored once: $total samples within 10% of $expected (x $stolen)" \
	awk -v t="$total" -v e="$expected" -v x="$stolen" 'BEGIN { exit !(t >= 0.9 * e && t <= 1.1 * e * x) }'
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
# Not most: in this VM 40 to 50% of them land on the instruction after the syscall, in libc's write
# (likely timer interrupts held off until the syscall returns), so runs here saw 45 to 62% in the kernel;
# a quarter leaves room for sampling noise (198 samples: 3.5 points a sigma).
check "at least a quarter of the samples of a write(2) loop are in the kernel ($k of $st)" [ $((4 * k)) -ge "$st" ]
# Every sample has a user and a kernel stack here, thousands of distinct kernel ones: none may be
# dropped for want of room (a BPF stack-trace map's bucket collisions lost whole hot stacks).
lost=$(sum_samples "$TMP/s.folded" '\[unknown\]')
check "stacks of the write(2) loop are kept: $lost of $st samples have an [unknown] frame (<= 2%)" \
	[ $((50 * lost)) -le "$st" ]

"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid 0 --since 10m > "$TMP/idle.folded"
check "idle (pid 0) is left out by default" [ ! -s "$TMP/idle.folded" ]

# A flush of more keys than the daemon takes from the counts map at once (4096): every chunk is stored.
# churn gives nearly every sample a new stack; at 4999 Hz a 2 s flush holds over 10000 keys.
# The ring that takes user-mode samples whole is one page here (FLAMED_TEST_SENT_RING): full at
# once, nearly every sample goes through the counts and stacks maps, the path this part checks
# (with the ring sized as usual, how many spill into the maps depends on the machine's speed).
build_workload churn
FLAMED_TEST_SENT_RING=4096 run_flamed chunks --db "$TMP/chunks.db" --frequency 4999 --flush-interval 2 --max-keys 65536 -v
steal_mark
"$TMP/churn" -r 100 -t 2 -l 200 -j 4 4 > "$TMP/churn.out"
stolen=$(steal_factor)
sleep 0.5
stop_flamed
check "chunks: flamed exits 0 on SIGTERM" [ $? -eq 0 ]
keys=$(sed -n 's/.*flushed [0-9]* samples in \([0-9]*\) keys.*/\1/p' "$TMP/flamed.log" | sort -n | tail -1)
lost=$(grep -c 'lost stacks or samples.*counts map full' "$TMP/flamed.log")
stored=$(sqlite3 "$TMP/chunks.db" "SELECT coalesce(sum(s.count), 0) FROM samples s JOIN names n ON n.id = s.comm_id WHERE n.name = 'churn'")
cpu=$(awk '{ print $6 }' "$TMP/churn.out")
expected=$(awk -v c="$cpu" 'BEGIN { printf "%d", c * 4999 }')
echo "chunks: largest flush $keys keys; churn: $stored samples stored for $cpu CPU seconds (expected about $expected; x $stolen for stolen time); $lost flushes found the counts map full"
check "chunks: a flush held more keys than one chunk ($keys > 4096)" [ "${keys:-0}" -gt 4096 ]
# More stacks than the drain's stash holds (4096): the rest are looked up one by one, and named as well.
read -r batched looked <<< "$(stacks_read "$TMP/flamed.log")"
echo "chunks: stacks: ${batched:-?} read in batches, ${looked:-?} looked up one by one"
check "chunks: stacks came both ways, batched ($batched) and past the stash one by one ($looked)" \
	[ "${batched:-0}" -gt 0 -a "${looked:-0}" -gt 0 ]
for p in $("$BUILD/flamectl" --db "$TMP/chunks.db" processes --comm churn --since 10m --format json | jq '.processes[].pid' | head -20); do
	"$BUILD/flamectl" --db "$TMP/chunks.db" query --pid "$p" --since 10m
done > "$TMP/churn.folded"
# (A process that exited before its mappings were read has [unknown] frames only; not counted here.)
cnamed=$(sum_samples "$TMP/churn.folded" ';step[0-9]+')
cchain=$(sum_samples "$TMP/churn.folded" ';step[0-9]+;step[0-9]+;step[0-9]+;')
check "chunks: churn's named stacks hold its whole chain of steps ($cchain of $cnamed samples, >= 95%)" \
	[ "$cnamed" -gt 1000 -a $((20 * cchain)) -ge $((19 * cnamed)) ]
check "chunks: no sample was lost to a full counts map" [ "$lost" -eq 0 ]
check "chunks: every sample of every chunk is stored ($stored within 10% of $expected, x $stolen)" \
	awk -v t="$stored" -v e="$expected" -v x="$stolen" 'BEGIN { exit !(e > 0 && t >= 0.9 * e && t <= 1.1 * e * x) }'
exit $FAILED
