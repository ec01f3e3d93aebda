package head

import (
	"context"
	"fmt"
	"strings"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// Reserve admits a reservation: a whole machine of exactly the requested
// size, in a RESERVE class.
func (h *Head) Reserve(ctx context.Context, c wire.Caller, r wire.ReserveRequest) (wire.SubmitReply, error) {
	if err := spec.ValidateReserve(r); err != nil {
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	sc := h.sched()
	var class *rm.Class
	var err error
	if r.Class == "" {
		class, err = sc.DefaultClass(rm.Reserve)
	} else {
		class, err = sc.Class(r.Class)
	}
	if err != nil {
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	switch class.Policy {
	case rm.Reserve: // a whole machine of exactly that size
		if err := h.someNodeIsExactly(r.Memory, sc.Quantum(class.Nodepool)); err != nil {
			return wire.SubmitReply{}, err
		}
	case rm.FixedShare: // as DUCC: the memory held in shares on a node
		if err := h.fitsSomeNode(r.Memory, sc.Quantum(class.Nodepool)); err != nil {
			return wire.SubmitReply{}, err
		}
	default:
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "class %q is %s; reservations need a RESERVE class (%s) or a FIXED_SHARE class (%s)",
			class.Name, class.Policy, strings.Join(classesOf(sc, rm.Reserve), ", "), strings.Join(classesOf(sc, rm.FixedShare), ", "))
	}
	if err := h.checkSubmit(c, class.Name, r.Memory); err != nil {
		return wire.SubmitReply{}, err
	}
	w := &state.Work{
		Kind: wire.WorkReservation, User: c.User, UID: c.UID, GID: c.GID, Groups: c.Groups, Home: c.Home,
		Class: class.Name, Memory: r.Memory, Description: r.Description, MachineList: r.MachineList,
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
