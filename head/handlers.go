package head

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// Exit-code-like error codes carried in RPC errors (SPEC §8).
const (
	codeFailed = 1
	codeUsage  = 2
)

// Handle answers one RPC. It implements wire.Handler.
func (h *Head) Handle(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
	switch req.Method {
	case wire.MethodRun:
		var r wire.RunRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.run(ctx, req.Caller, r)
	case wire.MethodCancel:
		var r wire.CancelRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.cancel(ctx, req.Caller, r)
	case wire.MethodShow:
		var r wire.IDRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.show(r.ID)
	case wire.MethodWait:
		var r wire.WaitRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.wait(ctx, r)
	case wire.MethodJobs:
		var r wire.ListRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.list(r), nil
	case wire.MethodNodes:
		return h.nodes(), nil
	case wire.MethodStatus:
		return h.status(), nil
	case wire.MethodSubmit:
		var r wire.SubmitJobRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.submitJob(ctx, req.Caller, r)
	case wire.MethodItems:
		var r wire.ItemsRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.addItems(ctx, req.Caller, r)
	case wire.MethodResults:
		var r wire.ResultsRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.results(r)
	case wire.MethodExchange:
		var r wire.ExchangeRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.exchange(ctx, r)
	case wire.MethodClasses:
		return h.classes(), nil
	case wire.MethodReserve:
		var r wire.ReserveRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.reserve(ctx, req.Caller, r)
	case wire.MethodReconfigure:
		var r wire.ReconfigureRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.reconfigure(ctx, req.Caller, r)
	case wire.MethodNodeAdmin:
		var r wire.NodeAdminRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.nodeAdmin(ctx, req.Caller, r)
	case wire.MethodServiceRegister:
		var r wire.ServiceRegisterRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.registerService(ctx, req.Caller, r)
	case wire.MethodServiceControl:
		var r wire.ServiceControlRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.controlService(ctx, req.Caller, r)
	case wire.MethodServiceQuery:
		var r wire.ServiceQueryRequest
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		return h.queryServices(r)
	case wire.MethodReport:
		var r wire.Report
		if err := decode(req, &r); err != nil {
			return nil, err
		}
		h.orch.Report(ctx, r.Node, r.Procs)
		return wire.Empty{}, nil
	default:
		return nil, wire.Errorf(codeUsage, "unknown method %q", req.Method)
	}
}

func decode(req *wire.Request, v any) error {
	if len(req.Body) == 0 {
		return nil
	}
	if err := wire.Unmarshal(req.Body, v); err != nil {
		return wire.Errorf(codeUsage, "bad %s request: %v", req.Method, err)
	}
	return nil
}

// run admits a managed reservation (SPEC §1): one process, FIXED_SHARE.
func (h *Head) run(ctx context.Context, c wire.Caller, r wire.RunRequest) (wire.SubmitReply, error) {
	sc := h.sched()
	if err := spec.ValidateRun(r); err != nil {
		return wire.SubmitReply{}, wire.Errorf(codeUsage, "%v", err)
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
		Kind: state.KindManaged, User: c.User, UID: c.UID, GID: c.GID, Groups: c.Groups, Home: c.Home,
		Class: class.Name, Memory: mem, Path: r.Path, Args: r.Args, Env: r.Env, Dir: r.Dir,
		LogDir: r.LogDir, Description: r.Description, MachineList: r.MachineList,
		State: state.StateWaitingForResources,
	}
	res, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdSubmit, Time: h.cfg.Now().UnixMilli(), Work: w})
	if err != nil {
		return wire.SubmitReply{}, err
	}
	if len(res) != 1 || res[0].Err != nil {
		return wire.SubmitReply{}, fmt.Errorf("submit: %v", res)
	}
	h.orch.Trigger()
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
			return nil, wire.Errorf(codeUsage, "no FIXED_SHARE class is configured; add one under scheduler.classes with policy: FIXED_SHARE")
		}
		name = fixed[0]
	}
	c, err := sc.Class(name)
	if err != nil {
		return nil, wire.Errorf(codeUsage, "%v", err)
	}
	if c.Policy != rm.FixedShare {
		return nil, wire.Errorf(codeUsage, "class %q is %s; `ducc run` needs a FIXED_SHARE class (%s)",
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

// fitsSomeNode refuses memory that no known node could ever hold.
func (h *Head) fitsSomeNode(mem, quantum int64) error {
	nodes := h.orch.Nodes()
	if len(nodes) == 0 {
		return nil // nothing known yet: it waits with a reason
	}
	need := (mem + quantum - 1) / quantum
	var largest int64
	for _, n := range nodes {
		shares := n.HB.MemSchedulable / quantum
		if shares >= need {
			return nil
		}
		largest = max(largest, shares*quantum)
	}
	return wire.Errorf(codeUsage, "no node can hold %s; largest schedulable is %s",
		units.FormatSize(need*quantum), units.FormatSize(largest))
}

func (h *Head) cancel(ctx context.Context, c wire.Caller, r wire.CancelRequest) (wire.WorkInfo, error) {
	var owner string
	var ended bool
	h.cfg.FSM.View(func(v *state.View) {
		if w := v.Work(r.ID); w != nil {
			owner, ended = w.User, w.Ended()
		}
	})
	if owner == "" {
		return wire.WorkInfo{}, wire.Errorf(codeUsage, "no work with id %d", r.ID)
	}
	if owner != c.User && c.UID != 0 && !slices.Contains(h.cfg.Administrators, c.User) {
		return wire.WorkInfo{}, wire.Errorf(codeUsage, "work %d belongs to %s; only %s or an administrator may cancel it", r.ID, owner, owner)
	}
	if !ended {
		if _, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdCancel, Time: h.cfg.Now().UnixMilli(), WorkID: r.ID, By: c.User}); err != nil {
			return wire.WorkInfo{}, err
		}
		h.orch.Trigger()
	}
	return h.show(r.ID)
}

func (h *Head) show(id uint64) (wire.WorkInfo, error) {
	var w *state.Work
	h.cfg.FSM.View(func(v *state.View) {
		if x := v.Work(id); x != nil {
			w = x.Copy() // render without the state's lock: the driver locks before the state, never after
		}
	})
	if w == nil {
		return wire.WorkInfo{}, wire.Errorf(codeUsage, "no work with id %d", id)
	}
	return h.info(w), nil
}

// wait blocks until the work ends (or leaves r.State), ctx ends, or the
// timeout passes, and returns the work as it is then.
func (h *Head) wait(ctx context.Context, r wire.WaitRequest) (wire.WorkInfo, error) {
	if r.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(r.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	for {
		ch := h.cfg.FSM.Changed()
		info, err := h.show(r.ID)
		if err != nil {
			return info, err
		}
		if info.Ended || (r.State != "" && info.State != r.State) {
			return info, nil
		}
		select {
		case <-ctx.Done():
			return info, nil
		case <-ch:
		}
	}
}

func (h *Head) list(r wire.ListRequest) wire.WorkList {
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
		out.Work = append(out.Work, h.info(w))
	}
	return out
}

// info renders a piece of work for users; pending work says why. w must
// be a copy (Work.Copy): info runs without the state's lock.
func (h *Head) info(w *state.Work) wire.WorkInfo {
	info := wire.WorkInfo{
		ID: w.ID, Kind: w.Kind, User: w.User, Class: w.Class, State: w.State, Reason: w.Reason,
		Memory: w.Memory, SubmittedAt: w.SubmittedAt, StartedAt: w.StartedAt, EndedAt: w.EndedAt,
		ExitCode: w.ExitCode, Command: append([]string{w.Path}, w.Args...), Description: w.Description,
		Completion: w.Completion, Ended: w.Ended(),
	}
	if !w.Ended() {
		if p := h.orch.Pending(w.ID); p != "" {
			info.Reason = p
		}
		if w.State == state.StateWaitingForServices {
			info.Reason = h.sm.Waiting(w.ID)
			if info.Reason == "" {
				info.Reason = "waiting for services: " + strings.Join(w.Deps, ", ")
			}
		}
		if w.Canceling {
			info.Reason = "stopping: " + cancelText(w)
		}
	}
	for _, p := range w.Procs {
		if info.Node == "" || !p.Ended() {
			info.Node = p.Node
		}
		pi := wire.ProcInfo{
			ID: p.ID, Node: p.Node, State: p.State, PID: p.PID, MemoryLimit: p.MemoryLimit,
			StartedAt: p.StartedAt, EndedAt: p.EndedAt, ExitCode: p.ExitCode, Reason: p.Reason, LogPath: p.LogPath,
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
	return info
}

func cancelText(w *state.Work) string {
	if w.CancelBy == "" {
		return "canceled"
	}
	return "canceled by " + w.CancelBy
}

func (h *Head) nodes() wire.NodeList {
	var out wire.NodeList
	quantum := h.sched().Quantum("")
	used := map[string]int{}
	procs := map[string]int{}
	var admin map[string]string
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
			Name: n.Name, State: nodeState(n.State, admin[n.Name]), PeerID: n.Peer,
			MemTotal: n.HB.MemTotal, MemSchedulable: n.HB.MemSchedulable, MemUsed: n.HB.MemUsed,
			Shares: int(n.HB.MemSchedulable / quantum), SharesUsed: used[n.Name], Procs: procs[n.Name],
			LastHeartbeat: n.LastSeen.UnixMilli(), CPUs: n.HB.CPUs, Load1: n.HB.Load1, Addrs: n.HB.Addrs,
		})
	}
	return out
}

func (h *Head) status() wire.StatusInfo {
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
