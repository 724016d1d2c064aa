#!/bin/bash
# test_watch.sh - flamectl top --watch for real: tests/workloads/branches.c's hot leaf_spin on a live
# screen in a pseudo-terminal (tmux) within 3 s though flamed stores only every 10 s (flush=1 at work),
# the sort keys, q giving the terminal back as it was; plain blocks when piped, ended by SIGINT or by
# the reader leaving; --children, --tid and --db; a daemon that hangs (q and Ctrl-C still end the watch
# at once); a daemon that is down, then restarted.
. "$(dirname "$0")/lib.sh"

need_root watch
build_workload branches
run_flamed watch --db "$TMP/flamed.db" --frequency 99 --listen 127.0.0.1:0 # the default 10 s flush
started=$(date +%s%N)
port=${URL##*:}
F=("$BUILD/flamectl" --server "$URL")
W=$(cd "$(dirname "$0")/../workloads" && pwd)
TMUX_CMD=(env -u TMUX tmux -L "flamed-watch-$$") # its own server, even when run inside tmux
PIDS=()
ESC=$'\033'

finish() {
	"${TMUX_CMD[@]}" kill-server 2> /dev/null
	kill -9 "${PIDS[@]}" $(pgrep -P "$family" 2> /dev/null) 2> /dev/null
	cleanup
}
trap finish EXIT

"$TMP/branches" 300 > /dev/null & wpid=$!
bash -c '"$1" 300 > /dev/null & wait' _ "$TMP/branches" & family=$!
PIDS+=("$wpid" "$family")
disown $wpid $family # killed at the end without a word from the shell
sleep 1

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# rows_sorted FILE COLUMN: the rows under the column titles are in non-increasing order of COLUMN
# (1: %Self, 2: %Total); at least two rows.
rows_sorted() {
	awk -v c="$2" '/%Self +%Total/ { on = 1; next } on && $1 ~ /%$/ { v = $c + 0; if (n++ && v > last) bad = 1; last = v }
		END { exit !(n >= 2 && !bad) }' "$1"
}

# --- on a terminal: tmux gives flamectl a pseudo-terminal of 160 x 40 ---
if ! command -v tmux > /dev/null; then
	skip "top --watch on a terminal: tmux is not installed (apt-get install tmux)"
else
	# the wrapper stands for the user's shell: it writes before and after, and what flamectl left
	cat > "$TMP/shell.sh" << 'EOF'
#!/bin/bash
dir=$1
shift
echo "the shell before the watch"
"$@"
rc=$?
stty -a > "$dir/stty.after"
echo "the watch exited with $rc"
echo "$rc" > "$dir/rc"
exec sleep 600
EOF
	chmod +x "$TMP/shell.sh"
	t0=$(date +%s%N)
	"${TMUX_CMD[@]}" new-session -d -s watch -x 160 -y 40 \
		"$TMP/shell.sh $TMP ${F[*]} top --watch --pid $wpid"
	seen=
	while [ "$(ms_since "$t0")" -lt 3000 ]; do
		"${TMUX_CMD[@]}" capture-pane -p -t watch > "$TMP/screen" 2> /dev/null
		if grep -q ' leaf_spin *$' "$TMP/screen"; then seen=$(ms_since "$t0"); break; fi
		sleep 0.1
	done
	flushes=$(curl -sf "$URL/api/v1/status" | jq '.flushes - .flushes_asked')
	check "leaf_spin is on the screen within 3 s of starting the watch (${seen:-not} ms)" [ -n "$seen" ]
	[ -z "$seen" ] && sed 's/^/    /' "$TMP/screen"
	# with a 10 s flush interval, what is on screen so soon was stored by the watch's flush=1
	if [ "$(ms_since "$started")" -lt 8000 ]; then
		check "flamed had not stored on its own yet: flush=1 stored what the screen shows" [ "$flushes" = 0 ]
	else
		skip "flush=1: the machine took over 8 s to get here, flamed's own flush may have run"
	fi
	check "the screen is the alternate one, the cursor hidden" \
		[ "$("${TMUX_CMD[@]}" display -p -t watch '#{alternate_on}#{cursor_flag}')" = 10 ]
	check "the header names the pid, the window, the unit and the keys" \
		grep -qE "pid $wpid, last 5 s: [0-9,]+ CPU samples at [0-9:]{8}.*" "$TMP/screen"
	check "the header says it sorts by self, and the keys" grep -q 'sorted by self .*t total.*q quit' "$TMP/screen"
	check "the column titles are there" grep -qE '%Self +%Total +Self +Total +Function' "$TMP/screen"
	check "the rows are by self" rows_sorted "$TMP/screen" 1
	check "no line is wider than the terminal" awk 'length($0) > 160 { exit 1 }' "$TMP/screen"

	"${TMUX_CMD[@]}" send-keys -t watch t
	for _ in $(seq 30); do
		"${TMUX_CMD[@]}" capture-pane -p -t watch > "$TMP/screen"
		grep -q 'sorted by total' "$TMP/screen" && break
		sleep 0.1
	done
	check "t: the header says it sorts by total" grep -q 'sorted by total' "$TMP/screen"
	check "t: the rows are by total" rows_sorted "$TMP/screen" 2

	"${TMUX_CMD[@]}" send-keys -t watch q
	for _ in $(seq 50); do
		[ -s "$TMP/rc" ] && break
		sleep 0.1
	done
	sleep 0.2 # the wrapper's last lines
	"${TMUX_CMD[@]}" capture-pane -p -t watch > "$TMP/screen"
	check "q: flamectl exits, with status 0" [ "$(cat "$TMP/rc" 2> /dev/null)" = 0 ]
	check "q: the normal screen is back, the cursor shown" \
		[ "$("${TMUX_CMD[@]}" display -p -t watch '#{alternate_on}#{cursor_flag}')" = 01 ]
	check "q: the shell's lines are on screen, the table is not" \
		eval 'grep -q "the shell before the watch" "$TMP/screen" && grep -q "the watch exited with 0" "$TMP/screen" && ! grep -q "%Self" "$TMP/screen"'
	check "q: the terminal echoes and edits lines again" \
		eval 'tr " ;" "\n\n" < "$TMP/stty.after" | grep -qx icanon && tr " ;" "\n\n" < "$TMP/stty.after" | grep -qx echo'
	"${TMUX_CMD[@]}" kill-server 2> /dev/null
fi

# --- piped: plain blocks, no escape codes, until SIGINT ---
timeout --preserve-status -s INT 3 "${F[@]}" top --watch --pid $wpid > "$TMP/plain.txt" 2> "$TMP/plain.err"
rc=$?
check "piped: exit status 0 after SIGINT (got $rc)" [ $rc -eq 0 ]
check "piped: not one escape byte" not grep -q "$ESC" "$TMP/plain.txt"
blocks=$(grep -cE "^[0-9]{2}:[0-9]{2}:[0-9]{2} pid $wpid, last 5 s: [0-9,]+ CPU samples; by self" "$TMP/plain.txt")
check "piped: a block a second, at least 2 in 3 s (got $blocks)" [ "$blocks" -ge 2 ]
check "piped: each block ends in a blank line" [ "$(grep -c '^$' "$TMP/plain.txt")" -eq "$blocks" ]
check "piped: leaf_spin leads" eval 'awk "NR == 2" "$TMP/plain.txt" | grep -q " leaf_spin$"'
check "piped: nothing on stderr" [ ! -s "$TMP/plain.err" ]

# the reader leaves (head): flamectl's next write fails, and it ends quietly with 0
timeout 30 bash -c '"$@" | head -n 1 > /dev/null; exit "${PIPESTATUS[0]}"' _ "${F[@]}" top --watch --pid $wpid \
	2> "$TMP/head.err"
rc=$?
check "piped into head: exits 0 quietly when head leaves (got $rc)" eval '[ $rc -eq 0 ] && [ ! -s "$TMP/head.err" ]'

# a process and its descendants; one thread
timeout --preserve-status -s INT 2 "${F[@]}" top --watch --pid $family --children > "$TMP/children.txt"
check "--children: the child's leaf_spin, under the parent's pid" \
	eval 'grep -q "pid $family (+children), last 5 s" "$TMP/children.txt" && grep -q " leaf_spin$" "$TMP/children.txt"'
timeout --preserve-status -s INT 2 "${F[@]}" top --watch --pid $wpid --tid $wpid > "$TMP/tid.txt"
check "--tid: the thread's leaf_spin" \
	eval 'grep -q "thread $wpid of pid $wpid, last 5 s" "$TMP/tid.txt" && grep -q " leaf_spin$" "$TMP/tid.txt"'

# --- the database, as flamed stored it (the watches above flushed) ---
timeout --preserve-status -s INT 3 "$BUILD/flamectl" --db "$TMP/flamed.db" top --watch --pid $wpid --since 1m \
	> "$TMP/db.txt" 2> "$TMP/db.err"
rc=$?
check "--db: exit status 0 after SIGINT (got $rc)" [ $rc -eq 0 ]
check "--db: leaf_spin, from the database" grep -q ' leaf_spin$' "$TMP/db.txt"
check "--db: the header says samples are stored every flush" grep -q 'in the database: stored every flush' "$TMP/db.txt"
check "--db: not one escape byte" not grep -q "$ESC" "$TMP/db.txt"
check "--db: nothing on stderr" [ ! -s "$TMP/db.err" ]
"$BUILD/flamectl" --db "$TMP/nothing.db" top --watch > /dev/null 2> "$TMP/nodb.err"
rc=$?
check "--db with no database: exit 1 and why" eval '[ $rc -eq 1 ] && grep -q "no database at" "$TMP/nodb.err"'

# --- a daemon that answers once and then hangs (a byte a second: no read times out): q and Ctrl-C
# end the watch while the request is in flight, not when it ends ---
curl -sf "$URL/api/v1/top?pid=$wpid&from=-5s&format=json&flush=1" > "$TMP/top.json"
slow() { # slow NAME: starts tests/workloads/slowhttp.py, logging to $TMP/NAME.log; sets slowpid and SLOW
	coproc SLOWSRV { exec python3 "$W/slowhttp.py" "$TMP/top.json" "$TMP/$1.log"; }
	slowpid=$SLOWSRV_PID
	PIDS+=("$slowpid")
	read -r -t 10 _ slowport <&"${SLOWSRV[0]}"
	SLOW="http://127.0.0.1:$slowport"
}
# waits up to 30 s for LOG to hold LINE
logged() { for _ in $(seq 300); do grep -qx "$2" "$1" 2> /dev/null && return 0; sleep 0.1; done; return 1; }
slow hang-piped
"$BUILD/flamectl" --server "$SLOW" top --watch --pid $wpid > "$TMP/hang-piped.txt" 2>&1 & watch=$!
PIDS+=("$watch")
logged "$TMP/hang-piped.log" hanging
kill -INT $watch
for _ in $(seq 100); do kill -0 $watch 2> /dev/null || break; sleep 0.1; done
still=$(kill -0 $watch 2> /dev/null && echo yes)
wait $watch
rc=$?
check "slow daemon, piped: the first answer is shown (leaf_spin)" grep -q ' leaf_spin$' "$TMP/hang-piped.txt"
check "slow daemon, piped: SIGINT ends the watch while a request hangs, with status 0 (got $rc${still:+, still running after 10 s})" \
	eval '[ -z "$still" ] && [ $rc -eq 0 ] && logged "$TMP/hang-piped.log" "client left"'
kill $slowpid 2> /dev/null; wait $slowpid 2> /dev/null
if command -v tmux > /dev/null; then
	slow hang-tmux
	rm -f "$TMP/rc"
	"${TMUX_CMD[@]}" new-session -d -s hang -x 160 -y 40 "$TMP/shell.sh $TMP $BUILD/flamectl --server $SLOW top --watch --pid $wpid"
	logged "$TMP/hang-tmux.log" hanging
	"${TMUX_CMD[@]}" send-keys -t hang q
	for _ in $(seq 100); do [ -s "$TMP/rc" ] && break; sleep 0.1; done
	check "slow daemon, terminal: q ends the watch while a request hangs, with status 0" \
		eval '[ "$(cat "$TMP/rc" 2> /dev/null)" = 0 ] && logged "$TMP/hang-tmux.log" "client left"'
	check "slow daemon, terminal: the normal screen is back" \
		[ "$("${TMUX_CMD[@]}" display -p -t hang '#{alternate_on}#{cursor_flag}')" = 01 ]
	"${TMUX_CMD[@]}" kill-server 2> /dev/null
	kill $slowpid 2> /dev/null; wait $slowpid 2> /dev/null
fi

# --- flamed goes away and comes back on the same port: the watch says so, retries, and goes on ---
"${F[@]}" top --watch --pid $wpid --limit 1 > "$TMP/restart.txt" 2>&1 & watch=$!
PIDS+=("$watch")
sleep 2
stop_flamed
sleep 2.5
start_flamed --db "$TMP/flamed.db" --frequency 99 --listen "127.0.0.1:$port"
check "flamed starts again on port $port" [ $? -eq 0 ]
# up to 30 s for the watch to show leaf_spin again (flamed names the running process anew)
for _ in $(seq 300); do
	sed -n '/error: cannot reach/,$p' "$TMP/restart.txt" | grep -q ' leaf_spin$' && break
	sleep 0.1
done
kill -INT $watch
wait $watch
rc=$?
unset "PIDS[-1]" # the watch, gone
check "restart: the watch exits 0 after SIGINT (got $rc)" [ $rc -eq 0 ]
check "restart: it said it could not reach flamed, and kept trying" \
	[ "$(grep -c 'error: cannot reach .* Connection refused.*retrying every second' "$TMP/restart.txt")" -ge 2 ]
check "restart: leaf_spin again once flamed was back" \
	eval 'sed -n "/error: cannot reach/,\$p" "$TMP/restart.txt" | grep -q " leaf_spin$"'
stop_flamed
exit $FAILED
