package head

import (
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// Nodes lists the nodes as the head sees them.
func (h *Head) Nodes() wire.NodeList {
	var out wire.NodeList
	quantum := h.sched().Quantum("")
	used := map[string]int{}
	procs := map[string]int{}
	var admin map[string]state.NodeAdminState
	var holders []gpuHolder
	h.cfg.FSM.View(func(v *state.View) {
		admin = v.NodeAdmin()
		for _, w := range v.Active() {
			for _, p := range w.Live() {
				used[p.Node] += p.Shares
				procs[p.Node]++
				if len(p.GPUs) > 0 {
					holders = append(holders, gpuHolder{node: p.Node, proc: p.ID, gpus: p.GPUs, slice: p.GPUSlice})
				}
			}
		}
	})
	gpuUse := h.gpuUse(holders)
	for _, n := range h.orch.Nodes() {
		out.Nodes = append(out.Nodes, wire.NodeInfo{
			Name: n.Name, State: nodeState(n.State, string(admin[n.Name])), PeerID: n.Peer,
			MemTotal: n.HB.MemTotal, MemSchedulable: n.HB.MemSchedulable, MemUsed: n.HB.MemUsed,
			Shares: int(n.HB.MemSchedulable / quantum), SharesUsed: used[n.Name], Procs: procs[n.Name],
			LastHeartbeat: n.LastSeen.UnixMilli(), CPUs: n.HB.CPUs, Load1: n.HB.Load1, Addrs: n.HB.Addrs,
			Leftovers: n.HB.Leftovers, GPUs: nodeGPUs(n.HB.GPUs, gpuUse[n.Name], n.HB.GPUUse), GPUDiscovery: n.HB.GPUDiscovery,
		})
	}
	return out
}

// gpuHolder is a live process that holds GPUs, as the state records it.
type gpuHolder struct {
	node, proc string
	gpus       []string
	slice      int64 // 0: whole devices
}

// devUse is what processes hold and use of one device.
type devUse struct {
	slices  int64 // bytes of slices on it
	whole   bool  // held whole
	used    int64 // GPU memory its holders use (bytes)
	holders []string
}

// gpuUse sums, per node and device, what holders hold of it and the GPU
// memory they use now (their agents' last report): a process's use is
// split evenly over the devices it holds.
func (h *Head) gpuUse(holders []gpuHolder) map[string]map[string]*devUse {
	out := map[string]map[string]*devUse{}
	for _, x := range holders {
		m := out[x.node]
		if m == nil {
			m = map[string]*devUse{}
			out[x.node] = m
		}
		var mem int64
		if live, ok := h.orch.Live(x.proc); ok {
			mem = live.GPUMemory
		}
		for _, id := range x.gpus {
			d := m[id]
			if d == nil {
				d = &devUse{}
				m[id] = d
			}
			d.holders = append(d.holders, x.proc)
			d.used += mem / int64(len(x.gpus))
			if x.slice > 0 {
				d.slices += x.slice
			} else {
				d.whole = true
			}
		}
	}
	return out
}

// nodeGPUs is a node's GPUs as `ducc nodes` shows them: each device of its
// inventory with what is allocated of it (all of it when held whole, else
// its slices), by whom, and what is used of it: the device's utilization
// and memory in use as its agent's last heartbeat read them (now, where it
// has NVML), else the memory its holders reported.
func nodeGPUs(devs []wire.GPUDevice, use map[string]*devUse, now []wire.GPUUse) []wire.NodeGPU {
	if len(devs) == 0 {
		return nil
	}
	out := make([]wire.NodeGPU, len(devs))
	for i, d := range devs {
		out[i].GPUDevice = d
		if u := use[d.UUID]; u != nil {
			out[i].Allocated, out[i].Holders, out[i].Used = min(u.slices, d.Memory), u.holders, u.used
			if u.whole {
				out[i].Allocated = d.Memory
			}
		}
		for _, n := range now {
			if n.UUID == d.UUID {
				out[i].Used, out[i].Util = n.MemoryUsed, n.Util
				break
			}
		}
	}
	return out
}

// Status describes the cluster as the head sees it.
func (h *Head) Status() wire.StatusInfo {
	st := wire.StatusInfo{Head: h.cfg.Node, HeadPeer: h.cfg.Peer, Version: h.cfg.Version, Quantum: h.sched().Quantum("")}
	if r := h.cfg.Raft; r != nil {
		st.RaftState = r.State().String()
		st.RaftTerm = r.CurrentTerm()
		st.RaftIndex = r.AppliedIndex()
		if f := r.GetConfiguration(); f.Error() == nil {
			for _, s := range f.Configuration().Servers {
				st.Peers = append(st.Peers, string(s.ID))
			}
		}
	}
	if h.cfg.Voters != nil {
		st.Voters = h.cfg.Voters()
	}
	h.cfg.FSM.View(func(v *state.View) { st.Incarnation = v.Incarnation() })
	if h.cfg.Snapshots != nil {
		in := h.cfg.Snapshots()
		st.Snapshot = &in
	}
	for _, n := range h.orch.Nodes() {
		st.NodesAll++
		if n.State == "Up" {
			st.NodesUp++
		}
	}
	return st
}

// nodeState shows an admin state (VariedOff, Quiescing) of an up node.
func nodeState(st, admin string) string {
	if admin != "" && st == "Up" {
		return admin
	}
	return st
}
