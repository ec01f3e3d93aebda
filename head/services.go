package head

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/ducc-project/ducc/head/sm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// RegisterService registers a service (docs/services.md).
func (h *Head) RegisterService(ctx context.Context, c wire.Caller, r wire.ServiceRegisterRequest) (wire.SubmitReply, error) {
	s := r.Spec
	// ${DefaultBrokerURL}: the cluster's UIMA-AS broker (docs/services.md,
	// "UIMA-AS services"), resolved before anything compares endpoints.
	s.Dependency, s.Args = slices.Clone(s.Dependency), slices.Clone(s.Args)
	if err := spec.ResolveServiceBroker(&s, h.cfg.DefaultBrokerURL); err != nil {
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	a := &admission{kind: wire.WorkService, caller: c, className: s.Class, memory: s.Memory,
		noProcess: s.Executable == "", validate: func() error { return spec.ValidateService(s) },
		gpus: gpuAsk{s.GPUs, s.GPUMemory, s.GPUModel}}
	if err := h.admit(a); err != nil {
		return wire.SubmitReply{}, err
	}
	class := a.class
	s.Class, s.Memory = class.Name, a.memory
	if err := h.checkJavaPinger(&s, r.ClassNotFound); err != nil {
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	spec.ServiceDefaults(&s)
	w := &state.Work{
		Kind: wire.WorkService, User: c.User, UID: c.UID, GID: c.GID, Groups: c.Groups, Home: c.Home,
		Class: class.Name, Memory: s.Memory, Path: s.Executable, Args: s.Args,
		Env: state.ServiceEnv(c.User, c.Home, s.Environment), Dir: s.WorkingDirectory, LogDir: h.defaultLogDir(s.LogDirectory, c.Home),
		Description: s.Description, Service: &state.Service{Spec: s}, Umask: s.Umask,
		ShareGroup: s.ShareGroup, ShareGID: s.ShareGID,
		GPUs: s.GPUs, GPUMemory: s.GPUMemory, GPUModel: s.GPUModel,
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
			return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "service %d has %s; %d more would pass max_instances %d (raise it with 'ducc services modify %d --max-instances N')",
				w.ID, units.Plural(len(s.IDs), "instance"), r.Instances, s.Spec.MaxInstances, w.ID)
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
		if s.Spec.ProcessDD != "" && (slices.Contains(r.Keys, "process_executable") || slices.Contains(r.Keys, "process_executable_args")) {
			return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "service %d deploys process_DD %s: its instances are the JVMs ducc starts for it, and process_executable and process_executable_args cannot change (unregister and register again to change the service)", w.ID, s.Spec.ProcessDD)
		}
		n.Dependency = h.resolveBroker(n.Dependency)
		merged := s.Spec
		spec.MergeKeys(&merged, &n, r.Keys)
		if err := spec.ValidateService(merged); err != nil {
			return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "%v", err)
		}
		if err := h.checkJavaPinger(&merged, r.ClassNotFound); err != nil {
			return wire.ServiceInfo{}, wire.Errorf(wire.CodeUsage, "%v", err)
		}
		// A command pinger turned into a Java pinger gets a Java pinger's
		// default timeout, unless this modify gives one.
		if spec.JavaPinger(merged) && !spec.JavaPinger(s.Spec) && !slices.Contains(r.Keys, "service_ping_timeout") &&
			s.Spec.PingTimeoutMS == spec.DefaultPingTimeout.Milliseconds() {
			n.PingTimeoutMS = max(merged.PingTimeoutMS, spec.DefaultJavaPingTimeout.Milliseconds())
			r.Keys = append(slices.Clone(r.Keys), "service_ping_timeout")
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

// checkJavaPinger checks a Java pinger's class against the registered
// pingers (spec.ReadRegisteredPinger) of this head: a registered pinger
// takes none of the service's own class path, JVM options or arguments
// when registered internal, and gives its timeout where the service gives
// none; a class that is not registered needs a class path (ducc's UIMA-AS
// pinger excepted), and is refused with notFound, the CLI's finding that
// the class is not in it on the registering node.
func (h *Head) checkJavaPinger(s *wire.ServiceSpec, notFound string) error {
	if s.PingClass == "" {
		return nil
	}
	dir := ""
	if h.cfg.PingerPaths != nil {
		dir = h.cfg.PingerPaths.Monitors
	}
	reg, ok, err := spec.ReadRegisteredPinger(dir, s.PingClass)
	switch {
	case err != nil:
		return fmt.Errorf("service_ping_class %s names a registered pinger that cannot be used (ask the administrators to fix it): %w", s.PingClass, err)
	case ok:
		if err := sm.CheckRegistered(reg, s.PingClasspath, s.PingJVMArgs, s.PingArgs); err != nil {
			return err
		}
		if s.PingTimeoutMS <= 0 {
			s.PingTimeoutMS = reg.TimeoutMS
		}
	case s.PingClass == spec.UIMAASPingClass:
		// ducc's own, from its jar; a class path given only adds to it.
	case s.PingClasspath == "":
		return fmt.Errorf("service_ping_class %s: give service_ping_classpath, the jars or folders that hold it (no pinger of that name is registered in %s on the head)", s.PingClass, dir)
	case notFound != "":
		return errors.New(notFound)
	}
	return nil
}

// resolveBroker resolves ${DefaultBrokerURL} (and UIMA-AS's
// ${defaultBrokerURL}) in endpoints to the cluster's UIMA-AS broker,
// head.default_broker_url; it returns a new slice.
func (h *Head) resolveBroker(endpoints []string) []string {
	if len(endpoints) == 0 {
		return endpoints
	}
	out := make([]string, len(endpoints))
	for i, ep := range endpoints {
		out[i] = spec.ResolveBroker(ep, h.cfg.DefaultBrokerURL)
	}
	return out
}
