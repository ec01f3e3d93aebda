#!/bin/sh
# ducc post-install (deb: configure; rpm: $1 = 1 install, 2 upgrade).
# Never starts the agent without a cluster key: it says what to do instead.
set -e

conf=/etc/ducc/ducc.yaml
data=/var/lib/ducc
mkdir -p "$data"
chmod 0700 "$data"

# The key the agent will load: cluster.key_file from the config, else
# <node.data_dir>/cluster.key.
key=$(sed -n 's/^[[:space:]]*key_file:[[:space:]]*"\{0,1\}\([^"#[:space:]]*\).*/\1/p' "$conf" 2>/dev/null | head -n 1)
if [ -z "$key" ]; then
	dir=$(sed -n 's/^[[:space:]]*data_dir:[[:space:]]*"\{0,1\}\([^"#[:space:]]*\).*/\1/p' "$conf" 2>/dev/null | head -n 1)
	key="${dir:-$data}/cluster.key"
fi

have_systemd=no
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	have_systemd=yes
	systemctl daemon-reload >/dev/null 2>&1 || true
fi

if [ -f "$key" ]; then
	if [ "$have_systemd" = yes ]; then
		# Restarting the agent keeps running work (KillMode=process).
		if systemctl is-active --quiet ducc-agent.service; then
			systemctl restart ducc-agent.service || true
		else
			systemctl enable --now ducc-agent.service || true
		fi
	fi
else
	cat <<MSG
ducc: installed, but the agent is NOT started: there is no cluster key at $key.
  On the first machine of a new cluster, create one:
    ducc keygen $key
  On every other machine, copy that same file to $key (mode 0600).
  Then review $conf and run: systemctl enable --now ducc-agent
  Dashboard: http://<this host>:42133/   Docs: /usr/share/doc/ducc/operations.md
MSG
fi
exit 0
