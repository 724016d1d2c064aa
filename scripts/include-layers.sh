#!/bin/bash
# include-layers.sh: lists each #include of the project's own headers that docs/ARCHITECTURE.md's table
# "Folders and what may include what" does not allow, and each include in lib/store/ of a store floor
# above the including file's. Prints nothing and exits 0 when there is none; else exits 1.
# Usage: scripts/include-layers.sh (from the repository's root)
set -euo pipefail
cd "$(dirname "$0")/.."

# allowed FILE: the include prefixes FILE may use ("=" the headers in include/, "*" anything).
allowed() {
	case $1 in
	lib/util/*) echo "util/" ;;
	lib/elf/*) echo "elf/ util/" ;;
	lib/symbolize/*) echo "symbolize/ elf/ util/" ;;
	lib/unwind/*) echo "= unwind/ elf/ util/" ;;
	lib/runtime/*) echo "util/" ;;
	lib/python/*) echo "= python/ runtime/ unwind/cfi.h elf/ util/" ;;
	lib/store/*) echo "store/ util/" ;;
	lib/render/*) echo "render/ util/ lib/render/pprof.pb-c.h" ;;
	lib/query/*) echo "query/ store/ render/ util/" ;;
	daemon/http/*) echo "http/ query/ store/store.h render/json.h status.h util/capstream.h util/counter.h" ;;
	daemon/*) echo "*" ;;
	cli/*) echo "httpget.h query/ store/store.h render/unit.h util/utf8.h util/capstream.h symbolize/latenames.h" ;;
	esac
}

# floor FILE: a store file's or header's floor (docs/ARCHITECTURE.md), 0 for the public store.h.
floor() {
	case ${1##*/} in
	store.h | rollup.h | rollup.c) echo 0 ;;
	store_impl.h | store_idmap.h | store_sql.c | store_ids.c | store_pending.c | store_idmap.c) echo 1 ;;
	store_schema.* | store_rollup_rows.* | store_answer.* | store_prefetch.c | store_meta.c | store_parents.* | store_cgroups.* | store_qrun.*) echo 2 ;;
	# store_stmts.h declares the sets that floors 2 and 3 define and store_open.c calls
	store_stmts.h) echo 2 ;;
	store_write.c | store_fold.c | store_query.c | store_groups.c) echo 3 ;;
	store_open.c) echo 4 ;;
	*) echo 9 ;;
	esac
}

bad=0
while IFS=: read -r file line inc; do
	inc=${inc#*\"}
	inc=${inc%%\"*}
	ok=0
	read -ra list <<<"$(allowed "$file")"
	for a in "${list[@]}"; do
		case $a in
		'*') ok=1 ;;
		=) [ -e "include/$inc" ] && ok=1 ;;
		*/) [[ $inc == "$a"* ]] && ok=1 ;;
		*) [ "$inc" = "$a" ] && ok=1 ;;
		esac
	done
	# a header of the including file's own folder by its bare name
	[ -e "$(dirname "$file")/$inc" ] && [[ $inc != */* ]] && ok=1
	if [ $ok = 0 ]; then
		echo "$file:$line: includes \"$inc\", which its folder may not"
		bad=1
	elif [[ $file == lib/store/* && $inc == store/* ]] && [ "$(floor "$inc")" -gt "$(floor "$file")" ]; then
		echo "$file:$line: includes \"$inc\", a store floor above its own ($(floor "$inc") > $(floor "$file"))"
		bad=1
	fi
done < <(grep -n '^#include "' lib/*/*.[ch] daemon/*.[ch] daemon/*/*.[ch] cli/*.[ch])
exit $bad
