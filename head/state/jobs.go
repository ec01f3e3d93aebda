package state

import (
	"fmt"
	"math"

	"github.com/ducc-project/ducc/wire"
)

// ItemState is the outcome of a work item so far. Stored as its number,
// a CBOR integer.
type ItemState uint8

// Item states.
const (
	ItemPending ItemState = 0
	ItemDone    ItemState = 1
	ItemFailed  ItemState = 2
)

func (s ItemState) String() string {
	switch s {
	case ItemPending:
		return "Pending"
	case ItemDone:
		return "Done"
	case ItemFailed:
		return "Failed"
	}
	return fmt.Sprintf("ItemState(%d)", uint8(s))
}

// Job is the durable part of a job: its spec, its items and their
// outcomes, and the counters its rules need. In-flight dispatch is not
// here: the job driver rebuilds it from the agents after a failover.
type Job struct {
	Spec      wire.JobSpec `cbor:"1,keyasint"`
	Items     []Item       `cbor:"2,keyasint,omitempty"`
	Committed bool         `cbor:"3,keyasint,omitempty"` // all items received
	Done      int          `cbor:"4,keyasint,omitempty"`
	Failed    int          `cbor:"5,keyasint,omitempty"`
	Retried   int          `cbor:"6,keyasint,omitempty"`
	Preempted int          `cbor:"7,keyasint,omitempty"`
	// Process failures: before readiness (init) and after.
	InitFailures int   `cbor:"8,keyasint,omitempty"`
	ProcFailures int   `cbor:"9,keyasint,omitempty"`
	EverReady    bool  `cbor:"10,keyasint,omitempty"`
	InitMSSum    int64 `cbor:"11,keyasint,omitempty"`
	InitCount    int   `cbor:"12,keyasint,omitempty"`
	// Per-item time statistics of successful items.
	MSSum   float64 `cbor:"13,keyasint,omitempty"`
	MSSumSq float64 `cbor:"14,keyasint,omitempty"`
	MSMin   int64   `cbor:"15,keyasint,omitempty"`
	MSMax   int64   `cbor:"16,keyasint,omitempty"`
	// NItems is set in snapshots, where items travel in separate frames.
	NItems int `cbor:"17,keyasint,omitempty"`
	// A job with a driver process (Spec.DriverExecutable): the FIXED_SHARE
	// class its driver runs in, whether the driver said ready, and the
	// total it announced ({"total": N}; 0 = not said).
	DriverClass string `cbor:"18,keyasint,omitempty"`
	DriverReady bool   `cbor:"19,keyasint,omitempty"`
	DriverTotal int    `cbor:"20,keyasint,omitempty"`
}

// HasDriver reports whether a driver process produces the job's items.
func (j *Job) HasDriver() bool { return j.Spec.DriverExecutable != "" }

// Item is one work item and its outcome.
type Item struct {
	Data     string    `cbor:"1,keyasint"`
	State    ItemState `cbor:"2,keyasint,omitempty"`
	Attempts uint16    `cbor:"3,keyasint,omitempty"`
	Millis   int64     `cbor:"4,keyasint,omitempty"`
	Result   string    `cbor:"5,keyasint,omitempty"`
	Error    string    `cbor:"6,keyasint,omitempty"`
	Proc     string    `cbor:"7,keyasint,omitempty"`
}

// Total is the number of items (NItems in copies made without items).
func (j *Job) Total() int { return max(len(j.Items), j.NItems) }

// Remaining is the number of items not yet done or failed.
func (j *Job) Remaining() int { return j.Total() - j.Done - j.Failed }

// Stats summarizes the job for users.
func (j *Job) Stats() wire.JobStats {
	st := wire.JobStats{Total: j.Total(), Done: j.Done, Failed: j.Failed, Retried: j.Retried,
		Preempted: j.Preempted, Pipelines: j.Spec.Pipelines, Protocol: j.Spec.WorkerProtocol}
	if j.Done > 0 {
		n := float64(j.Done)
		st.MinMS, st.MaxMS = float64(j.MSMin), float64(j.MSMax)
		st.MeanMS = j.MSSum / n
		st.StddevMS = math.Sqrt(math.Max(j.MSSumSq/n-st.MeanMS*st.MeanMS, 0))
	}
	if !j.Committed && j.DriverTotal > st.Total {
		st.Total = j.DriverTotal // the driver's announced total, while it sends items
	}
	if j.InitCount > 0 {
		st.InitMeanMS = float64(j.InitMSSum) / float64(j.InitCount)
	}
	return st
}

func (f *FSM) job(c *Command) (*Work, *Job, error) {
	w := f.work[c.WorkID]
	if w == nil || w.Job == nil {
		return nil, nil, fmt.Errorf("no job %d", c.WorkID)
	}
	return w, w.Job, nil
}

// items appends a chunk of items; the last chunk makes the job schedulable.
func (f *FSM) items(c *Command) Result {
	w, j, err := f.job(c)
	if err != nil {
		return Result{Err: err}
	}
	if j.Committed || w.Ended() {
		return Result{Err: fmt.Errorf("job %d already has all its items", w.ID)}
	}
	for _, it := range c.Items {
		j.Items = append(j.Items, Item{Data: it})
	}
	if c.Last {
		f.commit(w, c.Time)
	}
	return Result{ID: w.ID}
}

// driverItems appends a chunk of items from the job's driver process.
// Chunks are numbered (FirstItem is the driver's number of the chunk's
// first item), so a chunk sent again after a lost answer adds only what
// the state lacks; a chunk past the end (a gap) is refused. Failure set:
// the agent lost track of the driver, and the job ends DriverProcessFailed.
func (f *FSM) driverItems(c *Command) Result {
	w, j, err := f.job(c)
	if err != nil {
		return Result{Err: err}
	}
	if w.Ended() || w.Canceling || j.Committed {
		return Result{ID: w.ID} // a resent last chunk, or nothing is wanted any more
	}
	p := w.proc(c.ProcID)
	if p == nil || !p.IsDriver() || p.Ended() {
		return Result{Err: fmt.Errorf("job %d has no live driver process %s", w.ID, c.ProcID)}
	}
	if c.Total > 0 {
		j.DriverTotal = c.Total
	}
	if c.Failure != "" {
		f.finish(w, c.Time, CompletionDriverFailed, "the driver process "+p.ID+" failed: "+c.Failure, 1)
		return Result{ID: w.ID}
	}
	base, have := int(c.FirstItem), len(j.Items)
	if base > have {
		return Result{Err: fmt.Errorf("job %d: driver items from %d, but the job has only %d", w.ID, base, have)}
	}
	if skip := have - base; skip < len(c.Items) {
		for _, it := range c.Items[skip:] {
			j.Items = append(j.Items, Item{Data: it})
		}
		if have == 0 {
			f.reschedule = true // the first items: the job wants processes now
		}
	}
	if c.Last {
		f.commit(w, c.Time)
	}
	return Result{ID: w.ID}
}

func (f *FSM) commit(w *Work, now int64) {
	j := w.Job
	j.Committed = true
	if len(j.Items) == 0 {
		f.finish(w, now, CompletionNoWorkItemsFound, "the job has no work items", 0)
		return
	}
	if w.State == StateReceived {
		w.State = StateWaitingForResources
		if len(w.Deps) > 0 {
			w.State = StateWaitingForServices
		}
	}
}

// outcomes records what a job process made of its items.
func (f *FSM) outcomes(c *Command) Result {
	w, j, err := f.job(c)
	if err != nil {
		return Result{Err: err}
	}
	if w.Ended() {
		// The counts of an ended job are final: outcomes of processes
		// still stopping (a job ended by max_job_errors) change nothing,
		// so --wait, show and history agree.
		return Result{ID: w.ID}
	}
	p := w.proc(c.ProcID)
	for _, o := range c.Outcomes {
		if o.Index < 0 || o.Index >= len(j.Items) {
			continue
		}
		it := &j.Items[o.Index]
		if it.State != ItemPending {
			continue // a duplicate after a re-dispatch: the first outcome stands
		}
		it.Millis, it.Proc = o.Millis, c.ProcID
		if o.OK {
			it.State, it.Result, it.Error = ItemDone, truncate(o.Result, wire.MaxResultSize), ""
			j.Done++
			ms := float64(o.Millis)
			if j.Done == 1 || o.Millis < j.MSMin {
				j.MSMin = o.Millis
			}
			j.MSMax = max(j.MSMax, o.Millis)
			j.MSSum += ms
			j.MSSumSq += ms * ms
			if p != nil {
				p.Done++
			}
			continue
		}
		if p != nil {
			p.Errors++
		}
		it.Error = truncate(o.Error, 4096)
		if int(it.Attempts) < j.Spec.MaxItemRetries {
			it.Attempts++
			j.Retried++
			f.totals.ItemsRetried++
			continue
		}
		it.State = ItemFailed
		j.Failed++
		f.totals.ItemsFailed++
	}
	f.jobRules(w, c.Time)
	return Result{ID: w.ID}
}

// ready records that a job process finished initializing.
func (f *FSM) ready(c *Command) Result {
	w, j, err := f.job(c)
	if err != nil {
		return Result{Err: err}
	}
	p := w.proc(c.ProcID)
	if p == nil || p.Ended() || p.ReadyAt != 0 {
		return Result{ID: w.ID}
	}
	p.ReadyAt, p.InitMS = c.Time, c.InitMS
	if p.IsDriver() {
		j.DriverReady = true
		if w.State == StateWaitingForDriver {
			w.State = StateWaitingForResources
		}
		f.reschedule = true // the job may get processes now
		return Result{ID: w.ID}
	}
	j.EverReady = true
	j.InitMSSum += c.InitMS
	j.InitCount++
	if !w.Ended() && w.State != StateRunning {
		w.State = StateRunning
	}
	return Result{ID: w.ID}
}

func (w *Work) proc(id string) *Proc {
	for _, p := range w.Procs {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// jobAfterProc applies the job rules after one of its processes changed.
func (f *FSM) jobAfterProc(w *Work, p *Proc, now int64) {
	j := w.Job
	if p.IsDriver() {
		f.driverAfterProc(w, p, now)
		return
	}
	switch {
	case p.Ended():
		if p.Stop && !p.StopCounts {
			break // stopped on purpose: shrink, preemption, release, cancel
		}
		if p.ReadyAt == 0 {
			j.InitFailures++
		} else {
			j.ProcFailures++
		}
	case p.State == wire.ProcRunning && (w.State == StateAssigned || w.State == StateWaitingForResources):
		w.State = StateInitializing
		if w.StartedAt == 0 {
			w.StartedAt = p.StartedAt
		}
	}
	if p.Ended() && w.Canceling && len(w.Live()) == 0 {
		f.finish(w, now, cancelCompletion(w), cancelReason(w), 0)
		return
	}
	f.jobRules(w, now)
}

// driverAfterProc ends a job whose driver process ended before the job had
// all its items: DUCC's DriverInitializationFailure before the driver
// said ready, DriverProcessFailed after (docs/jobs.md). A driver stopped
// because the job ended or is canceled ends nothing.
func (f *FSM) driverAfterProc(w *Work, p *Proc, now int64) {
	j := w.Job
	if !p.Ended() {
		return
	}
	if w.Canceling {
		if len(w.Live()) == 0 {
			f.finish(w, now, cancelCompletion(w), cancelReason(w), 0)
		}
		return
	}
	if w.Ended() || j.Committed {
		return
	}
	why := p.Reason
	if why == "" {
		why = "no reason recorded"
	}
	if !j.DriverReady {
		f.finish(w, now, CompletionDriverInitFailure, "the driver process "+p.ID+" failed to initialize: "+why, 1)
		return
	}
	f.finish(w, now, CompletionDriverFailed, "the driver process "+p.ID+" ended before its last work item: "+why, 1)
}

// jobRules ends a job when its items are resolved or its failures passed
// their limits (docs/jobs.md).
func (f *FSM) jobRules(w *Work, now int64) {
	j := w.Job
	if w.Ended() || w.Canceling {
		return
	}
	s := j.Spec
	switch {
	case j.Failed > s.MaxJobErrors:
		f.finish(w, now, CompletionCanceledByDriver, fmt.Sprintf("%d work items failed (max_job_errors is %d)", j.Failed, s.MaxJobErrors), 1)
	case !j.EverReady && j.InitFailures >= 1:
		f.finish(w, now, CompletionInitFailure, "the first job process failed to initialize: "+lastReason(w), 1)
	case j.ProcFailures > s.FailuresLimit:
		f.finish(w, now, CompletionProcessFailure, fmt.Sprintf("%d job processes failed (process_failures_limit is %d); last: %s", j.ProcFailures, s.FailuresLimit, lastReason(w)), 1)
	case j.Committed && j.Remaining() == 0:
		if j.Failed == 0 {
			f.finish(w, now, CompletionEndOfJob, "", 0)
		} else {
			f.finish(w, now, CompletionError, fmt.Sprintf("%d of %d work items failed", j.Failed, len(j.Items)), 1)
		}
	}
}

func lastReason(w *Work) string {
	for i := len(w.Procs) - 1; i >= 0; i-- {
		if p := w.Procs[i]; p.Ended() && p.Reason != "" && !p.IsDriver() {
			return p.Reason
		}
	}
	return "no reason recorded"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
