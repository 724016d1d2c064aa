#!/bin/bash
# test_install.sh - `make install` honours PREFIX and DESTDIR, and the unit starts the installed daemon.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

# With make test's SANITIZE: an object rebuilt here gets the same flags as the rest of $BUILD.
make -s -C "$ROOT" install BUILD="$BUILD" SANITIZE="$SANITIZE" PREFIX=/opt/flamed-test DESTDIR="$TMP/root" > "$TMP/install.log" 2>&1
check "make install succeeds" [ $? -eq 0 ]
check "flamed installed under DESTDIR/PREFIX/bin" [ -x "$TMP/root/opt/flamed-test/bin/flamed" ]
check "flamectl installed under DESTDIR/PREFIX/bin" [ -x "$TMP/root/opt/flamed-test/bin/flamectl" ]
unit="$TMP/root/opt/flamed-test/lib/systemd/system/flamed.service"
check "the unit is installed" [ -f "$unit" ]
check "the unit runs the daemon from PREFIX" grep -q '^ExecStart=/opt/flamed-test/bin/flamed ' "$unit"
check "the unit keeps state in /var/lib/flamed" grep -q '^StateDirectory=flamed$' "$unit"

if command -v systemd-analyze > /dev/null; then
	sed "s|^ExecStart=/opt/flamed-test/bin/flamed|ExecStart=$TMP/root/opt/flamed-test/bin/flamed|" "$unit" > "$TMP/flamed.service"
	check "systemd-analyze verify accepts the unit" systemd-analyze verify "$TMP/flamed.service"
	exposure=$(systemd-analyze security --offline=yes "$TMP/flamed.service" 2>/dev/null | sed -n 's/.*exposure level for flamed.service: \([0-9.]*\).*/\1/p')
	check "the unit's systemd-analyze exposure is at most 3.5 ($exposure)" awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 3.5) }'
	check "the unit is Type=notify with a watchdog" eval 'grep -q "^Type=notify$" "$unit" && grep -q "^WatchdogSec=" "$unit"'
	# With the HTTPS drop-in (the key as a credential) in flamed.service.d beside it, which systemd-analyze
	# reads with the unit: still valid, the same hardening.
	dropin="$TMP/root/opt/flamed-test/share/flamed/flamed-https.conf"
	check "the HTTPS drop-in is installed, running the daemon from PREFIX" \
		grep -q '^ExecStart=/opt/flamed-test/bin/flamed .*--tls-key ${CREDENTIALS_DIRECTORY}/flamed.key' "$dropin"
	mkdir -p "$TMP/flamed.service.d"
	sed "s|^ExecStart=/opt/flamed-test/bin/flamed|ExecStart=$TMP/root/opt/flamed-test/bin/flamed|" "$dropin" > "$TMP/flamed.service.d/https.conf"
	check "systemd-analyze verify accepts the unit with the HTTPS drop-in" systemd-analyze verify "$TMP/flamed.service"
	exposure2=$(systemd-analyze security --offline=yes "$TMP/flamed.service" 2>/dev/null | sed -n 's/.*exposure level for flamed.service: \([0-9.]*\).*/\1/p')
	check "with the drop-in, the exposure is the same ($exposure2, $exposure)" [ "$exposure2" = "$exposure" ]
else
	skip "systemd unit checks: systemd-analyze is not installed"
fi

# --help names every long option the parser accepts (the help stays true).
help=$("$TMP/root/opt/flamed-test/bin/flamed" --help)
check "flamed --help exits 0" [ $? -eq 0 ]
for o in $(grep -o '{ "[a-z-]*", ' "$ROOT/daemon/options.c" | cut -d'"' -f2); do
	check "flamed --help describes --$o" grep -q -- "--$o" <<< "$help"
done
"$TMP/root/opt/flamed-test/bin/flamed" --frequency 0 2> "$TMP/err"
check "flamed rejects --frequency 0 with exit 2" [ $? -eq 2 ]
check "and says what it wants" grep -q 'whole number from 1 to 10000' "$TMP/err"
"$TMP/root/opt/flamed-test/bin/flamed" --bogus 2> /dev/null
check "flamed rejects an unknown option with exit 2" [ $? -eq 2 ]
exit $FAILED
