#!/bin/sh
# Debian's ActiveMQ (apt-get install activemq) as an ordinary foreground
# process, for a ducc service (activemq.yaml; docs/services.md, "The
# broker"): no persistence (as DUCC ran its broker), JMX on 127.0.0.1 for
# queue statistics, everything under DIR. SIGTERM stops it.
#
#   activemq-broker.sh [PORT [JMX_PORT [DIR]]]
#
# PORT 61616 and JMX_PORT 1099 by default; DIR defaults to
# ${TMPDIR:-/tmp}/ducc-activemq-<service id>-<instance>. The broker listens
# on BROKER_HOST (127.0.0.1: this node only; set it to the node's address,
# or 0.0.0.0, for UIMA-AS services on other nodes). BROKER_HEAP is its heap
# (256m).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
PORT=${1:-61616}
JMX_PORT=${2:-1099}
DIR=${3:-${TMPDIR:-/tmp}/ducc-activemq-${DUCC_SERVICE_ID:-0}-${DUCC_SERVICE_INSTANCE:-0}}
HOST=${BROKER_HOST:-127.0.0.1}
mkdir -p "$DIR/data"
exec java -Xms64m -Xmx"${BROKER_HEAP:-256m}" \
  -Dlog4j.configuration="file:$HERE/log4j.properties" \
  -Dcom.sun.management.jmxremote.port="$JMX_PORT" \
  -Dcom.sun.management.jmxremote.rmi.port="$JMX_PORT" \
  -Dcom.sun.management.jmxremote.host=127.0.0.1 \
  -Djava.rmi.server.hostname=127.0.0.1 \
  -Dcom.sun.management.jmxremote.authenticate=false \
  -Dcom.sun.management.jmxremote.ssl=false \
  -Dactivemq.home=/usr/share/activemq -Dactivemq.base="$DIR" \
  -Dactivemq.conf="$DIR" -Dactivemq.data="$DIR/data" \
  -jar /usr/share/activemq/bin/activemq.jar \
  start "broker:(tcp://$HOST:$PORT)?brokerName=ducc&persistent=false&useJmx=true"
