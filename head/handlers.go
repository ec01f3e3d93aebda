package head

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// Report folds an agent's process report in.
func (h *Head) Report(ctx context.Context, r wire.Report) (wire.Empty, error) {
	h.orch.Report(ctx, r.Node, r.Procs)
	return wire.Empty{}, nil
}

// RunManaged admits a managed reservation: one process, FIXED_SHARE.
func (h *Head) RunManaged(ctx context.Context, c wire.Caller, r wire.RunRequest) (wire.SubmitReply, error) {
	sc := h.sched()
	if err := spec.ValidateRun(r); err != nil {
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	class, err := fixedClass(sc, r.Class)
	if err != nil {
		return wire.SubmitReply{}, err
	}
	mem := r.Memory
	if mem == 0 {
		mem = sc.DefaultMemory.Bytes()
	}
	quantum := sc.Quantum(class.Nodepool)
	if err := h.fitsSomeNode(mem, quantum); err != nil {
		return wire.SubmitReply{}, err
	}
	if err := h.checkSubmit(c, class.Name, mem); err != nil {
		return wire.SubmitReply{}, err
	}
	w := &state.Work{
		Kind: wire.WorkManaged, User: c.User, UID: c.UID, GID: c.GID, Groups: c.Groups, Home: c.Home,
		Class: class.Name, Memory: mem, Path: r.Path, Args: r.Args, Env: r.Env, Dir: r.Dir,
		LogDir: r.LogDir, Description: r.Description, MachineList: r.MachineList, Umask: r.Umask,
		ShareGroup: r.ShareGroup, ShareGID: r.ShareGID,
		State: state.StateWaitingForResources,
	}
	res, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdSubmit, Time: h.cfg.Now().UnixMilli(), Work: w})
	if err != nil {
		return wire.SubmitReply{}, err
	}
	if len(res) != 1 || res[0].Err != nil {
		return wire.SubmitReply{}, fmt.Errorf("submit: %v", res)
	}
	h.log.Info("managed reservation submitted", "work", res[0].ID, "user", c.User, "memory", mem)
	return wire.SubmitReply{ID: res[0].ID}, nil
}

// fixedClass resolves the class of a managed reservation.
func fixedClass(sc *rm.Config, name string) (*rm.Class, error) {
	if name == "" {
		if c, err := sc.DefaultClass(rm.FixedShare); err == nil {
			return c, nil
		}
		// No default: the first FIXED_SHARE class will do.
		fixed := classesOf(sc, rm.FixedShare)
		if len(fixed) == 0 {
			return nil, wire.Errorf(wire.CodeUsage, "no FIXED_SHARE class is configured; add one under scheduler.classes with policy: FIXED_SHARE")
		}
		name = fixed[0]
	}
	c, err := sc.Class(name)
	if err != nil {
		return nil, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	if c.Policy != rm.FixedShare {
		return nil, wire.Errorf(wire.CodeUsage, "class %q is %s; `ducc run` needs a FIXED_SHARE class (%s)",
			name, c.Policy, strings.Join(classesOf(sc, rm.FixedShare), ", "))
	}
	return c, nil
}

func classesOf(sc *rm.Config, policy string) []string {
	var out []string
	for _, c := range sc.Classes {
		if c.Policy == policy {
			out = append(out, c.Name)
		}
	}
	return out
}

// fitsSomeNode refuses memory that no known node could ever hold. It asks
// the orchestrator for the largest schedulable node, which it keeps up to
// date as heartbeats arrive, so a submission scans no nodes.
func (h *Head) fitsSomeNode(mem, quantum int64) error {
	largest, known := h.orch.LargestSchedulable()
	if !known {
		return nil // nothing known yet: it waits with a reason
	}
	need := (mem + quantum - 1) / quantum
	shares := largest / quantum
	if shares >= need {
		return nil
	}
	return wire.Errorf(wire.CodeUsage, "no node can hold %s; largest schedulable is %s",
		units.FormatSize(need*quantum), units.FormatSize(shares*quantum))
}

// Cancel cancels a piece of work for its owner, root or an administrator.
func (h *Head) Cancel(ctx context.Context, c wire.Caller, r wire.CancelRequest) (wire.WorkInfo, error) {
	var owner string
	var ended bool
	h.cfg.FSM.View(func(v *state.View) {
		if w := v.Work(r.ID); w != nil {
			owner, ended = w.User, w.Ended()
		} else if rec := v.Record(r.ID); rec != nil {
			owner, ended = rec.User, true // purged: long ended
		}
	})
	if owner == "" {
		return wire.WorkInfo{}, wire.Errorf(wire.CodeUsage, "no work with id %d", r.ID)
	}
	if owner != c.User && c.UID != 0 && !slices.Contains(h.cfg.Administrators, c.User) {
		return wire.WorkInfo{}, wire.Errorf(wire.CodeUsage, "work %d belongs to %s; only %s or an administrator may cancel it", r.ID, owner, owner)
	}
	if r.Process != "" {
		return h.cancelProcess(ctx, c, r)
	}
	if !ended {
		if _, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdCancel, Time: h.cfg.Now().UnixMilli(), WorkID: r.ID, By: c.User}); err != nil {
			return wire.WorkInfo{}, err
		}
	}
	return h.Show(c, r.ID)
}

// cancelProcess stops one process of a running job (the caller may act on
// the job). The stop is not a failure of the job: the job driver gives the
// process's items to the job's other processes, and the scheduler may start
// another process in its place, as DUCC does.
func (h *Head) cancelProcess(ctx context.Context, c wire.Caller, r wire.CancelRequest) (wire.WorkInfo, error) {
	var kind wire.WorkKind
	var live, ended bool
	var procs []string
	h.cfg.FSM.View(func(v *state.View) {
		w := v.Work(r.ID)
		if w == nil {
			ended = true
			return
		}
		kind, ended = w.Kind, w.Ended()
		for _, p := range w.Procs {
			procs = append(procs, p.ID)
			if p.ID == r.Process {
				live = !p.Ended() && !p.Stop
			}
		}
	})
	switch {
	case kind != wire.WorkJob:
		return wire.WorkInfo{}, wire.Errorf(wire.CodeUsage, "%d is a %s: only a job's processes can be canceled one by one; cancel the whole %s with 'ducc cancel %d'", r.ID, kind, kind, r.ID)
	case ended:
		return wire.WorkInfo{}, wire.Errorf(wire.CodeUsage, "job %d has ended; its processes are stopped", r.ID)
	case !slices.Contains(procs, r.Process):
		return wire.WorkInfo{}, wire.Errorf(wire.CodeUsage, "job %d has no process %s; its processes are %s ('ducc show %d')", r.ID, r.Process, strings.Join(procs, ", "), r.ID)
	case live:
		reason := "canceled by " + c.User
		if r.Reason != "" {
			reason += ": " + r.Reason
		}
		if _, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdStopProc, Time: h.cfg.Now().UnixMilli(), WorkID: r.ID, ProcID: r.Process, Reason: reason}); err != nil {
			return wire.WorkInfo{}, err
		}
	}
	return h.Show(c, r.ID)
}

// Show describes one piece of work to c: its arguments only to its owner
// and the administrators (docs/decisions.md).
func (h *Head) Show(c wire.Caller, id uint64) (wire.WorkInfo, error) {
	var w *state.Work
	var rec *state.Record
	h.cfg.FSM.View(func(v *state.View) {
		if x := v.Work(id); x != nil {
			w = x.Copy() // render without the state's lock: the driver locks before the state, never after
		} else if r := v.Record(id); r != nil {
			c := *r
			rec = &c
		}
	})
	if rec != nil {
		return purgedInfo(rec), nil
	}
	if w == nil {
		return wire.WorkInfo{}, wire.Errorf(wire.CodeUsage, "no work with id %d", id)
	}
	return h.info(c, w), nil
}

// Wait blocks until the work ends (or leaves r.State), ctx ends, or the
// timeout passes, and returns the work as it is then. Between changes of
// the state it looks at the work's state only: rendering the whole work
// (Show) after every Raft apply cost a stream job's agent 4 % of its CPU
// while a `ducc submit --wait` or `ducc wait` waited for it.
func (h *Head) Wait(ctx context.Context, c wire.Caller, r wire.WaitRequest) (wire.WorkInfo, error) {
	if r.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(r.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	ch := h.cfg.FSM.Changed()
	info, err := h.Show(c, r.ID) // also the access check
	if err != nil || info.Ended || (r.State != "" && info.State != r.State) {
		return info, err
	}
	for {
		select {
		case <-ctx.Done():
			return h.Show(c, r.ID)
		case <-ch:
		}
		ch = h.cfg.FSM.Changed()
		var st string
		done := true // gone from the live state: ended (Show tells how)
		h.cfg.FSM.View(func(v *state.View) {
			if w := v.Work(r.ID); w != nil {
				st, done = string(w.State), w.Ended()
			}
		})
		if done || (r.State != "" && st != r.State) {
			return h.Show(c, r.ID)
		}
	}
}

// List lists work (not services), active or all, of one user or all, as
// c may see it (Show).
func (h *Head) List(c wire.Caller, r wire.ListRequest) wire.WorkList {
	var ws []*state.Work
	h.cfg.FSM.View(func(v *state.View) {
		all := v.Active()
		if r.All {
			all = v.All()
		}
		for _, w := range all {
			if w.Service != nil {
				continue // 'ducc services query' lists services
			}
			if r.User == "" || w.User == r.User {
				ws = append(ws, w.Copy())
			}
		}
	})
	out := wire.WorkList{Work: make([]wire.WorkInfo, 0, len(ws))}
	for _, w := range ws {
		out.Work = append(out.Work, h.info(c, w))
	}
	return out
}

// info renders a piece of work for c; pending work says why. w must be a
// copy (Work.Copy): info runs without the state's lock.
func (h *Head) info(c wire.Caller, w *state.Work) wire.WorkInfo {
	info := wire.WorkInfo{
		ID: w.ID, Kind: w.Kind, User: w.User, Class: w.Class, State: string(w.State), Reason: w.Reason,
		Memory: w.Memory, SubmittedAt: w.SubmittedAt, StartedAt: w.StartedAt, EndedAt: w.EndedAt,
		ExitCode: w.ExitCode, Command: append([]string{w.Path}, w.Args...), Description: w.Description,
		Completion: string(w.Completion), Ended: w.Ended(), ShareGroup: w.ShareGroup,
	}
	if !w.Ended() {
		h.waiting(w, &info) // Reason, ReasonCode, Held, HeldCode
	}
	h.memoryCap(w, &info)
	info.Nodes = liveNodes(w)
	for _, p := range w.Procs {
		if info.Node == "" || !p.Ended() {
			info.Node = p.Node
		}
		pi := wire.ProcInfo{
			ID: p.ID, Node: p.Node, State: p.State, PID: p.PID, MemoryLimit: p.MemoryLimit,
			StartedAt: p.StartedAt, EndedAt: p.EndedAt, ExitCode: p.ExitCode, Reason: p.Reason, LogPath: p.LogPath,
			OOMKills: p.OOMKills, Kind: p.Kind, Stopped: stopText(w, p),
		}
		if live, ok := h.orch.Live(p.ID); ok {
			pi.RSS, pi.CPUSeconds = live.RSS, live.CPUSeconds
			if pi.LogPath == "" {
				pi.LogPath = live.LogPath
			}
		}
		info.Procs = append(info.Procs, pi)
	}
	h.jobInfo(w, &info)
	if !h.mayRead(c, w.User) {
		info.Redact()
	}
	return info
}

func cancelText(w *state.Work) string {
	if w.CancelBy == "" {
		return "canceled"
	}
	return "canceled by " + w.CancelBy
}

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
