#!/usr/bin/env bash
# A one-command tour: start a throw-away one-node dev cluster, run a few
# things on it, show what the cluster saw, and stop it again.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/bin/ducc
dir=$(mktemp -d /tmp/ducc-demo.XXXXXX)
chmod 755 "$dir"
export DUCC_SOCKET=$dir/data/ducc.sock

"$bin" agent --dev --data-dir "$dir/data" --memory 8G >"$dir/agent.log" 2>&1 &
agent=$!
trap 'kill -TERM $agent 2>/dev/null; wait $agent 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do "$bin" status --json 2>/dev/null | grep -q '"nodes_up": 1' && break; sleep 0.1; done

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
say ducc status;  "$bin" status
say ducc nodes;   "$bin" nodes
say "ducc run -- sh -c 'echo hello from \$(hostname) as \$(id -un); exit 3'"
"$bin" run --log-dir "$dir/logs" -- sh -c 'echo hello from $(hostname) as $(id -un); exit 3' || echo "(exit code $?)"
say "ducc run --detach -- sleep 1"
id=$("$bin" run --detach --log-dir "$dir/logs" -- sleep 1); echo "$id"
say ducc jobs;       "$bin" jobs
say ducc wait "$id"; "$bin" wait "$id" && echo "(exit code $?)"
say "seq 1 20 | ducc submit --worker-protocol exec --wait -- sh -c 'echo \$((DUCC_WORK_ITEM * DUCC_WORK_ITEM))'"
seq 1 20 | "$bin" submit --worker-protocol exec --log-directory "$dir/logs" --wait -- sh -c 'echo $((DUCC_WORK_ITEM * DUCC_WORK_ITEM))'
say "ducc results 3 | head -3"; "$bin" results 3 | head -3
say ducc jobs --all; "$bin" jobs --all
echo; echo "agent log: $dir/agent.log (removed on exit)"
