package head

import (
	"context"
	"fmt"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// Reserve admits a reservation: a whole machine of exactly the requested
// size, in a RESERVE class.
func (h *Head) Reserve(ctx context.Context, c wire.Caller, r wire.ReserveRequest) (wire.SubmitReply, error) {
	a := &admission{kind: wire.WorkReservation, caller: c, className: r.Class, memory: r.Memory,
		gpus:     gpuAsk{count: r.GPUs, model: r.GPUModel},
		validate: func() error { return spec.ValidateReserve(r) }}
	if err := h.admit(a); err != nil {
		return wire.SubmitReply{}, err
	}
	class := a.class
	w := &state.Work{
		Kind: wire.WorkReservation, User: c.User, UID: c.UID, GID: c.GID, Groups: c.Groups, Home: c.Home,
		Class: class.Name, Memory: r.Memory, Description: r.Description, MachineList: r.MachineList,
		GPUs: r.GPUs, GPUModel: r.GPUModel,
		State: state.StateWaitingForResources,
	}
	res, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdSubmit, Time: h.cfg.Now().UnixMilli(), Work: w})
	if err != nil {
		return wire.SubmitReply{}, err
	}
	if len(res) != 1 || res[0].Err != nil {
		return wire.SubmitReply{}, fmt.Errorf("reserve: %v", res)
	}
	h.log.Info("reservation submitted", "work", res[0].ID, "user", c.User, "memory", r.Memory)
	return wire.SubmitReply{ID: res[0].ID}, nil
}
