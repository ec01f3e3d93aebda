#!/bin/bash
# scripts/gpu-check.sh: the GPU check of issue 25 on a machine with an NVIDIA GPU.
#
# Runs a throw-away dev cluster from a built tree and checks, in under five minutes:
#   1. NVML discovery: the node lists the host's GPUs (ducc nodes --json).
#   2. Four workers of one job, each with a quarter of GPU 0's memory (--gpu-memory),
#      allocate tensors and all run at once (seen in ducc show --json: four processes
#      Running at the same time, each with GPU memory in use).
#   3. A fifth process that asks for a quarter and allocates more is stopped with
#      "GPU memory slice exceeded" and ducc run exits 193.
#   4. A process without GPUs sees torch.cuda.device_count() == 0 and cannot open
#      /dev/nvidia0 (the device fence).
#   5. ducc history --json shows GPU-seconds and peak GPU memory for the job.
#   6. Utilization: while a process with a whole GPU multiplies matrices, ducc nodes
#      --json gives its GPU a utilization above 0 (and ducc show --json the process's
#      own, where NVML gives per-process figures: reported, not required).
#
# Needs: bin/ducc, bin/duccd and bin/ducc-shim, with duccd built WITH cgo (NVML is
# loaded at run time through cgo's dlopen; a CGO_ENABLED=0 duccd finds no GPUs):
#   make build            # or: CGO_ENABLED=1 go build -o bin/duccd ./cmd/duccd
# python3 with PyTorch (CUDA) on the machine; run as root (cgroups, device fences).
# Usage: scripts/gpu-check.sh [BIN_DIR]   (default: the tree's bin/)
# Writes its log to $OUT (default /tmp/gpu-check) and exits non-zero if a check failed.
# CONFIG=FILE gives the dev agent a config (a trial run of the script's own steps on a
# machine without a GPU: node.gpus declared, a stand-in torch on PYTHONPATH).
set -u
here=$(cd "$(dirname "$0")" && pwd)
B=${1:-$here/../bin}
B=$(cd "$B" && pwd)
OUT=${OUT:-/tmp/gpu-check}
rm -rf "$OUT"; mkdir -p "$OUT"
fails=0
say() { echo "[$(date +%T)] $*" | tee -a "$OUT/summary.txt"; }
pass() { say "PASS $*"; }
fail() { say "FAIL $*"; fails=$((fails + 1)); }

for d in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
	[ -e "$d/libnvidia-ml.so.1" ] && export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} && break
done
PY=$(command -v python3) || { say "no python3"; exit 2; }
"$PY" -c 'import torch' 2>/dev/null || { say "$PY has no torch: the tensor checks need PyTorch"; exit 2; }
# A job's processes get no environment beyond PATH, HOME and USER unless asked:
# they get what finding torch and NVML may need here.
jobenv="PYTHONPATH=${PYTHONPATH:-} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"

D=$OUT/cluster
mkdir -p "$D"
"$B/ducc" agent --dev --data-dir "$D/data" ${CONFIG:+--config "$CONFIG"} >"$OUT/agent.log" 2>&1 &
agent=$!
trap 'kill $agent 2>/dev/null; wait $agent 2>/dev/null' EXIT
export DUCC_SOCKET=$D/data/ducc.sock
ducc() { "$B/ducc" "$@"; }
for _ in $(seq 300); do ducc status >/dev/null 2>&1 && break; sleep 0.1; done
ducc status >/dev/null 2>&1 || { say "the dev agent did not start: $(tail -5 "$OUT/agent.log")"; exit 2; }

# json EXPR reads JSON on stdin and prints the Python expression EXPR of it (as j).
json() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }

# 1. Discovery.
say "1 discovery"
grep -m1 "GPU discovery" "$OUT/agent.log" | tee -a "$OUT/summary.txt"
for _ in $(seq 100); do
	n=$(ducc nodes --json | json 'len(j["nodes"][0].get("gpus") or [])' 2>/dev/null || echo 0)
	[ "$n" -gt 0 ] && break
	sleep 0.1
done
ducc nodes --json >"$OUT/nodes.json"
n=$(json 'len(j["nodes"][0].get("gpus") or [])' <"$OUT/nodes.json")
mem=$(json 'j["nodes"][0]["gpus"][0]["memory"]' <"$OUT/nodes.json" 2>/dev/null || echo 0)
smi=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
disc=$(json 'j["nodes"][0].get("gpu_discovery", "")' <"$OUT/nodes.json")
if [ "$n" -gt 0 ] && [ "$mem" -gt 0 ] && [[ $disc == NVML* ]]; then
	pass "NVML discovery: $n GPU(s), the first with $((mem >> 20)) MiB (nvidia-smi -L lists $smi): $disc"
elif [ "$n" -gt 0 ] && [ -n "${CONFIG:-}" ]; then
	say "TRIAL $n declared GPU(s), not NVML ($disc): the checks below that need NVML fail"
else
	fail "NVML discovery: the node lists no GPUs; $(grep -m1 'GPU discovery' "$OUT/agent.log")"
	exit 1
fi
ducc nodes | tee -a "$OUT/summary.txt"
q=$(((mem / 4) >> 20)) # a quarter of GPU 0, in MiB

# alloc.py FRACTION SECONDS: allocate FRACTION of a quarter of GPU 0 (the slice
# the workers ask for) as a tensor on the one visible GPU, hold it, say what it holds.
cat >"$OUT/alloc.py" <<EOF
import sys, time, torch
frac, secs = float(sys.argv[1]), float(sys.argv[2])
n = int($q * frac) << 20
x = torch.empty(n, dtype=torch.uint8, device="cuda")
x.fill_(1)
torch.cuda.synchronize()
print("holding", n >> 20, "MiB on", torch.cuda.get_device_name(0), flush=True)
time.sleep(secs)
EOF
chmod a+r "$OUT/alloc.py"

# 2. Four workers, a quarter each, at once.
say "2 four workers with ${q} MiB each"
seq 8 >"$OUT/items.txt"
out=$(ducc submit --worker-protocol exec --input-file "$OUT/items.txt" --process-memory-size 8G \
	--gpu-memory "${q}M" --process-deployments-max 4 --description "gpu-check quarters" \
	--environment "$jobenv" -- "$PY" "$OUT/alloc.py" 0.6 12 2>&1)
job=$(echo "$out" | grep -oE 'Job [0-9]+' | grep -oE '[0-9]+')
[ -n "$job" ] || { fail "submit of the four workers: $out"; job=0; }
most=0
for _ in $(seq 180); do
	s=$(ducc show "$job" --json 2>/dev/null) || break
	now=$(echo "$s" | json 'sum(1 for p in j.get("procs") or [] if p["state"]=="Running" and p.get("gpu_memory",0)>0)' 2>/dev/null || echo 0)
	[ "$now" -gt "$most" ] && most=$now
	echo "$s" | json 'j.get("ended", False)' | grep -q True && break
	sleep 1
done
ducc show "$job" >"$OUT/job.txt" 2>&1
if [ "$most" -ge 4 ]; then
	pass "four workers of job $job ran at once, each with GPU memory in use"
else
	fail "at most $most workers of job $job ran at once with GPU memory in use (want 4); see $OUT/job.txt"
fi
ducc wait "$job" >/dev/null 2>&1

# 3. A fifth that takes more than its slice.
say "3 a process over its slice"
out=$(timeout 120 "$B/ducc" run --gpu-memory "${q}M" --memory 8G -- "$PY" "$OUT/alloc.py" 2.0 30 2>&1)
rc=$?
echo "$out" >"$OUT/over.txt"
if [ $rc -eq 193 ] && grep -q "GPU memory slice exceeded" "$OUT/over.txt"; then
	pass "over its slice: stopped, exit 193: $(grep -m1 -o 'GPU memory slice exceeded[^"]*' "$OUT/over.txt")"
else
	fail "over its slice: exit $rc (want 193 and the slice message): $(tail -3 "$OUT/over.txt")"
fi

# 4. A process without GPUs.
say "4 a process without GPUs"
out=$(ducc run --memory 4G -- "$PY" -c 'import torch; print("devices", torch.cuda.device_count())' 2>&1)
if echo "$out" | grep -q "devices 0"; then pass "no GPUs: torch.cuda.device_count() is 0"; else fail "no GPUs: $out"; fi
out=$(ducc run --memory 1G -- "$PY" -c '
try:
    open("/dev/nvidia0", "rb"); print("opened")
except OSError as e:
    print("refused", e.errno, e.strerror)' 2>&1)
if echo "$out" | grep -q "refused 1 "; then
	pass "no GPUs: /dev/nvidia0 cannot be opened ($out)"
else
	fail "no GPUs: /dev/nvidia0: $out (want refused with EPERM)"
fi

# 5. Accounting.
say "5 history"
ducc history --json >"$OUT/history.json" 2>&1
line=$("$PY" - "$job" "$OUT/history.json" <<'EOF'
import json, sys
job = int(sys.argv[1])
j = json.load(open(sys.argv[2]))
recs = j if isinstance(j, list) else next(v for v in j.values() if isinstance(v, list))
r = next((r for r in recs if r.get("id") == job), None)
print("none" if r is None else "%s %s" % (r.get("gpu_seconds", 0), r.get("gpu_memory_peak", 0)))
EOF
)
set -- $line
if [ "${1:-none}" != none ] && python3 -c "import sys; sys.exit(0 if float('$1') > 0 and int('$2') > 0 else 1)"; then
	pass "history of job $job: $1 GPU-seconds, peak GPU memory $(($2 >> 20)) MiB"
else
	fail "history of job $job: GPU-seconds and peak GPU memory missing ($line)"
fi
ducc history | tee -a "$OUT/summary.txt"

# 6. Utilization while a process keeps its GPU busy.
say "6 utilization"
cat >"$OUT/busy.py" <<'EOF'
import time, torch
a = torch.randn(4096, 4096, device="cuda")
end = time.time() + 40
while time.time() < end:
    a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
EOF
chmod a+r "$OUT/busy.py"
out=$(ducc run --detach --gpus 1 --memory 4G -- python3 "$OUT/busy.py" 2>&1)
busy=$(echo "$out" | grep -oE '[0-9]+' | head -1)
dev="" devutil="" procutil=""
for _ in $(seq 35); do
	sleep 1
	s=$(ducc show "$busy" --json 2>/dev/null) || continue
	dev=$(echo "$s" | json '(j.get("procs") or [{}])[0].get("gpus", [""])[0]' 2>/dev/null)
	[ -n "$procutil" ] || procutil=$(echo "$s" | json '(j.get("procs") or [{}])[0].get("gpu_util", "")' 2>/dev/null)
	[ -n "$dev" ] || continue
	u=$(ducc nodes --json | python3 -c "import json,sys; j=json.load(sys.stdin); print(next((g.get('util', '') for n in j['nodes'] for g in n.get('gpus') or [] if g['uuid']=='$dev'), ''))")
	[ -n "$u" ] && [ "$u" -gt 0 ] && devutil=$u
	[ -n "$devutil" ] && [ -n "$procutil" ] && break
done
ducc nodes --gpus --wide | tee -a "$OUT/summary.txt"
ducc show "$busy" | tee -a "$OUT/summary.txt"
ducc cancel "$busy" >/dev/null 2>&1
if [ -n "$devutil" ]; then
	pass "utilization: GPU $dev at ${devutil}% while busy.py ran"
else
	fail "utilization: no figure above 0 for GPU ${dev:-?} in ducc nodes --json while busy.py ran"
fi
if [ -n "$procutil" ]; then
	say "note: the process's own utilization: ${procutil}%"
else
	say "note: no per-process utilization (NVML gives none here, or no full heartbeat carried it yet)"
fi

say "$fails check(s) failed; the log is in $OUT"
[ $fails -eq 0 ]
