package state

import (
	"fmt"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// max_job_errors ends a job when more items than it have failed, as in
// DUCC, not when the count reaches it.
func TestMaxJobErrorsIsExceeded(t *testing.T) {
	for _, tc := range []struct {
		failed int
		want   Completion // "" = still running
	}{
		{2, ""},
		{3, CompletionCanceledByDriver},
	} {
		t.Run(fmt.Sprint(tc.failed, " failed"), func(t *testing.T) {
			f := New()
			items := make([]Item, 10)
			for i := range items {
				items[i] = Item{Data: fmt.Sprint(i)}
			}
			job := &Work{Kind: wire.WorkJob, User: "bob", Class: "normal", Memory: 1 << 30,
				Job: &Job{Spec: wire.JobSpec{MaxJobErrors: 2, FailuresLimit: 10}, Items: items}}
			var outcomes []wire.ItemOutcome
			for i := range tc.failed {
				outcomes = append(outcomes, wire.ItemOutcome{Index: i, OK: false, Error: "boom"})
			}
			for i, c := range []Command{
				{Type: CmdSubmit, Work: job, Last: true},
				{Type: CmdAssign, WorkID: 1, Assign: &Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}},
				{Type: CmdProc, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcRunning, PID: 20}},
				{Type: CmdOutcomes, WorkID: 1, ProcID: "1.1", Outcomes: outcomes},
			} {
				c.Time = int64(i + 1)
				if res := apply(t, f, uint64(i+1), c); res[0].Err != nil {
					t.Fatalf("command %d: %v", c.Type, res[0].Err)
				}
			}
			f.View(func(v *View) {
				w := v.Work(1)
				if w.Completion != tc.want {
					t.Errorf("after %d failed items (max_job_errors 2): completion %q, want %q (state %s, reason %q)", tc.failed, w.Completion, tc.want, w.State, w.Reason)
				}
			})
			if tc.want == "" {
				return
			}
			// Items the stopping process still reports change no count of
			// the ended job: --wait, show and history say the same.
			late := Command{Type: CmdOutcomes, Time: 10, WorkID: 1, ProcID: "1.1",
				Outcomes: []wire.ItemOutcome{{Index: 8, Error: "stopped"}, {Index: 9, OK: true}}}
			apply(t, f, 10, late)
			f.View(func(v *View) {
				if j := v.Work(1).Job; j.Failed != tc.failed || j.Done != 0 {
					t.Errorf("outcomes after the end changed the counts: failed %d done %d, want %d and 0", j.Failed, j.Done, tc.failed)
				}
			})
		})
	}
}
