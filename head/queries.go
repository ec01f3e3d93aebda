package head

import (
	"context"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

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
		GPUs: w.GPUs, GPUMemory: w.GPUMemory, GPUModel: w.GPUModel,
	}
	if !w.Ended() {
		h.waiting(w, &info) // Reason, ReasonCode, Held, HeldCode
	}
	if w.Job != nil && !w.Ended() && !w.Canceling && w.State == state.StateRunning && len(w.Live()) == 0 {
		// Every process of the running job was taken back (preempted,
		// or its node went down): it waits for new ones, and says why,
		// rather than showing Running with no process.
		info.State = string(state.StateWaitingForResources)
		if info.Reason == "" {
			info.Reason, info.ReasonCode = "waiting for the next scheduling cycle", wire.ReasonScheduling
		}
	}
	if w.Service != nil && !w.Ended() {
		// A service is in the state 'ducc services query' shows (Stopped,
		// Disabled, Available...), not its work's, which stays Running
		// while it is registered.
		si := h.serviceInfo(w)
		info.State, info.Reason = si.State, si.Reason
		if si.Reason == "" {
			info.ReasonCode = ""
		}
	}
	h.memoryCap(w, &info)
	info.Nodes = liveNodes(w)
	var started int64 // the earliest start the agents reported that the state has not written yet
	for _, p := range w.Procs {
		if info.Node == "" || !p.Ended() {
			info.Node = p.Node
		}
		pi := wire.ProcInfo{
			ID: p.ID, Node: p.Node, State: p.State, PID: p.PID, MemoryLimit: p.MemoryLimit,
			StartedAt: p.StartedAt, EndedAt: p.EndedAt, ExitCode: p.ExitCode, Reason: p.Reason, LogPath: p.LogPath,
			OOMKills: p.OOMKills, Kind: p.Kind, Stopped: stopText(w, p),
			GPUs: p.GPUs, GPUSlice: p.GPUSlice, GPUMemoryPeak: p.GPUMemoryPeak,
		}
		if live, ok := h.orch.Live(p.ID); ok {
			pi.RSS, pi.CPUSeconds = live.RSS, live.CPUSeconds
			if !p.Ended() {
				pi.GPUMemory, pi.GPUUtil = live.GPUMemory, live.GPUUtil
			}
			pi.GPUMemoryPeak = max(pi.GPUMemoryPeak, live.GPUMemoryPeak)
			if pi.LogPath == "" {
				pi.LogPath = live.LogPath
			}
			if p.State == wire.ProcStarting && live.State == wire.ProcRunning {
				// Its agent reported the start, which the state writes
				// with the next log entry (orch's startLinger): show
				// what runs, not what the log has caught up with.
				pi.State, pi.PID = live.State, live.PID
				if live.StartedAt != 0 {
					pi.StartedAt = live.StartedAt
				}
				if started == 0 || pi.StartedAt < started {
					started = pi.StartedAt
				}
			}
		}
		if len(p.GPUs) > 0 {
			pp := *p
			pp.StartedAt = pi.StartedAt // the agent's report, before the state has it
			pi.GPUSeconds = pp.GPUSeconds(h.cfg.Now().UnixMilli())
		}
		info.Procs = append(info.Procs, pi)
	}
	startedWork(w, started, &info)
	h.jobInfo(w, &info)
	if !h.mayRead(c, w.User) {
		info.Redact()
	}
	return info
}

// startedWork moves work whose first process the agent reported started
// (at started, unix ms; 0: none) along as the state will when it writes
// that start: a managed reservation runs, a job initializes.
func startedWork(w *state.Work, started int64, info *wire.WorkInfo) {
	if started == 0 || w.Ended() || w.State != state.StateAssigned {
		return
	}
	switch {
	case w.Kind == wire.WorkManaged:
		info.State = string(state.StateRunning)
	case w.Job != nil:
		info.State = string(state.StateInitializing)
	default:
		return
	}
	if info.StartedAt == 0 {
		info.StartedAt = started
	}
}

// jobInfo adds a job's statistics to its description.
func (h *Head) jobInfo(w *state.Work, info *wire.WorkInfo) {
	if w.Job == nil {
		return
	}
	st := w.Job.Stats()
	st.Dispatched = h.jd.InFlight(w.ID)
	if q, _, ok := h.jd.Demand(w.ID); ok && !w.Ended() {
		st.Queued = q
	}
	st.Processes = len(w.JobProcs())
	if !w.Ended() {
		st.Rate = h.rate(w.ID, w.Job.Done+w.Job.Failed, w.StartedAt)
	}
	info.Job = &st
	info.Command = append([]string{w.Path}, w.Args...)
	initializing, live := 0, 0
	for i := range info.Procs {
		p := w.Procs[i]
		info.Procs[i].InitMS, info.Procs[i].Done, info.Procs[i].Errors = p.InitMS, p.Done, p.Errors
		if !p.Ended() {
			live++
		}
		if !p.Ended() && p.State == wire.ProcRunning && p.ReadyAt == 0 {
			info.Procs[i].State = "Initializing"
			initializing++
		}
	}
	if !w.Ended() && live > 0 && initializing == live && info.ReasonCode == "" {
		// Nothing processes items yet: say so, as work that waits does.
		info.Reason, info.ReasonCode = units.Plural(initializing, "process")+" initializing", wire.ReasonInitializing
	}
	if !w.Ended() && w.Job.Committed && w.Job.Remaining() > 0 && st.Processes > 0 && info.Reason == "" && w.State == state.StateRunning {
		if q, _, ok := h.jd.Demand(w.ID); ok && q == 0 {
			info.State = string(state.StateCompleting)
		}
	}
}

// Results pages through a job's item outcomes, for its owner, root, the
// administrators and the group the owner shares the job with only: items
// and results are the owner's data.
func (h *Head) Results(c wire.Caller, r wire.ResultsRequest) (wire.ResultsReply, error) {
	limit := r.Limit
	if limit <= 0 || limit > 10_000 {
		limit = 10_000
	}
	out := wire.ResultsReply{Next: -1}
	var found *state.Work // the job or its record, without its items
	allowed := false
	var purged *state.Record
	var other wire.WorkKind // what r.ID is when it is not a job
	h.cfg.FSM.View(func(v *state.View) {
		var items []state.Item
		if w := v.Work(r.ID); w != nil && w.Job == nil {
			other = w.Kind
		} else if rec := v.Record(r.ID); w == nil && rec != nil && rec.Kind != wire.WorkJob {
			other = rec.Kind
		}
		if w := v.Work(r.ID); w != nil && w.Job != nil {
			found, items = &state.Work{User: w.User, ShareGroup: w.ShareGroup, ShareGID: w.ShareGID}, w.Job.Items
		} else if rec := v.Record(r.ID); w == nil && rec != nil && rec.Kind == wire.WorkJob {
			found, items = &state.Work{User: rec.User, ShareGroup: rec.ShareGroup, ShareGID: rec.ShareGID}, v.HeldItems(r.ID)
			if rec.ItemsPurgedAt != 0 {
				cp := *rec
				purged = &cp
			}
		}
		if found == nil {
			return
		}
		if allowed = h.mayReadOutput(c, found); !allowed || purged != nil {
			return
		}
		out.Total = len(items)
		for i := max(r.Offset, 0); i < len(items); i++ {
			it := items[i]
			if it.State == state.ItemPending || (r.Failed && it.State != state.ItemFailed) {
				continue
			}
			if len(out.Results) == limit {
				out.Next = i
				break
			}
			out.Results = append(out.Results, wire.ItemResult{Index: i, Item: it.Data, OK: it.State == state.ItemDone,
				Result: it.Result, Error: it.Error, Millis: it.Millis, Proc: it.Proc, Attempts: int(it.Attempts) + 1})
		}
	})
	if found == nil && other != "" {
		return out, notAJob(r.ID, other)
	}
	if found == nil {
		return out, wire.Errorf(wire.CodeUsage, "no job with id %d", r.ID)
	}
	if !allowed {
		who := found.User + ", root or an administrator"
		if found.ShareGroup != "" {
			who = found.User + ", root, an administrator or a member of group " + found.ShareGroup
		}
		return wire.ResultsReply{Next: -1}, wire.Errorf(wire.CodeUsage,
			"job %d belongs to %s; only %s may read its items and results", r.ID, found.User, who)
	}
	if purged != nil {
		return wire.ResultsReply{Next: -1}, purgedResults(purged, h.cfg.Retention)
	}
	return out, nil
}

// notAJob is the answer to a request for a job's items or results about
// work of another kind: what it is, and where its output is.
func notAJob(id uint64, kind wire.WorkKind) *wire.CodedError {
	switch kind {
	case wire.WorkManaged:
		return wire.Errorf(wire.CodeUsage, "%d is a managed reservation ('ducc run'), not a job: it has no work items or results; "+
			"its output is its log: 'ducc logs %d' ('ducc show %d' says how it ended)", id, id, id)
	case wire.WorkService:
		return wire.Errorf(wire.CodeUsage, "%d is a service, not a job: it has no work items or results; "+
			"its instances' output is in their logs: 'ducc logs %d --process ID' with an instance's process id from 'ducc services query %d'", id, id, id)
	case wire.WorkReservation:
		return wire.Errorf(wire.CodeUsage, "%d is a reservation, not a job: it runs nothing, so it has no work items, results or output ('ducc show %d')", id, id)
	}
	return wire.Errorf(wire.CodeUsage, "%d is a %s, not a job: it has no work items or results ('ducc show %d')", id, kind, id)
}
