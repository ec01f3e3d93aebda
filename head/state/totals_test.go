package state

import (
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// The totals count item failures, retries, preempted items and
// completions as the commands are applied, and a copy does not share the
// map.
func TestTotalsCountEvents(t *testing.T) {
	f := New()
	items := make([]Item, 4)
	job := &Work{Kind: wire.WorkJob, User: "bob", Class: "normal", Memory: 1 << 30,
		Job: &Job{Spec: wire.JobSpec{MaxJobErrors: 5, FailuresLimit: 10, MaxItemRetries: 1}, Items: items}}
	for i, c := range []Command{
		{Type: CmdSubmit, Work: job, Last: true},
		{Type: CmdAssign, WorkID: 1, Assign: &Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}},
		{Type: CmdProc, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcRunning, PID: 20}},
		// Item 0 fails twice (one retry, then failed), item 1 once (retried).
		{Type: CmdOutcomes, WorkID: 1, ProcID: "1.1", Outcomes: []wire.ItemOutcome{{Index: 0}, {Index: 1}}},
		{Type: CmdOutcomes, WorkID: 1, ProcID: "1.1", Outcomes: []wire.ItemOutcome{{Index: 0}, {Index: 1, OK: true}}},
		{Type: CmdRequeued, WorkID: 1, Requeued: 2},
		{Type: CmdOutcomes, WorkID: 1, ProcID: "1.1", Outcomes: []wire.ItemOutcome{{Index: 2, OK: true}, {Index: 3, OK: true}}},
		{Type: CmdSubmit, Work: managed()},
		{Type: CmdCancel, WorkID: 2, By: "alice"},
	} {
		c.Time = int64(i + 1)
		if res := apply(t, f, uint64(i+1), c); res[0].Err != nil {
			t.Fatalf("command %d (type %d): %v", i, c.Type, res[0].Err)
		}
	}
	var got Totals
	f.View(func(v *View) { got = v.Totals() })
	if got.ItemsFailed != 1 || got.ItemsRetried != 2 || got.ItemsPreempted != 2 {
		t.Errorf("items failed %d retried %d preempted %d, want 1 2 2", got.ItemsFailed, got.ItemsRetried, got.ItemsPreempted)
	}
	want := map[CompletionKey]uint64{
		{wire.WorkJob, CompletionError}:              1,
		{wire.WorkManaged, CompletionCanceledByUser}: 1,
	}
	if len(got.Completed) != len(want) {
		t.Errorf("completed %v, want %v", got.Completed, want)
	}
	for k, n := range want {
		if got.Completed[k] != n {
			t.Errorf("completed %v: %d, want %d (all: %v)", k, got.Completed[k], n, got.Completed)
		}
	}
	got.Completed[CompletionKey{wire.WorkJob, CompletionEndOfJob}] = 9
	f.View(func(v *View) {
		if v.Totals().Completed[CompletionKey{wire.WorkJob, CompletionEndOfJob}] != 0 {
			t.Error("Totals shares its map with the state")
		}
	})
}
