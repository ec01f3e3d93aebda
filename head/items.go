package head

import (
	"context"
	"fmt"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

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
