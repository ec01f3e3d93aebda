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
	h.cfg.FSM.View(func(v *state.View) {
		admin = v.NodeAdmin()
		for _, w := range v.Active() {
			for _, p := range w.Live() {
				used[p.Node] += p.Shares
				procs[p.Node]++
			}
		}
	})
	for _, n := range h.orch.Nodes() {
		out.Nodes = append(out.Nodes, wire.NodeInfo{
			Name: n.Name, State: nodeState(n.State, string(admin[n.Name])), PeerID: n.Peer,
			MemTotal: n.HB.MemTotal, MemSchedulable: n.HB.MemSchedulable, MemUsed: n.HB.MemUsed,
			Shares: int(n.HB.MemSchedulable / quantum), SharesUsed: used[n.Name], Procs: procs[n.Name],
			LastHeartbeat: n.LastSeen.UnixMilli(), CPUs: n.HB.CPUs, Load1: n.HB.Load1, Addrs: n.HB.Addrs,
			Leftovers: n.HB.Leftovers,
		})
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
