package head

import (
	"context"
	"slices"
	"strings"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// isAdmin: root on any node, or a user named in `administrators`.
func (h *Head) isAdmin(c wire.Caller) bool {
	return c.UID == 0 || slices.Contains(h.cfg.Administrators, c.User)
}

// mayRead: the owner, root or a cluster administrator may see what is
// private to a piece of work (its arguments, a job's items and results, a
// service's environment); a caller without a user name (an agent's own
// call, the dashboard) never may.
func (h *Head) mayRead(c wire.Caller, owner string) bool {
	return c.User != "" && (c.User == owner || h.isAdmin(c))
}

// mayReadOutput: who may read the logs and the items and results of work
// w: those who may read what is private to it (mayRead), and the members
// of the group its owner shares it with (share_with_group): the caller's
// primary or supplementary gid, as its node's user database has it, is
// the group's.
func (h *Head) mayReadOutput(c wire.Caller, w *state.Work) bool {
	if h.mayRead(c, w.User) {
		return true
	}
	return c.User != "" && w.ShareGroup != "" && (c.GID == w.ShareGID || slices.Contains(c.Groups, w.ShareGID))
}

// outputReaders says in words who may read work w's logs.
func (h *Head) outputReaders(w *state.Work) string {
	who := []string{w.User, "root"}
	if len(h.cfg.Administrators) > 0 {
		who = append(who, "the administrators ("+strings.Join(h.cfg.Administrators, ", ")+")")
	}
	if w.ShareGroup != "" {
		who = append(who, "the members of group "+w.ShareGroup)
	}
	return strings.Join(who[:len(who)-1], ", ") + " and " + who[len(who)-1]
}

// IsAdmin reports whether the caller is root or one of the cluster's
// administrators, for the administrative methods the server answers
// itself (removing a member of the head group).
func (h *Head) IsAdmin(c wire.Caller) bool { return h.isAdmin(c) }

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
