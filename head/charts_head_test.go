package head_test

import (
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// TestChartsSampleLiveJobsAndClasses: a round of samples records each
// live job's counts, every class and the up nodes' shares, and anybody
// may read them (they are the counts `ducc jobs` shows everyone).
func TestChartsSampleLiveJobsAndClasses(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 16*gib)
	id := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/worker"}, Items: []string{"a", "b", "c"}})
	// The class usage is the last scheduling cycle's.
	eventually(t, "a scheduling cycle that counts the job", func() bool {
		for _, c := range f.h.Classes().Classes {
			if c.Works > 0 {
				return true
			}
		}
		return false
	})
	// The term's ticker samples at the fixture's clock; these rounds are
	// an hour later.
	start := f.clock.Now().Add(time.Hour)
	for i := range 3 {
		f.h.SampleCharts(start.Add(time.Duration(i) * 5 * time.Second))
	}
	var rep wire.ChartsReply
	f.mustCall(t, wire.MethodCharts, wire.Caller{}, wire.ChartsRequest{Work: id}, &rep)
	var mine []wire.WorkSample
	for _, s := range rep.Work {
		if s.At >= start.UnixMilli() {
			mine = append(mine, s)
		}
	}
	if len(mine) != 3 || mine[2].Total != 3 || mine[2].At-mine[0].At != 10_000 {
		t.Errorf("job samples %+v, want 3 of a 3-item job 5 s apart", rep.Work)
	}
	if len(rep.Classes) == 0 || len(rep.Classes) != len(f.h.Classes().Classes) {
		t.Errorf("class series %+v, want every class", rep.Classes)
	}
	for _, c := range rep.Classes {
		if c.Class == "normal" && c.Points[len(c.Points)-1].Allocated == 0 {
			t.Errorf("class normal holds the job's shares, its series says none: %+v", c.Points)
		}
	}
	if n := len(rep.Cluster); n < 3 || rep.Cluster[n-1].Shares != 16 {
		t.Errorf("cluster samples %+v, want 16 shares of n1 at the last round", rep.Cluster)
	}
	var cluster wire.ChartsReply
	f.mustCall(t, wire.MethodCharts, wire.Caller{}, wire.ChartsRequest{}, &cluster)
	if len(cluster.Work) != 0 || len(cluster.Cluster) != len(rep.Cluster) {
		t.Errorf("the cluster's charts: job samples %+v (nobody asked), %d cluster samples", cluster.Work, len(cluster.Cluster))
	}
}
