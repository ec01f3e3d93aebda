package head_test

import (
	"fmt"
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

// TestIDFloorFromProcessesNeverStarted: an agent that still follows the
// earlier cluster's incarnation (its first desired state from the new head
// has not come yet) lists that cluster's processes with its own; the head
// never gave their ids, so the next work id goes above them at once, in
// the first heartbeat or report, before the node is known and its users
// may submit. Processes of this cluster change nothing.
func TestIDFloorFromProcessesNeverStarted(t *testing.T) {
	tests := []struct {
		name  string
		send  func(t *testing.T, f *fixture, procs []wire.ProcStatus)
		procs []wire.ProcStatus
		want  uint64
	}{
		{"heartbeat", func(t *testing.T, f *fixture, procs []wire.ProcStatus) {
			f.heartbeat(wire.Heartbeat{Node: "n1", Seq: 1, Time: f.clock.Now().UnixMilli(), MemTotal: 9 * gib, MemSchedulable: 8 * gib, CPUs: 4, Procs: procs})
		}, []wire.ProcStatus{{ID: "3.1", WorkID: 3, State: wire.ProcRunning, PID: 9}, {ID: "17.2", WorkID: 17, State: wire.ProcRunning, PID: 10}}, 18},
		{"report", func(t *testing.T, f *fixture, procs []wire.ProcStatus) {
			f.report(t, "n1", procs...)
		}, []wire.ProcStatus{{ID: "5.1", WorkID: 5, State: wire.ProcExited, ExitCode: 0}}, 6},
		{"none", func(t *testing.T, f *fixture, procs []wire.ProcStatus) {
			f.heartbeat(wire.Heartbeat{Node: "n1", Seq: 1, Time: f.clock.Now().UnixMilli(), MemTotal: 9 * gib, MemSchedulable: 8 * gib, CPUs: 4, Procs: procs})
		}, nil, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{})
			tc.send(t, f, tc.procs)
			var next uint64
			f.fsm.View(func(v *state.View) { next = v.NextID() })
			if next != tc.want {
				t.Errorf("next work id %d after %+v, want %d", next, tc.procs, tc.want)
			}
			if id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: gib}); id != tc.want {
				t.Errorf("new work got id %d, want %d", id, tc.want)
			}
			// A process of this cluster's own work is no reason to move on.
			f.heartbeat(wire.Heartbeat{Node: "n1", Seq: 2, Time: f.clock.Now().UnixMilli(), MemTotal: 9 * gib, MemSchedulable: 8 * gib, CPUs: 4,
				Procs: []wire.ProcStatus{{ID: fmt.Sprintf("%d.1", tc.want), WorkID: tc.want, State: wire.ProcRunning, PID: 11}}})
			f.fsm.View(func(v *state.View) { next = v.NextID() })
			if next != tc.want+1 {
				t.Errorf("next work id %d after a process of work %d, want %d", next, tc.want, tc.want+1)
			}
		})
	}
}

// TestDevClusterLogDir: on a dev cluster, work that names no log
// directory logs under ~/ducc/logs/dev-<incarnation>/ (every dev
// cluster's ids start at 1, and their logs mixed in ~/ducc/logs/<id>/);
// a directory asked for is kept, and a real cluster keeps DUCC's default.
func TestDevClusterLogDir(t *testing.T) {
	tests := []struct {
		name  string
		dev   bool
		asked string
		want  func(inc string) string
	}{
		{"dev cluster", true, "", func(inc string) string { return "/home/alice/ducc/logs/dev-" + inc[:8] }},
		{"dev cluster, asked", true, "/tmp/mine", func(string) string { return "/tmp/mine" }},
		{"real cluster", false, "", func(string) string { return "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{dev: tc.dev})
			var inc string
			eventually(t, "the incarnation is named", func() bool {
				f.fsm.View(func(v *state.View) { inc = v.Incarnation() })
				return inc != ""
			})
			id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: gib, LogDir: tc.asked})
			if got := f.work(id).LogDir; got != tc.want(inc) {
				t.Errorf("log directory %q, want %q", got, tc.want(inc))
			}
		})
	}
}
