#!/bin/sh
# Spike: Debian's ActiveMQ 5.17 as an ordinary foreground process, on
# loopback only, no persistence, JMX on 127.0.0.1:$JMX_PORT (no auth, no SSL),
# all its files under $DIR. Usage: broker.sh [DIR] (default /tmp/ducc-spike-broker)
# Env: BROKER_PORT (61617), JMX_PORT (11099), BROKER_HEAP (256m).
DIR=${1:-/tmp/ducc-spike-broker}
HERE=$(cd "$(dirname "$0")" && pwd)
BROKER_PORT=${BROKER_PORT:-61617}
JMX_PORT=${JMX_PORT:-11099}
mkdir -p "$DIR/data"
exec java -Xms64m -Xmx"${BROKER_HEAP:-256m}" \
  -Dlog4j.configuration="file:$HERE/conf/log4j.properties" \
  -Dcom.sun.management.jmxremote.port="$JMX_PORT" \
  -Dcom.sun.management.jmxremote.rmi.port="$JMX_PORT" \
  -Dcom.sun.management.jmxremote.host=127.0.0.1 \
  -Djava.rmi.server.hostname=127.0.0.1 \
  -Dcom.sun.management.jmxremote.authenticate=false \
  -Dcom.sun.management.jmxremote.ssl=false \
  -Dactivemq.home=/usr/share/activemq -Dactivemq.base="$DIR" \
  -Dactivemq.conf="$DIR" -Dactivemq.data="$DIR/data" \
  -jar /usr/share/activemq/bin/activemq.jar \
  start "broker:(tcp://127.0.0.1:$BROKER_PORT)?brokerName=ducc-spike&persistent=false&useJmx=true"
