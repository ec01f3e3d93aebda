package orch

import (
	"context"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// Submit applies a submission (a state.CmdSubmit). A managed reservation
// that the scheduler would place at once, while it has nothing else to
// start or stop (fair share allows it: no work is waiting that it could
// place, no preemption is due), gets its process assigned in the same
// command, so the submission and its assignment share one log entry and
// one sync; its node's desired state is pushed once that entry is
// committed, as a cycle would have, so an agent never runs a process the
// durable state does not hold. The scheduler (head/rm) decides, from the
// same input a cycle would give it with the new work added.
//
// Submit applies the submission as it is, to be placed by the next
// cycle, when a node is overdue for its heartbeat (the cycle declares it
// down first), when another Submit is under way (under load the group
// commit shares entries among submissions and the cycle's assignments,
// and a plan per submission would only hold the cycle up), when a cycle
// is planning (it never waits for one), when the last scheduling pass
// took longer than Config.SubmitPlaceBudget, or before Run. The state assigns
// the process only if the work gets the id it was planned under
// (state.Command's Assign); a submission committed in between makes it a
// plain one. While it plans and commits, cycles wait (placeMu).
func (o *Orchestrator) Submit(ctx context.Context, c state.Command) ([]state.Result, error) {
	alone := o.submitting.Add(1) == 1
	defer o.submitting.Add(-1)
	if !alone || c.Type != state.CmdSubmit || c.Work == nil || c.Work.Kind != wire.WorkManaged || c.Assign != nil ||
		o.cfg.SubmitPlaceBudget < 0 || !o.placeMu.TryLock() {
		return o.cfg.Apply.Apply(ctx, c)
	}
	defer o.placeMu.Unlock()
	if id, a := o.placeNew(c); a != nil {
		c.WorkID, c.Assign = id, a
	}
	res, err := o.cfg.Apply.Apply(ctx, c)
	if err == nil && c.Assign != nil && len(res) == 1 && res[0].Err == nil && res[0].ProcID != "" {
		if o.cfg.Metrics != nil {
			o.cfg.Metrics.QueueWait(0)
		}
		o.pushNode(c.Assign.Node, false)
	}
	return res, err
}

// placeNew plans the cluster with c's work added under the id the next
// submission gets, and returns that id and the work's assignment when the
// plan starts it and does nothing else. placeMu is held.
func (o *Orchestrator) placeNew(c state.Command) (uint64, *state.Assignment) {
	now := o.cfg.Now()
	o.mu.Lock()
	running := o.runCtx != nil && !o.stopped
	// A node overdue for its heartbeat is declared down by the next
	// cycle's checkNodes before it plans; until then nothing is placed
	// here, as the cycle would not place on it.
	timeout, overdue := o.nodeTimeoutLocked(now), false
	for _, n := range o.nodes {
		if o.overdue(n, now, timeout) {
			overdue = true
			break
		}
	}
	o.mu.Unlock()
	if !running || overdue || o.lastSched > o.cfg.SubmitPlaceBudget {
		return 0, nil
	}
	active, nodes, id := o.snapshot()
	w := c.Work.Copy()
	w.ID, w.SubmittedAt, w.Procs = id, c.Time, nil
	if w.State == "" {
		w.State = state.StateWaitingForResources
	}
	active = append(active, w)
	t0 := time.Now()
	in := o.input(now, nodes, active)
	plan := o.rmSched.Schedule(in)
	o.lastSched = time.Since(t0)
	if len(plan.Starts) != 1 || plan.Starts[0].WorkID != id || len(plan.Stops) > 0 {
		return 0, nil
	}
	cmds, _ := planCommands(plan, active, c.Time, requested(in), gpuAsksOf(in))
	if len(cmds) != 1 || cmds[0].Type != state.CmdAssign || cmds[0].WorkID != id {
		return 0, nil
	}
	return id, cmds[0].Assign
}
