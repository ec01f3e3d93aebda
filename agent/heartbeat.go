package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/tick"
	"github.com/ducc-project/ducc/wire"
)

// inventory measures the node: one sysinfo(2) call and one read of
// /proc/meminfo per heartbeat (MemAvailable is not in sysinfo), from a
// file kept open into a buffer kept between heartbeats.
type inventory struct {
	override int64 // --memory / config memory: schedulable memory as declared
	reserved int64
	meminfo  *os.File
	buf      []byte
}

// close closes what the inventory keeps open.
func (inv *inventory) close() {
	if inv.meminfo != nil {
		inv.meminfo.Close()
		inv.meminfo = nil
	}
}

func (inv *inventory) init(cfg *Config) error {
	inv.override = cfg.Memory.Bytes()
	inv.reserved = cfg.MemoryReserved.Bytes()
	var hb wire.Heartbeat
	return inv.read(&hb)
}

// sample fills the memory, swap and load fields of a heartbeat. The
// schedulable memory is re-read every heartbeat (docs/scheduling.md).
func (inv *inventory) sample(hb *wire.Heartbeat) {
	_ = inv.read(hb) // a node that could be read at start is read again next time
}

func (inv *inventory) read(hb *wire.Heartbeat) error {
	hb.CPUs = runtime.NumCPU()
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return fmt.Errorf("read memory inventory: sysinfo: %w", err)
	}
	unit := int64(max(si.Unit, 1))
	total := int64(si.Totalram) * unit
	if inv.meminfo == nil {
		f, err := os.Open("/proc/meminfo")
		if err != nil {
			return fmt.Errorf("read memory inventory: %w", err)
		}
		inv.meminfo, inv.buf = f, make([]byte, 8192)
	}
	// procfs makes the file anew for a read at offset 0.
	n, err := inv.meminfo.ReadAt(inv.buf, 0)
	if n == 0 && err != nil {
		return fmt.Errorf("read memory inventory: /proc/meminfo: %w", err)
	}
	avail, ok := memAvailable(inv.buf[:n])
	if !ok { // kernels before 3.14: free and buffers, as the kernel estimated then
		avail = int64(si.Freeram+si.Bufferram) * unit
	}
	hb.MemTotal = total
	hb.MemUsed = max(total-avail, 0)
	hb.MemSchedulable = max(total-inv.reserved, 0)
	hb.SwapTotal = int64(si.Totalswap) * unit
	hb.SwapUsed = int64(si.Totalswap-si.Freeswap) * unit
	hb.Load1 = float64(si.Loads[0]) / (1 << unix.SI_LOAD_SHIFT)
	if inv.override > 0 {
		hb.MemSchedulable = inv.override
	}
	return nil
}

// memAvailable returns the MemAvailable line of /proc/meminfo in bytes.
func memAvailable(meminfo []byte) (int64, bool) {
	const key = "MemAvailable:"
	i := bytes.Index(meminfo, []byte(key))
	if i < 0 {
		return 0, false
	}
	line := meminfo[i+len(key):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	f := bytes.Fields(line)
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	if len(f) > 1 && string(f[1]) == "kB" {
		v *= 1024
	}
	return v, true
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
	a.gpus.fillHeartbeat(&hb)
	sort.Slice(hb.Procs, func(i, j int) bool { return hb.Procs[i].ID < hb.Procs[j].ID })
	return hb
}

// heartbeatLoop publishes a heartbeat every period until ctx ends: the
// configured node.heartbeat, or the longer interval the head announces
// in a large cluster. Before each, the GPU-slice watchdog reads the GPU
// memory of the processes that hold GPUs (watchGPUs). Most heartbeats carry only what changed
// (wire.HeartbeatShaper); a full one follows a change of head.
func (a *Agent) heartbeatLoop(ctx context.Context) {
	var shaper wire.HeartbeatShaper
	t := time.NewTimer(a.cfg.Heartbeat.D())
	defer t.Stop()
	for {
		a.watchGPUs(ctx) // first: the heartbeat carries what it read
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
		t.Reset(tick.Until(time.Now(), max(a.cfg.Heartbeat.D(), a.leader.heartbeatInterval())))
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
