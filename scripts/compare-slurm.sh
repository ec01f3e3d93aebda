#!/bin/bash
# Interleaved ducc vs Slurm: 500 short jobs end to end + daemon CPU, run/srun and detach/sbatch latency.
# usage: scripts/compare-slurm.sh BIN_DIR [ROUNDS]   (N=500 jobs per round by default;
# P=4 submits them from 4 concurrent loops, as several users would, default 1)
# Needs the single-node Slurm peer running (its setup.sh; SLURM_CONF below) and a
# built tree (make build). Each round starts a fresh dev agent in /tmp/cmp-ducc.
# docs/performance.md, "Side by side with Slurm (this tree)", says what it measures.
bin=$1; rounds=${2:-2}; N=${N:-500}; P=${P:-1}
export SLURM_CONF=${SLURM_CONF:-/tmp/slurm-peer/etc/slurm.conf}
RUN=$(dirname "$SLURM_CONF")/../run
cpu() { awk '{print $14+$15+$16+$17}' /proc/$1/stat; }
# The agent's CPU with its shim servers' (the parents of its processes, its
# children until they exit, so not yet in its cutime).
dcpu() { t=$(cpu $1); for p in $(pgrep -P $1 -f shim-server); do t=$((t + $(cpu $p))); done; echo $t; }
# Busy ticks of the whole machine (all CPUs: user, nice, system, irq, softirq):
# the fair total, CLI, daemons, Slurm's slurmstepd and the jobs included, with
# whatever else runs beside (the rounds interleave).
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
med() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }
# par CMD...: N runs of CMD from P concurrent loops.
par() { for p in $(seq $P); do (for i in $(seq $((N / P))); do "$@" >/dev/null 2>&1; done) & done; wait; }
for r in $(seq $rounds); do
  echo "== round $r ($P submitting loops), load $(cut -d' ' -f1 /proc/loadavg)"
  # ducc: fresh agent
  d=/tmp/cmp-ducc; pkill -f "data-dir $d"; sleep 0.5; rm -rf $d; mkdir -p $d
  ($bin/ducc agent --dev --data-dir $d/data > $d/agent.log 2>&1 &)
  for i in $(seq 100); do DUCC_SOCKET=$d/data/ducc.sock $bin/ducc status >/dev/null 2>&1 && break; sleep 0.1; done
  export DUCC_SOCKET=$d/data/ducc.sock
  AP=$(pgrep -f "agent --dev --data-dir $d" | head -1)
  $bin/ducc run -- true >/dev/null
  c0=$(dcpu $AP); m0=$(busy); t0=$(now)
  par $bin/ducc run --detach -- true
  t1=$(now)
  while [ "$($bin/ducc jobs --noheader 2>/dev/null | wc -l)" != 0 ]; do sleep 0.05; done
  t2=$(now); c1=$(dcpu $AP); m1=$(busy)
  ducc_rate=$(awk "BEGIN{print $N/($t2-$t0)}")
  echo "ducc:  submit $(awk "BEGIN{printf \"%.1f\", $N/($t1-$t0)}")/s, e2e $(awk "BEGIN{printf \"%.1f\", $N/($t2-$t0)}") jobs/s, daemon CPU $(awk "BEGIN{printf \"%.1f\", ($c1-$c0)*10/$N}") ms/job, machine CPU $(awk "BEGIN{printf \"%.1f\", ($m1-$m0)*10/$N}") ms/job (load $(cut -d' ' -f1 /proc/loadavg))"
  # slurm
  SC=$(cat $RUN/slurmctld.pid); SD=$(cat $RUN/slurmd.pid)
  s0=$(( $(cpu $SC) + $(cpu $SD) )); m0=$(busy); t0=$(now)
  par sbatch --wrap=true -o /dev/null
  t1=$(now)
  while [ -n "$(squeue -h -o %i 2>/dev/null)" ]; do sleep 0.05; done
  t2=$(now); s1=$(( $(cpu $SC) + $(cpu $SD) )); m1=$(busy)
  slurm_rate=$(awk "BEGIN{print $N/($t2-$t0)}")
  echo "slurm: submit $(awk "BEGIN{printf \"%.1f\", $N/($t1-$t0)}")/s, e2e $(awk "BEGIN{printf \"%.1f\", $N/($t2-$t0)}") jobs/s, daemon CPU $(awk "BEGIN{printf \"%.1f\", ($s1-$s0)*10/$N}") ms/job (slurmstepd not counted), machine CPU $(awk "BEGIN{printf \"%.1f\", ($m1-$m0)*10/$N}") ms/job (load $(cut -d' ' -f1 /proc/loadavg))"
  echo "ratio: ducc / Slurm end to end = $(awk "BEGIN{printf \"%.2f\", $ducc_rate/$slurm_rate}")"
  # latency, interleaved call by call (ns timestamps inside bash: EPOCHREALTIME)
  rd=(); rs=(); dd=(); ds=()
  for i in $(seq 20); do
    a=$EPOCHREALTIME; $bin/ducc run -- true >/dev/null; b=$EPOCHREALTIME; rd+=($(awk "BEGIN{print ($b-$a)*1000}"))
    a=$EPOCHREALTIME; srun true >/dev/null 2>&1; b=$EPOCHREALTIME; rs+=($(awk "BEGIN{print ($b-$a)*1000}"))
  done
  for i in $(seq 20); do
    a=$EPOCHREALTIME; $bin/ducc run --detach -- true >/dev/null; b=$EPOCHREALTIME; dd+=($(awk "BEGIN{print ($b-$a)*1000}"))
    a=$EPOCHREALTIME; sbatch --wrap=true -o /dev/null >/dev/null 2>&1; b=$EPOCHREALTIME; ds+=($(awk "BEGIN{print ($b-$a)*1000}"))
  done
  mrd=$(printf '%s\n' "${rd[@]}" | med); mrs=$(printf '%s\n' "${rs[@]}" | med); mdd=$(printf '%s\n' "${dd[@]}" | med); mds=$(printf '%s\n' "${ds[@]}" | med)
  echo "latency: ducc run $mrd ms / srun $mrs ms = $(awk "BEGIN{printf \"%.2f\", $mrd/$mrs}"); detach $mdd ms / sbatch $mds ms = $(awk "BEGIN{printf \"%.2f\", $mdd/$mds}") (load $(cut -d' ' -f1 /proc/loadavg))"
  while [ -n "$(squeue -h -o %i 2>/dev/null)" ]; do sleep 0.1; done
  kill $AP
done
