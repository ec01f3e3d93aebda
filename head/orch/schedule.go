package orch

import (
	"strconv"
	"time"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// This file is the orchestrator's side of head/rm: it turns the durable
// state and the node view into an rm.Input, and the rm.Plan into the Raft
// commands that carry it out. The scheduler's Carry is kept between cycles
// (a new head starts with a fresh one, which rm treats as a restart).

// Service instances are separate rm works (one process each) under
// synthetic ids: svcBit | service id << 16 | instance.
const (
	svcBit       = uint64(1) << 63
	svcInstBits  = 16
	svcInstMask  = uint64(1)<<svcInstBits - 1
	maxInstances = wire.MaxServiceInstances
	// Every instance id fits in svcInstBits (else this overflows).
	_ = uint64(1)<<svcInstBits - maxInstances
)

func svcKey(id uint64, inst int) uint64 { return svcBit | id<<svcInstBits | uint64(inst) }

// A job's driver process is an rm work of its own (one FIXED_SHARE
// process, like a managed reservation) under the synthetic id drvBit | job
// id.
const drvBit = uint64(1) << 62

func drvKey(id uint64) uint64 { return drvBit | id }

// fromKey maps an rm work id back to the work and, for services, the
// instance.
func fromKey(k uint64) (id uint64, inst int) {
	if k&svcBit == 0 {
		return k &^ drvBit, 0
	}
	return (k &^ svcBit) >> svcInstBits, int(k & svcInstMask)
}

// isDriverKey reports whether an rm work id is a job's driver process.
func isDriverKey(k uint64) bool { return k&svcBit == 0 && k&drvBit != 0 }

// driverWork adds the rm work of a job's driver process: the one that
// runs, or the one to place while the job waits for its driver. A driver
// is placed once: one that ended ends the job unless it had sent every
// item (docs/jobs.md).
func driverWork(w *state.Work, in *rm.Input) {
	j := w.Job
	rw := rm.Work{ID: drvKey(w.ID), Kind: rm.ManagedReservation, User: w.User, Class: j.DriverClass,
		Memory: j.Spec.DriverMemory, SubmitTime: time.UnixMilli(w.SubmittedAt), MachineList: w.MachineList}
	switch dr := w.Driver(); {
	case dr != nil && !dr.Ended():
		rw.Procs = []rm.Proc{rmProc(w, dr)}
	case dr != nil || w.Canceling || j.Committed:
		return
	}
	in.Work = append(in.Work, rw)
}

// rmProc turns a live process into the scheduler's view of it.
func rmProc(w *state.Work, pr *state.Proc) rm.Proc {
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
		StartedAt: time.UnixMilli(max(pr.StartedAt, pr.AssignedAt)), GPUs: pr.GPUs}
	if pr.ReadyAt != 0 {
		rp.InitializedAt = time.UnixMilli(pr.ReadyAt)
	}
	return rp
}

// serviceWork adds one rm work per service instance: those that run and
// those the Service Manager wants started.
func (o *Orchestrator) serviceWork(w *state.Work, in *rm.Input) {
	base := rm.Work{Kind: rm.Service, User: w.User, Class: w.Class, Memory: w.Memory,
		SubmitTime: time.UnixMilli(w.SubmittedAt), MachineList: w.MachineList, ServiceID: strconv.FormatUint(w.ID, 10),
		GPUs: w.GPUs, GPUMemory: w.GPUMemory, GPUModel: w.GPUModel}
	have := map[int]bool{}
	for _, pr := range w.Live() {
		if pr.Instance >= maxInstances {
			continue
		}
		rw := base
		rw.ID, rw.Instance = svcKey(w.ID, pr.Instance), pr.Instance
		if have[pr.Instance] {
			continue // a replacement while the old one stops: the FSM refuses it anyway
		}
		have[pr.Instance] = true
		rw.Procs = []rm.Proc{rmProc(w, pr)}
		in.Work = append(in.Work, rw)
	}
	if w.Canceling || o.cfg.Wanted == nil {
		return
	}
	for _, i := range o.cfg.Wanted(w.ID) {
		if have[i] || i < 0 || i >= maxInstances {
			continue
		}
		rw := base
		rw.ID, rw.Instance = svcKey(w.ID, i), i
		in.Work = append(in.Work, rw)
	}
}

// input builds the scheduler's input for one cycle.
func (o *Orchestrator) input(now time.Time, nodes []Node, active []*state.Work) rm.Input {
	o.mu.Lock()
	cfg := o.sched
	o.mu.Unlock()
	in := rm.Input{Now: now, Config: cfg, Carry: o.carry, NoTrace: true}
	for _, n := range nodes {
		st := rm.NodeUp
		switch {
		case n.State == NodeUnknown:
			st = rm.NodeQuiescing // its processes stand; nothing new until it reports
		case n.State != NodeUp:
			st = rm.NodeDown
		case n.Admin == state.NodeVariedOff:
			st = rm.NodeVariedOff
		case n.Admin == state.NodeQuiescing:
			st = rm.NodeQuiescing
		}
		in.Nodes = append(in.Nodes, rm.Node{Name: n.Name, MemSchedulable: n.HB.MemSchedulable, State: st, GPUs: n.gpus})
	}
	for _, w := range active {
		if w.State == state.StateWaitingForServices {
			continue // the Service Manager lets it go on
		}
		if w.Service != nil {
			o.serviceWork(w, &in)
			continue
		}
		rw := rm.Work{
			ID: w.ID, Kind: rmKinds[w.Kind], User: w.User, Class: w.Class, Memory: w.Memory,
			SubmitTime: time.UnixMilli(w.SubmittedAt), MachineList: w.MachineList,
			GPUs: w.GPUs, GPUMemory: w.GPUMemory, GPUModel: w.GPUModel, // a job's driver work (driverWork) asks none
		}
		if w.Job != nil && w.Job.HasDriver() {
			driverWork(w, &in)
		}
		if w.Job != nil && !o.jobDemand(w, &rw) {
			continue // not all items received yet, or its driver is not ready
		}
		for _, pr := range w.Live() {
			if !pr.IsDriver() {
				rw.Procs = append(rw.Procs, rmProc(w, pr))
			}
		}
		if w.Canceling && len(rw.Procs) == 0 {
			continue // ends as soon as the cancel is applied; wants nothing
		}
		in.Work = append(in.Work, rw)
	}
	return in
}

// rmKinds maps the kinds of durable work to the scheduler's.
var rmKinds = map[wire.WorkKind]rm.WorkKind{
	wire.WorkManaged: rm.ManagedReservation, wire.WorkJob: rm.Job,
	wire.WorkService: rm.Service, wire.WorkReservation: rm.Reservation,
}

// requested maps each rm work of the input to the memory asked for each
// of its processes (the class's default_memory where it names none).
func requested(in rm.Input) map[uint64]int64 {
	def := in.Config.DefaultMemory.Bytes()
	m := make(map[uint64]int64, len(in.Work))
	for _, w := range in.Work {
		mem := w.Memory
		if mem <= 0 {
			mem = def
		}
		m[w.ID] = mem
	}
	return m
}

// rmGPUs is a heartbeat's GPU inventory as the scheduler sees it (nil
// without any).
func rmGPUs(gs []wire.GPUDevice) []rm.GPU {
	if len(gs) == 0 {
		return nil
	}
	out := make([]rm.GPU, len(gs))
	for i, g := range gs {
		out[i] = rm.GPU{ID: g.UUID, Memory: g.Memory, Model: g.Model}
	}
	return out
}

// gpuAsks is what planCommands needs to record the GPU slices of starts:
// the slice of each rm work that asks one, and the memory of a node's
// device. The zero value is right for a cycle where no work asks a slice.
type gpuAsks struct {
	slice  map[uint64]int64
	devMem func(node, id string) int64
}

// gpuAsksOf returns the gpuAsks of a cycle's input.
func gpuAsksOf(in rm.Input) gpuAsks {
	var g gpuAsks
	for _, w := range in.Work {
		if w.GPUMemory > 0 {
			if g.slice == nil {
				g.slice = map[uint64]int64{}
			}
			g.slice[w.ID] = w.GPUMemory
		}
	}
	if g.slice == nil {
		return g
	}
	var byName map[string]int
	g.devMem = func(node, id string) int64 {
		if byName == nil {
			byName = make(map[string]int, len(in.Nodes))
			for i := range in.Nodes {
				byName[in.Nodes[i].Name] = i
			}
		}
		if i, ok := byName[node]; ok {
			for _, d := range in.Nodes[i].GPUs {
				if d.ID == id {
					return d.Memory
				}
			}
		}
		return 0
	}
	return g
}

// planCommands turns a plan into the Raft commands that carry it out
// (assignments, then stops) and the reason each waiting work waits. Starts
// for work being canceled are dropped.
//
// A process's memory cap is what was asked for it (asked, by rm work id),
// not the whole shares the scheduler holds for it (rm.Start.Memory): the
// scheduler accounts in shares, but `ducc run --memory 256M` must be
// killed past 256 MiB, not past the 1 GiB its share holds, and `ducc show`
// and the dashboard then show the one cap the process has. A work the map
// does not know keeps the shares' memory.
//
// A start's GPUs (rm.Start.GPUs) go into its assignment, with the slice
// and its device's memory (gpus), so that the state holds the allocation
// the next cycle and a new head give back to the scheduler (rm.Proc.GPUs).
func planCommands(plan rm.Plan, active []*state.Work, ts int64, asked map[uint64]int64, gpus gpuAsks) ([]state.Command, map[uint64]Waiting) {
	canceling := map[uint64]bool{}
	for _, w := range active {
		canceling[w.ID] = w.Canceling
	}
	var cmds []state.Command
	for _, s := range plan.Starts {
		id, inst := fromKey(s.WorkID)
		if canceling[id] {
			continue
		}
		limit := s.Memory
		if m, ok := asked[s.WorkID]; ok && m > 0 && m < limit {
			limit = m
		}
		a := &state.Assignment{Node: s.Node, Shares: s.Shares, MemoryLimit: limit, Instance: inst, GPUs: s.GPUs}
		if sl := gpus.slice[s.WorkID]; sl > 0 && len(s.GPUs) == 1 {
			a.GPUSlice, a.GPUDeviceMemory = sl, gpus.devMem(s.Node, s.GPUs[0])
		}
		if isDriverKey(s.WorkID) {
			a.Kind = wire.ProcDriver
		}
		cmds = append(cmds, state.Command{Type: state.CmdAssign, Time: ts, WorkID: id, Assign: a})
	}
	for _, s := range plan.Stops {
		text := s.Text
		if text == "" {
			text = s.Reason.String()
		}
		id, _ := fromKey(s.WorkID)
		cmds = append(cmds, state.Command{Type: state.CmdStopProc, Time: ts, WorkID: id, ProcID: s.ProcID, Reason: text})
	}
	pending := make(map[uint64]Waiting, len(plan.Pending)+len(plan.Held))
	for _, pd := range plan.Pending {
		id, _ := fromKey(pd.WorkID)
		if _, ok := pending[id]; !ok {
			pending[id] = Waiting{Code: pd.Code, Reason: pd.Reason, Have: pd.Have, Want: pd.Want}
		}
	}
	for _, sh := range plan.Shrinking {
		id, _ := fromKey(sh.WorkID)
		wt := pending[id]
		wt.Code, wt.Reason = rm.WaitShrinking, sh.Reason // shown by `ducc jobs` and `ducc show`
		pending[id] = wt
	}
	for _, h := range plan.Held {
		id, _ := fromKey(h.WorkID)
		wt := pending[id]
		wt.HeldCode, wt.Held = h.Code, h
		if wt.Want == 0 {
			wt.Want = h.Want
		}
		pending[id] = wt
	}
	return cmds, pending
}

// jobDemand fills the job fields the scheduler needs. Items already handed
// to a process count once per holding process (a pipeline's worth), so a
// job whose queue is empty wants no more processes than hold work.
func (o *Orchestrator) jobDemand(w *state.Work, rw *rm.Work) bool {
	j := w.Job
	if !j.Committed && !(j.HasDriver() && j.DriverReady) {
		return false
	}
	s := j.Spec
	remaining := j.Remaining()
	if q, holding, ok := o.cfg.Demand(w.ID); ok {
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

// Classes returns the per-class usage of the last cycle.
func (o *Orchestrator) Classes() []rm.ClassUsage {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.classes
}

// SetScheduler switches the scheduler configuration and asks for a cycle
// that uses it.
func (o *Orchestrator) SetScheduler(c *rm.Config) {
	o.mu.Lock()
	o.sched = c
	o.mu.Unlock()
	o.Trigger()
}
