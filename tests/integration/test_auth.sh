#!/bin/bash
# test_auth.sh - --auth-token-file: the daemon refuses a token file others can read, answers 401
# without the token, serves data with it; flamectl passes it with --token-file or FLAMED_TOKEN.
. "$(dirname "$0")/lib.sh"
need_root auth

head -c 24 /dev/urandom | base64 > "$TMP/token"
chmod 644 "$TMP/token"
"$BUILD/flamed" --db "$TMP/flamed.db" --listen 127.0.0.1:0 --auth-token-file "$TMP/token" 2> "$TMP/err"
rc=$?
check "a token file others can read is refused (exit $rc)" eval '[ $rc -eq 1 ] && grep -q "chmod 600" "$TMP/err"'
printf 'short\n' > "$TMP/short"
chmod 600 "$TMP/short"
"$BUILD/flamed" --db "$TMP/flamed.db" --listen 127.0.0.1:0 --auth-token-file "$TMP/short" 2> "$TMP/err"
rc=$?
check "a token under 16 characters is refused (exit $rc)" eval '[ $rc -eq 1 ] && grep -q "shorter than 16" "$TMP/err"'

chmod 600 "$TMP/token"
run_flamed auth --db "$TMP/flamed.db" --listen 127.0.0.1:0 --flush-interval 1 --auth-token-file "$TMP/token"
TOKEN=$(cat "$TMP/token")
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
check "/healthz needs no token" [ "$(code "$URL/healthz")" = 200 ]
check "/api/v1/status without the token is 401" [ "$(code "$URL/api/v1/status")" = 401 ]
check "/metrics with a wrong token is 401" [ "$(code -H "Authorization: Bearer ${TOKEN}x" "$URL/metrics")" = 401 ]
check "/metrics with the token is 200" [ "$(code -H "Authorization: Bearer $TOKEN" "$URL/metrics")" = 200 ]

"$BUILD/flamectl" --server "$URL" status > /dev/null 2> "$TMP/err"
rc=$?
check "flamectl without the token: exit 1, says how to pass it" eval '[ $rc -eq 1 ] && grep -q "token-file" "$TMP/err"'
check "flamectl --token-file" "$BUILD/flamectl" --server "$URL" --token-file "$TMP/token" status
check "flamectl with FLAMED_TOKEN" env FLAMED_TOKEN="$TOKEN" "$BUILD/flamectl" --server "$URL" processes --format json

stop_flamed
check "flamed exits 0" [ $? -eq 0 ]
exit $FAILED
