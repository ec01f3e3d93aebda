package wire

import (
	"fmt"
	"strings"
)

// DefaultFullEvery is how often a node sends a full heartbeat when nothing
// else asks for one: every tenth heartbeat.
const DefaultFullEvery = 10

// HeartbeatShaper decides what each heartbeat of one node carries: the
// full inventory and process list, or only what changed (Heartbeat.Delta).
// A heartbeat is full until the head the node follows has shown that it
// holds a full one (it pushed the node a desired state, which a head does
// only to nodes it has a full heartbeat of: gossip may lose a message),
// then every FullEvery-th, when the inventory changed, when the node
// follows a new head (which rebuilds its view of the node from
// heartbeats), and after ForceFull. The zero value is ready to use; it is
// not safe for concurrent use.
type HeartbeatShaper struct {
	// FullEvery is how many heartbeats may pass between two full ones
	// (DefaultFullEvery if zero).
	FullEvery int

	started   bool
	sinceFull int
	head      string
	inv       inventory
	procs     map[string]procMark
}

// inventory is what a delta heartbeat leaves out.
type inventory struct {
	addrs                      string
	memTotal, memSched, swapTo int64
	cpus, aliens               int
	version                    string
	gpus                       string // the GPUs and GPUDiscovery, joined
}

// procMark is what makes a process worth repeating in a delta heartbeat.
type procMark struct {
	state string
	pid   int
}

func inventoryOf(hb *Heartbeat) inventory {
	inv := inventory{memTotal: hb.MemTotal, memSched: hb.MemSchedulable, swapTo: hb.SwapTotal,
		cpus: hb.CPUs, aliens: hb.Aliens, version: hb.Version}
	for _, a := range hb.Addrs {
		inv.addrs += a + "\x00"
	}
	if len(hb.GPUs) > 0 || hb.GPUDiscovery != "" {
		var b strings.Builder
		b.WriteString(hb.GPUDiscovery)
		for _, g := range hb.GPUs {
			fmt.Fprintf(&b, "\x00%s\x01%s\x01%d\x01%d\x01%s", g.UUID, g.Model, g.Memory, g.Minor, g.Parent)
		}
		inv.gpus = b.String()
	}
	return inv
}

// ForceFull makes the next heartbeat full (after a publish failed, say).
func (s *HeartbeatShaper) ForceFull() { s.started = false }

// Shape takes the full heartbeat hb, as the node would send it, the head
// the node follows now (a name for it and its term, or "") and whether
// that head has pushed the node a desired state, and returns what to
// send: hb itself, or hb reduced to a delta.
func (s *HeartbeatShaper) Shape(hb Heartbeat, head string, pushed bool) Heartbeat {
	every := s.FullEvery
	if every <= 0 {
		every = DefaultFullEvery
	}
	inv := inventoryOf(&hb)
	marks := make(map[string]procMark, len(hb.Procs))
	for _, p := range hb.Procs {
		marks[p.ID] = procMark{state: p.State, pid: p.PID}
	}
	full := !pushed || !s.started || s.sinceFull+1 >= every || head != s.head || inv != s.inv
	prev := s.procs
	s.started, s.head, s.inv, s.procs = true, head, inv, marks
	if full {
		s.sinceFull = 0
		return hb
	}
	s.sinceFull++
	d := Heartbeat{
		Node: hb.Node, PeerID: hb.PeerID, Seq: hb.Seq, Time: hb.Time,
		MemUsed: hb.MemUsed, SwapUsed: hb.SwapUsed, Load1: hb.Load1,
		DesiredVersion: hb.DesiredVersion, HeadEligible: hb.HeadEligible, Raft: hb.Raft, Delta: true,
		Leftovers: hb.Leftovers, GPUUse: hb.GPUUse,
	}
	for _, p := range hb.Procs {
		if was, ok := prev[p.ID]; !ok || was != marks[p.ID] || p.Ended() {
			d.Procs = append(d.Procs, p)
		}
	}
	return d
}

// Over returns the delta heartbeat d laid over prev, the node's last full
// (or merged) heartbeat: a heartbeat with d's sequence, time, load,
// desired version, standing, processes (only those d carries),
// leftovers and GPU use and prev's inventory, no longer marked Delta. A full d is returned
// unchanged.
func (d Heartbeat) Over(prev Heartbeat) Heartbeat {
	if !d.Delta {
		return d
	}
	m := prev
	m.Node, m.PeerID, m.Seq, m.Time = d.Node, d.PeerID, d.Seq, d.Time
	m.MemUsed, m.SwapUsed, m.Load1 = d.MemUsed, d.SwapUsed, d.Load1
	m.DesiredVersion, m.HeadEligible, m.Raft = d.DesiredVersion, d.HeadEligible, d.Raft
	m.Procs, m.Leftovers, m.GPUUse, m.Delta = d.Procs, d.Leftovers, d.GPUUse, false
	return m
}
