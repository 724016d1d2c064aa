#!/bin/sh
# deps.sh - installs the Debian packages flamed needs to build and test, when missing, by what the
# distribution has (Debian 12 and 13 alike), not by version names: the debug package of its own python3,
# the sanitizer runtime of the clang that builds (CLANG, default clang).
# As root it runs apt-get; otherwise it prints the command to run and fails.
# Usage: [CLANG=clang-N] scripts/deps.sh [build|test]
set -eu

build_pkgs="make gcc clang llvm pkg-config libbpf-dev bpftool libelf-dev zlib1g-dev libsqlite3-dev
	libmicrohttpd-dev libgnutls28-dev libcurl4-gnutls-dev libjson-c-dev libprotobuf-c-dev protobuf-c-compiler libdw-dev libiberty-dev libdebuginfod-dev"
# Every tool a test uses, so that a test skips only where the kernel refuses a feature: python3-dbg (the
# system python3's debug file: python3.11-dbg on Debian 12, python3.13-dbg on 13), lld, mold and rustc
# (programs linked the way Rust and many C++ projects link them), python3-numpy over libopenblas0-pthread
# (OpenBLAS's assembly kernels have no CFI, and its threads are a native library's), python3-numba (JIT code
# registered with the GDB JIT interface), g++ (C++ frames), dwz
# (DWARF shared between files), a JDK (java and jcmd write JIT perf maps), systemd (systemd-analyze), tmux
# (a real terminal for flamectl record's Ctrl-C and top --watch), debootstrap (test_pyroot.sh's private
# root of Debian unstable's Pythons), debuginfod (a debuginfod server and debuginfod-find: debug files
# flamed fetches, test_debuginfod.sh), libcap2-bin (capsh: test_cgroups.sh's flamed without
# CAP_DAC_READ_SEARCH), openssl and prometheus (test_tls.sh's certificates and handshakes, and a
# Prometheus scraping over HTTPS); and the sanitizer runtime of the clang that builds (make test SANITIZE=1's LeakSanitizer, make fuzz), named by its version below.
test_pkgs="binutils procps libc6-dbg python3-dbg python3-dev curl libxml2-utils golang-go jq chromium sqlite3 wrk lld mold rustc
	python3-numpy libopenblas0-pthread python3-numba g++ dwz default-jdk-headless systemd tmux debootstrap
	debuginfod libcap2-bin openssl prometheus"

# The major version of the clang that builds: the installed one's, else the one Debian's clang package
# would install (clang-14 on Debian 12, clang-19 on 13).
clang_major() {
	clang=${CLANG:-clang}
	if command -v "$clang" > /dev/null 2>&1; then
		"$clang" -dumpversion | cut -d. -f1
	elif [ "$clang" = clang ]; then
		apt-cache depends clang 2> /dev/null | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -1
	else
		echo "$clang" | sed -n 's/^clang-\([0-9][0-9]*\)$/\1/p'
	fi
}

pkgs=$build_pkgs
if [ "${1:-build}" = test ]; then
	major=$(clang_major)
	if [ -z "$major" ]; then
		echo "flamed: cannot tell the version of ${CLANG:-clang}, for its sanitizer runtime (libclang-rt-N-dev)" >&2
		exit 1
	fi
	pkgs="$build_pkgs $test_pkgs libclang-rt-$major-dev"
	# gold: part of binutils on Debian 12, a package of its own from Debian 13 on.
	if apt-cache policy binutils-gold 2> /dev/null | grep -q 'Candidate: [0-9]'; then
		pkgs="$pkgs binutils-gold"
	fi
fi

# The dashboard is bundled with Node.js and npm: any recent ones will do, Debian's when there are none.
command -v node > /dev/null 2>&1 || pkgs="$pkgs nodejs"
command -v npm > /dev/null 2>&1 || pkgs="$pkgs npm"

missing=""
for p in $pkgs; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = installed ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "flamed: missing Debian packages:$missing" >&2
	echo "install them with: sudo apt-get install -y$missing" >&2
	exit 1
fi
echo "flamed: installing missing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
