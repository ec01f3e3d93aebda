package head

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"

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

// defaultLogDir is the log directory of work that asks for none (asked is
// ""): DUCC's ~/ducc/logs (left to the orchestrator, procSpec), except on
// a dev cluster, whose work logs under ~/ducc/logs/dev-<incarnation>/:
// every dev cluster's work ids start at 1, so the logs of different dev
// clusters mixed in one directory (log 1 of today's cluster beside log 1
// of yesterday's).
func (h *Head) defaultLogDir(asked, home string) string {
	if asked != "" || !h.cfg.DevLogs || home == "" {
		return asked
	}
	var inc string
	h.cfg.FSM.View(func(v *state.View) { inc = v.Incarnation() })
	if inc == "" {
		return asked
	}
	return filepath.Join(home, "ducc", "logs", "dev-"+inc[:min(len(inc), 8)])
}

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

// raiseIDFloor makes the next work id higher than the work id of every
// process a node reports that this cluster never started: the leftovers
// of another incarnation (wire.Heartbeat.Leftovers), and processes with
// an id this cluster has not given yet. An agent takes the processes of
// an earlier cluster for leftovers only once it follows the new
// incarnation (its first desired state); until then its heartbeats list
// them with its own processes. Only work admitted through the Raft log
// gets an id, below the next one, so a process at or above it belongs to
// an earlier Raft state, whatever incarnation its node thinks it follows.
func (h *Head) raiseIDFloor(ctx context.Context, node string, procs []wire.ProcStatus, left []wire.Leftover) {
	var top uint64
	for _, p := range procs {
		top = max(top, p.WorkID)
	}
	for _, l := range left {
		top = max(top, l.WorkID)
	}
	if top == 0 {
		return
	}
	var inc string
	var next uint64
	h.cfg.FSM.View(func(v *state.View) { inc, next = v.Incarnation(), v.NextID() })
	if top < next {
		return
	}
	top = 0
	var from, proc string
	for _, l := range left {
		if l.Incarnation != inc && l.WorkID >= next && l.WorkID >= top {
			top, from, proc = l.WorkID, l.Incarnation, l.ID
		}
	}
	for _, p := range procs {
		if p.WorkID >= next && p.WorkID > top {
			top, from, proc = p.WorkID, "", p.ID
		}
	}
	if top == 0 {
		return
	}
	if _, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdIDFloor, Time: h.cfg.Now().UnixMilli(), IDFloor: top + 1}); err != nil {
		h.log.Warn("cannot raise the next work id above an earlier cluster's", "node", node, "err", err)
		return
	}
	if from == "" {
		from = "unknown (the node does not follow this cluster yet)"
	}
	h.log.Warn("a node runs processes this cluster did not start (an earlier cluster incarnation's); work ids continue above theirs",
		"node", node, "process", proc, "their_incarnation", from, "highest_work_id", top, "next_work_id", top+1)
}
