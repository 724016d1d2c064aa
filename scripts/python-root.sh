#!/bin/bash
# python-root.sh - makes (once) a private root holding the Pythons of Debian unstable and experimental, as
# Debian ships them (stripped, no -dbg packages): sid's python3.13 and python3.14 and experimental's
# python3.15. The Python tests (tests/integration/test_pyroot.sh) run their program inside it with
# chroot, as a container runs a distribution's interpreter on this kernel.
#
# Usage: scripts/python-root.sh [--print] [ROOT]
#   ROOT     where the root goes (default /var/tmp/flamed-pyroot); kept between runs: a root this script
#            finished is used as it is (remove it to make it anew)
#   --print  only say whether ROOT is ready (exit 0) or not (exit 1), making nothing
# Takes about five minutes the first time (debootstrap, then apt); needs root and Debian's archive. The
# archive's Release files may be past their Valid-Until date (experimental's often is): apt is told to
# accept that (Acquire::Check-Valid-Until=false), nothing else about the archive is trusted less.
# The log goes to ROOT.log. Exits non-zero, saying why, when the root cannot be made.
set -uo pipefail

MIRROR=${MIRROR:-http://deb.debian.org/debian}
MARK=.flamed-pyroot-ready
PACKAGES_SID="python3.13 python3.14"
PACKAGES_EXPERIMENTAL="python3.15"

print=0 root=
while [ $# -gt 0 ]; do
	case $1 in
	--print) print=1 ;;
	-h|--help) sed -n '2,/^set /p' "$0" | sed -e '/^set /d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
	-*) echo "python-root.sh: unknown option $1" >&2; exit 2 ;;
	*) root=$1 ;;
	esac
	shift
done
root=${root:-/var/tmp/flamed-pyroot}
if [ -f "$root/$MARK" ]; then
	[ $print -eq 1 ] && echo "$root"
	exit 0
fi
if [ $print -eq 1 ]; then
	echo "python-root.sh: $root is not made yet (run scripts/python-root.sh)" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "python-root.sh: debootstrap and chroot need root" >&2
	exit 1
fi
if ! command -v debootstrap > /dev/null; then
	echo "python-root.sh: debootstrap is not installed (apt-get install debootstrap)" >&2
	exit 1
fi
log=$root.log
tmp=$root.partial
: > "$log" || exit 1
say() { echo "python-root.sh: $*" | tee -a "$log" >&2; }

# A partial root from a run that was stopped is made again from the start.
rm -rf "$tmp"
say "debootstrap sid into $tmp (log: $log)"
if ! debootstrap --variant=minbase sid "$tmp" "$MIRROR" >> "$log" 2>&1; then
	say "debootstrap failed; see $log"
	exit 1
fi
cat > "$tmp/etc/apt/sources.list" <<EOF
deb $MIRROR sid main
deb $MIRROR experimental main
EOF
in_root() {
	chroot "$tmp" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
		PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@" >> "$log" 2>&1
}
apt=(apt-get -o Acquire::Check-Valid-Until=false -y --no-install-recommends)
say "installing $PACKAGES_SID (sid) and $PACKAGES_EXPERIMENTAL (experimental)"
# shellcheck disable=SC2086
if ! in_root "${apt[@]}" update || ! in_root "${apt[@]}" install $PACKAGES_SID ||
	! in_root "${apt[@]}" -t experimental install $PACKAGES_EXPERIMENTAL; then
	say "apt-get failed; see $log"
	exit 1
fi
for p in python3.13 python3.14 python3.15; do
	v=$(in_root "$p" -c 'import sys; print(sys.version.split()[0])'; chroot "$tmp" "$p" -c \
		'import sys; print(sys.version.split()[0])' 2> /dev/null)
	say "$p: ${v:-does not run}"
done
rm -rf "$tmp/var/cache/apt/archives"/*.deb
touch "$tmp/$MARK"
rm -rf "$root"
mv "$tmp" "$root" || exit 1
say "ready: $root"
