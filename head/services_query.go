package head

import (
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// QueryServices lists active services, or one, as c may see them: a
// service's environment and arguments only to its owner, its
// administrators, the cluster's administrators and root.
func (h *Head) QueryServices(c wire.Caller, r wire.ServiceQueryRequest) (wire.ServiceList, error) {
	out := wire.ServiceList{Services: []wire.ServiceInfo{}}
	if r.Service != "" {
		w, err := h.findService(r.Service)
		if err != nil {
			return out, err
		}
		out.Services = append(out.Services, h.serviceInfoFor(c, w))
		return out, nil
	}
	var ws []*state.Work
	h.cfg.FSM.View(func(v *state.View) {
		for _, w := range v.Active() {
			if w.Service != nil {
				ws = append(ws, w.Copy())
			}
		}
	})
	for _, w := range ws {
		out.Services = append(out.Services, h.serviceInfoFor(c, w))
	}
	return out, nil
}

// serviceInfoFor renders a service for c, without its environment and
// arguments unless c may change the service (mayChange) and has a name.
func (h *Head) serviceInfoFor(c wire.Caller, w *state.Work) wire.ServiceInfo {
	info := h.serviceInfo(w)
	if c.User != "" && h.mayChange(c, w) == nil {
		return info
	}
	info.Redact()
	return info
}

// serviceInfo renders a service; w must be a copy.
func (h *Head) serviceInfo(w *state.Work) wire.ServiceInfo {
	s := w.Service
	info := wire.ServiceInfo{
		ID: w.ID, Endpoint: s.Spec.Endpoint, User: w.User, Enabled: !s.Disabled, Instances: len(s.IDs),
		LastUse: s.LastUse, Failures: len(s.Failures), InitFailures: s.InitFailures, Class: w.Class, Memory: w.Memory,
		Spec: s.Spec, RegisteredAt: w.SubmittedAt, Started: s.Started, ByReferences: s.ByRefs,
	}
	info.Spec.Autostart = s.Autostart
	switch {
	case s.PingOnly():
		info.Policy = "ping-only"
	case s.Autostart:
		info.Policy = "autostart"
	case s.Started && !s.ByRefs:
		info.Policy = "manual"
	default:
		info.Policy = "reference"
	}
	if st, ok := h.sm.Status(w.ID); ok {
		info.State, info.Reason, info.References = st.State, st.Reason, st.Refs
	} else {
		// The Service Manager has not decided on it yet (just registered or
		// just restored): say what its policy will make of it.
		switch {
		case s.Disabled:
			info.State, info.Reason = wire.SvcStateDisabled, s.Why
		case s.PingOnly():
			info.State, info.Reason = wire.SvcStateInitializing, "waiting for the pinger's first answer"
		case s.Autostart || s.Started:
			info.State = wire.SvcStateStarting
		default:
			info.State = wire.SvcStateStopped
		}
	}
	if info.State == wire.SvcStateStarting {
		if p := h.orch.Pending(w.ID); p != "" {
			info.Reason = p
		}
	}
	if w.Canceling {
		info.State, info.Reason = wire.SvcStateStopping, "unregistering"
	}
	if p, ok := h.sm.LastPing(w.ID); ok {
		info.Alive, info.Healthy, info.PingInfo, info.LastPing = p.Alive, p.Healthy, p.Info, p.At.UnixMilli()
	}
	for _, p := range w.Live() {
		pi := wire.ProcInfo{
			ID: p.ID, Node: p.Node, State: p.State, PID: p.PID, MemoryLimit: p.MemoryLimit,
			StartedAt: p.StartedAt, ExitCode: p.ExitCode, Reason: p.Reason, LogPath: p.LogPath, InitMS: p.InitMS,
			OOMKills: p.OOMKills,
		}
		if live, ok := h.orch.Live(p.ID); ok {
			pi.RSS, pi.CPUSeconds = live.RSS, live.CPUSeconds
			if pi.LogPath == "" {
				pi.LogPath = live.LogPath
			}
		}
		if p.State == wire.ProcRunning {
			info.Running++
		}
		info.Procs = append(info.Procs, wire.ServiceInstance{Instance: p.Instance, Proc: pi, Ready: p.ReadyAt != 0})
	}
	return info
}
