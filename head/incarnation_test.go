package head_test

import (
	"testing"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// TestIncarnation: the head names the cluster's incarnation, pushes it
// with desired states and shows it in the status; a node's leftovers of
// another incarnation are listed with the node and raise the next work
// id above theirs.
func TestIncarnation(t *testing.T) {
	f := newFixture(t, options{})
	var inc string
	eventually(t, "the incarnation is named", func() bool {
		f.fsm.View(func(v *state.View) { inc = v.Incarnation() })
		return inc != ""
	})
	var st wire.StatusInfo
	f.mustCall(t, wire.MethodStatus, alice, nil, &st)
	if st.Incarnation != inc {
		t.Errorf("status shows incarnation %q, want %q", st.Incarnation, inc)
	}

	old := []wire.Leftover{{ID: "41.1", WorkID: 41, Incarnation: "0ld", PID: 7}}
	hb := wire.Heartbeat{Node: "n1", Seq: 1, Time: f.clock.Now().UnixMilli(), MemTotal: 9 * gib, MemSchedulable: 8 * gib, CPUs: 4, Leftovers: old}
	f.heartbeat(hb)
	var next uint64
	f.fsm.View(func(v *state.View) { next = v.NextID() })
	if next != 42 {
		t.Errorf("next work id %d after a leftover of work 41, want 42", next)
	}
	hb.Seq, hb.Delta = 2, true
	f.heartbeat(hb) // again: no change
	f.fsm.View(func(v *state.View) { next = v.NextID() })
	if next != 42 {
		t.Errorf("next work id %d after the same leftover again, want 42", next)
	}
	var list wire.NodeList
	f.mustCall(t, wire.MethodNodes, alice, nil, &list)
	if len(list.Nodes) != 1 || len(list.Nodes[0].Leftovers) != 1 || list.Nodes[0].Leftovers[0] != old[0] {
		t.Errorf("nodes do not list the leftover: %+v", list.Nodes)
	}

	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: gib})
	if id != 42 {
		t.Errorf("new work got id %d, want 42", id)
	}
	eventually(t, "a desired state with the incarnation", func() bool {
		ds, ok := f.push.last("n1")
		return ok && len(ds.Procs) > 0 && ds.Incarnation == inc
	})
}
