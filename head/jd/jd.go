package jd

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// reportGrace is how long a new driver waits for ready processes it has
// not heard from before it hands their unclaimed items to others.
const reportGrace = 60 * time.Second

// maxWait bounds an exchange's long poll.
const maxWait = time.Second

// Driver drives every job for one leadership term.
type Driver struct {
	fsm   *state.FSM
	apply state.Applier
	now   func() time.Time
	log   *slog.Logger
	start time.Time

	mu   sync.Mutex
	jobs map[uint64]*job

	// OnItems is told how many item outcomes were recorded (metrics).
	OnItems func(n int)
}

type job struct {
	mu       sync.Mutex
	id       uint64
	next     int            // cursor over items never dispatched
	retry    []int          // items to dispatch before new ones
	inflight map[int]flight // item → holder
	procs    map[string]*jproc
	notify   chan struct{}
	drained  chan struct{}   // closed when items are handed out (a driver process may send more)
	timedOut map[int]string  // item → timeout text, for items whose process is being killed
	killing  map[string]bool // processes being killed for a timeout
}

type flight struct {
	proc string
	at   time.Time
}

type jproc struct {
	reported  bool
	releasing bool
	// feed and seq name the last exchange served for the process whose
	// held items the driver knows (ExchangeRequest.Feed, Seq); zero when
	// it does not know them (the next exchange must list them).
	feed, seq uint64
}

// New returns a driver for one leadership term.
func New(fsm *state.FSM, apply state.Applier, now func() time.Time, logger *slog.Logger) *Driver {
	if now == nil {
		now = time.Now
	}
	return &Driver{fsm: fsm, apply: apply, now: now, log: logger.With("component", "jd"), start: now(), jobs: map[uint64]*job{}}
}

func (d *Driver) job(id uint64) *job {
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[id]
	if j == nil {
		j = &job{id: id, inflight: map[int]flight{}, procs: map[string]*jproc{}, notify: make(chan struct{}), drained: make(chan struct{}), timedOut: map[int]string{}, killing: map[string]bool{}}
		// Items retried before the failover go first.
		d.fsm.View(func(v *state.View) {
			if w := v.Work(id); w != nil && w.Job != nil {
				for i, it := range w.Job.Items {
					if it.State == state.ItemPending && it.Attempts > 0 {
						j.retry = append(j.retry, i)
					}
				}
			}
		})
		d.jobs[id] = j
	}
	return j
}

// Notify wakes the job's waiting exchanges (new items arrived).
func (d *Driver) Notify(id uint64) {
	j := d.job(id)
	j.mu.Lock()
	j.wake()
	j.mu.Unlock()
}

func (j *job) wake() {
	close(j.notify)
	j.notify = make(chan struct{})
}

// Exchange serves one agent call for one job process.
func (d *Driver) Exchange(ctx context.Context, req wire.ExchangeRequest) (wire.ExchangeReply, error) {
	j := d.job(req.JobID)
	deadline := d.now().Add(min(time.Duration(req.WaitMS)*time.Millisecond, maxWait))
	first, tracking := true, false
	for {
		rep, wait, err := d.exchangeOnce(ctx, j, &req, first, &tracking)
		rep.Tracking = tracking && err == nil && !rep.Release
		if err != nil || wait == nil || !d.now().Before(deadline) {
			return rep, err
		}
		first = false
		select {
		case <-ctx.Done():
			return rep, nil
		case <-wait:
		case <-time.After(deadline.Sub(d.now())):
			return rep, nil
		}
	}
}

// exchangeOnce does the work of one exchange; it returns a channel to wait
// on when it had nothing to hand out yet. The first call for an exchange
// records its outcomes and what the process holds, and sets *tracking when
// the driver knows the process's held items (wire.ExchangeReply.Tracking).
func (d *Driver) exchangeOnce(ctx context.Context, j *job, req *wire.ExchangeRequest, first bool, tracking *bool) (wire.ExchangeReply, <-chan struct{}, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := d.now()

	var w state.Work
	var jb state.Job
	var p state.Proc
	var found bool
	d.fsm.View(func(v *state.View) {
		if wk := v.Work(req.JobID); wk != nil && wk.Job != nil {
			for _, q := range wk.Procs {
				if q.ID == req.ProcID {
					w, jb, p, found = *wk, *wk.Job, *q, true
				}
			}
		}
	})
	jb.Items = nil // items are read only under the state's lock
	w.Job, w.Procs = &jb, copyProcs(w.Procs)
	if !found {
		return wire.ExchangeReply{Release: true}, nil, wire.Errorf(wire.CodeUsage, "job %d has no process %s", req.JobID, req.ProcID)
	}
	if p.Ended() {
		// Written off (its node was declared down) or its end recorded:
		// its items went back to the queue then (ProcGone). It takes none
		// back and holds none; only its successful answers count, and
		// only where the item has no outcome yet (the state keeps the
		// first). It is told to let go.
		if first && !w.Ended() {
			if err := d.lateAnswers(ctx, j, &p, req.Outcomes, now); err != nil {
				return wire.ExchangeReply{}, nil, err
			}
		}
		return wire.ExchangeReply{Release: true}, nil, nil
	}
	jp := j.procs[req.ProcID]
	if jp == nil {
		jp = &jproc{}
		j.procs[req.ProcID] = jp
	}

	if first {
		for i := range req.Outcomes {
			req.Outcomes[i].LimitResult() // from an agent that did not
		}
		var cmds []state.Command
		if req.Ready && p.ReadyAt == 0 {
			cmds = append(cmds, state.Command{Type: state.CmdReady, Time: now.UnixMilli(), WorkID: w.ID, ProcID: p.ID, InitMS: req.InitMS})
			p.ReadyAt = now.UnixMilli()
		}
		if len(req.Outcomes) > 0 {
			cmds = append(cmds, state.Command{Type: state.CmdOutcomes, Time: now.UnixMilli(), WorkID: w.ID, ProcID: p.ID, Outcomes: req.Outcomes})
		}
		if len(cmds) > 0 {
			// The apply waits for Raft without the job's lock, so that the
			// exchanges of the job's other processes go on meanwhile and
			// their outcomes share log entries (and fsyncs) with these.
			// What the process holds stays in flight with it until the
			// outcomes are applied (afterOutcomes), so none of it is
			// handed out again meanwhile.
			j.mu.Unlock()
			_, err := d.apply.Apply(ctx, cmds...)
			j.mu.Lock()
			if err != nil {
				return wire.ExchangeReply{}, nil, err
			}
			if j.procs[req.ProcID] != jp {
				// Its end was recorded meanwhile (ProcGone): what it held
				// went back to the queue then.
				return wire.ExchangeReply{Release: true}, nil, nil
			}
		}
		if d.OnItems != nil && len(req.Outcomes) > 0 {
			d.OnItems(len(req.Outcomes))
		}
		d.afterOutcomes(j, p.ID, req.Outcomes)
		*tracking = d.claim(j, jp, req)
	}
	if p.Stop || w.Ended() || w.Canceling {
		return wire.ExchangeReply{Release: true}, nil, nil
	}
	if p.ReadyAt == 0 || req.Want <= 0 || !*tracking && req.HeldSame {
		// Not knowing what the process holds, the driver hands out nothing
		// and asks for the list (no Tracking in the reply).
		return wire.ExchangeReply{}, nil, nil
	}
	if !d.gateOpen(j, &w, now) {
		return wire.ExchangeReply{}, j.notify, nil
	}
	var items []wire.WorkItem
	queued := 0
	d.fsm.View(func(v *state.View) {
		if wk := v.Work(w.ID); wk != nil && wk.Job != nil {
			items = d.take(j, wk.Job.Items, p.ID, req.Want, now)
			if len(items) == 0 {
				queued = d.queued(j, wk.Job)
			}
		}
	})
	if len(items) > 0 {
		return wire.ExchangeReply{Items: items}, nil, nil
	}
	if req.HeldItems() == 0 && queued == 0 && w.Job.Committed {
		// Nothing left to hand out and this process holds nothing: release it.
		if !jp.releasing {
			jp.releasing = true
			if _, err := d.apply.Apply(ctx, state.Command{Type: state.CmdStopProc, Time: now.UnixMilli(), WorkID: w.ID, ProcID: p.ID, Reason: "released: no work items left for it"}); err != nil {
				return wire.ExchangeReply{}, nil, err
			}
		}
		return wire.ExchangeReply{Release: true}, nil, nil
	}
	return wire.ExchangeReply{}, j.notify, nil
}

// lateAnswers records the successful answers of a process that has ended
// (its agent was frozen or cut off, and its node declared down, while it
// worked). Its failures are dropped: its items were re-queued when it was
// written off, without counting an attempt, and may be in another process
// now. j.mu is held.
func (d *Driver) lateAnswers(ctx context.Context, j *job, p *state.Proc, outs []wire.ItemOutcome, now time.Time) error {
	var ok []wire.ItemOutcome
	for _, o := range outs {
		if o.LimitResult(); o.OK {
			ok = append(ok, o)
		}
	}
	if len(outs) > 0 {
		d.log.Info("answers from a process that was written off", "job", j.id, "proc", p.ID,
			"answers", len(outs), "recorded_if_first", len(ok), "failures_dropped", len(outs)-len(ok))
	}
	if len(ok) == 0 {
		return nil
	}
	if _, err := d.apply.Apply(ctx, state.Command{Type: state.CmdOutcomes, Time: now.UnixMilli(), WorkID: j.id, ProcID: p.ID, Outcomes: ok}); err != nil {
		return err
	}
	if d.OnItems != nil {
		d.OnItems(len(ok))
	}
	d.afterOutcomes(j, p.ID, ok)
	return nil
}

// afterOutcomes drops the items proc answered from flight (an item that
// was re-queued and handed to another process stays in flight with that
// one) and re-queues the ones the state kept pending for a retry.
func (d *Driver) afterOutcomes(j *job, proc string, outs []wire.ItemOutcome) {
	if len(outs) == 0 {
		return
	}
	for _, o := range outs {
		if f, ok := j.inflight[o.Index]; ok && f.proc == proc {
			delete(j.inflight, o.Index)
			delete(j.timedOut, o.Index)
		}
	}
	d.fsm.View(func(v *state.View) {
		w := v.Work(j.id)
		if w == nil || w.Job == nil {
			return
		}
		for _, o := range outs {
			if !o.OK && o.Index >= 0 && o.Index < len(w.Job.Items) && w.Job.Items[o.Index].State == state.ItemPending {
				j.retry = append(j.retry, o.Index)
			}
		}
	})
}

// claim records what the process says it holds; items the driver thought
// it held but it does not (and did not answer) were lost by its agent and
// go back to the queue. It reports whether the driver now knows what the
// process holds: always after a list, and after HeldSame only when the
// exchange before it of the same feed was the last one served for the
// process (then the driver's flight records, kept up to date by take and
// afterOutcomes, are what the process holds; wire.ExchangeRequest).
func (d *Driver) claim(j *job, jp *jproc, req *wire.ExchangeRequest) bool {
	if req.HeldSame {
		known := jp.reported && req.Feed != 0 && jp.feed == req.Feed && jp.seq+1 == req.Seq
		if known {
			jp.seq = req.Seq
		} else {
			jp.feed, jp.seq = 0, 0
		}
		return known
	}
	held := make(map[int]bool, len(req.Held))
	for _, i := range req.Held {
		held[i] = true
		if f, ok := j.inflight[i]; !ok || f.proc != req.ProcID {
			if ok {
				d.log.Warn("item claimed by two processes", "job", j.id, "item", i, "was", f.proc, "now", req.ProcID)
			}
			j.inflight[i] = flight{proc: req.ProcID, at: d.now()}
		}
	}
	if jp.reported {
		var lost []int
		for i, f := range j.inflight {
			if f.proc == req.ProcID && !held[i] {
				lost = append(lost, i)
			}
		}
		sort.Ints(lost)
		for _, i := range lost {
			delete(j.inflight, i)
			j.retry = append(j.retry, i)
		}
	}
	jp.reported = true
	jp.feed, jp.seq = req.Feed, req.Seq
	return req.Feed != 0
}

// gateOpen tells whether unclaimed items may be handed out: every ready
// live process of the job has reported since this driver started (or the
// grace period passed).
func (d *Driver) gateOpen(j *job, w *state.Work, now time.Time) bool {
	if now.Sub(d.start) > reportGrace {
		return true
	}
	for _, p := range w.Procs {
		if p.Ended() || p.ReadyAt == 0 || p.IsDriver() {
			continue
		}
		if jp := j.procs[p.ID]; jp == nil || !jp.reported {
			return false
		}
	}
	return true
}

// take hands out up to n items: retries first, then new ones in order.
func (d *Driver) take(j *job, items []state.Item, proc string, n int, now time.Time) []wire.WorkItem {
	var out []wire.WorkItem
	give := func(i int) {
		j.inflight[i] = flight{proc: proc, at: now}
		out = append(out, wire.WorkItem{Index: i, Item: items[i].Data})
	}
	for len(out) < n && len(j.retry) > 0 {
		i := j.retry[0]
		j.retry = j.retry[1:]
		if _, busy := j.inflight[i]; busy || items[i].State != state.ItemPending {
			continue
		}
		give(i)
	}
	for len(out) < n && j.next < len(items) {
		i := j.next
		j.next++
		if _, busy := j.inflight[i]; busy || items[i].State != state.ItemPending {
			continue
		}
		give(i)
	}
	if len(out) > 0 {
		close(j.drained)
		j.drained = make(chan struct{})
	}
	return out
}

// queued counts items waiting to be handed out: the job's pending items
// less those in flight. It is derived from the counters, not scanned, since
// it runs on every idle exchange and every scheduling cycle.
func (d *Driver) queued(j *job, jb *state.Job) int {
	busy := 0
	for i := range j.inflight {
		if i < len(jb.Items) && jb.Items[i].State == state.ItemPending {
			busy++
		}
	}
	return jb.Remaining() - busy
}

func copyProcs(ps []*state.Proc) []*state.Proc {
	out := make([]*state.Proc, len(ps))
	for i, p := range ps {
		c := *p
		out[i] = &c
	}
	return out
}

// itemTimeouts finds items held longer than their job's per-item limit;
// the process holding one is killed (DUCC's default error handler) and the
// item counts as an error once the process is gone (or is retried).
func (d *Driver) itemTimeouts(ids []uint64, now time.Time) []state.Command {
	var cmds []state.Command
	for _, id := range ids {
		d.mu.Lock()
		j := d.jobs[id]
		d.mu.Unlock()
		if j == nil {
			continue
		}
		j.mu.Lock()
		var limit time.Duration
		d.fsm.View(func(v *state.View) {
			if w := v.Work(id); w != nil && w.Job != nil && !w.Ended() {
				limit = time.Duration(w.Job.Spec.PerItemTimeMaxMS) * time.Millisecond
			}
		})
		// Per process, the item held longest (lowest index on ties) is the
		// one blamed: items queued behind it in the same worker go back to
		// the queue like those of any process that went away.
		culprit := map[string]int{}
		for i, f := range j.inflight {
			if limit <= 0 || now.Sub(f.at) <= limit {
				continue
			}
			if c, ok := culprit[f.proc]; !ok || f.at.Before(j.inflight[c].at) || (f.at.Equal(j.inflight[c].at) && i < c) {
				culprit[f.proc] = i
			}
		}
		procs := make([]string, 0, len(culprit))
		for p := range culprit {
			procs = append(procs, p)
		}
		sort.Strings(procs)
		for _, p := range procs {
			i := culprit[p]
			if j.killing[p] {
				continue
			}
			j.killing[p] = true
			t := fmt.Sprintf("work item %d timed out after %s", i, limit)
			j.timedOut[i] = t
			cmds = append(cmds, state.Command{Type: state.CmdStopProc, Time: now.UnixMilli(), WorkID: id, ProcID: p, Reason: t, Counts: true})
		}
		j.mu.Unlock()
	}
	return cmds
}

// ProcGone re-queues the items of a process that is known to be gone. It
// is called once the process's end is recorded.
func (d *Driver) ProcGone(ctx context.Context, jobID uint64, procID string) {
	j := d.job(jobID)
	j.mu.Lock()
	defer j.mu.Unlock()
	var back []int
	var timedOut []wire.ItemOutcome
	for i, f := range j.inflight {
		if f.proc != procID {
			continue
		}
		delete(j.inflight, i)
		if t, ok := j.timedOut[i]; ok {
			delete(j.timedOut, i)
			timedOut = append(timedOut, wire.ItemOutcome{Index: i, Error: t})
			continue
		}
		back = append(back, i)
	}
	delete(j.procs, procID)
	delete(j.killing, procID)
	sort.Ints(back)
	// The items of a job being canceled (or ended) go nowhere: they are
	// not preempted and queued again, and are not counted so
	// (ducc_work_items_preempted_total counted every in-flight item of
	// a canceled job).
	over := false
	d.fsm.View(func(v *state.View) {
		w := v.Work(jobID)
		over = w == nil || w.Canceling || w.Ended()
	})
	if over {
		back = nil
	}
	now := d.now().UnixMilli()
	var cmds []state.Command
	if len(timedOut) > 0 {
		cmds = append(cmds, state.Command{Type: state.CmdOutcomes, Time: now, WorkID: jobID, ProcID: procID, Outcomes: timedOut})
	}
	if len(back) > 0 {
		cmds = append(cmds, state.Command{Type: state.CmdRequeued, Time: now, WorkID: jobID, Requeued: int64(len(back))})
	}
	if len(cmds) > 0 {
		if _, err := d.apply.Apply(ctx, cmds...); err != nil {
			d.log.Warn("cannot record re-queued items", "job", jobID, "proc", procID, "err", err)
		}
	}
	d.afterOutcomes(j, procID, timedOut)
	j.retry = append(back, j.retry...)
	if len(back) > 0 {
		d.log.Info("re-queued items of a process that is gone", "job", jobID, "proc", procID, "items", len(back))
	}
	j.wake()
}

// sweep re-queues the items still in flight with processes whose end the
// state has recorded: ProcGone is told of every end, so this finds
// nothing unless that call was missed (a write-off whose caller stopped
// between the apply and the call). Every item of a job thus goes back to
// the queue once its holder is gone, and the job finishes.
func (d *Driver) sweep(ctx context.Context, ids []uint64) {
	for _, id := range ids {
		d.mu.Lock()
		j := d.jobs[id]
		d.mu.Unlock()
		if j == nil {
			continue
		}
		j.mu.Lock()
		holders := map[string]bool{}
		for _, f := range j.inflight {
			holders[f.proc] = true
		}
		j.mu.Unlock()
		var gone []string
		d.fsm.View(func(v *state.View) {
			w := v.Work(id)
			if w == nil || w.Ended() {
				return
			}
			for _, p := range w.Procs {
				if holders[p.ID] && p.Ended() {
					gone = append(gone, p.ID)
				}
			}
		})
		for _, p := range gone {
			d.log.Warn("items in flight with a process that has ended: re-queueing them", "job", id, "proc", p)
			d.ProcGone(ctx, id, p)
		}
	}
}

// Demand tells the scheduler how many items of a job wait to be handed
// out and how many processes hold items now. Call it without holding the
// state's lock.
func (d *Driver) Demand(id uint64) (queued, holding int, ok bool) {
	d.mu.Lock()
	j := d.jobs[id]
	d.mu.Unlock()
	if j == nil {
		return 0, 0, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	procs := map[string]bool{}
	for _, f := range j.inflight {
		procs[f.proc] = true
	}
	d.fsm.View(func(v *state.View) {
		if w := v.Work(id); w != nil && w.Job != nil {
			queued = d.queued(j, w.Job)
		}
	})
	return queued, len(procs), true
}

// InFlight returns the number of items handed out and not yet answered.
func (d *Driver) InFlight(id uint64) int {
	d.mu.Lock()
	j := d.jobs[id]
	d.mu.Unlock()
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.inflight)
}

// Tick enforces the initialization time limit of every job process and
// forgets ended jobs; the orchestrator calls it every cycle.
func (d *Driver) Tick(ctx context.Context, now time.Time) {
	var cmds []state.Command
	var ended []uint64
	d.mu.Lock()
	ids := make([]uint64, 0, len(d.jobs))
	for id := range d.jobs {
		ids = append(ids, id)
	}
	d.mu.Unlock()
	d.fsm.View(func(v *state.View) {
		for _, id := range ids {
			if w := v.Work(id); w == nil || w.Ended() {
				ended = append(ended, id)
			}
		}
		for _, w := range v.Active() {
			if w.Job == nil {
				continue
			}
			limit := time.Duration(w.Job.Spec.InitTimeMaxMS) * time.Millisecond
			for _, p := range w.Live() {
				if p.Stop || p.ReadyAt != 0 || p.StartedAt == 0 || now.Sub(time.UnixMilli(p.StartedAt)) <= limit {
					continue
				}
				cmds = append(cmds, state.Command{Type: state.CmdStopProc, Time: now.UnixMilli(), WorkID: w.ID, ProcID: p.ID,
					Reason: fmt.Sprintf("did not initialize within %s (process_initialization_time_max)", limit), Counts: true})
			}
		}
	})
	d.sweep(ctx, ids)
	cmds = append(cmds, d.itemTimeouts(ids, now)...)
	d.mu.Lock()
	for _, id := range ended {
		if j := d.jobs[id]; j != nil {
			j.mu.Lock()
			j.wake()
			j.mu.Unlock()
		}
		delete(d.jobs, id)
	}
	d.mu.Unlock()
	if len(cmds) > 0 {
		if _, err := d.apply.Apply(ctx, cmds...); err != nil {
			d.log.Warn("cannot stop processes that did not initialize in time", "err", err)
		}
	}
}
