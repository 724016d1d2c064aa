#!/bin/bash
# test_dashboard.sh - the dashboard at / in real headless Chromium (Debian's chromium, driven by
# playwright-core from tests/browser) against a sampling flamed: a workload whose profile changes over
# time (tests/workloads/phases.c), then every step a person takes, screenshots in $BUILD/screenshots.
. "$(dirname "$0")/lib.sh"
BROWSER_DIR=$(cd "$(dirname "$0")/../browser" && pwd)
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

need_root dashboard
if [ ! -x "$CHROMIUM" ]; then
	skip "dashboard: $CHROMIUM is missing (scripts/deps.sh test installs Debian's chromium)"
	exit 0
fi
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
	skip "dashboard: node and npm are needed to drive the browser (scripts/deps.sh installs them)"
	exit 0
fi

# playwright-core as pinned by tests/browser/package-lock.json, when missing or older than the lock.
stamp=$BROWSER_DIR/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ "$BROWSER_DIR/package-lock.json" -nt "$stamp" ] || [ "$BROWSER_DIR/package.json" -nt "$stamp" ]; then
	(cd "$BROWSER_DIR" && npm ci --no-audit --no-fund --loglevel=error) > "$TMP/npm.log" 2>&1
	check "npm ci installs playwright-core in tests/browser" eval '[ -f "$stamp" ] || { cat "$TMP/npm.log"; false; }'
	[ -f "$stamp" ] || exit 1
fi

build_workload phases
run_flamed dashboard --db "$TMP/flamed.db" --frequency 99 --flush-interval 1 --listen 127.0.0.1:0
check "flamed says which port it serves on ($URL)" [ -n "$URL" ]
[ -n "$URL" ] || exit 1

# The worker spins 4 s, idles 2 s, writes 3 s; the main thread's housekeeping runs throughout.
FROM=$(($(date +%s) - 1))
START=$(date +%s.%N)
"$TMP/phases" 4 2 3 & wpid=$!
wait $wpid
sleep 2.5 # the last flush
TO=$(($(date +%s) + 1))

# What the dashboard will be asked to show must be there first, or the failure is not the page's.
curl -sf "$URL/api/v1/profile?pid=$wpid&from=$FROM&to=$TO" > "$TMP/w.folded"
check "the workload's profile has its three functions (crunch_leaf, write_loop, housekeeping_leaf)" \
	eval 'grep -q ";crunch_leaf" "$TMP/w.folded" && grep -q ";write_loop" "$TMP/w.folded" && grep -q ";housekeeping_leaf" "$TMP/w.folded"'

SHOTS=$BUILD/screenshots
mkdir -p "$SHOTS"
rm -f "$SHOTS"/dashboard-*.png
(cd "$BROWSER_DIR" && node dashboard.test.mjs --url "$URL" --pid "$wpid" --start "$START" --from "$FROM" --to "$TO" \
	--shots "$SHOTS" --chromium "$CHROMIUM")
[ $? -eq 0 ] || FAILED=1

stop_flamed
check "flamed exits 0 on SIGTERM after serving the dashboard" [ $? -eq 0 ]

# A flamed with an API token: the page asks for it and uses it.
head -c 24 /dev/urandom | base64 > "$TMP/token"
chmod 600 "$TMP/token"
run_flamed dashboard --db "$TMP/flamed.db" --listen 127.0.0.1:0 --auth-token-file "$TMP/token"
(cd "$BROWSER_DIR" && node auth.test.mjs --url "$URL" --token "$(cat "$TMP/token")" --shots "$SHOTS" --chromium "$CHROMIUM")
[ $? -eq 0 ] || FAILED=1
stop_flamed
exit $FAILED
