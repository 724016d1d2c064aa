# lib.sh - helpers of bench/run.sh: processes it starts (tracked, killed on exit), bounded waits, /proc and BPF readings, arithmetic.
# shellcheck shell=bash
# Sourced by run.sh, which sets BUILD, TMP and STARTED=() first.

log() { echo "bench: $*" >&2; }
die() { log "$*"; exit 1; }

# calc EXPR: floating-point arithmetic (awk), printed with up to 6 significant digits.
calc() { awk "BEGIN { printf \"%.6g\", ($1) }"; }
# fmt DIGITS EXPR: the same with DIGITS decimals.
fmt() { awk "BEGIN { printf \"%.$1f\", ($2) }"; }
# is_true EXPR: succeeds when the awk expression is non-zero.
is_true() { awk "BEGIN { exit !($1) }"; }

# track PID: remembers a process this script started, so that cleanup can end it.
track() { STARTED+=("$1"); }

# kill_tracked: ends what this script started and is still running (and their children), by pid.
kill_tracked() {
	local p
	for p in "${STARTED[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			pkill -KILL -P "$p" 2>/dev/null || true
			kill -KILL "$p" 2>/dev/null || true
		fi
	done
	STARTED=()
}

# wait_pid PID SECONDS: waits for PID (a child) to exit, at most SECONDS, then kills it; returns its status.
wait_pid() {
	local pid=$1 deadline=$((SECONDS + $2)) rc=0
	while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt "$deadline" ]; do sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		log "pid $pid still running after $2 s; killing it"
		pkill -KILL -P "$pid" 2>/dev/null || true
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" || rc=$?
	return $rc
}

# child_of PID: prints the pid of PID's first child, waiting up to 5 s for it to exist.
child_of() {
	local c _
	for _ in $(seq 50); do
		c=$(cat "/proc/$1/task/$1/children" 2>/dev/null || true)
		[ -n "$c" ] && { echo "${c%% *}"; return 0; }
		sleep 0.1
	done
	return 1
}

# wait_log FILE REGEX PID SECONDS: waits until FILE has a line matching REGEX (grep -E) while PID lives.
wait_log() {
	local deadline=$((SECONDS + $4))
	while [ $SECONDS -lt "$deadline" ]; do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# wait_count FILE REGEX N PID SECONDS: waits until FILE has N lines matching REGEX (grep -E) while PID lives.
wait_count() {
	local deadline=$((SECONDS + $5)) n
	while [ $SECONDS -lt "$deadline" ]; do
		n=$(grep -cE "$2" "$1" 2> /dev/null || true)
		[ "${n:-0}" -ge "$3" ] && return 0
		kill -0 "$4" 2> /dev/null || return 1
		sleep 0.1
	done
	return 1
}

# The readers below run inside measured windows: they use shell builtins and set a variable, so that the
# bench starts no process there for the profiler under test to take in (a process it samples is one it
# reads the mappings of and, for a new binary, builds the unwind tables of: bpftool and jq, twice per
# window, were 20 such processes).

# cpu_ticks PID VAR: utime + stime of PID (all its threads), in clock ticks, into VAR.
cpu_ticks() {
	local line f
	read -r line < "/proc/$1/stat" || return 1
	read -r -a f <<< "${line##*) }"
	printf -v "$2" '%d' $((f[11] + f[12]))
}

# status_kb PID FIELD VAR: the N of the "FIELD: N kB" line of /proc/PID/status (VmRSS, VmHWM) into VAR,
# empty when there is none (builtins: see cpu_ticks).
status_kb() {
	local k v _
	printf -v "$3" '%s' ''
	while read -r k v _; do
		if [ "$k" = "$2:" ]; then
			printf -v "$3" '%s' "$v"
			return 0
		fi
	done < "/proc/$1/status"
}

# bpf_run PID NS_VAR CNT_VAR: the sum of run_time_ns and of run_cnt (kernel.bpf_stats_enabled) of the BPF
# programs PID holds open, each counted once, into the two variables (builtins: see cpu_ticks; an fd
# that closes while this reads is skipped).
bpf_run() {
	local f k v _ id t c ns=0 cnt=0 seen=" "
	for f in /proc/"$1"/fdinfo/*; do
		id='' t=0 c=0
		{ while read -r k v _; do
			case $k in
			prog_id:) id=$v ;;
			run_time_ns:) t=$v ;;
			run_cnt:) c=$v ;;
			esac
		done < "$f"; } 2> /dev/null || continue # closed since the glob: not a program's, or no longer
		if [ -z "$id" ] || [[ $seen == *" $id "* ]]; then continue; fi
		seen+="$id " ns=$((ns + t)) cnt=$((cnt + c))
	done
	printf -v "$2" '%d' "$ns"
	printf -v "$3" '%d' "$cnt"
}

# row AREA MEASUREMENT RESULT TARGET STATUS: one line of the results table.
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$TMP/rows.tsv"; }

# status_of COND: PASS when the awk expression holds, else MISS.
status_of() { if is_true "$1"; then echo PASS; else echo MISS; fi; }

# parse_kv PREFIX LINE: sets a global PREFIXkey=value for each key=value word of LINE.
parse_kv() {
	local kv
	for kv in $2; do
		[[ $kv == *=* ]] && declare -g "$1${kv%%=*}=${kv#*=}"
	done
	return 0
}

# join_by SEP WORDS...: the words joined by SEP.
join_by() {
	local sep=$1 out=$2 w
	shift 2
	for w in "$@"; do out+="$sep$w"; done
	echo "$out"
}

# mb KIB: KiB as MB (10^6 bytes) with one decimal.
mb() { fmt 1 "$1 * 1024 / 1e6"; }
