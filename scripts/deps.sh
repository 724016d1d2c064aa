#!/bin/sh
# deps.sh - installs the Debian packages flamed needs to build and test, when missing.
# As root it runs apt-get; otherwise it prints the command to run and fails.
# Usage: scripts/deps.sh [build|test]
set -eu

build_pkgs="make gcc clang llvm pkg-config libbpf-dev bpftool libelf-dev zlib1g-dev libsqlite3-dev
	libmicrohttpd-dev libprotobuf-c-dev protobuf-c-compiler libdw-dev"
# Every tool a test uses, so that a test skips only where the kernel refuses a feature: g++ (C++ frames),
# dwz (DWARF shared between files), a JDK (java and jcmd write JIT perf maps), systemd (systemd-analyze),
# tmux (a real terminal for flamectl record's Ctrl-C and top --watch).
test_pkgs="binutils procps libc6-dbg python3.11-dbg curl libxml2-utils golang-go jq chromium libclang-rt-14-dev sqlite3 wrk
	g++ dwz default-jdk-headless systemd tmux"

pkgs=$build_pkgs
[ "${1:-build}" = test ] && pkgs="$build_pkgs $test_pkgs"

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
