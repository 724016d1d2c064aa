#!/bin/bash
# fresh-debian.sh - runs the README's commands as a new user would, on a fresh Debian 12 (bookworm) and a
# fresh Debian 13 (trixie), one after the other: makes a root with debootstrap (minbase, plus git make
# ca-certificates sudo), clones this checkout's HEAD into it, mounts what the BPF side needs (/proc, /sys,
# /dev), then runs `make`, `make test` and `make run FLAMED_ARGS=--off-cpu` inside it (until CPU samples
# and off-CPU time show in /api/v1/status), and prints make test's summary line, its skips and the
# instructions the verifier processed for each BPF program, as that release's clang built them.
# The mounts live in a mount namespace of the script's own, gone when it ends however it ends; each root
# is removed afterwards unless --keep. Takes about 15 minutes a release; root only.
#
# Usage: scripts/fresh-debian.sh [--keep] [--reuse] [--release bookworm|trixie|both] [ROOT]
#   --release  which Debian: bookworm (12), trixie (13), or both (the default), one after the other
#   ROOT       where to make the root (default: a new /var/tmp/flamed-fresh-RELEASE.XXXXXX); with both
#              releases, ROOT-bookworm and ROOT-trixie
#   --keep     leave the root in place afterwards (to look inside, or to --reuse it)
#   --reuse    skip debootstrap when ROOT already holds a root this script made (not fresh: for
#              checking a fix to the script itself; the clone is made anew either way)
# The full output goes to ROOT.log beside each root. Exits non-zero when any release's make, make test
# or make run failed.
set -uo pipefail

MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY=${SECURITY:-http://deb.debian.org/debian-security}
MARK=.flamed-fresh-root
# The part in its own mount namespace: mounts, clone, the README's commands. Prints "fresh-debian.sh:
# make: ..." lines for the summary; exits non-zero when a command fails.
inside() {
	local root=$1 src=$2 rc
	# 2. The root is a mount point, as an installed system's / is (unshare --mount inside needs one), then
	# what the kernel side needs: /proc, /sys (BTF, perf events, cgroups), /dev; nothing else of the host.
	mount --bind "$root" "$root" &&
		mount -t proc proc "$root/proc" &&
		mount --rbind /sys "$root/sys" &&
		mount --rbind /dev "$root/dev" &&
		mount -t tmpfs tmpfs "$root/run" || { echo "fresh-debian.sh: bind-mounting the root or mounting /proc, /sys, /dev or /run failed"; return 1; }

	# 3. A clone of this checkout's HEAD, as CI clones main.
	rm -rf "$root/root/flamed"
	git clone --quiet "$src" "$root/root/flamed" || { echo "fresh-debian.sh: git clone $src failed"; return 1; }
	echo "fresh-debian.sh: cloned $(git -C "$root/root/flamed" log -1 --format='%h %s' | cut -c1-72)"

	# 4. The README's commands, as root, in a clean environment (nothing of the host's PATH or tools).
	in_root() {
		chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "cd /root/flamed || exit 1; $1"
	}
	if ! in_root make; then
		echo "fresh-debian.sh: make: failed"
		return 1
	fi
	echo "fresh-debian.sh: make: passed"
	in_root 'make test'
	rc=$?
	echo "fresh-debian.sh: make test: exit status $rc"
	# make run serves on 127.0.0.1:7070, in the host's network: only when nothing else holds that port.
	# With --off-cpu: "builds but cannot sample" (a BPF program the verifier refuses) shows here.
	if grep -q ':1B9E 00000000:0000 0A' /proc/net/tcp; then
		echo "fresh-debian.sh: make run: not tried, port 7070 is taken on this host"
	elif in_root 'make run FLAMED_ARGS=--off-cpu > /tmp/run.log 2>&1 < /dev/null & m=$!; ok=1
		api=http://127.0.0.1:7070
		for i in $(seq 150); do curl -sf $api/healthz > /dev/null && { ok=0; break; }; sleep 0.2; done
		if [ $ok = 0 ]; then
			sleep 4 # CPU samples and waits; flush=1 stores them
			curl -sf -o /dev/null "$api/api/v1/processes?flush=1&kind=offcpu"
			curl -sf $api/api/v1/status > /tmp/status.json
			jq -r "\"fresh-debian.sh: make run --off-cpu: \(.samples) CPU samples, \(.off_cpu.us_stored) us off CPU stored\"
				+ (if .off_cpu.refused then \" (off-CPU refused: \(.off_cpu.refused))\" else \"\" end)" /tmp/status.json
			echo "fresh-debian.sh: bpf (clang $(clang -dumpversion)): $(jq -r "[.bpf.programs[] |
				\"\(.name) \(.verified_insns)\"] | join(\", \")" /tmp/status.json) verified instructions"
			jq -e ".samples > 0 and .off_cpu.enabled and .off_cpu.us_stored > 0" /tmp/status.json > /dev/null || ok=1
		fi
		pkill -TERM -P $m; wait $m; [ $ok = 0 ] || cat /tmp/run.log; exit $ok'; then
		echo "fresh-debian.sh: make run: CPU samples and off-CPU time in /api/v1/status"
	else
		echo "fresh-debian.sh: make run: no CPU samples or no off-CPU time in /api/v1/status"
		rc=1
	fi
	return $rc
}
if [ "${1:-}" = --inside ]; then
	inside "$2" "$3"
	exit
fi

keep=0 reuse=0 root= release=both

usage() { sed -n '2,/^set /p' "$0" | sed -e '/^set /d' -e 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--keep) keep=1 ;;
	--reuse) reuse=1; keep=1 ;;
	--release) [ $# -ge 2 ] || usage; release=$2; shift ;;
	--release=*) release=${1#--release=} ;;
	-h|--help) usage ;;
	-*) echo "fresh-debian.sh: unknown option $1" >&2; usage ;;
	*) [ -z "$root" ] || usage; root=$1 ;;
	esac
	shift
done
case $release in
bookworm|trixie|both) ;;
*) echo "fresh-debian.sh: --release takes bookworm, trixie or both, not $release" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
	echo "fresh-debian.sh: debootstrap, chroot and mount need root: sudo $0 $*" >&2
	exit 1
fi
# Both releases: each in a run of this script of its own (its own root, log, cleanup), then every
# summary again.
if [ "$release" = both ]; then
	rc=0 logs=()
	for r in bookworm trixie; do
		args=(--release "$r")
		[ $keep -eq 1 ] && args+=(--keep)
		[ $reuse -eq 1 ] && args+=(--reuse)
		[ -n "$root" ] && args+=("$root-$r")
		"$0" "${args[@]}" || rc=1
	done
	exit $rc
fi
case $release in
bookworm) version=12 ;;
trixie) version=13 ;;
esac
src=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel) || exit 1
if ! command -v debootstrap > /dev/null; then
	echo "fresh-debian.sh: installing debootstrap" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap > /dev/null || exit 1
fi

[ -n "$root" ] || root=$(mktemp -d "/var/tmp/flamed-fresh-$release.XXXXXX") || exit 1
mkdir -p "$root" && root=$(cd "$root" && pwd -P) || exit 1
if [ "$root" = / ]; then echo "fresh-debian.sh: ROOT cannot be /" >&2; exit 1; fi
# The root's / as an installed system's: mktemp -d made it 0700, so inside it no user but root could
# reach any file (the tests that run a program as nobody failed with "Permission denied").
chmod 755 "$root" || exit 1
log=$root.log
: > "$log"
say() { echo "fresh-debian.sh: $*" | tee -a "$log" >&2; }

# Whatever happens: stop what still runs in the root (make run's flamed, a browser), then remove it.
# Its mounts were made in a mount namespace of their own (step 2), which is gone with its last process.
cleanup() {
	local p left
	trap - EXIT INT TERM
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2> /dev/null
	done
	sleep 0.5
	left=$(awk -v r="$root" 'index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo)
	if [ -n "$left" ]; then
		say "still mounted, so $root is left in place: $(echo $left)"
	elif [ $keep -eq 0 ]; then
		rm -rf --one-file-system "$root"
	else
		say "kept the root in $root"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# 1. The root: Debian minbase, the four packages a user starts from, apt sources as an install has.
if [ $reuse -eq 1 ] && [ -f "$root/$MARK" ]; then
	say "reusing the root in $root (not fresh)"
else
	if [ -n "$(ls -A "$root")" ]; then
		say "$root is not empty and holds no root of this script's; give a new directory"
		exit 1
	fi
	say "debootstrap $release into $root (log: $log)"
	if ! debootstrap --variant=minbase --include=git,make,ca-certificates,sudo "$release" "$root" "$MIRROR" >> "$log" 2>&1; then
		say "debootstrap failed; see $log"
		exit 1
	fi
	cat > "$root/etc/apt/sources.list" <<-EOF
	deb $MIRROR $release main
	deb $MIRROR $release-updates main
	deb $SECURITY $release-security main
	EOF
	# Where the host's network inspects TLS, its extra CA certificates are what makes HTTPS work.
	if ls /usr/local/share/ca-certificates/*.crt > /dev/null 2>&1; then
		cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
		chroot "$root" update-ca-certificates >> "$log" 2>&1
	fi
	# A fresh install can resolve names and knows localhost: the host's files give the same.
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	[ -s "$root/etc/hosts" ] || cp /etc/hosts "$root/etc/hosts"
	touch "$root/$MARK"
fi

# 2-4 run in a mount namespace of their own: whatever happens to this script, the mounts go with it.
unshare --mount --propagation private "$0" --inside "$root" "$src" 2>&1 | tee -a "$log" | grep --line-buffered -E '^(FAIL|SKIP): |^== |^fresh-debian'
rc=${PIPESTATUS[0]}
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
echo
# The commit the root cloned (this checkout's HEAD may have moved on since).
echo "on a fresh Debian $version ($release) root, at $(git -C "$root/root/flamed" rev-parse --short HEAD 2> /dev/null || echo '?') (the whole log: $log):"
grep -E '^fresh-debian.sh: (make|make run|make run --off-cpu|bpf .*): ' "$log" | sed 's/^fresh-debian.sh: /  /'
echo "  make test: ${summary:-no summary line}"
grep -E '^SKIP: ' "$log" | sed 's/^/    /'
exit "$rc"
