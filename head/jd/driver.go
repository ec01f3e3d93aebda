package jd

import (
	"context"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// minHighWater is the least number of not-yet-dispatched items the job
// driver asks a driver process for (docs/jobs.md, "Driver process protocol").
const minHighWater = 1000

// HighWater is how many items of a job may wait to be dispatched before
// the job driver stops asking its driver process for more:
// max(1000, 4 × pipelines × job processes).
func HighWater(pipelines, procs int) int {
	return max(minHighWater, 4*max(pipelines, 1)*procs)
}

// Pump serves the agent that pumps a job's driver process: it records
// that the driver is ready, adds the items it produced (numbered, so that
// a chunk sent again after a failover adds nothing twice), and tells how
// many more the job wants. With WaitMS it holds the call while the job's
// queue is above half its high-water mark, until enough items were
// dispatched: the driver is then asked for items in batches of at least
// half the mark, not one small batch per dispatch.
func (d *Driver) Pump(ctx context.Context, req wire.DriverRequest) (wire.DriverReply, error) {
	j := d.job(req.JobID)
	now := d.now()
	var p state.Proc
	var ended, found bool
	d.fsm.View(func(v *state.View) {
		if w := v.Work(req.JobID); w != nil && w.Job != nil {
			ended = w.Ended() || w.Canceling
			for _, q := range w.Procs {
				if q.ID == req.ProcID && q.IsDriver() {
					p, found = *q, true
				}
			}
		}
	})
	if !found {
		return wire.DriverReply{Stop: true}, wire.Errorf(wire.CodeUsage, "job %d has no driver process %s", req.JobID, req.ProcID)
	}
	if !ended && !p.Ended() {
		var cmds []state.Command
		if req.Ready && p.ReadyAt == 0 {
			cmds = append(cmds, state.Command{Type: state.CmdReady, Time: now.UnixMilli(), WorkID: req.JobID, ProcID: p.ID, InitMS: req.InitMS})
		}
		if len(req.Items) > 0 || req.End || req.Failed != "" || req.Total > 0 {
			cmds = append(cmds, state.Command{Type: state.CmdDriverItems, Time: now.UnixMilli(), WorkID: req.JobID, ProcID: p.ID,
				FirstItem: int64(req.Base), Items: req.Items, Last: req.End, Failure: req.Failed, Total: req.Total})
		}
		if len(cmds) > 0 {
			res, err := d.apply.Apply(ctx, cmds...)
			if err != nil {
				return wire.DriverReply{}, err
			}
			for _, r := range res {
				if r.Err != nil {
					return wire.DriverReply{}, wire.Errorf(wire.CodeUsage, "%v", r.Err)
				}
			}
			if len(req.Items) > 0 || req.End {
				j.mu.Lock()
				j.wake()
				j.mu.Unlock()
			}
		}
	}
	deadline := now.Add(min(time.Duration(req.WaitMS)*time.Millisecond, maxWait))
	for {
		rep, hw, wait := d.driverRoom(j)
		if rep.Stop || rep.Room >= hw/2 || req.WaitMS <= 0 || !d.now().Before(deadline) {
			return rep, nil
		}
		select {
		case <-ctx.Done():
			return rep, nil
		case <-wait:
		case <-time.After(deadline.Sub(d.now())):
			return rep, nil
		}
	}
}

// driverRoom says how many items the job has and how many more it would
// queue, with the job's high-water mark and the channel closed at the next
// dispatch.
func (d *Driver) driverRoom(j *job) (rep wire.DriverReply, hw int, dispatched <-chan struct{}) {
	j.mu.Lock()
	defer j.mu.Unlock()
	rep.Stop = true
	d.fsm.View(func(v *state.View) {
		w := v.Work(j.id)
		if w == nil || w.Job == nil {
			return
		}
		rep.Have = len(w.Job.Items)
		if w.Ended() || w.Canceling || w.Job.Committed {
			return
		}
		if dr := w.Driver(); dr == nil || dr.Ended() || dr.Stop {
			return
		}
		rep.Stop = false
		hw = HighWater(w.Job.Spec.Pipelines, len(w.JobProcs()))
		rep.Room = max(hw-d.queued(j, w.Job), 0)
	})
	return rep, hw, j.drained
}
