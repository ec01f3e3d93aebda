package agent

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	"golang.org/x/sys/unix"

	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/wire"
)

// inventory measures the node.
type inventory struct {
	override int64 // --memory / config memory: schedulable memory as declared
	reserved int64
}

func (inv *inventory) init(cfg *Config) error {
	inv.override = cfg.Memory.Bytes()
	inv.reserved = cfg.MemoryReserved.Bytes()
	if _, err := mem.VirtualMemory(); err != nil {
		return fmt.Errorf("read memory inventory: %w", err)
	}
	return nil
}

// sample fills the memory, swap and load fields of a heartbeat. The
// schedulable memory is re-read every heartbeat (docs/scheduling.md).
func (inv *inventory) sample(hb *wire.Heartbeat) {
	hb.CPUs = runtime.NumCPU()
	if vm, err := mem.VirtualMemory(); err == nil {
		hb.MemTotal = int64(vm.Total)
		hb.MemUsed = int64(vm.Total - vm.Available)
		hb.MemSchedulable = max(int64(vm.Total)-inv.reserved, 0)
	}
	if sw, err := mem.SwapMemory(); err == nil {
		hb.SwapTotal, hb.SwapUsed = int64(sw.Total), int64(sw.Used)
	}
	if l, err := load.Avg(); err == nil {
		hb.Load1 = l.Load1
	}
	if inv.override > 0 {
		hb.MemSchedulable = inv.override
	}
}

// heartbeat builds this node's heartbeat.
func (a *Agent) heartbeat() wire.Heartbeat {
	seq, applied, unacked := a.ledger.next()
	hb := wire.Heartbeat{
		Node: a.cfg.Node, PeerID: a.host.ID().String(), Seq: seq, Time: time.Now().UnixMilli(),
		DesiredVersion: applied, HeadEligible: a.cfg.Head, Version: a.version, Procs: unacked,
	}
	if a.server != nil {
		hb.Raft = a.server.RaftState()
	}
	for _, addr := range a.host.Addrs() {
		hb.Addrs = append(hb.Addrs, addr.String())
	}
	a.inv.sample(&hb)
	ours, left := a.leftovers(a.procs.List())
	hb.Leftovers = wireLeftovers(left)
	for _, st := range ours {
		if st.State == proc.Exited || st.State == proc.LaunchFailed {
			continue // reported through unacked
		}
		ps := toWire(st, a.cfg.Node)
		if rss, cpu, err := a.procs.Stats(st.ID); err == nil {
			ps.RSS, ps.CPUSeconds = rss, cpu.Seconds()
		}
		hb.Procs = append(hb.Procs, ps)
	}
	sort.Slice(hb.Procs, func(i, j int) bool { return hb.Procs[i].ID < hb.Procs[j].ID })
	return hb
}

// heartbeatLoop publishes a heartbeat every period until ctx ends: the
// configured node.heartbeat, or the longer interval the head announces
// in a large cluster. Most heartbeats carry only what changed
// (wire.HeartbeatShaper); a full one follows a change of head.
func (a *Agent) heartbeatLoop(ctx context.Context) {
	var shaper wire.HeartbeatShaper
	t := time.NewTimer(a.cfg.Heartbeat.D())
	defer t.Stop()
	for {
		hb := a.heartbeat()
		head, pushed := a.leader.head()
		msg := shaper.Shape(hb, head, pushed)
		if err := a.hbT.Publish(ctx, msg); err != nil && ctx.Err() == nil {
			a.log.Warn("cannot publish heartbeat", "err", err)
			shaper.ForceFull()
		}
		a.obs.agent.HeartbeatSent(time.Since(time.UnixMilli(hb.Time)))
		a.obs.agent.SetProcs(len(hb.Procs))
		a.obs.agent.SetNode(hb.MemTotal, hb.MemSchedulable, hb.MemUsed)
		t.Reset(max(a.cfg.Heartbeat.D(), a.leader.heartbeatInterval()))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// toWire converts a local process status to its wire form.
func toWire(st proc.Status, node string) wire.ProcStatus {
	ps := wire.ProcStatus{
		ID: st.ID, WorkID: workIDOf(st.ID), PID: st.PID, ExitCode: st.ExitCode, Signal: st.Signal,
		OOMKilled: st.OOMKilled, MemoryLimit: st.MemoryLimit, Reason: st.Reason, LogPath: st.LogPath, Node: node,
		OOMKills: st.OOMKills,
		MaxRSS:   st.MaxRSS, CPUSeconds: st.CPUSeconds,
	}
	if st.Signal != "" {
		// Report a signal death as a shell would: 128 + the signal number.
		if n := unix.SignalNum(st.Signal); n != 0 {
			ps.ExitCode = 128 + int(n)
		}
	}
	if !st.StartedAt.IsZero() {
		ps.StartedAt = st.StartedAt.UnixMilli()
	}
	if !st.EndedAt.IsZero() {
		ps.EndedAt = st.EndedAt.UnixMilli()
	}
	switch st.State {
	case proc.Starting:
		ps.State = wire.ProcStarting
	case proc.Running:
		ps.State = wire.ProcRunning
	case proc.LaunchFailed:
		ps.State = wire.ProcLaunchFailed
	case proc.Lost:
		ps.State = wire.ProcLost
	default:
		ps.State = wire.ProcExited
	}
	return ps
}

// workIDOf returns the work id of a process id "<work>.<n>".
func workIDOf(procID string) uint64 {
	var id uint64
	for _, c := range procID {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
