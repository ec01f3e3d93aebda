package head

import (
	"sync"
	"time"

	"github.com/ducc-project/ducc/head/jd"
	"github.com/ducc-project/ducc/head/orch"
	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// policy adapts head/rm to the orchestrator: it turns the durable state and
// the node view into an rm.Input, and the rm.Plan back into assignments,
// stops and pending reasons. It keeps the scheduler's Carry between cycles
// (a new head starts with a fresh one, which rm treats as a restart).
type policy struct {
	mu    sync.Mutex // guards last and cfg
	cfg   *rm.Config
	jd    *jd.Driver
	carry rm.Carry
	last  []rm.ClassUsage
}

func newPolicy(cfg *rm.Config, d *jd.Driver) *policy { return &policy{cfg: cfg, jd: d} }

// Schedule implements orch.Policy. The orchestrator calls it from one
// goroutine.
func (p *policy) Schedule(now time.Time, nodes []orch.Node, active []*state.Work) orch.Plan {
	p.mu.Lock()
	cfg := p.cfg
	p.mu.Unlock()
	in := rm.Input{Now: now, Config: cfg, Carry: p.carry, NoTrace: true}
	for _, n := range nodes {
		st := rm.NodeUp
		switch {
		case n.State == orch.NodeUnknown:
			st = rm.NodeQuiescing // its processes stand; nothing new until it reports
		case n.State != orch.NodeUp:
			st = rm.NodeDown
		case n.Admin == state.NodeVariedOff:
			st = rm.NodeVariedOff
		case n.Admin == state.NodeQuiescing:
			st = rm.NodeQuiescing
		}
		in.Nodes = append(in.Nodes, rm.Node{Name: n.Name, MemSchedulable: n.HB.MemSchedulable, State: st})
	}
	kinds := map[string]rm.WorkKind{
		state.KindManaged: rm.ManagedReservation, state.KindJob: rm.Job,
		state.KindService: rm.Service, state.KindReservation: rm.Reservation,
	}
	for _, w := range active {
		rw := rm.Work{
			ID: w.ID, Kind: kinds[w.Kind], User: w.User, Class: w.Class, Memory: w.Memory,
			SubmitTime: time.UnixMilli(w.SubmittedAt), MachineList: w.MachineList,
		}
		if w.Job != nil && !p.jobDemand(w, &rw) {
			continue // not all items received yet
		}
		for _, pr := range w.Live() {
			ps := rm.ProcRunning
			switch {
			case pr.Stop || pr.State == wire.ProcStopping:
				ps = rm.ProcStopping
			case pr.State == wire.ProcStarting:
				ps = rm.ProcStarting
			case w.Job != nil && pr.ReadyAt == 0:
				ps = rm.ProcInitializing
			}
			rp := rm.Proc{ID: pr.ID, Node: pr.Node, Shares: pr.Shares, State: ps,
				StartedAt: time.UnixMilli(max(pr.StartedAt, pr.AssignedAt))}
			if pr.ReadyAt != 0 {
				rp.InitializedAt = time.UnixMilli(pr.ReadyAt)
			}
			rw.Procs = append(rw.Procs, rp)
		}
		if w.Canceling && len(rw.Procs) == 0 {
			continue // ends as soon as the cancel is applied; wants nothing
		}
		in.Work = append(in.Work, rw)
	}
	plan := rm.Schedule(in)
	p.carry = plan.Carry
	p.mu.Lock()
	p.last = plan.Classes
	p.mu.Unlock()
	out := orch.Plan{Pending: make(map[uint64]string, len(plan.Pending))}
	canceling := map[uint64]bool{}
	for _, w := range active {
		canceling[w.ID] = w.Canceling
	}
	for _, s := range plan.Starts {
		if canceling[s.WorkID] {
			continue
		}
		out.Starts = append(out.Starts, orch.Start{WorkID: s.WorkID, Node: s.Node, Shares: s.Shares, Memory: s.Memory})
	}
	for _, s := range plan.Stops {
		text := s.Text
		if text == "" {
			text = s.Reason.String()
		}
		out.Stops = append(out.Stops, orch.Stop{WorkID: s.WorkID, ProcID: s.ProcID, Reason: text})
	}
	for _, pd := range plan.Pending {
		out.Pending[pd.WorkID] = pd.Reason
	}
	for _, sh := range plan.Shrinking {
		out.Pending[sh.WorkID] = sh.Reason // shown by `ducc jobs` and `ducc show`
	}
	return out
}

// jobDemand fills the job fields the scheduler needs. Items already handed
// to a process count once per holding process (a pipeline's worth), so a
// job whose queue is empty wants no more processes than hold work.
func (p *policy) jobDemand(w *state.Work, rw *rm.Work) bool {
	j := w.Job
	if !j.Committed {
		return false
	}
	s := j.Spec
	remaining := j.Remaining()
	if q, holding, ok := p.jd.Demand(w.ID); ok {
		remaining = min(remaining, q+holding*max(s.Pipelines, 1))
	}
	rw.ItemsRemaining = remaining
	rw.Pipelines = s.Pipelines
	rw.DeploymentsMax = s.DeploymentsMax
	rw.InitFailures = j.InitFailures
	rw.InitFailuresCap = s.InitFailuresCap
	rw.EverInitialized = j.EverReady
	if j.InitCount > 0 {
		rw.MeanInitTime = time.Duration(j.InitMSSum/int64(j.InitCount)) * time.Millisecond
	}
	if j.Done > 0 {
		rw.MeanItemTime = time.Duration(j.MSSum/float64(j.Done)) * time.Millisecond
	}
	return true
}

// lastClasses returns the per-class usage of the last cycle.
func (p *policy) lastClasses() []rm.ClassUsage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// setConfig switches the scheduler configuration for the next cycles.
func (p *policy) setConfig(c *rm.Config) {
	p.mu.Lock()
	p.cfg = c
	p.mu.Unlock()
}
