#!/bin/bash
# test_cgroups.sh - where samples ran, for real: a cgroup v2 hierarchy the test mounts, under a folder of
# its own, holding a systemd unit (web.service: a busy process, and a shell that starts short-lived
# ones), a Docker container's scope and a Kubernetes pod's container; a process moved from the unit into
# the container after its fork; and a hostile path (over 4 KiB, control characters, ';'). unit=,
# container= (a 12-character prefix) and pod= each return exactly their processes' samples, a moved
# process counted where it ran, through the API, flamectl and the database; processes and services say
# where each ran; the hostile path is cut, cleaned and escaped.
. "$(dirname "$0")/lib.sh"

need_root cgroups
build_workload branches
B=$TMP/branches
CG=$TMP/cg
mkdir -p "$CG"
if ! mount -t cgroup2 none "$CG" 2> "$TMP/mount.err"; then
	skip "cgroups: cannot mount a cgroup v2 hierarchy here ($(cat "$TMP/mount.err"))"
	exit 0
fi
TOP=/flamed-test-$$
cleanup_cgroups() {
	for p in $(find "$CG$TOP" -name cgroup.procs -exec cat {} + 2> /dev/null); do kill -9 "$p" 2> /dev/null; done
	sleep 0.2
	find "$CG$TOP" -depth -type d -exec rmdir {} + 2> /dev/null
	umount "$CG" && rmdir "$CG"
}
trap 'cleanup_cgroups; cleanup' EXIT
CID=$(echo "docker-$$" | sha256sum | cut -c1-64)
KID=$(echo "kube-$$" | sha256sum | cut -c1-64)
POD_UID=1a2b3c4d-5e6f-4a8b-9c0d-$(printf '%012x' $$)
WEB=$TOP/system.slice/web.service
DOCKER=$TOP/system.slice/docker-$CID.scope
KUBE=$TOP/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${POD_UID//-/_}.slice/cri-containerd-$KID.scope
# Hostile: about 3.3 KiB (a path a process can still write, under PATH_MAX), each component with a
# tab, an escape sequence, another control character and ";" (cgroupfs refuses a newline).
EVIL=$TOP/evil
for i in $(seq 14); do EVIL+=/$'bad\tline;\e[31m\x01'$(printf 'x%.0s' $(seq 220)); done
mkdir -p "$CG$WEB" "$CG$DOCKER" "$CG$KUBE" || { fail "make the cgroups"; exit 1; }
( set -f && cd "$CG" && IFS=/ && for c in ${EVIL#/}; do mkdir -p -- "$c" && cd -- "$c" || exit 1; done ) ||
	{ fail "make the hostile cgroup"; exit 1; }

# start_in DIR NAME CMD...: starts CMD as the child of a shell that moved itself into cgroup DIR (its
# path under the mount) first, so that every sample of CMD ran there (until the test moves it); its pid
# goes to $TMP/NAME.pid.
start_in() {
	sh -c 'echo $$ > "$0/cgroup.procs" && f=$1 && shift && { "$@" > /dev/null & echo $! > "$f.pid"; wait; }' \
		"$CG$1" "$TMP/$2" "${@:3}" &
	launchers+=($!)
}

run_flamed cgroups --db "$TMP/flamed.db" --frequency 99 --flush-interval 1 --listen 127.0.0.1:0
T0=$(date +%s)
launchers=()
start_in "$WEB" web "$B" 4
start_in "$WEB" kids sh -c 'for i in $(seq 40); do "$0" 0.1 > /dev/null; done' "$B"
start_in "$DOCKER" docker "$B" 4
start_in "$KUBE" kube "$B" 4
start_in "$WEB" mover "$B" 4
start_in "$EVIL" evil "$B" 3
sleep 2
for v in web kids docker kube mover evil; do read -r "$v" < "$TMP/$v.pid"; done
echo "$mover" > "$CG$DOCKER/cgroup.procs"
check "the mover moved into the container after 2 s" grep -qx "$mover" "$CG$DOCKER/cgroup.procs"
wait "${launchers[@]}"
T1=$(($(date +%s) + 1))
W="from=$T0&to=$T1"

total() { curl -sf "$URL/api/v1/profile?$W&format=folded&$1" > "$TMP/t.folded" && sum_samples "$TMP/t.folded"; }
curl -sf "$URL/api/v1/processes?$W&flush=1" > "$TMP/all.json"
own() { total "pid=$1"; }

# web.service: its busy process, the shell and its short-lived children, the mover before it moved.
curl -sf "$URL/api/v1/processes?$W&unit=web.service" > "$TMP/web.json"
web_pids=$(jq -r '.processes[].pid' "$TMP/web.json" | sort -n | tr '\n' ' ')
kid_pids=$(jq -r --arg k "$kids" '.processes[] | select(.ppid == ($k | tonumber)) | .pid' "$TMP/all.json" | sort -n | tr '\n' ' ')
echo "# web.service: processes $web_pids; the shell's children $(wc -w <<< "$kid_pids")"
check "unit=web.service: its process, the mover and the shell's short-lived children, nothing else" \
	eval '[[ " $web_pids " == *" $web "* && " $web_pids " == *" $mover "* && $(wc -w <<< "$kid_pids") -ge 5 ]] &&
		! [[ " $web_pids " == *" $docker "* || " $web_pids " == *" $kube "* || " $web_pids " == *" $evil "* ]] &&
		for p in $kid_pids; do [[ " $web_pids " == *" $p "* ]] || exit 1; done'
s_web=$(total "unit=web.service")
mover_web=$(total "pid=$mover&unit=web.service")
mover_docker=$(total "container=${CID:0:12}&pid=$mover")
mover_own=$(own "$mover")
# Each member's own samples, wherever they ran: all of them for the processes started inside; the
# mover's before it moved; the launching shells' after they moved themselves in.
members=$mover_web
for p in $web_pids; do
	if [[ " ${launchers[*]} " == *" $p "* ]]; then
		members=$((members + $(total "pid=$p&unit=web.service")))
	elif [ "$p" != "$mover" ]; then
		members=$((members + $(own "$p")))
	fi
done
echo "# web.service: $s_web samples; its members' own: $members (the mover: $mover_web here, $mover_docker in the container, $mover_own in all)"
check "unit=web.service: exactly its processes' samples ($s_web = $members, > 0)" [ "$s_web" -gt 0 -a "$s_web" -eq "$members" ]
check "the mover is counted where it ran: in both, their sum its own ($mover_web + $mover_docker = $mover_own)" \
	[ "$mover_web" -gt 0 -a "$mover_docker" -gt 0 -a $((mover_web + mover_docker)) -eq "$mover_own" ]

s_docker=$(total "container=${CID:0:12}")
docker_own=$(own "$docker")
launchers_in() { local s=0; for l in "${launchers[@]}"; do s=$((s + $(total "pid=$l&$1"))); done; echo $s; }
l_docker=$(launchers_in "container=${CID:0:12}")
check "container=<12-character prefix>: the container's process and the mover after it moved ($s_docker = $docker_own + $mover_docker + $l_docker of its launcher)" \
	[ "$s_docker" -gt 0 -a "$s_docker" -eq $((docker_own + mover_docker + l_docker)) ]
s_pod=$(total "pod=$POD_UID")
kube_own=$(own "$kube")
l_pod=$(launchers_in "pod=$POD_UID")
check "pod=<uid>: the pod's container's process ($s_pod = $kube_own + $l_pod of its launcher, > 0)" \
	[ "$s_pod" -gt 0 -a "$s_pod" -eq $((kube_own + l_pod)) ]
check "container=<the pod's container>: the same ($(total "container=$KID"))" [ "$(total "container=$KID")" -eq "$s_pod" ]
s_top=$(total "cgroup=$TOP")
s_all_ours=$((members + docker_own + mover_docker + l_docker + kube_own + l_pod + $(own "$evil") +
	$(total "pid=${launchers[5]}&cgroup=$TOP")))
check "cgroup=<the test's folder>: every process of the test ($s_top = $s_all_ours)" [ "$s_top" -eq "$s_all_ours" ]

# What the listings say.
check "processes: the web process in web.service (unit, slice)" \
	jq -e --argjson p "$web" '.processes[] | select(.pid == $p) | .unit == "web.service" and .slice == "system.slice"' "$TMP/all.json"
check "processes: the container's process with its id and runtime docker" \
	jq -e --argjson p "$docker" --arg c "$CID" '.processes[] | select(.pid == $p) | .container == $c and .runtime == "docker"' "$TMP/all.json"
check "processes: the pod's process with its pod uid, QoS besteffort and runtime containerd" \
	jq -e --argjson p "$kube" --arg u "$POD_UID" --arg c "$KID" \
	'.processes[] | select(.pid == $p) | .pod == $u and .qos == "besteffort" and .container == $c and .runtime == "containerd"' "$TMP/all.json"
curl -sf "$URL/api/v1/services?$W&cgroup=$TOP" > "$TMP/services.json"
check "services: web.service with its samples and processes" \
	jq -e --argjson s "$s_web" '.services[] | select(.kind == "unit" and .name == "web.service") | .samples == $s and .processes >= 7' "$TMP/services.json"
check "services: the container, the pod's container with its pod" \
	jq -e --arg c "$CID" --arg k "$KID" --arg u "$POD_UID" \
	'([.services[] | select(.kind == "container" and .name == $c)] | length == 1) and
	 ([.services[] | select(.kind == "container" and .name == $k and .pod == $u)] | length == 1)' "$TMP/services.json"

# One flame graph of the host split by service first, and pprof labels (what Parca and Pyroscope read):
# a process under the service of its newest sample, so the mover's samples all go to the container.
curl -sf "$URL/api/v1/profile?$W&cgroup=$TOP&group=unit&format=folded" > "$TMP/grouped.folded"
g_web=$(sum_samples "$TMP/grouped.folded" '^web\.service;')
g_docker=$(sum_samples "$TMP/grouped.folded" "^docker ${CID:0:12};")
check "group=unit: web.service's stacks under it, first ($g_web = $s_web - the mover's $mover_web)" \
	[ "$g_web" -eq $((s_web - mover_web)) ]
# Its launcher shell moved itself in at once: a sample of it in the same second before the move (outside
# $TOP) ties with its later ones for its newest, and may take its samples out of the window's groups.
check "group=unit: the container's under \"docker ${CID:0:12}\" ($g_docker = $s_docker + $mover_web, less at most its launcher's $l_docker)" \
	[ "$g_docker" -le $((s_docker + mover_web)) -a "$g_docker" -ge $((s_docker + mover_web - l_docker)) ]
curl -sf "$URL/api/v1/profile?$W&cgroup=$TOP&format=pprof" > "$TMP/p.pb.gz"
if command -v go > /dev/null; then
	go tool pprof -sample_index=samples -tags "$TMP/p.pb.gz" > "$TMP/tags.txt" 2>&1
	sed -n '/^ *unit:/,/^ *$/p' "$TMP/tags.txt" | head -4
	check "go tool pprof -tags: the unit label, web.service with its samples" \
		eval 'grep -A3 "^ *unit:" "$TMP/tags.txt" | grep -Eq "^ *$g_web(\.0)? .*web.service"'
	check "go tool pprof -tags: the container label, its id with its samples" \
		eval 'grep -A4 "^ *container:" "$TMP/tags.txt" | grep -Eq "^ *$g_docker(\.0)? .*$CID"'
	check "go tool pprof -tags: the cgroup label" grep -q "^ *cgroup:" "$TMP/tags.txt"
else
	skip "go tool pprof -tags: no go here (scripts/deps.sh test installs golang-go)"
fi

# The hostile path: cut to 511 bytes, control characters and ';' replaced, valid JSON everywhere.
evil_cg=$(jq -r --argjson p "$evil" '.processes[] | select(.pid == $p) | .cgroup' "$TMP/all.json")
echo "# the hostile path as stored: ${#evil_cg} bytes, starting ${evil_cg:0:60}"
check "hostile path: stored cut (${#evil_cg} bytes <= 511), under the test's folder" \
	[ "${#evil_cg}" -gt 100 -a "${#evil_cg}" -le 511 -a "${evil_cg:0:${#TOP}}" = "$TOP" ]
check "hostile path: no control character or ';' left" not grep -qP '[\x00-\x1f\x7f;]' <<< "$evil_cg"
check "hostile path: the status counts it cut" eval '[ "$(curl -sf "$URL/api/v1/status" | jq .cgroups.cut)" -ge 1 ]'
curl -sf "$URL/api/v1/processes?$W&format=text" > "$TMP/all.txt"
check "hostile path: the processes table holds no control character" not grep -qP '[\x00-\x08\x0b-\x1f\x7f]' "$TMP/all.txt"
check "hostile path: cgroup=<it> is taken as a filter, not a file path (400 or an answer, never a crash)" \
	eval 'c=$(curl -s -o /dev/null -w "%{http_code}" --get --data-urlencode "cgroup=$TOP/evil/../../etc" "$URL/api/v1/profile?$W"); [ "$c" = 200 ]'
check "a unit holding '/' is refused (400)" \
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/api/v1/profile?$W&unit=a/b")" = 400 ]

# flamectl, over the API and from the database, gives the same numbers.
F=("$BUILD/flamectl" --server "$URL")
check "flamectl query --unit web.service: $s_web samples" \
	eval '[ "$("${F[@]}" query --unit web.service --from $T0 --to $T1 | awk "{ s += \$NF } END { print s + 0 }")" -eq "$s_web" ]'
check "flamectl services: web.service in the table" eval '"${F[@]}" services --from $T0 --to $T1 | grep -q "web.service"'
check "the processes table: the container's process shown by its id's first 12 characters" \
	eval 'grep -E "^ *$docker " "$TMP/all.txt" | grep -q "${CID:0:12}"'
curl -sf "$URL/api/v1/status" | jq -c .cgroups
check "the status: cgroups learnt by their id on the cgroup2 mount" \
	eval '[ "$(curl -sf "$URL/api/v1/status" | jq ".cgroups.by_id >= 4 and .cgroups.mount != \"\"")" = true ]'
stop_flamed
check "flamed exits 0 on SIGTERM" [ $? -eq 0 ]

D=("$BUILD/flamectl" --db "$TMP/flamed.db")
check "flamectl --db query --container ${CID:0:12}: $s_docker samples" \
	eval '[ "$("${D[@]}" query --container ${CID:0:12} --from $T0 --to $T1 | awk "{ s += \$NF } END { print s + 0 }")" -eq "$s_docker" ]'
check "flamectl --db diff --unit web.service --base-container ${CID:0:12}: both sides" \
	eval '"${D[@]}" diff --unit web.service --base-container ${CID:0:12} --from $T0 --to $T1 | grep -q "branches;"'
# Without CAP_DAC_READ_SEARCH (a cgroup cannot be opened by its id): from /proc/PID/cgroup, checked to be
# the id's under the mount.
if command -v capsh > /dev/null; then
	capsh --drop=cap_dac_read_search -- -c 'exec "$0" "$@"' "$BUILD/flamed" --db "$TMP/proc.db" --frequency 99 \
		--flush-interval 1 --listen 127.0.0.1:0 > "$TMP/flamed.log" 2>&1 &
	FLAMED_PID=$!
	for _ in $(seq 100); do grep -q '(port [0-9]' "$TMP/flamed.log" && break; sleep 0.1; done
	URL=http://127.0.0.1:$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$TMP/flamed.log")
	P0=$(date +%s)
	start_in "$WEB" web2 "$B" 2
	wait "${launchers[-1]}"
	W="from=$P0&to=$(($(date +%s) + 1))&flush=1"
	echo "# without CAP_DAC_READ_SEARCH: $(curl -sf "$URL/api/v1/status" | jq -c .cgroups)"
	echo "# without CAP_DAC_READ_SEARCH: unit=web.service $(total "unit=web.service"), the workload $(total "pid=$(cat "$TMP/web2.pid")"), its launcher $(total "pid=${launchers[-1]}&unit=web.service") there"
	# The unit holds the workload and, for the moment between moving itself and starting it, its launcher.
	check "without CAP_DAC_READ_SEARCH: unit=web.service has the workload's samples, from /proc" \
		eval '[ "$(total "unit=web.service")" -gt 0 ] &&
			[ "$(($(total "pid=$(cat "$TMP/web2.pid")") + $(total "pid=${launchers[-1]}&unit=web.service")))" -eq "$(total "unit=web.service")" ] &&
			[ "$(curl -sf "$URL/api/v1/status" | jq ".cgroups.by_proc >= 1 and .cgroups.by_id == 0")" = true ]'
	stop_flamed
else
	skip "cgroups without CAP_DAC_READ_SEARCH: no capsh (apt-get install libcap2-bin)"
fi
exit $FAILED
