#!/bin/bash
# same-output.sh - checks that two builds of flamectl read one database into the same bytes: every
# query format (folded, json, svg, pprof, top, top --lines) per process, the whole host's flame graph
# and top, diffs, a timeline, and the process and thread lists. For a change meant to keep behaviour
# (a move, a split): build the old and the new flamectl, then run this on a database flamed wrote.
#
# Usage: scripts/same-output.sh DB OLD_FLAMECTL NEW_FLAMECTL
# Prints each comparison and ends with "N same, N differ"; exits 1 when any differs.
set -uo pipefail
[ $# -eq 3 ] || { echo "usage: $0 DB OLD_FLAMECTL NEW_FLAMECTL" >&2; exit 2; }
db=$1 old=$2 new=$3
command -v sqlite3 > /dev/null || { echo "$0: needs the sqlite3 shell: apt-get install sqlite3" >&2; exit 2; }
for f in "$db" "$old" "$new"; do [ -e "$f" ] || { echo "$0: $f: not found" >&2; exit 2; }; done
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# The whole database's window, so neither run depends on the clock: from the first second stored to
# a second past the last.
window=$(sqlite3 -readonly "$db" "SELECT min(ts), max(ts) + 1 FROM samples" 2> /dev/null)
from=${window%|*} to=${window#*|}
[ -n "$from" ] && [ -n "$to" ] || { echo "$0: $db: no samples to read" >&2; exit 2; }
# The three processes with most samples, for the per-process queries.
pids=$(sqlite3 -readonly "$db" "SELECT pid FROM samples GROUP BY pid ORDER BY sum(count) DESC LIMIT 3")

same=0 differ=0
# compare NAME ARGS...: runs both flamectl with --db and ARGS; their output must be byte-identical.
compare() {
	local name=$1
	shift
	"$old" --db "$db" "$@" > "$tmp/old" 2> "$tmp/old.err"; local rc_old=$?
	"$new" --db "$db" "$@" > "$tmp/new" 2> "$tmp/new.err"; local rc_new=$?
	if [ "$rc_old" = "$rc_new" ] && cmp -s "$tmp/old" "$tmp/new" && cmp -s "$tmp/old.err" "$tmp/new.err"; then
		same=$((same + 1))
		echo "same:   $name ($(wc -c < "$tmp/new") bytes, exit $rc_new)"
	else
		differ=$((differ + 1))
		echo "DIFFER: $name (exit $rc_old vs $rc_new; $(wc -c < "$tmp/old") vs $(wc -c < "$tmp/new") bytes)"
		cmp "$tmp/old" "$tmp/new" | head -1
	fi
}

w=(--from "$from" --to "$to")
compare "flamegraph (the whole host)" flamegraph "${w[@]}" -o /dev/stdout
for fmt in folded json svg pprof top; do
	for pid in $pids; do
		compare "query --pid $pid --format $fmt" query --pid "$pid" "${w[@]}" --format "$fmt"
	done
done
compare "top" top "${w[@]}"
compare "top --lines" top "${w[@]}" --lines
for pid in $pids; do
	compare "top --pid $pid --lines" top --pid "$pid" "${w[@]}" --lines
	compare "threads --pid $pid" threads --pid "$pid" "${w[@]}"
done
compare "processes" processes "${w[@]}"
mid=$(((from + to) / 2))
set -- $pids
for fmt in folded json svg; do
	compare "diff --pid $1 --format $fmt (second half against the first)" diff --pid "$1" --from "$mid" --to "$to" --base-from "$from" --base-to "$mid" --format "$fmt"
	[ -n "${2:-}" ] && compare "diff --pid $1 --base-pid $2 --format $fmt" diff --pid "$1" --base-pid "$2" "${w[@]}" --format "$fmt"
done
compare "timeline --pid $1" timeline --pid "$1" "${w[@]}" --step 1
echo "$same same, $differ differ"
[ "$differ" = 0 ]
