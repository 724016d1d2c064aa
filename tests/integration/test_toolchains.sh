#!/bin/bash
# test_toolchains.sh - whole, readable stacks for programs as today's toolchains build them, without
# frame pointers: tests/workloads/branches.c linked by ld.bfd, gold, lld and mold (lld and mold put the
# code in the read-only segment's page of the file, at another address), tests/workloads/cpp_work.cpp
# (namespaces and templates) by g++ and by clang++ with lld, tests/workloads/rs_work.rs by every rustc
# here (Debian's links with cc, a rustup one with its own lld), assembly kernels without CFI
# (tests/workloads/asmkern.S, and OpenBLAS's under numpy: tests/workloads/npblas.py). At least 98% of each one's samples, from
# a second after its start (its first samples, before its tables are built, are walked by frame
# pointers), carry the whole chain from _start to the leaf; C++ and Rust frames read demangled in every
# output (folded, top, JSON, SVG, pprof), in the full form or as the binary names them when asked.
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
build cpp_gcc g++ -O2 -g -fomit-frame-pointer "$W/cpp_work.cpp" -o "$TMP/cpp_gcc"
build cpp_clang_lld clang++ -O2 -g -fomit-frame-pointer -fuse-ld=lld "$W/cpp_work.cpp" -o "$TMP/cpp_clang_lld"
build thr_cpp g++ -O2 -g -fomit-frame-pointer -fopenmp "$W/cpp_threads.cpp" -o "$TMP/thr_cpp"
build asm_kern gcc -O2 -g -fomit-frame-pointer "$W/asmkern.c" "$W/asmkern.S" -o "$TMP/asm_kern"
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
build thr_rs "${rustcs[-1]}" -O -g "$W/rs_threads.rs" -o "$TMP/thr_rs"
# Python over native extensions: one the test builds (C++, linked by lld) for the system's python3, and
# cryptography's published wheel (Rust, linked by LLD) where pyenv's 3.11 has it.
system_python
pyexts=()
if command -v python3-config > /dev/null && py_supported "$SYSPY_VER" &&
	g++ -O2 -g -fomit-frame-pointer -shared -fPIC $(python3-config --includes) -fuse-ld=lld "$W/pyext.cpp" \
		-o "$TMP/flamedext$(python3-config --extension-suffix)" > "$TMP/build-pyext.log" 2>&1; then
	pyexts+=("$SYSPY|$TMP")
else
	fail "build the C++ extension for $SYSPY ($SYSPY_VER; scripts/deps.sh installs python3-dev)"
	sed 's/^/    /' "$TMP/build-pyext.log" 2> /dev/null | tail -5
fi
crypto_py=${PYENV_ROOT:-/root/.pyenv}/versions/$(ls "${PYENV_ROOT:-/root/.pyenv}/versions" 2> /dev/null | grep '^3\.11\.' | sort -V | tail -1)/bin/python3.11
if [ -x "$crypto_py" ] && "$crypto_py" -c 'import cryptography.x509' 2> /dev/null; then
	pyexts+=("$crypto_py|--crypto")
else
	echo "# cryptography: pyenv's 3.11 with cryptography is not here, not tested"
fi

# numpy over OpenBLAS (Debian's python3-numpy with libopenblas0-pthread): its kernels are assembly
# without CFI, run by OpenBLAS's threads and by the caller's.
blas=0
if "$SYSPY" -c 'import numpy' 2> /dev/null; then
	blas=1
else
	fail "numpy for $SYSPY (scripts/deps.sh test installs python3-numpy and libopenblas0-pthread)"
fi
# OpenBLAS picks its kernels by CPU. Its Haswell ones (its pick on AMD Zen too) save rsp in rbx and align rsp
# down to a page for a buffer, so their CFA is rbx + 0x68 from then on: a rule flamed's unwind rows do not have
# yet, and their samples keep only the leaf. On such a CPU the kernels of the family OpenBLAS picks on Intel
# (SkylakeX with AVX-512, else Sandybridge) are checked, and a SKIP line says what is not.
BLAS_CORE=
if [ $blas = 1 ]; then
	core=$(OPENBLAS_VERBOSE=2 "$SYSPY" -c 'import numpy' 2>&1 | sed -n 's/^Core: //p' | head -1)
	case "$core" in
	Haswell | Zen)
		BLAS_CORE=Sandybridge
		grep -qw avx512f /proc/cpuinfo && BLAS_CORE=SkylakeX
		skip "OpenBLAS's $core kernels (this CPU's): their CFA is in rbx after rsp is realigned, which flamed cannot follow yet; its $BLAS_CORE kernels are checked instead"
		;;
	esac
fi
export OPENBLAS_CORETYPE=${BLAS_CORE:-${OPENBLAS_CORETYPE:-}}
[ -n "$OPENBLAS_CORETYPE" ] || unset OPENBLAS_CORETYPE

run_flamed linkers --db "$TMP/flamed.db" --frequency 99 --flush-interval 1 --listen 127.0.0.1:0
# libc's and OpenBLAS's tables first (a process's first samples wait for every table it needs: OpenBLAS's
# takes seconds), then every program, two at a time (two CPUs).
"$TMP/c_bfd" 1 > /dev/null
[ $blas = 1 ] && OPENBLAS_NUM_THREADS=2 "$SYSPY" "$W/npblas.py" 1 > /dev/null
wait_tables
START=$(date +%s)
if [ $blas = 1 ]; then
	OPENBLAS_NUM_THREADS=2 "$SYSPY" "$W/npblas.py" $SECONDS_RUN > /dev/null & blaspid=$!
	sleep 1
	grep -q libopenblas "/proc/$blaspid/maps" || { echo "# numpy does not run on OpenBLAS here: its kernels not tested"; blas=0; }
	wait $blaspid
fi
pypids=()
for e in "${pyexts[@]}"; do
	"${e%%|*}" "$W/pyext.py" $SECONDS_RUN "${e#*|}" & pypids+=($!)
	wait $!
done
for ((k = 0; k < ${#names[@]}; k += 2)); do
	pids=()
	for n in "${names[@]:k:2}"; do
		"$TMP/$n" $SECONDS_RUN > /dev/null & pids+=($!)
	done
	wait "${pids[@]}"
done
curl -sf -o /dev/null "$URL/api/v1/processes?flush=1"
curl -sf "$URL/api/v1/status" | jq -c '.unwind.samples'

# settled PID OUT: PID's profile from a second after flamed first saw it (its first second skipped:
# samples taken before its tables are built are #29's), into OUT.
settled() {
	local first
	first=$("$BUILD/flamectl" --db "$TMP/flamed.db" processes --from "$START" --to $((START + 600)) --format json |
		jq --argjson p "$1" '.processes[] | select(.pid == $p) | .first_seen')
	"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid "$1" --from $((${first:-0} + 2)) --to $((START + 600)) > "$2"
}

for name in "${names[@]}"; do
	pid=$("$BUILD/flamectl" --db "$TMP/flamed.db" processes --from "$START" --to $((START + 600)) |
		awk -v n="$name" '$2 == n { print $1; exit }')
	case $name in
	# (Whole: from _start down to the work, whatever it calls from there.)
	c_*) chain="^$name;_start;__libc_start_main;__libc_start_call_main;main;run(;|$)" ;;
	cpp_*) chain="^$name;_start;__libc_start_main;__libc_start_call_main;main;heldout::run(;|$)" ;;
	rs_*) chain="^$name;_start;__libc_start_main;__libc_start_call_main;main;std::rt::lang_start_internal;.*;rs_work::main;rs_work::run(;|$)" ;;
	# Threads of native libraries: clone3 (glibc 2.41 names it __clone3) -> start_thread -> the library's thread function -> the work.
	thr_cpp) chain="^$name;(_start;__libc_start_main;__libc_start_call_main;main|(__)?clone3;start_thread)(;|$)" ;;
	thr_rs) chain="^$name;(__)?clone3;start_thread;[^;]*thread_start;.*;rs_threads::spin$" ;;
	# Assembly kernels without CFI (their prologues read): main -> run -> the driver -> the kernel.
	asm_*) chain="^$name;_start;__libc_start_main;__libc_start_call_main;main;run;(sub_driver;asm_sub_kernel|push_driver;asm_push_kernel)$" ;;
	esac
	# The whole run, and from a second after its start (its pid's first second skipped).
	"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid "${pid:-0}" --from "$START" --to $((START + 600)) > "$TMP/$name.all"
	settled "${pid:-0}" "$TMP/$name.folded"
	whole=$(sum_samples "$TMP/$name.folded" "$chain")
	total=$(sum_samples "$TMP/$name.folded")
	echo "$name: $whole of $total samples whole from a second on; $(sum_samples "$TMP/$name.all" "$chain") of $(sum_samples "$TMP/$name.all") in all"
	check "$name: at least 98% of its samples carry _start...main...leaf ($whole of $total)" \
		awk -v a="$whole" -v b="$total" 'BEGIN { exit !(b >= 50 && a * 100 >= b * 98) }'
	[ "$whole" -lt "$total" ] && sort -t' ' -k2 -nr "$TMP/$name.folded" | grep -vE "$chain" | head -3 | cut -c1-200 | sed 's/^/    /'
	if [ "$name" = thr_cpp ]; then
		w=$(sum_samples "$TMP/$name.folded" ";(__)?clone3;start_thread;[^;]+;worker;work::spin$")
		t=$(sum_samples "$TMP/$name.folded" ";(__)?clone3;start_thread;[^;]+;team;work::spin$")
		check "thr_cpp: the std::thread's work under libstdc++'s thread function ($w), an OpenMP thread's under libgomp's ($t)" \
			[ "$w" -gt 20 -a "$t" -gt 20 ]
	fi
done

# ---- Python callers above native extensions ----
i=0
for e in "${pyexts[@]}"; do
	p=${pypids[i]}
	i=$((i + 1))
	settled "$p" "$TMP/py$i.folded"
	if [ "${e#*|}" = --crypto ]; then
		what="cryptography's Rust (${e%%|*})"
		kept=$(sum_samples "$TMP/py$i.folded" ';parse_all \(pyext\.py\);')
		rust=$(sum_samples "$TMP/py$i.folded" ';parse_all \(pyext\.py\);.*(cryptography_rust|pyo3|asn1)::')
		extra="$rust of them in its Rust frames"
		native=$rust
	else
		what="the C++ extension (${e%%|*})"
		kept=$(sum_samples "$TMP/py$i.folded" ';drive \(pyext\.py\);(crunch;)?heldout::ext::Mesh<float>::smooth$')
		extra="under drive, crunch and heldout::ext::Mesh<float>::smooth"
		native=$kept
	fi
	total=$(sum_samples "$TMP/py$i.folded")
	echo "$what: $kept of $total samples keep their Python caller; $extra"
	check "$what: at least 95% of its samples keep their Python caller above the native frames ($kept of $total)" \
		awk -v a="$kept" -v b="$total" -v n="$native" 'BEGIN { exit !(b >= 50 && n > 0 && a * 100 >= b * 95) }'
	[ "$kept" -lt "$total" ] && grep -v "drive (pyext.py)\|parse_all (pyext.py)" "$TMP/py$i.folded" | sort -t' ' -k2 -nr | head -3 | cut -c1-240 | sed 's/^/    /'
done

# ---- OpenBLAS's assembly kernels: their callers, in the caller's thread and in OpenBLAS's own ----
if [ $blas = 1 ]; then
	settled "$blaspid" "$TMP/blas.folded"
	kern=';[sd]gemm_kernel_[A-Za-z0-9]+$'
	in_kernel=$(sum_samples "$TMP/blas.folded" "$kern")
	rooted=$(sum_samples "$TMP/blas.folded" "^[^;]+;(_start;__libc_start_main;|(__)?clone3;start_thread;).*$kern")
	caller=$(sum_samples "$TMP/blas.folded" "^[^;]+;_start;.*;drive \(npblas\.py\);step \(npblas\.py\);.*;cblas_dgemm;.*$kern")
	worker=$(sum_samples "$TMP/blas.folded" "^[^;]+;(__)?clone3;start_thread;.*$kern")
	echo "OpenBLAS: $in_kernel samples in its gemm kernels, $rooted of them whole from _start or clone3; $caller under drive;step;cblas_dgemm, $worker in its threads"
	check "OpenBLAS: at least 95% of the samples in its assembly kernels carry their callers to _start or clone3 ($rooted of $in_kernel)" \
		awk -v a="$rooted" -v b="$in_kernel" 'BEGIN { exit !(b >= 50 && a * 100 >= b * 95) }'
	check "OpenBLAS: the caller's thread shows drive;step;...;cblas_dgemm;...;the kernel ($caller), OpenBLAS's own threads clone3;start_thread;...;the kernel ($worker)" \
		[ "$caller" -gt 10 -a "$worker" -gt 10 ]
	[ "$rooted" -lt "$in_kernel" ] && grep -E "$kern" "$TMP/blas.folded" | grep -vE "^[^;]+;(_start|(__)?clone3);" | sort -t' ' -k2 -nr | head -3 | cut -c1-240 | sed 's/^/    /'
	check "status: functions without CFI given rows from their prologues ($(curl -sf "$URL/api/v1/status" | jq .unwind.prologue_functions))" \
		[ "$(curl -sf "$URL/api/v1/status" | jq .unwind.prologue_functions)" -gt 100 ]
fi

# ---- Names: C++ and Rust frames demangled in every output (of the API, for every program's pid) ----
pids=$("$BUILD/flamectl" --db "$TMP/flamed.db" processes --from "$START" --to $((START + 600)) |
	awk '$2 ~ /^(c|cpp|rs|thr)_/ { print $1 }')
# each FORMAT [ARGS]: the profile of every program, one after another.
each() {
	local fmt=$1 p
	shift
	for p in $pids; do curl -sf "$URL/api/v1/profile?pid=$p&from=$START&to=$((START + 600))&format=$fmt$*"; echo; done
}
# Frames the demangler reads (a C++ or Rust symbol: _Z... or _R...) left as they are.
mangled() { grep -cE '(^|;)_[ZR][A-Za-z0-9_]+($|;| )' "$1"; }
each folded > "$TMP/all.folded"
check "folded: $(grep -c ';' "$TMP/all.folded") stacks of the ${#names[@]} programs, no frame left mangled ($(mangled "$TMP/all.folded") lines with one)" \
	[ "$(grep -c ';' "$TMP/all.folded")" -gt "${#names[@]}" -a "$(mangled "$TMP/all.folded")" = 0 ]
for p in $pids; do curl -sf "$URL/api/v1/top?pid=$p&from=$START&to=$((START + 600))&limit=0"; echo; done > "$TMP/top.json"
check "top: the C++ and Rust functions by their names, none mangled" \
	jq -se '[.[].functions[].name] | (index("heldout::geo::Grid<double>::cell") != null) and
		(index("rs_work::pipeline::mix") != null) and all(test("^_[ZR][A-Za-z0-9_]") | not)' "$TMP/top.json"
each json | jq -s . > "$TMP/tree.json"
check "json: the trees name heldout::geo::Grid<double>::relax and rs_work::pipeline::Stage::churn, nothing mangled" \
	jq -e '[.. | objects | .name? // empty | strings] | (index("heldout::geo::Grid<double>::relax") != null) and
		(index("rs_work::pipeline::Stage::churn") != null) and all(test("^_[ZR][A-Za-z0-9_]") | not)' "$TMP/tree.json"
each svg > "$TMP/all.svg"
check "svg: heldout::geo::Grid&lt;double&gt;::relax drawn, no mangled frame" \
	eval 'grep -q "heldout::geo::Grid&lt;double&gt;::relax (" "$TMP/all.svg" && ! grep -qE ">_[ZR][A-Za-z0-9_]+ \(" "$TMP/all.svg"'
curl -sf "$URL/api/v1/profile?from=$START&to=$((START + 600))&format=pprof" -o "$TMP/all.pb.gz"
if command -v go > /dev/null; then
	HOME=$TMP GOCACHE=$TMP/gocache GOPATH=$TMP/gopath GOFLAGS= go tool pprof -top "$TMP/all.pb.gz" 2> /dev/null > "$TMP/pprof.top"
	check "go tool pprof -top: heldout::geo::Grid<double>::cell and rs_work::pipeline::mix, nothing mangled" \
		eval 'grep -q "heldout::geo::Grid<double>::cell$" "$TMP/pprof.top" && grep -q "rs_work::pipeline::mix$" "$TMP/pprof.top" &&
		      ! grep -qE " _[ZR][A-Za-z0-9_]+$" "$TMP/pprof.top"'
else
	fail "go tool pprof reads the profile: go is not installed (scripts/deps.sh test installs golang-go)"
fi
each folded "&demangle=full" > "$TMP/full.folded"
check "demangle=full: C++'s parameters and const, Rust's hash" \
	eval 'grep -q ";heldout::geo::Grid<double>::relax(int);heldout::geo::Grid<double>::cell(int, int) const " "$TMP/full.folded" &&
	      grep -qE ";rs_work::pipeline::Stage::churn::h[0-9a-f]{16}(;| )" "$TMP/full.folded"'
# flamectl reads the database with --demangle as the API does.
cpp=$("$BUILD/flamectl" --db "$TMP/flamed.db" processes --from "$START" --to $((START + 600)) | awk '$2 == "cpp_gcc" { print $1 }')
"$BUILD/flamectl" --db "$TMP/flamed.db" query --pid "${cpp:-0}" --from "$START" --to $((START + 600)) --demangle none > "$TMP/none.folded"
check "flamectl --demangle none: as the binary names them (_ZN7heldout3geo4GridIdE5relaxEi)" \
	grep -q ";_ZN7heldout3geo4GridIdE5relaxEi;_ZNK7heldout3geo4GridIdE4cellEii " "$TMP/none.folded"
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]
exit $FAILED
