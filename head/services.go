package head

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// RegisterService registers a service (docs/services.md).
func (h *Head) RegisterService(ctx context.Context, c wire.Caller, r wire.ServiceRegisterRequest) (wire.SubmitReply, error) {
	s := r.Spec
	a := &admission{kind: wire.WorkService, caller: c, className: s.Class, memory: s.Memory,
		noProcess: s.Executable == "", validate: func() error { return spec.ValidateService(s) }}
	if err := h.admit(a); err != nil {
		return wire.SubmitReply{}, err
	}
	class := a.class
	s.Class, s.Memory = class.Name, a.memory
	spec.ServiceDefaults(&s)
	w := &state.Work{
		Kind: wire.WorkService, User: c.User, UID: c.UID, GID: c.GID, Groups: c.Groups, Home: c.Home,
		Class: class.Name, Memory: s.Memory, Path: s.Executable, Args: s.Args,
		Env: state.ServiceEnv(c.User, c.Home, s.Environment), Dir: s.WorkingDirectory, LogDir: h.defaultLogDir(s.LogDirectory, c.Home),
		Description: s.Description, Service: &state.Service{Spec: s}, Umask: s.Umask,
		ShareGroup: s.ShareGroup, ShareGID: s.ShareGID,
	}
	res, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdSvcRegister, Time: h.cfg.Now().UnixMilli(), Work: w})
	if err != nil {
		return wire.SubmitReply{}, fmt.Errorf("register service: %w", err)
	}
	if len(res) != 1 {
		return wire.SubmitReply{}, fmt.Errorf("register service: %d results", len(res))
	}
	if res[0].Err != nil {
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "%v", res[0].Err)
	}
	h.log.Info("service registered", "service", res[0].ID, "user", c.User, "endpoint", s.Endpoint)
	return wire.SubmitReply{ID: res[0].ID}, nil
}

// findService resolves an id or an endpoint to a copy of an active service.
func (h *Head) findService(ref string) (*state.Work, error) {
	var w *state.Work
	id, idErr := strconv.ParseUint(ref, 10, 64)
	h.cfg.FSM.View(func(v *state.View) {
		if idErr == nil {
			if x := v.Work(id); x != nil && x.Service != nil && !x.Ended() {
				w = x.Copy()
			}
			return
		}
		if x := v.ActiveService(ref); x != nil {
			w = x.Copy()
		}
	})
	if w == nil {
		return nil, wire.Errorf(wire.CodeUsage, "no registered service %q (give its id or its endpoint; 'ducc services query' lists them)", ref)
	}
	return w, nil
}

// mayChange: the owner, root, a cluster administrator, or one of the
// service's administrators.
func (h *Head) mayChange(c wire.Caller, w *state.Work) error {
	if w.User == c.User || h.isAdmin(c) || slices.Contains(w.Service.Spec.Administrators, c.User) {
		return nil
	}
	return wire.Errorf(wire.CodeUsage, "service %d belongs to %s; only %s, root or an administrator of the service may change it", w.ID, w.User, w.User)
}

// ControlService changes a registered service.
func (h *Head) ControlService(ctx context.Context, c wire.Caller, r wire.ServiceControlRequest) (wire.ServiceInfo, error) {
	w, err := h.findService(r.Service)
	if err != nil {
		return wire.ServiceInfo{}, err
	}
	if err := h.mayChange(c, w); err != nil {
		return wire.ServiceInfo{}, err
	}
	s := w.Service
	now := h.cfg.Now().UnixMilli()
	cmd := state.Command{Type: state.CmdSvcChange, Time: now, WorkID: w.ID}
	by := c.User
	if r.Instances < 0 {
		return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "--instances must not be negative")
	}
	switch r.Action {
	case wire.SvcUnregister:
		cmd = state.Command{Type: state.CmdCancel, Time: now, WorkID: w.ID, By: by}
	case wire.SvcStart:
		if s.Disabled {
			return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "service %d is disabled (%s); run 'ducc services enable %d' first", w.ID, s.Why, w.ID)
		}
		if s.PingOnly() && r.Instances > 0 {
			return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "service %d is ping-only: it has no instances to start", w.ID)
		}
		if r.Instances > 0 && len(s.IDs)+r.Instances > s.Spec.MaxInstances {
			return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "service %d has %d instances; %d more would pass max_instances %d (raise it with 'ducc services modify %d --max-instances N')",
				w.ID, len(s.IDs), r.Instances, s.Spec.MaxInstances, w.ID)
		}
		cmd.Service = &state.ServiceChange{Op: state.SvcOpStart, N: int64(r.Instances)}
	case wire.SvcStop:
		cmd.Service = &state.ServiceChange{Op: state.SvcOpStop, N: int64(r.Instances), Reason: "stopped by " + by}
	case wire.SvcEnable:
		cmd.Service = &state.ServiceChange{Op: state.SvcOpEnable}
	case wire.SvcDisable:
		cmd.Service = &state.ServiceChange{Op: state.SvcOpDisable, Reason: "disabled by " + by}
	case wire.SvcObserve:
		cmd.Service = &state.ServiceChange{Op: state.SvcOpObserve}
	case wire.SvcIgnore:
		cmd.Service = &state.ServiceChange{Op: state.SvcOpIgnore}
	case wire.SvcModify:
		if err := spec.CheckModify(r.Keys); err != nil {
			return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "%v", err)
		}
		n := r.Spec
		merged := s.Spec
		spec.MergeKeys(&merged, &n, r.Keys)
		if err := spec.ValidateService(merged); err != nil {
			return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "%v", err)
		}
		if slices.Contains(r.Keys, "process_memory_size") && n.Memory <= 0 {
			n.Memory = h.sched().DefaultMemory.Bytes()
		}
		cmd.Service = &state.ServiceChange{Op: state.SvcOpModify, Spec: &n, Keys: r.Keys}
	default:
		return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "unknown service action %q", r.Action)
	}
	res, err := h.cfg.Apply.Apply(ctx, cmd)
	if err != nil {
		return wire.ServiceInfo{}, fmt.Errorf("%s service %d: %w", r.Action, w.ID, err)
	}
	if len(res) == 1 && res[0].Err != nil {
		return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "%v", res[0].Err)
	}
	h.log.Info("service changed", "service", w.ID, "action", r.Action, "by", by, "instances", r.Instances, "keys", r.Keys)
	var after *state.Work
	h.cfg.FSM.View(func(v *state.View) {
		if x := v.Work(w.ID); x != nil {
			after = x.Copy()
		}
	})
	if after == nil {
		return wire.ServiceInfo{}, fmt.Errorf("service %d vanished", w.ID)
	}
	return h.serviceInfo(after), nil
}
