#!/bin/bash
# Tests ducc.pinger.PingerHost with the fixtures of dist/ducc-pinger-test.jar:
# DUCC's CustomPing sample against a stats server on a loopback TCP port, the
# hooks (additions, deletions, autostart, last use), and the failures (no
# such class, not a pinger, init throws, getStatistics throws or hangs).
# Usage: run.sh HOST_JAR TEST_JAR   (make java-pinger-test)
set -u
HOST_JAR=${1:?host jar}
TEST_JAR=${2:?test jar}
TMP=$(mktemp -d)
SERVER=
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; echo "     stdout: $(cat "$TMP/out")"; echo "     stderr: $(tail -3 "$TMP/err")"; fails=$((fails + 1)); }

# host [ARGS...] < input: runs the host, stdout in $TMP/out, stderr in $TMP/err, exit code in $rc
host() {
  timeout 30 java -jar "$HOST_JAR" --classpath "$TEST_JAR" "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
}
state() { # state ENDPOINT [AUTOSTART] [ALL] [ACTIVE] [FAILURES]
  printf '{"service": 23, "endpoint": "%s", "instances": [%s], "active": [%s], "started_at": [], "references": [31, 32], "autostart": %s, "run_failures": %s, "max_instances": 10}\n' \
    "$1" "${3:-0, 1}" "${4:-0, 1}" "${2:-false}" "${5:-0}"
}

java -cp "$TEST_JAR" ducc.pinger.test.StatsServer 0 100 >"$TMP/server" 2>&1 &
SERVER=$!
for _ in $(seq 50); do grep -qs "^port " "$TMP/server" && break; sleep 0.1; done
PORT=$(awk '/^port /{print $2}' "$TMP/server")
[ -n "$PORT" ] || { echo "FAIL the stats server did not start: $(cat "$TMP/server")"; exit 1; }
EP="CUSTOM:127.0.0.1:$PORT"

# 1. CustomPing, one ping (as ducc's agent runs it): alive, the stats as info.
state "$EP" >"$TMP/in"; host ducc.pinger.test.CustomPing <"$TMP/in"
if [ $rc = 0 ] && grep -qx '{"alive": true, "healthy": true, "info": "S1\[[0-9]*\] S2\[2\] S3\[3\] S4\[4\]"}' "$TMP/out"; then
  ok "CustomPing answers alive with the server's statistics"
else bad "CustomPing, one ping (rc $rc)"; fi

# 2. A long-lived host: one answer per state line, init once, the server's counter moves on.
{ state "$EP"; state "$EP"; state "$EP"; } >"$TMP/in"; host --do-log --arguments "x=1" ducc.pinger.test.CustomPing <"$TMP/in"
n1=$(sed -n 1p "$TMP/out" | sed 's/.*S1\[\([0-9]*\)\].*/\1/')
n3=$(sed -n 3p "$TMP/out" | sed 's/.*S1\[\([0-9]*\)\].*/\1/')
if [ $rc = 0 ] && [ "$(wc -l <"$TMP/out")" = 3 ] && [ "$n3" = $((n1 + 2)) ] && [ "$(grep -c '^init 23 pinging' "$TMP/err")" = 1 ]; then
  ok "three state lines: three answers, one init, doLog on standard error"
else bad "long-lived host (rc $rc)"; fi

# 3. The endpoint from --endpoint, and from $DUCC_SERVICE_ENDPOINT with no state at all.
echo '{}' >"$TMP/in"; host --endpoint "$EP" ducc.pinger.test.CustomPing <"$TMP/in"
r1=$rc; o1=$(cat "$TMP/out")
DUCC_SERVICE_ENDPOINT="$EP" host ducc.pinger.test.CustomPing </dev/null
if [ $r1 = 0 ] && [ $rc = 0 ] && [[ $o1 == '{"alive": true,'* ]] && grep -q '"alive": true' "$TMP/out"; then
  ok "endpoint from --endpoint and from DUCC_SERVICE_ENDPOINT (empty input: one ping)"
else bad "endpoint sources (rc $r1 $rc)"; fi

# 4. The service is gone: not alive, and the info says why.
kill "$SERVER"; wait "$SERVER" 2>/dev/null; SERVER=
state "$EP" >"$TMP/in"; host ducc.pinger.test.CustomPing <"$TMP/in"
if [ $rc = 0 ] && grep -q '^{"alive": false, "healthy": false, "info": "127.0.0.1:'"$PORT"': java.net.ConnectException: Connection refused' "$TMP/out"; then
  ok "service down: alive false, info: connection refused"
else bad "service down (rc $rc)"; fi

# 5. The hooks: additions, deletions, autostart (changed), last use, the state the pinger saw.
state "CUSTOM:x" false "0, 1, 2" "0" 1 >"$TMP/in"; host --arguments "a=b" --monitor-rate 60000 --failure-max 1 --failure-window 10 ducc.pinger.test.TestPings\$Scaling <"$TMP/in"
want='{"alive": true, "healthy": true, "info": "args=a=b endpoint=CUSTOM:x service=23 rate=60000 window=10/1 all=3 active=1 refs=2 failures=1 excessive=true", "additions": 1, "deletions": [2], "autostart": true, "last_use": 1795307490000}'
if [ $rc = 0 ] && [ "$(cat "$TMP/out")" = "$want" ] && grep -q 'Scaling.stop called' "$TMP/err"; then
  ok "hooks: additions, deletions, autostart, last_use; stop() called; pinger output on standard error"
else bad "hooks (rc $rc), want $want"; fi

# 6. Unchanged autostart is left out.
state "CUSTOM:x" true >"$TMP/in"; host ducc.pinger.test.TestPings\$Scaling <"$TMP/in"
if [ $rc = 0 ] && ! grep -q autostart "$TMP/out"; then ok "unchanged autostart left out"; else bad "unchanged autostart (rc $rc)"; fi

# 7. The context class loader is the pinger's (JNDI, ServiceLoader: the UIMA-AS client needs it).
state "$EP" >"$TMP/in"; host ducc.pinger.test.TestPings\$ContextLoader <"$TMP/in"
if [ $rc = 0 ] && grep -qx '{"alive": true, "healthy": true, "info": "context class loader ok"}' "$TMP/out"; then
  ok "calls run with the pinger's class loader as the thread's context class loader"
else bad "context class loader (rc $rc)"; fi

# 8. Failures.
state "$EP" >"$TMP/in"; host no.such.Pinger <"$TMP/in"
if [ $rc = 2 ] && grep -q '^ducc-pinger: pinger class no.such.Pinger not found in classpath' "$TMP/err" && [ ! -s "$TMP/out" ]; then
  ok "missing class: exit 2, says so"
else bad "missing class (rc $rc)"; fi

state "$EP" >"$TMP/in"; host ducc.pinger.test.TestPings\$NotAPinger <"$TMP/in"
if [ $rc = 2 ] && grep -q 'does not extend org.apache.uima.ducc.cli.AServicePing' "$TMP/err"; then
  ok "not a pinger: exit 2, says so"
else bad "not a pinger (rc $rc)"; fi

state "UIMA-AS:q:tcp://b:61616" >"$TMP/in"; host ducc.pinger.test.TestPings\$InitFails <"$TMP/in"
if [ $rc = 2 ] && grep -q '^ducc-pinger: ducc.pinger.test.TestPings\$InitFails.init() failed: java.io.IOException: no such queue: UIMA-AS:q:tcp://b:61616' "$TMP/err"; then
  ok "init throws: exit 2 with the exception"
else bad "init throws (rc $rc)"; fi

{ state "$EP"; state "$EP"; } >"$TMP/in"; host ducc.pinger.test.TestPings\$Throws <"$TMP/in"
if [ $rc = 0 ] && [ "$(grep -c '^{"alive": false, "healthy": false, "info": "ducc.pinger.test.TestPings\$Throws.getStatistics() threw java.lang.IllegalStateException: broker unreachable"}$' "$TMP/out")" = 2 ]; then
  ok "getStatistics throws: not alive, the exception as info, the host goes on"
else bad "getStatistics throws (rc $rc)"; fi

start=$(date +%s%N)
state "$EP" >"$TMP/in"; host --timeout 700 ducc.pinger.test.TestPings\$Hangs <"$TMP/in"
took=$((($(date +%s%N) - start) / 1000000))
if [ $rc = 3 ] && grep -q '^ducc-pinger: ducc.pinger.test.TestPings\$Hangs.getStatistics() did not return within 700 ms' "$TMP/err" && [ ! -s "$TMP/out" ] && [ $took -lt 5000 ]; then
  ok "getStatistics hangs: exit 3 after the timeout (${took} ms in all)"
else bad "getStatistics hangs (rc $rc, ${took} ms)"; fi

echo 'not json' >"$TMP/in"; host ducc.pinger.test.CustomPing <"$TMP/in"
if [ $rc = 2 ] && grep -q 'the ping state is not a JSON object' "$TMP/err"; then ok "bad state line: exit 2"; else bad "bad state (rc $rc)"; fi

if [ $fails -gt 0 ]; then echo "$fails failed"; exit 1; fi
echo "all passed"
