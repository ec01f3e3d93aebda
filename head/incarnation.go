package head

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// A cluster's incarnation begins with its Raft state. A cluster started
// anew after its Raft state was lost (`ducc agent --bootstrap-new`) is a
// new incarnation: it gets a new random id, which the desired states
// carry and the agents record with every process they start, so that a
// process an earlier incarnation left running is told from the new
// incarnation's process of the same id. The new incarnation's work ids
// continue above those of the leftovers its nodes report
// (docs/decisions.md, "Cluster incarnations").

// nameIncarnation gives the cluster an incarnation id if it has none: the
// first head of a new Raft state does, before it pushes any desired state.
func (h *Head) nameIncarnation(ctx context.Context) {
	var named bool
	h.cfg.FSM.View(func(v *state.View) { named = v.Incarnation() != "" })
	if named {
		return
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	id := hex.EncodeToString(b)
	if _, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdIncarnation, Time: h.cfg.Now().UnixMilli(), Incarnation: id}); err != nil {
		h.log.Warn("cannot name the cluster's incarnation; processes started now cannot be told from an earlier cluster's", "err", err)
		return
	}
	h.cfg.FSM.View(func(v *state.View) { id = v.Incarnation() })
	h.log.Info("cluster incarnation", "incarnation", id)
}

// raiseIDFloor makes the next work id higher than the work ids of the
// leftovers of another incarnation that a node reports, so that ids never
// repeat across incarnations.
func (h *Head) raiseIDFloor(ctx context.Context, hb wire.Heartbeat) {
	var inc string
	var next uint64
	h.cfg.FSM.View(func(v *state.View) { inc, next = v.Incarnation(), v.NextID() })
	top, from := uint64(0), ""
	for _, l := range hb.Leftovers {
		if l.Incarnation != inc && l.WorkID >= top {
			top, from = l.WorkID, l.Incarnation
		}
	}
	if top < next {
		return
	}
	if _, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdIDFloor, Time: h.cfg.Now().UnixMilli(), IDFloor: top + 1}); err != nil {
		h.log.Warn("cannot raise the next work id above an earlier incarnation's", "node", hb.Node, "err", err)
		return
	}
	h.log.Warn("a node runs processes of an earlier cluster incarnation; work ids continue above theirs",
		"node", hb.Node, "their_incarnation", from, "highest_work_id", top, "next_work_id", top+1)
}
