package state

import (
	"bytes"
	"io"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// notifyFixture holds a managed reservation 1 with process 1.1 assigned, a
// committed job 2 of two items with process 2.1 running, and a job 3 still
// receiving items.
func notifyFixture(t *testing.T) *FSM {
	t.Helper()
	f := New()
	job := func() *Work {
		return &Work{Kind: wire.WorkJob, User: "bob", Class: "normal", Memory: 1 << 30,
			Job: &Job{Spec: wire.JobSpec{MaxJobErrors: 10, FailuresLimit: 10}, Items: []Item{{Data: "a"}, {Data: "b"}}}}
	}
	for _, c := range []Command{
		{Type: CmdSubmit, Time: 1, Work: managed()},
		{Type: CmdAssign, Time: 2, WorkID: 1, Assign: &Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}},
		{Type: CmdSubmit, Time: 3, Work: job(), Last: true},
		{Type: CmdAssign, Time: 4, WorkID: 2, Assign: &Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}},
		{Type: CmdProc, Time: 5, Proc: &wire.ProcStatus{ID: "2.1", WorkID: 2, State: wire.ProcRunning, PID: 20}},
		{Type: CmdSubmit, Time: 6, Work: job()},
	} {
		if res := apply(t, f, uint64(c.Time), c); res[0].Err != nil {
			t.Fatalf("setup %d: %v", c.Type, res[0].Err)
		}
	}
	return f
}

// SchedulingChanged is closed by the changes a scheduling cycle acts on,
// and only by them.
func TestSchedulingChanged(t *testing.T) {
	const missing = 99 // no such work: the command is refused
	tests := []struct {
		name string
		cmd  Command
		want bool
	}{
		{"submit", Command{Type: CmdSubmit, Work: managed()}, true},
		{"cancel", Command{Type: CmdCancel, WorkID: 1, By: "alice"}, true},
		{"finish", Command{Type: CmdFinish, WorkID: 3, Completion: CompletionError, Reason: "x"}, true},
		{"process exited", Command{Type: CmdProc, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcExited}}, true},
		{"process lost", Command{Type: CmdProc, Proc: &wire.ProcStatus{ID: "2.1", WorkID: 2, State: wire.ProcLost, ExitCode: -1}}, true},
		{"last items", Command{Type: CmdItems, WorkID: 3, Items: []string{"c"}, Last: true}, true},
		{"reconfigure", Command{Type: CmdConfig, Config: []byte("classes: []")}, true},
		{"vary off", Command{Type: CmdNodeAdmin, Node: "n1", NodeState: NodeVariedOff}, true},
		{"dependencies met", Command{Type: CmdDepsMet, WorkID: 3}, true},
		{"service registered", Command{Type: CmdSvcRegister, Work: svcWork("TCP:h:1")}, true},
		{"last outcome ends the job", Command{Type: CmdOutcomes, WorkID: 2, ProcID: "2.1",
			Outcomes: []wire.ItemOutcome{{Index: 0, OK: true}, {Index: 1, OK: true}}}, true},

		{"assignment", Command{Type: CmdAssign, WorkID: 2, Assign: &Assignment{Node: "n2", Shares: 1}}, false},
		{"stop", Command{Type: CmdStopProc, WorkID: 2, ProcID: "2.1", Reason: "preempted"}, false},
		{"process started", Command{Type: CmdProc, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcRunning, PID: 10}}, false},
		{"more items", Command{Type: CmdItems, WorkID: 3, Items: []string{"c"}}, false},
		{"process ready", Command{Type: CmdReady, WorkID: 2, ProcID: "2.1", InitMS: 50}, false},
		{"one outcome", Command{Type: CmdOutcomes, WorkID: 2, ProcID: "2.1", Outcomes: []wire.ItemOutcome{{Index: 0, OK: true}}}, false},
		{"requeued", Command{Type: CmdRequeued, WorkID: 2, Requeued: 1}, false},
		{"refused cancel", Command{Type: CmdCancel, WorkID: missing, By: "alice"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := notifyFixture(t)
			ch, all := f.SchedulingChanged(), f.Changed()
			tc.cmd.Time = 100
			res := apply(t, f, 100, tc.cmd)
			if refused := res[0].Err != nil; refused != (tc.cmd.WorkID == missing) {
				t.Fatalf("result %+v", res[0])
			}
			if !closed(all) {
				t.Fatal("Changed not closed by an applied entry")
			}
			if got := closed(ch); got != tc.want {
				t.Errorf("SchedulingChanged closed = %v, want %v", got, tc.want)
			}
			if next := f.SchedulingChanged(); closed(next) {
				t.Error("the next SchedulingChanged channel is already closed")
			}
		})
	}
}

func TestRestoreClosesSchedulingChanged(t *testing.T) {
	f := notifyFixture(t)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&sink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	g := New()
	ch := g.SchedulingChanged()
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	if !closed(ch) {
		t.Error("SchedulingChanged not closed by a restored snapshot")
	}
}
