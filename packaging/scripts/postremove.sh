#!/bin/sh
# ducc post-remove: reload systemd so the removed unit disappears. Data in
# /var/lib/ducc and the cluster key are left in place (remove them by hand).
set -e
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
