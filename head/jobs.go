package head

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// SubmitJob admits a job (docs/jobs.md) with its first chunk of items.
func (h *Head) SubmitJob(ctx context.Context, c wire.Caller, r wire.SubmitJobRequest) (wire.SubmitReply, error) {
	sc := h.sched()
	s := r.Spec
	if err := spec.ValidateJob(s); err != nil {
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	class, err := jobClass(sc, s.Class)
	if err != nil {
		return wire.SubmitReply{}, err
	}
	if s.Memory == 0 {
		s.Memory = sc.DefaultMemory.Bytes()
	}
	fits := h.fitsSomeNode
	if class.Policy == rm.Reserve {
		fits = h.someNodeIsExactly // each job process gets a whole machine of exactly its memory
	}
	if err := fits(s.Memory, sc.Quantum(class.Nodepool)); err != nil {
		return wire.SubmitReply{}, err
	}
	if err := spec.CheckItems(r.Items); err != nil {
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	driverClass := ""
	if s.DriverExecutable != "" {
		if len(r.Items) > 0 || r.More {
			return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "a job with a driver_executable gets its items from the driver process; send none")
		}
		dc, err := driverClassOf(sc, class)
		if err != nil {
			return wire.SubmitReply{}, err
		}
		if s.DriverMemory == 0 {
			s.DriverMemory = wire.DefaultDriverMemory
		}
		if err := h.fitsSomeNode(s.DriverMemory, sc.Quantum(dc.Nodepool)); err != nil {
			return wire.SubmitReply{}, err
		}
		driverClass = dc.Name
	}
	if err := h.checkSubmit(c, class.Name, s.Memory); err != nil {
		return wire.SubmitReply{}, err
	}
	// Service dependencies (docs/services.md): an unknown endpoint ends the job at
	// once with ServicesUnavailable; known ones make it wait for them.
	var unknown []string
	h.cfg.FSM.View(func(v *state.View) {
		for _, d := range s.ServiceDependency {
			if v.ActiveService(d) == nil {
				unknown = append(unknown, d)
			}
		}
	})
	spec.JobDefaults(&s)
	s.Class = class.Name
	dir := s.WorkingDirectory
	w := &state.Work{
		Kind: wire.WorkJob, User: c.User, UID: c.UID, GID: c.GID, Groups: c.Groups, Home: c.Home,
		Class: class.Name, Memory: s.Memory, Path: s.Executable, Args: s.Args, Env: jobEnv(c, s),
		Dir: dir, LogDir: s.LogDirectory, Description: s.Description, MachineList: s.MachineList,
		Job: &state.Job{Spec: s, DriverClass: driverClass}, Deps: s.ServiceDependency, Umask: s.Umask,
		ShareGroup: s.ShareGroup, ShareGID: s.ShareGID,
	}
	if s.WorkerProtocol == wire.ProtocolExec {
		w.Job.Spec.Pipelines = max(s.Pipelines, 1)
	}
	for _, it := range r.Items {
		w.Job.Items = append(w.Job.Items, state.Item{Data: it})
	}
	cmd := state.Command{Type: state.CmdSubmit, Time: h.cfg.Now().UnixMilli(), Work: w, Last: !r.More}
	if len(unknown) > 0 {
		cmd.Completion, cmd.Reason = state.CompletionServicesUnavail, "service not registered: "+strings.Join(unknown, ", ")
	}
	res, err := h.cfg.Apply.Apply(ctx, cmd)
	if err != nil {
		return wire.SubmitReply{}, err
	}
	if len(res) != 1 || res[0].Err != nil {
		return wire.SubmitReply{}, fmt.Errorf("submit: %v", res)
	}
	h.log.Info("job submitted", "job", res[0].ID, "user", c.User, "class", class.Name, "items", len(r.Items), "more", r.More)
	return wire.SubmitReply{ID: res[0].ID}, nil
}

// jobEnv is the environment of a job process: a minimal login-like base,
// then what the spec lists (DUCC passes only what the user asks for).
func jobEnv(c wire.Caller, s wire.JobSpec) []string {
	home := c.Home
	if home == "" {
		home = "/"
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "USER=" + c.User, "LOGNAME=" + c.User,
		"DUCC_PIPELINES=" + strconv.Itoa(max(s.Pipelines, 1))}
	return append(env, s.Environment...)
}

// driverClassOf picks the class of a job's driver process (DUCC's JD
// share, a small FIXED allocation): the job's own class when it is
// FIXED_SHARE, else the default FIXED_SHARE class.
func driverClassOf(sc *rm.Config, job *rm.Class) (*rm.Class, error) {
	if job.Policy == rm.FixedShare {
		return job, nil
	}
	c, err := sc.DefaultClass(rm.FixedShare)
	if err != nil {
		return nil, wire.Errorf(wire.CodeUsage, "a driver process runs in a FIXED_SHARE class: %v", err)
	}
	return c, nil
}

// jobClass resolves the class of a job: FAIR_SHARE or FIXED_SHARE, or, as
// DUCC allows, RESERVE (each job process then holds a whole machine).
func jobClass(sc *rm.Config, name string) (*rm.Class, error) {
	if name == "" {
		c, err := sc.DefaultClass(rm.FairShare)
		if err != nil {
			return nil, wire.Errorf(wire.CodeUsage, "%v", err)
		}
		return c, nil
	}
	c, err := sc.Class(name)
	if err != nil {
		return nil, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	return c, nil
}

// AddItems appends a chunk of items to a job submitted with More.
func (h *Head) AddItems(ctx context.Context, c wire.Caller, r wire.ItemsRequest) (wire.Empty, error) {
	var owner string
	var isJob, ended bool
	h.cfg.FSM.View(func(v *state.View) {
		if w := v.Work(r.ID); w != nil {
			owner, isJob, ended = w.User, w.Job != nil, w.Ended()
		}
	})
	if !isJob {
		return wire.Empty{}, wire.Errorf(wire.CodeUsage, "no job with id %d", r.ID)
	}
	if owner != c.User && c.UID != 0 {
		return wire.Empty{}, wire.Errorf(wire.CodeUsage, "job %d belongs to %s", r.ID, owner)
	}
	if err := spec.CheckItems(r.Items); err != nil {
		return wire.Empty{}, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	if ended {
		return wire.Empty{}, nil // e.g. ended at once with ServicesUnavailable: 'ducc show' says why
	}
	res, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdItems, Time: h.cfg.Now().UnixMilli(), WorkID: r.ID, Items: r.Items, Last: r.Last})
	if err != nil {
		return wire.Empty{}, err
	}
	if len(res) == 1 && res[0].Err != nil {
		return wire.Empty{}, wire.Errorf(wire.CodeUsage, "%v", res[0].Err)
	}
	h.jd.Notify(r.ID)
	return wire.Empty{}, nil
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
	h.cfg.FSM.View(func(v *state.View) {
		var items []state.Item
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
	if w.Ended() {
		h.rates.forget(w.ID)
	} else {
		st.Rate = h.rate(w.ID, w.Job.Done+w.Job.Failed)
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
		info.Reason, info.ReasonCode = plural(initializing, "process")+" initializing", wire.ReasonInitializing
	}
	if !w.Ended() && w.Job.Committed && w.Job.Remaining() > 0 && st.Processes > 0 && info.Reason == "" && w.State == state.StateRunning {
		if q, _, ok := h.jd.Demand(w.ID); ok && q == 0 {
			info.State = string(state.StateCompleting)
		}
	}
}

// Driver serves the agents pumping driver processes (docs/jobs.md).
func (h *Head) Driver(ctx context.Context, r wire.DriverRequest) (wire.DriverReply, error) {
	if err := spec.CheckItems(r.Items); err != nil {
		// The driver broke the protocol: the job ends DriverProcessFailed.
		r.Items, r.End, r.Failed = nil, false, fmt.Sprintf("its item %d: %v", r.Base, err)
	}
	return h.jd.Pump(ctx, r)
}

// Exchange serves the agents feeding job processes.
func (h *Head) Exchange(ctx context.Context, r wire.ExchangeRequest) (wire.ExchangeReply, error) {
	return h.jd.Exchange(ctx, r)
}

// rate estimates a job's items per second from the last few samples.
func (h *Head) rate(id uint64, done int) float64 {
	return h.rates.sample(id, done, h.cfg.Now())
}

// plural is "1 process", "2 processes".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "s") {
		return strconv.Itoa(n) + " " + word + "es"
	}
	return strconv.Itoa(n) + " " + word + "s"
}
