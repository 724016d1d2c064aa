#!/bin/bash
# test_record.sh - flamectl record for real: a Python program recorded with no daemon answering (a
# private flamed, nothing left behind, the program's exit status passed through, a valid SVG with its
# Python functions); a multiprocessing pool recorded through a running flamed (each process named,
# the workers holding most samples, --merge one tree); Ctrl-C at a terminal (tmux) still writes the
# profile; --pid N --duration; usage errors.
. "$(dirname "$0")/lib.sh"
W=$(cd "$(dirname "$0")/../workloads" && pwd)
PY=/usr/bin/python3 # the system's python3, by the name people type
FLAMECTL=$BUILD/flamectl

need_root record
system_python
if ! py_supported "$SYSPY_VER"; then
	skip "record: its Python programs on $SYSPY ($SYSPY_VER): flamed reads the Python frames of CPython 3.8 to 3.15, not $SYSPY_VER yet"
	exit 0
fi

# A port nothing listens on: "no daemon running" whatever else runs on this host.
closed_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# bpf_progs: how many profile_tick programs are loaded (one per flamed).
bpf_progs() {
	bpftool prog show 2>/dev/null | grep -c 'name profile_tick'
}

# --- usage ---
"$FLAMECTL" record > "$TMP/usage.out" 2>&1
check "record without a command is a usage error (2)" [ $? -eq 2 ]
check "... that says what record needs" grep -q 'record needs a command' "$TMP/usage.out"
"$FLAMECTL" record --pid 1 -- true > /dev/null 2>&1
check "record with a command and --pid is a usage error (2)" [ $? -eq 2 ]
"$FLAMECTL" record --since 10m -- true > /dev/null 2>&1
check "record with a window of its own is a usage error (2)" [ $? -eq 2 ]
"$FLAMECTL" record --format png -- true > /dev/null 2>&1
check "record --format png is a usage error (2)" [ $? -eq 2 ]

# --- no daemon: a private flamed ---
mkdir -p "$TMP/private" "$TMP/run"
before=$(bpf_progs)
port=$(closed_port)
(cd "$TMP/run" && TMPDIR=$TMP/private "$FLAMECTL" --server "http://127.0.0.1:$port" record -o out.svg -- \
	"$PY" "$W/pyrecord.py" 3 3) > "$TMP/private.out" 2>&1
rc=$?
cat "$TMP/private.out"
check "private: the program's exit status passes through (3)" [ $rc -eq 3 ]
check "private: it says it records with a flamed of its own" grep -q 'recording with a flamed of its own' "$TMP/private.out"
check "private: it says where the profile went" grep -q ': out.svg$' "$TMP/private.out"
check "private: out.svg is well-formed XML" xmllint --noout "$TMP/run/out.svg"
check "private: the SVG has the program's Python functions" \
	eval 'grep -q "record_outer (pyrecord.py)" "$TMP/run/out.svg" && grep -q "record_inner (pyrecord.py)" "$TMP/run/out.svg"'
check "private: nothing left in TMPDIR (database, log, socket)" eval '[ -z "$(ls -A "$TMP/private")" ]'
check "private: no flamed left running" not pgrep -f "flamed --db $TMP/private"
check "private: its BPF programs are gone ($(bpf_progs) loaded, $before before)" [ "$(bpf_progs)" -le "$before" ]
check "private: no file but the profile in the working directory" eval '[ "$(ls -A "$TMP/run")" = out.svg ]'

# The default name and format, and --db to keep the private database.
(cd "$TMP/run" && TMPDIR=$TMP/private "$FLAMECTL" record --db "$TMP/kept.db" --format folded -- \
	"$PY" "$W/pyrecord.py" 1) > "$TMP/kept.out" 2>&1
rc=$?
written=$(sed -n 's/.*: \(flamed-record-[0-9]*\.folded\)$/\1/p' "$TMP/kept.out")
check "--db: exits 0 and writes flamed-record-PID.folded here (${written:-none})" \
	eval '[ $rc -eq 0 ] && [ -n "$written" ] && [ -s "$TMP/run/$written" ]'
check "--db: the database is kept and holds the program" \
	eval '"$FLAMECTL" --db "$TMP/kept.db" processes --format json --since 1h | grep -q python3'
check "--db: nothing left in TMPDIR" eval '[ -z "$(ls -A "$TMP/private")" ]'

# A command that cannot run: 127, and nothing left.
TMPDIR=$TMP/private "$FLAMECTL" --server "http://127.0.0.1:$port" record -o "$TMP/none.svg" -- "$TMP/no-such-program" \
	> "$TMP/noexec.out" 2>&1
rc=$?
check "a command that cannot run: exit 127, said, no profile, nothing left" \
	eval '[ $rc -eq 127 ] && grep -q "cannot run" "$TMP/noexec.out" && [ ! -e "$TMP/none.svg" ] && [ -z "$(ls -A "$TMP/private")" ]'

# --- with a daemon: a multiprocessing pool ---
run_flamed record --db "$TMP/flamed.db" --frequency 99 --listen 127.0.0.1:0
"$FLAMECTL" --server "$URL" record --format folded -o "$TMP/pool.folded" -- "$PY" "$W/pypool.py" 4 > "$TMP/pool.out" 2>&1
rc=$?
cat "$TMP/pool.out"
check "daemon: record exits with the pool's status (0)" [ $rc -eq 0 ]
check "daemon: it used the running flamed (no private one)" not grep -q 'of its own' "$TMP/pool.out"
check "daemon: it prints a dashboard link to exactly the run" \
	grep -q "in the dashboard: $URL/#preset=custom&from=[0-9]*&to=[0-9]*&pid=[0-9]*&children=1" "$TMP/pool.out"
total=$(sum_samples "$TMP/pool.folded")
workers=$(sum_samples "$TMP/pool.folded" 'pool_spin \(pypool.py\)')
roots=$(awk '{ split($0, f, ";"); print f[1] }' "$TMP/pool.folded" | sort -u)
spinroots=$(grep 'pool_spin (pypool.py)' "$TMP/pool.folded" | awk '{ split($0, f, ";"); print f[1] }' | sort -u)
spinners=$(echo "$spinroots" | grep -c .)
echo "pool: $total samples, $workers in pool_spin; roots: $(echo $roots)"
check "daemon: every stack's root names its process and pid (NAME [PID])" \
	eval '[ -s "$TMP/pool.folded" ] && awk -F";" "\$1 !~ / \\[[0-9]+\\]\$/ { bad = 1 } END { exit bad }" "$TMP/pool.folded"'
check "daemon: the two workers are apart, each with pool_spin ($spinners roots hold it)" [ "$spinners" -eq 2 ]
check "daemon: the workers' Python frames hold most samples ($workers of $total)" \
	[ $((workers * 2)) -gt "$total" ]
parent=$(grep 'parent_spin (pypool.py)' "$TMP/pool.folded" | awk '{ split($0, f, ";"); print f[1] }' | sort -u)
check "daemon: the parent's frames are there too, under a third root (${parent:-none})" \
	eval '[ "$(echo "$roots" | wc -l)" -ge 3 ] && [ -n "$parent" ] && [ "$(echo "$parent" | wc -l)" -eq 1 ] &&
	      ! echo "$spinroots" | grep -qxF "$parent"'

"$FLAMECTL" --server "$URL" record --merge --format folded -o "$TMP/merged.folded" -- "$PY" "$W/pypool.py" 2 > "$TMP/merged.out" 2>&1
mroots=$(awk '{ split($0, f, ";"); print f[1] }' "$TMP/merged.folded" | sort -u)
check "daemon: --merge gives one tree (one root: ${mroots:-none})" \
	eval '[ -n "$mroots" ] && [ "$(echo "$mroots" | wc -l)" -eq 1 ] && grep -q "pool_spin (pypool.py)" "$TMP/merged.folded"'
check "daemon: --merge's dashboard link opens the family as one tree (merge=1)" \
	grep -q "in the dashboard: $URL/#preset=custom&from=[0-9]*&to=[0-9]*&pid=[0-9]*&children=1&merge=1" "$TMP/merged.out"
check "daemon: the link without --merge does not merge" not grep -q "merge=1" "$TMP/pool.out"

check "daemon: it says how many processes and samples it recorded" \
	grep -q "(3 processes, [1-9][0-9]* samples): $TMP/pool.folded" "$TMP/pool.out"
# `true` runs about half a millisecond: at 99 Hz one run in 20 or so is sampled once, and then says nothing.
"$FLAMECTL" --server "$URL" record -o "$TMP/true.folded" -- true > "$TMP/true.out" 2>&1
rc=$?
n=$(sed -n 's/.*recorded .*, \([0-9]*\) samples): .*/\1/p' "$TMP/true.out")
if [ "$n" = 0 ]; then
	check "a command too short for a sample: exit 0, and it says why the profile is empty" \
		eval '[ $rc -eq 0 ] && grep -q "no samples of it: it ran 0.[0-9]* s, and at 99 Hz a CPU is sampled every 10 ms" "$TMP/true.out"'
else
	check "a command too short for a sample (sampled ${n:-?} times this run): exit 0, and no word of an empty profile" \
		eval '[ $rc -eq 0 ] && [ -n "$n" ] && ! grep -q "no samples of it" "$TMP/true.out"'
fi
# A process asleep all along: never sampled, and said so. Recorded from a second after it sleeps: a
# sample of its exec and start would be the one it got (a recording's window is in whole seconds).
sleep 60 & asleep=$!
for _ in $(seq 100); do
	[ "$(cat /proc/$asleep/comm)" = sleep ] && [ "$(awk '{ print $3 }' /proc/$asleep/stat)" = S ] && break
	sleep 0.05
done
sleep 1
"$FLAMECTL" --server "$URL" record --pid $asleep --duration 1s -o "$TMP/asleep.folded" > "$TMP/asleep.out" 2>&1
rc=$?
kill $asleep; wait $asleep 2> /dev/null
sed -n 1,2p "$TMP/asleep.out"
cat "$TMP/asleep.folded" # what it got, if anything
check "a process asleep all along: exit 0, and it says it was hardly ever on a CPU (--off-cpu)" \
	eval '[ $rc -eq 0 ] && grep -q "no samples of it: in [0-9][0-9.]* s it was hardly ever on a CPU (it waited: --off-cpu records where)" "$TMP/asleep.out"'

# --off-cpu of a flamed without it: a private one with --off-cpu, a wall-clock profile by default.
"$FLAMECTL" --server "$URL" record --off-cpu --format folded -o "$TMP/wall.folded" -- "$PY" "$W/pynap.py" 1.5 \
	> "$TMP/wall.out" 2>&1
rc=$?
nap=$(sum_samples "$TMP/wall.folded" 'nap_sleep \(pynap.py\)')
check "--off-cpu, the daemon without it: a private flamed --off-cpu, said (exit $rc)" \
	eval '[ $rc -eq 0 ] && grep -q "does not record off-CPU time" "$TMP/wall.out" && grep -q " us): " "$TMP/wall.out"'
check "--off-cpu: the wall-clock profile holds the 1.5 s sleep, in microseconds (${nap:-0} us)" \
	eval '[ "${nap:-0}" -ge 1400000 ] && [ "${nap:-0}" -le 1700000 ] && grep -q "nap_burn (pynap.py)" "$TMP/wall.folded"'

# --- --pid N --duration: a process already running ---
"$PY" "$W/pyrecord.py" 8 > /dev/null & busy=$!
sleep 1
"$FLAMECTL" --server "$URL" record --pid $busy --duration 2s -o "$TMP/pid.folded" > "$TMP/pid.out" 2>&1
rc=$?
check "--pid --duration: exits 0 after the duration, the process still running" eval '[ $rc -eq 0 ] && kill -0 $busy'
check "--pid --duration: the profile has the process's functions" grep -q 'record_inner (pyrecord.py)' "$TMP/pid.folded"
kill $busy 2>/dev/null
wait $busy 2>/dev/null

# --- Ctrl-C at a terminal ---
if command -v tmux > /dev/null; then
	sock=$TMP/tmux.sock
	tmux -S "$sock" new-session -d -x 120 -y 30 \
		"cd '$TMP/run' && '$FLAMECTL' --server '$URL' record -o ctrlc.svg -- '$PY' '$W/pyrecord.py' 60; echo \$? > '$TMP/ctrlc.rc'; sleep 30"
	sleep 3
	tmux -S "$sock" send-keys C-c
	for _ in $(seq 100); do [ -s "$TMP/ctrlc.rc" ] && break; sleep 0.2; done
	rc=$(cat "$TMP/ctrlc.rc" 2>/dev/null)
	check "Ctrl-C: the program stops and record exits with its status (130: killed by SIGINT; got ${rc:-none})" \
		[ "${rc:-0}" -eq 130 ]
	check "Ctrl-C: the profile is still written, with the program's functions" \
		eval 'xmllint --noout "$TMP/run/ctrlc.svg" && grep -q "record_inner (pyrecord.py)" "$TMP/run/ctrlc.svg"'
	tmux -S "$sock" kill-server 2> /dev/null
else
	skip "record Ctrl-C: tmux is missing (scripts/deps.sh test installs it)"
fi

stop_flamed
exit $FAILED
