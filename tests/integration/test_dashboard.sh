#!/bin/bash
# test_dashboard.sh - the dashboard at / in real headless Chromium (Debian's chromium, driven by
# playwright-core from tests/browser) against a sampling flamed: a workload whose profile changes over
# time (tests/workloads/phases.c; flamed counts its time off CPU too), then every step a person takes,
# screenshots in $BUILD/screenshots; a process tree (a parent and two children, tree.test.mjs): the panel's
# tree, picking it with its children, zooming to when it ran, the link flamectl record prints; a workload in
# a systemd unit's cgroup, the panel grouped by service and the unit picked (services.test.mjs); and a
# flamed without --off-cpu, whose dashboard says so.
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

# Too old a Node.js or Chromium is named before anything starts: the oldest Node.js is what the pinned
# playwright-core says (its engines in the lock file), the oldest Chromium what the page is built for.
lock=$BROWSER_DIR/package-lock.json
need_node=$(jq -r '.packages["node_modules/playwright-core"].engines.node // ""' "$lock" | tr -dc '0-9.' | cut -d. -f1)
have_node=$(node -p 'process.versions.node' 2>/dev/null)
if [ -z "$need_node" ] || ! [ "${have_node%%.*}" -ge "$need_node" ] 2>/dev/null; then
	fail "dashboard: Node.js ${have_node:-(none)} is older than ${need_node:-?}, which playwright-core (tests/browser/package-lock.json) needs: apt-get install nodejs (Debian 12's is 18), or put a newer node first in PATH"
	exit 1
fi
pass "dashboard: Node.js $have_node is at least $need_node, which playwright-core needs"

# playwright-core as pinned by tests/browser/package-lock.json, when missing or another version.
want=$(jq -r '.packages["node_modules/playwright-core"].version' "$lock")
installed=$BROWSER_DIR/node_modules/playwright-core/package.json
if [ "$(jq -r .version "$installed" 2>/dev/null)" != "$want" ]; then
	(cd "$BROWSER_DIR" && npm ci --no-audit --no-fund --engine-strict --loglevel=error) > "$TMP/npm.log" 2>&1
	check "npm ci installs playwright-core $want in tests/browser" \
		eval '[ "$(jq -r .version "$installed" 2>/dev/null)" = "$want" ] || { cat "$TMP/npm.log"; false; }'
	[ "$FAILED" -eq 0 ] || exit 1
fi

# The dashboard's bundle is built for Chromium 100 and later (esbuild's target in web/build.mjs).
need_chromium=$(grep -o "'chrome[0-9]*'" "$BROWSER_DIR/../../web/build.mjs" | tr -dc 0-9)
have_chromium=$("$CHROMIUM" --version 2>/dev/null | grep -o '[0-9][0-9.]*' | head -1)
if [ -z "$need_chromium" ] || ! [ "${have_chromium%%.*}" -ge "$need_chromium" ] 2>/dev/null; then
	fail "dashboard: Chromium ${have_chromium:-(no version from $CHROMIUM --version)} is older than ${need_chromium:-?}, which the dashboard is built for (web/build.mjs): apt-get install chromium, or set CHROMIUM=PATH"
	exit 1
fi
pass "dashboard: Chromium $have_chromium is at least $need_chromium, which the dashboard is built for"

# browser_test SCRIPT ARGS...: runs tests/browser/SCRIPT, which prints a PASS or FAIL line per check;
# when it exits non-zero without one (a crash, a browser that would not start) the failure says so.
browser_test() {
	local script=$1 rc
	shift
	(cd "$BROWSER_DIR" && node "$script" "$@") > "$TMP/$script.out" 2>&1
	rc=$?
	cat "$TMP/$script.out"
	if [ $rc -ne 0 ]; then
		FAILED=1
		grep -q '^FAIL: ' "$TMP/$script.out" ||
			fail "$script runs to its end (it exited with status $rc: $(grep -v '^ *at ' "$TMP/$script.out" | tail -3 | tr '\n' ' '))"
	fi
}

build_workload phases
# The Python colour needs Python frames: the system's python3 where flamed reads its version, else the
# first other interpreter it reads (python_interps says which).
python_interps
PYSPIN=${INTERPS[0]:-$SYSPY}
run_flamed dashboard --db "$TMP/flamed.db" --frequency 99 --flush-interval 1 --listen 127.0.0.1:0 --off-cpu
check "flamed says which port it serves on ($URL)" [ -n "$URL" ]
[ -n "$URL" ] || exit 1

# The worker spins 4 s, idles 2 s (off CPU), writes 3 s; the main thread's housekeeping runs throughout
# (and sleeps between, off CPU).
FROM=$(($(date +%s) - 1))
START=$(date +%s.%N)
"$TMP/phases" 4 2 3 & wpid=$!
"$PYSPIN" "$(dirname "$0")/../workloads/pyspin.py" 3 > /dev/null & pypid=$! # Python frames' colour
wait $wpid $pypid
sleep 2.5 # the last flush
TO=$(($(date +%s) + 1))

# What the dashboard will be asked to show must be there first, or the failure is not the page's.
curl -sf "$URL/api/v1/profile?pid=$wpid&from=$FROM&to=$TO" > "$TMP/w.folded"
check "the workload's profile has its three functions (crunch_leaf, write_loop, housekeeping_leaf)" \
	eval 'grep -q ";crunch_leaf" "$TMP/w.folded" && grep -q ";write_loop" "$TMP/w.folded" && grep -q ";housekeeping_leaf" "$TMP/w.folded"'
curl -sf "$URL/api/v1/profile?kind=offcpu&pid=$wpid&from=$FROM&to=$TO" > "$TMP/w-off.folded"
check "the workload's off-CPU profile has the worker's idle phase (worker_main;nanosleep), 1 s or more" \
	eval '[ "$(sum_samples "$TMP/w-off.folded" ";worker_main;nanosleep")" -ge 1000000 ] || { head -5 "$TMP/w-off.folded"; false; }'

SHOTS=$BUILD/screenshots
mkdir -p "$SHOTS"
rm -f "$SHOTS"/dashboard-*.png "$SHOTS"/tree-*.png
browser_test dashboard.test.mjs --url "$URL" --pid "$wpid" --start "$START" --from "$FROM" --to "$TO" \
	--shots "$SHOTS" --chromium "$CHROMIUM" --pypid "$pypid"

# A process tree: a parent (the system's python3) burns CPU 4 s while its two children (branches) burn it 2 s
# each.
build_workload branches
FAM_FROM=$(date +%s)
"$SYSPY" -c '
import subprocess, sys, time
kids = [subprocess.Popen([sys.argv[1], "2"], stdout=subprocess.DEVNULL) for _ in range(2)]
print(",".join(str(k.pid) for k in kids), flush=True)
end = time.time() + 4
while time.time() < end:
    pass
for k in kids:
    k.wait()
' "$TMP/branches" > "$TMP/kids" & fpid=$!
wait $fpid
FAM_TO=$(($(date +%s) + 1))
kids=$(cat "$TMP/kids")
# flush=1: what was sampled is stored before the answer.
curl -sf "$URL/api/v1/processes?flush=1&pid=$fpid&children=1&from=$FAM_FROM&to=$FAM_TO" > "$TMP/family.json"
under=$(jq -r --argjson p "$fpid" '.processes[] | select(.parent == $p) | .pid' "$TMP/family.json" 2>/dev/null | sort -n | paste -sd,)
check "the family is stored: the parent $fpid with its children $kids under it" \
	eval '[ "$under" = "$(echo "$kids" | tr , "\n" | sort -n | paste -sd,)" ] || cat "$TMP/family.json"'
# The range opened holds a minute before the family ran: its lifetime is a sliver of it.
browser_test tree.test.mjs --url "$URL" --pid "$fpid" --kids "$kids" --from $((FAM_FROM - 60)) --to $((FAM_TO + 1)) \
	--shots "$SHOTS" --chromium "$CHROMIUM"

# Services: a workload in web.service (a cgroup v2 hierarchy the test mounts, a folder of its own in it)
# beside one outside; grouped by service, picking web.service.
CG=$TMP/cg
mkdir -p "$CG"
if mount -t cgroup2 none "$CG" 2> /dev/null; then
	WEB=$CG/flamed-dash-$$/system.slice/web.service
	mkdir -p "$WEB"
	SVC_FROM=$(date +%s)
	sh -c 'echo $$ > "$0/cgroup.procs" && { "$1" 3 > /dev/null & echo $! > "$2"; wait; }' "$WEB" "$TMP/branches" "$TMP/web.pid" & svc=$!
	"$TMP/branches" 3 > /dev/null & other=$!
	wait $svc $other
	SVC_TO=$(($(date +%s) + 1))
	# Every sample of the window stored before the page reads it: the window over, and the samples
	# deferred until their process's tables (the launcher's, a new process in the unit) walked, then a
	# flush. (A deferred sample stored after the API's sum and before the page's made them differ by one.)
	while [ "$(date +%s)" -le "$SVC_TO" ]; do sleep 0.2; done
	for _ in $(seq 50); do
		curl -sf "$URL/api/v1/status" | jq -e '(.deferred.waiting // 0) == 0' > /dev/null && break
		sleep 0.1
	done
	curl -sf "$URL/api/v1/processes?flush=1&from=$SVC_FROM&to=$SVC_TO" > /dev/null
	browser_test services.test.mjs --url "$URL" --pid "$(cat "$TMP/web.pid")" --other "$other" --from "$SVC_FROM" \
		--to "$SVC_TO" --shots "$SHOTS" --chromium "$CHROMIUM"
	rmdir "$WEB" "$CG/flamed-dash-$$/system.slice" "$CG/flamed-dash-$$"
	umount "$CG"
else
	skip "dashboard: services: cannot mount a cgroup v2 hierarchy here"
fi

stop_flamed
check "flamed exits 0 on SIGTERM after serving the dashboard" [ $? -eq 0 ]

# A flamed with an API token: the page asks for it and uses it.
head -c 24 /dev/urandom | base64 > "$TMP/token"
chmod 600 "$TMP/token"
run_flamed dashboard --db "$TMP/flamed.db" --listen 127.0.0.1:0 --auth-token-file "$TMP/token"
browser_test auth.test.mjs --url "$URL" --token "$(cat "$TMP/token")" --shots "$SHOTS" --chromium "$CHROMIUM"
stop_flamed

# A flamed without --off-cpu on a database of its own: picking Off-CPU or Wall says what is missing.
run_flamed dashboard --db "$TMP/plain.db" --frequency 99 --flush-interval 1 --listen 127.0.0.1:0
sleep 2.5 # CPU samples stored
browser_test offcpu-hint.test.mjs --url "$URL" --shots "$SHOTS" --chromium "$CHROMIUM"
stop_flamed

# A flamed started with --off-cpu whose off-CPU program the kernel refuses (made to, as only tests can):
# it samples CPU, and Off-CPU and Wall say why there is no off-CPU time.
FLAMED_TEST_REFUSE=offcpu_switch run_flamed dashboard --db "$TMP/refused.db" --frequency 99 --flush-interval 1 \
	--listen 127.0.0.1:0 --off-cpu
sleep 2.5 # CPU samples stored
browser_test offcpu-hint.test.mjs --url "$URL" --shots "$SHOTS" --chromium "$CHROMIUM" --refused offcpu_switch
stop_flamed
exit $FAILED
