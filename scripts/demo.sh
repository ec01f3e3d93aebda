#!/usr/bin/env bash
# A one-command tour: start a throw-away one-node dev cluster, run a few
# things on it, show what the cluster saw, and stop it again: the work it
# started is canceled and waited for, then the agent is stopped (work
# outlives an agent by design, so stopping the agent alone would leave
# it running), and whatever still runs from the demo's directory is
# killed. The agent log's ERROR lines, if any, are shown at the end.
# DUCC_BIN overrides the binary (default: bin/ducc).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DUCC_BIN:-$PWD/bin/ducc}
dir=$(mktemp -d /tmp/ducc-demo.XXXXXX)
chmod 755 "$dir"
export DUCC_SOCKET=$dir/data/ducc.sock

"$bin" agent --dev --data-dir "$dir/data" --memory 8G >"$dir/agent.log" 2>&1 &
agent=$!

# leftovers lists what runs from the demo's directory but the agent: the
# shims (their command lines name it), their children (the work) and the
# members of the children's process groups.
leftovers() {
	local shim child
	for shim in $(pgrep -f -- "$dir/data/procs/" || true); do
		echo "$shim"
		for child in $(pgrep -P "$shim" || true); do
			echo "$child"
			pgrep -g "$child" || true
		done
	done | sort -u
}

cleanup() {
	local rc=$? id p
	set +e
	# Cancel live work (numeric ids of jobs --json; process ids are strings).
	for id in $("$bin" jobs --json 2>/dev/null | grep -o '"id": [0-9][0-9]*' | grep -o '[0-9]*$'); do
		"$bin" cancel "$id" >/dev/null 2>&1
	done
	for _ in $(seq 100); do [ -z "$(leftovers)" ] && break; sleep 0.1; done
	kill -TERM "$agent" 2>/dev/null; wait "$agent" 2>/dev/null
	p=$(leftovers)
	if [ -n "$p" ]; then
		echo "demo: killing what its work left running: $(echo $p)" >&2
		kill -KILL $p 2>/dev/null
	fi
	if grep -q 'level=ERROR' "$dir/agent.log"; then
		echo "demo: the agent logged errors:" >&2
		grep 'level=ERROR' "$dir/agent.log" >&2
		rc=1
	fi
	rm -rf "$dir"
	exit $rc
}
trap cleanup EXIT
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
out=$(seq 1 20 | "$bin" submit --worker-protocol exec --log-directory "$dir/logs" --wait -- sh -c 'echo $((DUCC_WORK_ITEM * DUCC_WORK_ITEM))')
echo "$out"
job=$(echo "$out" | awk '/^Job [0-9]+ submitted/ {print $2; exit}')
say "ducc results $job | head -3"; "$bin" results "$job" | head -3
say ducc jobs --all; "$bin" jobs --all
echo; echo "agent log: $dir/agent.log (removed on exit)"
