package head

import (
	"strings"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// LogAccess decides whether c may read the logs of work id: its owner,
// root, the cluster's administrators and the members of the group the
// owner shares the work with (share_with_group) may; anyone else is
// refused with an error naming who may. Agents ask before they serve a log, and give
// the log files the owner's uid to check.
func (h *Head) LogAccess(c wire.Caller, id uint64) (wire.LogAccess, error) {
	var w *state.Work
	var purged *state.Record
	h.cfg.FSM.View(func(v *state.View) {
		if x := v.Work(id); x != nil {
			w = x.Copy()
		} else if r := v.Record(id); r != nil {
			c := *r
			purged = &c
		}
	})
	if purged != nil {
		return wire.LogAccess{}, wire.Errorf(wire.CodeUsage,
			"work %d left the live state at %s (head.retention.work) and ducc logs no longer finds its logs; "+
				"they stay in its log directory on %s", id, time.UnixMilli(purged.WorkPurgedAt).Format(time.DateTime),
			strings.Join(purged.Nodes, ", "))
	}
	if w == nil {
		return wire.LogAccess{}, wire.Errorf(wire.CodeUsage, "no work with id %d", id)
	}
	if !h.mayReadOutput(c, w) {
		return wire.LogAccess{}, wire.Errorf(wire.CodeUsage,
			"the logs of work %d are private to %s: only %s may read them", id, w.User, h.outputReaders(w))
	}
	return wire.LogAccess{Work: h.info(c, w), UID: w.UID, GID: w.GID}, nil
}
