#!/bin/bash
# Short jobs past one launcher (issue 27; docs/performance.md, "Where a short
# job's time goes"): 500 jobs of `true` from 1, 4 and 16 submitting loops, ducc
# and a portable Slurm interleaved, on a machine with many cores and no Go.
#
#   here (Go, this tree):  scripts/short-jobs-device.sh pack devpack
#   there (root):          bash devpack/short-jobs-device.sh run devpack
#
# pack builds ducc, duccd, ducc-shim and the proc test binary into
# DIR/bins.txz, copies the portable Slurm of ../shared/peers/device (built
# with its build.sh if need be; SLURM_PORTABLE=DIR another, SLURM_PORTABLE=
# none: ducc alone) and this script: ~30 MB, for the device tool's carry.
# run, for each P in PS (default "1 4 16") and ROUNDS rounds (default 2):
# N (500) × `ducc run --detach -- true` from P loops on a fresh dev agent,
# until the last has ended, then N × `sbatch --wrap=true` the same way; it
# prints jobs/s end to end, submissions/s, the agent's CPU per job (with its
# shim servers') and the machine's busy CPU per job. Then the proc launch
# benchmark (launches/s from 1, 2, 4, 16 callers) and one ducc round from the
# largest P with the agent's profiles (DUCC_PROFILE_DIR: CPU, block, mutex,
# go tool trace). Between them, one loop's latency: LAT (200) calls of `ducc
# run --detach -- true` and of `sbatch`, alternating, each timed
# (latency.txt). Everything goes to OUT (default /tmp/short27).
# BEFORE=<git revision> at pack time adds that tree's ducc, run in every round
# just before this one's (the same P, a fresh agent each): before and after
# on the same machine at the same time.
set -u
mode=${1:?usage: $0 pack|run DIR}; self=$(readlink -f "$0")
mkdir -p "${2:?usage: $0 pack|run DIR}"; R=$(cd "$2" && pwd)

if [ "$mode" = pack ]; then
  set -e
  cd "$(dirname "$self")/.."
  mkdir -p "$R/bin"
  for c in ducc duccd ducc-shim; do CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$R/bin/$c" ./cmd/$c; done
  CGO_ENABLED=0 go test -c -o "$R/bin/proc.test" ./proc/
  sp=${SLURM_PORTABLE-}
  for d in ../shared ../../shared; do [ -z "${SLURM_PORTABLE+x}" ] && [ -d $d/peers/device/slurm-portable ] && sp=$d/peers/device/slurm-portable && break; done
  if [ -n "$sp" ] && [ -d "$sp" ]; then rm -rf "$R/slurm"; cp -r "$sp" "$R/slurm"; [ -d "$R/slurm/root" ] || "$R/slurm/build.sh"; fi
  if [ -n "${BEFORE:-}" ]; then   # a second tree to compare, round by round
    t=$(mktemp -d /tmp/short27-before.XXXX); git archive "$BEFORE" | tar x -C $t
    mkdir -p "$R/before/bin"
    for c in ducc duccd ducc-shim; do (cd $t && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$R/before/bin/$c" ./cmd/$c); done
    git rev-parse "$BEFORE" >"$R/before/rev"; rm -rf $t
    tar cf - -C "$R/before" bin rev | xz -6 -T2 >"$R/before.txz" && rm -rf "$R/before"
  fi
  cp "$self" "$R/short-jobs-device.sh"
  tar cf - -C "$R" bin | xz -6 -T2 >"$R/bins.txz" && rm -rf "$R/bin"   # the device tool carries 64 MiB
  du -sh "$R"
  exit 0
fi
[ "$mode" = run ] || { echo "usage: $0 pack|run DIR" >&2; exit 2; }
OUT=${OUT:-/tmp/short27}; mkdir -p "$OUT"; N=${N:-500}; PS=${PS:-1 4 16}; ROUNDS=${ROUNDS:-2}
W=$(mktemp -d /tmp/short27.XXXX); tar xJf "$R/bins.txz" -C $W; B=$W/bin; BB=
if [ -f "$R/before.txz" ]; then mkdir -p $W/before && tar xJf "$R/before.txz" -C $W/before && BB=$W/before/bin; fi
cpu() { awk '{print $14+$15+$16+$17}' /proc/$1/stat 2>/dev/null || echo 0; }
# The agent's CPU with its shim servers' (its children until they exit).
dcpu() { local t; t=$(cpu $1); for p in $(pgrep -P $1 -f shim-server); do t=$((t + $(cpu $p))); done; echo $t; }
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
rate() { awk "BEGIN{printf \"%.0f\", $1/($3-$2)}"; }
ms() { awk "BEGIN{printf \"%.2f\", ($2-$1)*10/$N}"; }
par() { local P=$1 pids=(); shift; for p in $(seq $P); do (for i in $(seq $((N / P))); do "$@" >/dev/null 2>&1; done) & pids+=($!); done; wait "${pids[@]}"; }
{ echo "host: $(nproc) cores, $(uname -r), cgroup $(stat -fc %T /sys/fs/cgroup), load $(cut -d' ' -f1-3 /proc/loadavg)"; } | tee "$OUT/host.txt"

slurm_ok=0
if [ -x "$R/slurm/start.sh" ] && timeout 90 bash "$R/slurm/start.sh" $W/slurm >"$OUT/slurm-start.txt" 2>&1; then
  eval "$(grep -E '^export ' "$OUT/slurm-start.txt")"; slurm_ok=1
else
  echo "no Slurm (see $OUT/slurm-start.txt): ducc alone"
fi

# ducc_round P [PROFDIR [LABEL]]: one fresh dev agent of the executables in
# $B, N jobs from P loops.
ducc_round() {
  local P=$1 d=$W/ducc AP c0 m0 t0 t1 t2 c1 m1
  rm -rf $d; mkdir -p $d
  DUCC_PROFILE_DIR=${2:-} $B/ducc agent --dev --data-dir $d/data >$d/agent.log 2>&1 &
  AP=$!
  export DUCC_SOCKET=$d/data/ducc.sock
  for i in $(seq 100); do $B/ducc status >/dev/null 2>&1 && break; sleep 0.1; done
  $B/ducc run -- true >/dev/null || echo "first run failed: $(tail -3 $d/agent.log)"
  c0=$(dcpu $AP); m0=$(busy); t0=$EPOCHREALTIME
  par $P $B/ducc run --detach -- true
  t1=$EPOCHREALTIME
  for i in $(seq 1200); do [ "$($B/ducc jobs --noheader 2>/dev/null | wc -l)" = 0 ] && break; sleep 0.02; done
  t2=$EPOCHREALTIME; c1=$(dcpu $AP); m1=$(busy)
  DR=$(rate $N $t0 $t2)
  echo "ducc${3:+ $3} P=$P: e2e $DR jobs/s, submit $(rate $N $t0 $t1)/s, agent CPU $(ms $c0 $c1) ms/job, machine CPU $(ms $m0 $m1) ms/job, load $(cut -d' ' -f1 /proc/loadavg)"
  kill -TERM $AP; wait $AP 2>/dev/null
}
slurm_round() {
  local P=$1 m0 t0 t1 t2 m1 SR
  m0=$(busy); t0=$EPOCHREALTIME
  par $P sbatch --wrap=true -o /dev/null
  t1=$EPOCHREALTIME
  for i in $(seq 2400); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.05; done
  t2=$EPOCHREALTIME; m1=$(busy); SR=$(rate $N $t0 $t2)
  echo "slurm P=$P: e2e $SR jobs/s, submit $(rate $N $t0 $t1)/s, machine CPU $(ms $m0 $m1) ms/job; ducc/slurm $(awk "BEGIN{printf \"%.2f\", $DR/$SR}")"
}
for r in $(seq $ROUNDS); do
  for P in $PS; do
    [ -n "$BB" ] && B=$BB ducc_round $P "" "before ($(cut -c1-9 $W/before/rev))"
    ducc_round $P "" ${BB:+after}
    [ $slurm_ok = 1 ] && slurm_round $P
  done
done 2>&1 | tee "$OUT/short.txt"

# One loop's caller: LAT (200) × `ducc run --detach -- true` and `sbatch
# --wrap=true`, call by call (alternating when Slurm is up), each timed in
# bash: the median and the 90th percentile of each (issue 27: under 3 ms).
lat_round() {
  local d=$W/ducc AP i t0 t1 ; rm -rf $d; mkdir -p $d
  $B/ducc agent --dev --data-dir $d/data >$d/agent.log 2>&1 &
  AP=$!; export DUCC_SOCKET=$d/data/ducc.sock
  for i in $(seq 100); do $B/ducc status >/dev/null 2>&1 && break; sleep 0.1; done
  $B/ducc run -- true >/dev/null
  : >$W/lat-ducc; : >$W/lat-slurm
  for i in $(seq ${LAT:-200}); do
    t0=$EPOCHREALTIME; $B/ducc run --detach -- true >/dev/null 2>&1; t1=$EPOCHREALTIME
    echo "$t0 $t1" >>$W/lat-ducc
    if [ $slurm_ok = 1 ]; then
      t0=$EPOCHREALTIME; sbatch --wrap=true -o /dev/null >/dev/null 2>&1; t1=$EPOCHREALTIME
      echo "$t0 $t1" >>$W/lat-slurm
    fi
  done
  for k in ducc slurm; do
    [ -s $W/lat-$k ] || continue
    awk '{printf "%.3f\n", ($2-$1)*1000}' $W/lat-$k | sort -n | awk -v k=$k '{a[NR]=$1} END{printf "%s one loop, %d calls: median %.2f ms, p90 %.2f ms\n", (k=="ducc"?"ducc run --detach":"sbatch"), NR, a[int((NR+1)/2)], a[int(NR*0.9)]}'
  done
  kill -TERM $AP; wait $AP 2>/dev/null
  [ $slurm_ok = 1 ] && for i in $(seq 1200); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.05; done
}
lat_round 2>&1 | tee "$OUT/latency.txt"
[ $slurm_ok = 1 ] && bash "$R/slurm/stop.sh" $W/slurm >/dev/null 2>&1

# The launch benchmark of package proc: one shim server, 1, 2, 4, 16 callers.
# GOMAXPROCS=4 in the environment reaches the shim server (whose own
# default is 1): does launching beside reaping raise the ceiling?
for g in 1 4 1 4; do
  echo "shim server GOMAXPROCS=$g"
  (cd $W && GOMAXPROCS=$g timeout 300 $B/proc.test -test.run XXX -test.bench Launchers -test.benchtime ${LAUNCHES:-2000}x 2>&1 | grep -E 'launches/s|FAIL|ok')
done | tee "$OUT/launchers.txt"

# One profiled round from the largest P (go tool pprof / go tool trace here).
last=${PS##* }
ducc_round $last "$OUT/prof-$last" | tee -a "$OUT/short.txt"
ls -la "$OUT/prof-$last"
rm -rf $W
