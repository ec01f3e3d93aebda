#!/bin/bash
# Spike (not product code): UIMA-AS on Debian's packages, on loopback only.
# See java/spike/README.md. Usage, from the repository root:
#   java/spike/spike.sh build     javac the spike into dist/spike (needs make java-test java-pinger)
#   java/spike/spike.sh all       the whole scenario: broker, deploy from the DD, client, JMX stats,
#                                 broker killed and restarted, everything stopped; timings on stdout
# Ports: broker 61617, JMX 11099 (BROKER_PORT, JMX_PORT). Work files in $SPIKE_DIR (a temp dir).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
J=/usr/share/java
# The jars a UIMA-AS service or client needs, all from Debian's packages
# (libuima-as-java, libuima-core-java, activemq's libactivemq-java,
# libspring-*-java, liblog4j1.2-java, libslf4j-java, ...).
UIMAAS_CP=$J/uimaj-as-core.jar:$J/uimaj-as-jms.jar:$J/uimaj-as-activemq.jar:$J/uimaj-core.jar
UIMAAS_CP=$UIMAAS_CP:$J/activemq-client.jar:$J/geronimo-jms_1.1_spec.jar:$J/geronimo-j2ee-management-1.1-spec.jar:$J/hawtbuf.jar
UIMAAS_CP=$UIMAAS_CP:$J/spring3-core.jar:$J/spring3-beans.jar:$J/spring3-context.jar:$J/spring3-expression.jar
UIMAAS_CP=$UIMAAS_CP:$J/spring3-aop.jar:$J/spring3-jms.jar:$J/spring3-transaction.jar:$J/commons-logging.jar
UIMAAS_CP=$UIMAAS_CP:$J/slf4j-api.jar:$J/slf4j-log4j12.jar:$J/log4j-1.2.jar
# dist/spike first: its org.apache.uima.aae.UimaAsVersion shadows Debian's.
CP=$ROOT/dist/spike:$UIMAAS_CP:$ROOT/dist/ducc-uima-test.jar
LOG4J=-Dlog4j.configuration=file:$ROOT/java/spike/conf/log4j.properties
BROKER_PORT=${BROKER_PORT:-61617}
JMX_PORT=${JMX_PORT:-11099}
URL=tcp://127.0.0.1:$BROKER_PORT
SPIKE_DIR=${SPIKE_DIR:-$(mktemp -d /tmp/ducc-spike.XXXXXX)}

ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
rss() { ps -o rss= -p "$1" 2>/dev/null | awk '{printf "%d MiB", $1/1024}'; }

build() {
  rm -rf "$ROOT/dist/spike" && mkdir -p "$ROOT/dist/spike" &&
    javac --release 17 -cp "$UIMAAS_CP:$ROOT/dist/ducc-pinger-api.jar" -d "$ROOT/dist/spike" $(find "$ROOT/java/spike/src" -name '*.java')
}

start_broker() {
  local t0; t0=$(date +%s%N)
  setsid env BROKER_PORT="$BROKER_PORT" JMX_PORT="$JMX_PORT" "$ROOT/java/spike/broker.sh" "$SPIKE_DIR/broker" >>"$SPIKE_DIR/broker.log" 2>&1 &
  BROKER=$!
  for _ in $(seq 300); do ss -ltn | grep -q ":$BROKER_PORT " && break; sleep 0.1; done
  echo "broker pid $BROKER listening after $(ms "$t0") ms"
}

# pinger [LINES]: ducc's PingerHost running ducc's UIMA-AS pinger (product
# code now: java/pinger/uimaas, make java-pinger-uimaas), LINES state lines on its input
pinger() {
  local st='{"service": 7, "endpoint": "UIMA-AS:words:'$URL'", "instances": [0], "active": [0], "started_at": [], "references": [], "autostart": false, "run_failures": 0, "max_instances": 10}'
  for _ in $(seq "${1:-1}"); do echo "$st"; done |
    /usr/bin/time -f "(%e s, max RSS %M KB)" java -Xmx128m $LOG4J -jar "$ROOT/dist/ducc-pinger.jar" --timeout 10000 \
      --classpath "$ROOT/dist/ducc-pinger-uimaas.jar:$UIMAAS_CP" --arguments "meta-timeout=3000,broker-jmx-port=$JMX_PORT" org.apache.uima.ducc.sm.UimaAsPing 2>"$SPIKE_DIR/pinger.err"
  tail -1 "$SPIKE_DIR/pinger.err"
}

client() { java -Xmx128m $LOG4J -cp "$CP" ducc.spike.SpikeClient "$URL" "$@" 2>>"$SPIKE_DIR/client.log"; }
stats() { java -Xmx64m -cp "$ROOT/dist/spike" ducc.spike.QueueStats "127.0.0.1:$JMX_PORT" "$@"; }

all() {
  [ -f "$ROOT/dist/ducc-uima-test.jar" ] && [ -f "$ROOT/dist/ducc-pinger.jar" ] || { echo "run make java-test java-pinger first"; exit 1; }
  build || exit 1
  BROKER= SVC=
  trap '[ -n "$SVC" ] && kill $SVC 2>/dev/null; [ -n "$BROKER" ] && kill $BROKER 2>/dev/null; wait 2>/dev/null' EXIT
  echo "== work files in $SPIKE_DIR"
  start_broker
  sleep 1; echo "broker RSS $(rss "$BROKER")"

  local t0; t0=$(date +%s%N)
  setsid java -Xmx256m $LOG4J -cp "$CP" ducc.spike.DeployService "$ROOT/java/spike/conf/WordsDD.xml" -brokerURL "$URL" >"$SPIKE_DIR/service.log" 2>&1 &
  SVC=$!
  for _ in $(seq 300); do grep -q -E '^deployed|Exception' "$SPIKE_DIR/service.log" && break; sleep 0.1; done
  echo "service pid $SVC: $(grep -E '^deployed' "$SPIKE_DIR/service.log" || echo FAILED; grep -m1 Exception "$SPIKE_DIR/service.log") ($(ms "$t0") ms from launch), RSS $(rss "$SVC")"

  echo "== client: getMeta x5 in one JVM (the UIMA-AS pinger's alive check), then 10 CASes"
  client words meta 5000 5 | grep -E '^(getmeta|failed|total)'
  client words process "the quick brown fox" 10 5000 | grep -E '^(getmeta|process|failed|total)' | tr '\n' ' '; echo
  echo "== JMX queue statistics"
  stats words
  echo "== DUCC-style UIMA-AS pinger in ducc's PingerHost: one ping per JVM (as ducc's agent runs pingers), then 3 pings in one JVM"
  pinger 1
  pinger 3
  echo "== getMeta to a queue nobody serves (2 s timeout)"
  client nobody meta 2000 | grep -E '^(failed|total)'
  stats nobody | grep '^nobody'

  echo "== broker killed (SIGKILL)"
  local lines; lines=$(wc -l <"$SPIKE_DIR/service.log")
  kill -9 "$BROKER"; wait "$BROKER" 2>/dev/null; BROKER=
  sleep 3
  echo "service alive: $(kill -0 $SVC 2>/dev/null && echo yes || echo no); its log grew by $(($(wc -l <"$SPIKE_DIR/service.log") - lines)) lines in 3 s"
  client words meta 2000 | grep -E '^(failed|total)'
  pinger 1
  echo "== broker restarted"
  rm -rf "$SPIKE_DIR/broker"
  start_broker
  sleep 2
  grep -c 'Successfully refreshed JMS Connection' "$SPIKE_DIR/service.log" | sed 's/^/service listener reconnects logged: /'
  for i in 1 2 3; do echo -n "getMeta $i after restart: "; client words meta 5000 | grep -E '^(getmeta|failed)' | head -1; done
  stats words | grep '^words'
  pinger 1
  echo "== service stopped (SIGTERM)"
  t0=$(date +%s%N); kill -TERM "$SVC"; wait "$SVC" 2>/dev/null; SVC=
  echo "service exited $(ms "$t0") ms after SIGTERM"
  pinger 1
  t0=$(date +%s%N); kill -TERM "$BROKER"; wait "$BROKER" 2>/dev/null; BROKER=
  echo "broker exited $(ms "$t0") ms after SIGTERM"
}

case "${1:-}" in
  build) build ;;
  cp) echo "$UIMAAS_CP" ;;
  all) all ;;
  *) echo "usage: $0 build|all|cp"; exit 2 ;;
esac
