package head_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ducc-project/ducc/web"
	"github.com/ducc-project/ducc/wire"
)

// series gathers reg into "name{label="value",...}" → value.
func series(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			name := mf.GetName()
			if len(ls) > 0 {
				name += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.GetGauge() != nil:
				out[name] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[name] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// The head's cluster series follow what happens: pending work by class
// and reason, a failed item, a job's completion, node heartbeat age and
// shares, class demand and allocation.
func TestClusterMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	f := newFixture(t, options{scheduler: testScheduler, metrics: web.NewHeadMetrics(reg)})
	f.node("n1", 4*gib)

	first := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Class: "fixed", Memory: 3 * gib})
	fp := f.waitProc(t, first)
	second := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Class: "fixed", Memory: 3 * gib})
	eventually(t, "the second run waits for resources", func() bool {
		return series(t, reg)[`ducc_work_pending{class="fixed",reason="Resources"}`] == 1
	})
	s := series(t, reg)
	for name, want := range map[string]float64{
		`ducc_work{kind="managed",state="WaitingForResources"}`: 1,
		`ducc_class_demand_bytes{class="fixed"}`:                6 * float64(gib),
		`ducc_class_allocated_bytes{class="fixed"}`:             3 * float64(gib),
		`ducc_node_shares{node="n1"}`:                           4,
		`ducc_node_shares_used{node="n1"}`:                      3,
		`ducc_node_heartbeat_age_seconds{node="n1"}`:            0,
		`ducc_nodes{state="Up"}`:                                1,
		"ducc_work_items_failed_total":                          0,
	} {
		if got, ok := s[name]; !ok || got != want {
			t.Errorf("%s = %v (exported %v), want %v", name, got, ok, want)
		}
	}
	f.clock.Add(5 * time.Second)
	if got := series(t, reg)[`ducc_node_heartbeat_age_seconds{node="n1"}`]; got != 5 {
		t.Errorf("heartbeat age after 5 s without one: %v", got)
	}
	f.mustCall(t, wire.MethodCancel, alice, wire.CancelRequest{ID: second}, nil)

	// A job of one item that fails once, is retried, and fails for good.
	f.mustCall(t, wire.MethodCancel, alice, wire.CancelRequest{ID: first}, nil)
	f.report(t, "n1", wire.ProcStatus{ID: fp.ID, WorkID: first, State: wire.ProcExited, Signal: "SIGTERM"})
	id := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w", Memory: gib, MaxItemRetries: 1},
		Items: []string{"a"}})
	p := f.waitProc(t, id)
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 11})
	exchange := func(req wire.ExchangeRequest) {
		t.Helper()
		req.JobID, req.Node, req.ProcID = id, "n1", p.ID
		var rep wire.ExchangeReply
		f.mustCall(t, wire.MethodExchange, root, req, &rep)
	}
	exchange(wire.ExchangeRequest{Ready: true, Want: 1})
	exchange(wire.ExchangeRequest{Outcomes: []wire.ItemOutcome{{Index: 0, Error: "boom"}}, Want: 1})
	exchange(wire.ExchangeRequest{Outcomes: []wire.ItemOutcome{{Index: 0, Error: "boom again"}}})
	if info := f.show(t, id); !info.Ended {
		t.Fatalf("the job did not end: %+v", info)
	}
	s = series(t, reg)
	for name, want := range map[string]float64{
		"ducc_work_items_failed_total":                                      1,
		"ducc_work_items_retried_total":                                     1,
		`ducc_work_completed_total{kind="job",reason="Error"}`:              1,
		`ducc_work_completed_total{kind="managed",reason="CanceledByUser"}`: 2,
	} {
		if got := s[name]; got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
