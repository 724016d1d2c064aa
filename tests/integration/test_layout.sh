#!/bin/bash
# test_layout.sh - the source tree keeps the layout docs/ARCHITECTURE.md describes: each folder includes
# only what its table row allows (the store by floors), and no source file grows past about 800 lines.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

out=$("$ROOT/scripts/include-layers.sh" 2>&1)
check "every #include is one its folder may make (scripts/include-layers.sh)${out:+: $out}" [ -z "$out" ]

# cfi.c (the unwinder's DWARF CFI interpreter) is one job at any length; generated files are not here.
long=$(cd "$ROOT" && wc -l lib/*/*.[ch] daemon/*.[ch] daemon/*/*.[ch] cli/*.[ch] bpf/*.[ch] include/*.h |
	awk '$2 != "total" && $2 != "lib/unwind/cfi.c" && $1 > 850 { printf "%s%s (%d lines)", s, $2, $1; s = ", " }')
check "no source file over 850 lines but lib/unwind/cfi.c${long:+: $long}" [ -z "$long" ]

for d in store query render symbolize elf unwind runtime python util; do
	check "lib/$d/ is described in docs/ARCHITECTURE.md" grep -q "\`lib/$d/\`" "$ROOT/docs/ARCHITECTURE.md"
done
exit $FAILED
