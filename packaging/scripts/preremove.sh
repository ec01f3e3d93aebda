#!/bin/sh
# ducc pre-remove (deb: remove|upgrade|deconfigure; rpm: $1 = 0 erase, 1 upgrade).
# On removal it stops the agent; processes it started keep running
# (KillMode=process) until they end or are killed by hand.
set -e
case "$1" in
	remove|0) ;;
	*) exit 0 ;; # upgrade: postinstall restarts the agent
esac
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl disable --now ducc-agent.service >/dev/null 2>&1 || true
fi
echo "ducc: agent stopped; processes it started keep running. Data stays in /var/lib/ducc."
exit 0
