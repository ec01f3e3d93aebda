package head_test

import (
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// TestRateDoesNotDependOnLooks: a running job's items/s comes from the
// head's own samples, so the first look at it mid-run and two looks in
// the same instant give the same, non-zero rate (it read 0.0/s at a first
// look and flickered to it when looks came close together).
func TestRateDoesNotDependOnLooks(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	id := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w", Memory: gib, Pipelines: 8},
		Items: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}})
	p := f.waitProc(t, id)
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 11, StartedAt: f.clock.Now().UnixMilli()})
	var rep wire.ExchangeReply
	f.mustCall(t, wire.MethodExchange, root, wire.ExchangeRequest{JobID: id, Node: "n1", ProcID: p.ID, Ready: true, Want: 8}, &rep)
	if len(rep.Items) != 8 {
		t.Fatalf("the process got %d items, want 8", len(rep.Items))
	}
	f.h.SampleCharts(f.clock.Now()) // the head's own sample: nothing done yet
	f.clock.Add(10 * time.Second)
	var outs []wire.ItemOutcome
	for _, it := range rep.Items[:5] {
		outs = append(outs, wire.ItemOutcome{Index: it.Index, OK: true})
	}
	f.mustCall(t, wire.MethodExchange, root, wire.ExchangeRequest{JobID: id, Node: "n1", ProcID: p.ID, Ready: true, Outcomes: outs}, &rep)
	eventually(t, "5 items are done", func() bool { return f.work(id).Job.Done == 5 })

	for look := range 3 {
		info := f.show(t, id)
		if info.Job == nil || info.Job.Rate < 0.45 || info.Job.Rate > 0.55 {
			t.Errorf("look %d: rate %v, want about 5 items in 10 s (0.5/s)", look, info.Job)
		}
	}
}
