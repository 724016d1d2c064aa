#!/bin/bash
# test_jitreuse.sh - JIT code freed and its memory given to other code, named as it was when sampled: a
# JIT (tests/workloads/jitreuse.c) loads "jit_first" and runs it for 2 s, then loads "jit_second" at the
# same address and runs it for 2 s, writing each load to its jitdump file as it happens. Both phases fall
# in one flush (--flush-interval 8), so by the time the samples are named the file holds both loads: only
# the records' times tell which code each sample ran. Each name gets at least 30% of the samples in JIT
# code: a sample is timed to its second, so those of the second the load fell in all take the code that
# was there at its middle (at most half a second of the 4 s named for the other).
. "$(dirname "$0")/lib.sh"
FREQ=199

need_root jitreuse
build_workload jitreuse
run_flamed jitreuse --db "$TMP/flamed.db" --frequency $FREQ --flush-interval 8 --listen 127.0.0.1:0
(cd "$TMP" && exec ./jitreuse 2 30) > "$TMP/jitreuse.out" 2>&1 &
PID=$!
for _ in $(seq 100); do grep -q '^done' "$TMP/jitreuse.out" && break; sleep 0.1; done
check "the JIT ran both of its codes" grep -q '^done' "$TMP/jitreuse.out"
check "it wrote its jitdump file" test -s "$TMP/jit-$PID.dump"
curl -sf "$URL/api/v1/profile?pid=$PID&format=folded&from=-10m&flush=1" > "$TMP/jit.folded"
kill $PID
wait $PID 2> /dev/null
first=$(sum_samples "$TMP/jit.folded" ";jit_first_\\[j\\]\$")
second=$(sum_samples "$TMP/jit.folded" ";jit_second_\\[j\\]\$")
inside=$((first + second + $(sum_samples "$TMP/jit.folded" ";(jit-$PID\\.dump\\+0x[0-9a-f]+|\\[unknown\\])\$")))
echo "# samples in JIT code: $inside; named jit_first $first, jit_second $second"
check "enough samples in JIT code (>= 300: $inside)" [ "$inside" -ge 300 ]
check "the first code named in >= 30% of them, though the second was loaded at its address since ($first)" \
	[ $((100 * first)) -ge $((30 * inside)) ]
check "the second code named in >= 30% of them ($second)" [ $((100 * second)) -ge $((30 * inside)) ]
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
exit $FAILED
