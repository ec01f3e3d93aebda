package head

import (
	"context"
	"slices"
	"strings"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

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
