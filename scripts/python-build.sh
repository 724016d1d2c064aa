#!/bin/bash
# python-build.sh - builds (once) the CPython builds Debian does not ship, from the source of Debian's
# python3.14 package (sid): the free-threaded build (python3.14t, --disable-gil) and the tail-calling
# interpreter (--with-tail-call-interp, built with clang 19, as python-build-standalone and other
# distributions build 3.14). Each is installed under CACHE/3.14t and CACHE/3.14-tailcall and stripped
# as a distribution strips it (.dynsym kept). The Python tests use them where they have been built.
#
# Usage: scripts/python-build.sh [--print] [t|tailcall]...   (default: both)
#   --print  only print the interpreters built (exit 1 when none), building nothing
# CACHE is $FLAMED_PYTHON_CACHE, default /var/tmp/flamed-python; a finished build is kept (remove its
# directory to build it again). Needs Debian's archive (the source), a C compiler, clang-19 for
# tailcall, and the headers zlib1g-dev libffi-dev; about ten minutes a build on two cores. The log goes
# to CACHE/VARIANT.log.
set -uo pipefail

MIRROR=${MIRROR:-http://deb.debian.org/debian}
CACHE=${FLAMED_PYTHON_CACHE:-/var/tmp/flamed-python}
SOURCE=python3.14

print=0 variants=()
for a in "$@"; do
	case $a in
	--print) print=1 ;;
	t|tailcall) variants+=("$a") ;;
	*) sed -n '2,/^set /p' "$0" | sed -e '/^set /d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
[ ${#variants[@]} -gt 0 ] || variants=(t tailcall)

# The interpreter a finished build installed, by variant.
interp() {
	case $1 in
	t) echo "$CACHE/3.14t/bin/python3.14t" ;;
	tailcall) echo "$CACHE/3.14-tailcall/bin/python3.14" ;;
	esac
}
if [ $print -eq 1 ]; then
	rc=1
	for v in "${variants[@]}"; do
		[ -f "$(dirname "$(dirname "$(interp "$v")")")/.flamed-built" ] && { interp "$v"; rc=0; }
	done
	exit $rc
fi

mkdir -p "$CACHE/src" || exit 1
# The newest python3.14 source in sid: its .orig tarball, checked against the Sources index's sha256.
fetch_source() {
	local idx=$CACHE/src/Sources.xz line ver sum name
	curl -sf -m 120 -o "$idx" "$MIRROR/dists/sid/main/source/Sources.xz" || { echo "python-build.sh: cannot fetch sid's Sources index" >&2; return 1; }
	line=$(xz -dc "$idx" | awk -v p="$SOURCE" '
		/^Package: / { inpkg = ($2 == p) }
		inpkg && /^Version: / { ver = $2 }
		inpkg && /^Checksums-Sha256:/ { insum = 1; next }
		inpkg && insum && /^ / { if ($3 ~ /\.orig\.tar\.xz$/) print ver, $1, $3; next }
		{ insum = 0 }' | sort -V | tail -1)
	read -r ver sum name <<< "$line"
	[ -n "${name:-}" ] || { echo "python-build.sh: no $SOURCE source in sid's index" >&2; return 1; }
	if [ ! -f "$CACHE/src/$name" ]; then
		curl -sf -m 600 -o "$CACHE/src/$name.part" "$MIRROR/pool/main/p/$SOURCE/$name" &&
			mv "$CACHE/src/$name.part" "$CACHE/src/$name" || { echo "python-build.sh: cannot fetch $name" >&2; return 1; }
	fi
	echo "$sum  $CACHE/src/$name" | sha256sum -c --quiet - || { rm -f "$CACHE/src/$name"; echo "python-build.sh: $name: wrong sha256" >&2; return 1; }
	echo "$CACHE/src/$name"
}

build() {
	local v=$1 tarball=$2 prefix dir log cc configure=()
	prefix=$(dirname "$(dirname "$(interp "$v")")")
	[ -f "$prefix/.flamed-built" ] && { echo "python-build.sh: $v: built already ($(interp "$v"))"; return 0; }
	case $v in
	t) cc=gcc; configure=(--disable-gil) ;;
	tailcall) cc=clang-19; configure=(--with-tail-call-interp) ;;
	esac
	command -v "$cc" > /dev/null || { echo "python-build.sh: $v needs $cc" >&2; return 1; }
	log=$CACHE/$v.log
	dir=$CACHE/build-$v
	rm -rf "$dir" "$prefix" && mkdir -p "$dir" || return 1
	echo "python-build.sh: $v: building in $dir (log: $log)"
	tar -xJf "$tarball" -C "$dir" --strip-components=1 || return 1
	(cd "$dir" && CC=$cc ./configure --prefix="$prefix" --enable-shared LDFLAGS="-Wl,-rpath,$prefix/lib" \
		"${configure[@]}" && make -j"$(nproc)" && make altinstall) > "$log" 2>&1 ||
		{ echo "python-build.sh: $v: build failed; see $log" >&2; return 1; }
	# Stripped as a distribution strips: .symtab and debug info gone, .dynsym kept.
	strip --strip-unneeded "$(interp "$v")" "$prefix"/lib/libpython3.14*.so.1.0 || return 1
	"$(interp "$v")" -c 'import sys, sysconfig; print(sys.version.split()[0], "free-threaded" if
		sysconfig.get_config_var("Py_GIL_DISABLED") else "GIL")' || return 1
	rm -rf "$dir"
	touch "$prefix/.flamed-built"
	echo "python-build.sh: $v: $(interp "$v")"
}

tarball=$(fetch_source) || exit 1
rc=0
for v in "${variants[@]}"; do
	build "$v" "$tarball" || rc=1
done
exit $rc
