#!/bin/bash
# Spike: UIMA-AS's own DD translation (dd2spring.xsl) on Debian, then the
# service. Debian ships neither the XSL nor Saxon 8; this takes the XSL of
# the UIMA-AS 2.3.1 source (uima-as/src/main/scripts/dd2spring.xsl, tag
# uima-as-2.3.1; Apache-2.0) and uses Debian's Saxon-B 9.1
# (apt-get install libsaxonb-java), with three changes found by trying:
#   1. Saxon runs with -ext:on (UIMA-AS's Dd2spring class calls it without,
#      and Saxon 9.1 then refuses the XSL's Java extension functions);
#   2. two xs:integer casts in the casPool defaulting (Saxon 9.1 is stricter
#      than Saxon 8: XTTE0570 at line 1509);
#   3. the generated context's singleton="..." attributes are dropped
#      (Debian's "spring3" jars are Spring 4.3, whose DTD has no singleton).
# Usage: dd2spring.sh DD2SPRING_XSL DD.xml OUT.xml [-run BROKER_URL]
#   (-run: then deploy OUT.xml with UIMA_Service, in the foreground)
set -eu
XSL=$1 DD=$2 OUT=$3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
J=/usr/share/java
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
sed -e "s|<xsl:sequence select=\"if (./@numberOfCASes) then ./@numberOfCASes else '1'\"/>|<xsl:sequence select=\"xs:integer(if (./@numberOfCASes) then ./@numberOfCASes else '1')\"/>|" \
    -e 's|<xsl:sequence select="$nbrInstances"/>|<xsl:sequence select="xs:integer($nbrInstances)"/>|' "$XSL" >"$TMP/dd2spring.xsl"
# The XSL's extension functions resolve imports by name: the annotators' jars go on Saxon's classpath.
java -cp "$J/saxonb.jar:$J/uimaj-as-core.jar:$J/uimaj-core.jar:$ROOT/dist/ducc-uima-test.jar" \
  net.sf.saxon.Transform -ext:on -s:"$DD" -xsl:"$TMP/dd2spring.xsl" -o:"$TMP/out.xml"
sed -e 's/ singleton="true"//g' -e 's/ singleton="false"/ scope="prototype"/g' "$TMP/out.xml" >"$OUT"
echo "wrote $OUT ($(grep -c '<bean' "$OUT") beans)"
if [ "${4:-}" = -run ]; then
  "$ROOT/java/spike/spike.sh" build >/dev/null
  exec java -Xmx256m -DdefaultBrokerURL="${5:?broker URL}" -Dlog4j.configuration="file:$ROOT/java/spike/conf/log4j.properties" \
    -cp "$ROOT/dist/spike:$("$ROOT/java/spike/spike.sh" cp):$ROOT/dist/ducc-uima-test.jar" \
    org.apache.uima.adapter.jms.service.UIMA_Service "$OUT" </dev/null
fi
