package head_test

import (
	"strings"
	"testing"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/head/state/statetest"
	"github.com/ducc-project/ducc/wire"
)

// TestWaitingWorkSaysWhyInACode checks the reason code next to the prose,
// the memory cap with its quantum, and that a reason to wait is not given
// to work that runs.
func TestWaitingWorkSaysWhyInACode(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.node("n1", 4*gib)
	var list wire.NodeList
	f.mustCall(t, wire.MethodNodeAdmin, root, wire.NodeAdminRequest{Node: "n1", State: string(state.NodeVariedOff)}, &list)
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: 256 << 20})
	eventually(t, "the run waits: no node is up", func() bool { return f.show(t, id).ReasonCode == wire.ReasonNoNodes })
	info := f.show(t, id)
	if !strings.Contains(info.Reason, "is up to hold 1 GiB") || info.Held != "" {
		t.Errorf("reason %q held %q", info.Reason, info.Held)
	}
	if info.Memory != 256<<20 || info.MemoryCap != 256<<20 || info.Quantum != gib {
		t.Errorf("memory %d cap %d quantum %d; want 256 MiB capped at 256 MiB (held in a share of 1 GiB)", info.Memory, info.MemoryCap, info.Quantum)
	}
	f.mustCall(t, wire.MethodNodeAdmin, root, wire.NodeAdminRequest{Node: "n1"}, &list)
	p := f.waitProc(t, id)
	// The scheduler holds a whole share; the process is capped at what
	// was asked, and the node is told so.
	if p.Shares != 1 || p.MemoryLimit != 256<<20 {
		t.Errorf("process holds %d shares capped at %d bytes; want 1 share, capped at 256 MiB", p.Shares, p.MemoryLimit)
	}
	eventually(t, "the node is told the cap asked", func() bool {
		ds, ok := f.push.last(p.Node)
		return ok && len(ds.Procs) == 1 && ds.Procs[0].MemoryLimit == 256<<20
	})
	eventually(t, "the running run has no reason to wait", func() bool {
		info := f.show(t, id)
		return info.Reason == "" && info.ReasonCode == "" && len(info.Nodes) == 1 && info.Nodes[0] == p.Node
	})
}

func TestReasonCodesAreListed(t *testing.T) {
	seen := map[wire.ReasonCode]bool{}
	for _, c := range wire.ReasonCodes {
		if seen[c] || c == "" || strings.ContainsAny(string(c), " :") {
			t.Errorf("reason code %q: empty, repeated or not one word", c)
		}
		seen[c] = true
	}
}

// TestPreemptedJobWaits: a running job whose every process was taken back
// (preempted, its node gone) shows that it waits, and why, not Running
// with no process.
func TestPreemptedJobWaits(t *testing.T) {
	var id uint64
	f := newFixture(t, options{seed: func(t *testing.T, app *statetest.Applier) {
		t.Helper()
		res, err := app.Apply(t.Context(), state.Command{Type: state.CmdSubmit, Time: 1, Last: true,
			Work: &state.Work{Kind: wire.WorkJob, User: "alice", Class: "normal", Path: "/bin/w", Memory: gib,
				Job: &state.Job{Items: []state.Item{{Data: "a"}, {Data: "b"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		id = res[0].ID
		mustApply(t, app, state.Command{Type: state.CmdAssign, Time: 2, WorkID: id, Assign: &state.Assignment{Node: "n9", Shares: 1, MemoryLimit: gib}})
		mustApply(t, app, state.Command{Type: state.CmdProc, Time: 3, Proc: &wire.ProcStatus{ID: procID(id), WorkID: id, State: wire.ProcRunning, PID: 8}})
		mustApply(t, app, state.Command{Type: state.CmdReady, Time: 4, WorkID: id, ProcID: procID(id), InitMS: 1})
		mustApply(t, app, state.Command{Type: state.CmdStopProc, Time: 5, WorkID: id, ProcID: procID(id), Reason: "preempted"})
		mustApply(t, app, state.Command{Type: state.CmdProc, Time: 6, Proc: &wire.ProcStatus{ID: procID(id), WorkID: id, State: wire.ProcExited, ExitCode: 143, Signal: "SIGTERM"}})
	}})
	if w := f.work(id); w.State != state.StateRunning || len(w.Live()) != 0 {
		t.Fatalf("the test's premise: the job is %s (%s %q) with %d live processes, want Running with none", w.State, w.Completion, w.Reason, len(w.Live()))
	}
	eventually(t, "the job says why it waits", func() bool {
		info := f.show(t, id)
		return info.State == string(state.StateWaitingForResources) && info.Reason != "" && info.ReasonCode != ""
	})
}
