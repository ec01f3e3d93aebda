package head

import (
	"context"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// Reconfigure validates a new scheduler section and applies it through
// Raft, so every later head uses it too. Running work stays; the next
// cycle schedules with the new classes and pools.
func (h *Head) Reconfigure(ctx context.Context, c wire.Caller, r wire.ReconfigureRequest) (wire.ClassList, error) {
	if !h.isAdmin(c) {
		return wire.ClassList{}, wire.Errorf(wire.CodeUsage, "only root or an administrator may reconfigure the cluster")
	}
	sc, err := rm.ParseConfig(r.Scheduler)
	if err != nil {
		return wire.ClassList{}, wire.Errorf(wire.CodeUsage, "the new scheduler config is not valid, nothing changed: %v", err)
	}
	if _, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdConfig, Time: h.cfg.Now().UnixMilli(), Config: r.Scheduler}); err != nil {
		return wire.ClassList{}, err
	}
	h.schedMu.Lock()
	h.cfg.Scheduler = sc
	h.schedMu.Unlock()
	h.orch.SetScheduler(sc)
	h.log.Info("scheduler reconfigured", "by", c.User, "classes", len(sc.Classes))
	return h.Classes(), nil
}

// NodeAdmin varies a node off (drain fair-share work, no new work),
// quiesces it (no new work) or varies it back on.
func (h *Head) NodeAdmin(ctx context.Context, c wire.Caller, r wire.NodeAdminRequest) (wire.NodeList, error) {
	if !h.isAdmin(c) {
		return wire.NodeList{}, wire.Errorf(wire.CodeUsage, "only root or an administrator may vary nodes")
	}
	switch state.NodeAdminState(r.State) {
	case state.NodeNormal, state.NodeVariedOff, state.NodeQuiescing:
	default:
		return wire.NodeList{}, wire.Errorf(wire.CodeUsage, "unknown node state %q", r.State)
	}
	known := false
	for _, n := range h.orch.Nodes() {
		known = known || n.Name == r.Node
	}
	if !known {
		return wire.NodeList{}, wire.Errorf(wire.CodeUsage, "no node %q; see 'ducc nodes'", r.Node)
	}
	if _, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdNodeAdmin, Time: h.cfg.Now().UnixMilli(), Node: r.Node, NodeState: state.NodeAdminState(r.State)}); err != nil {
		return wire.NodeList{}, err
	}
	return h.Nodes(), nil
}
