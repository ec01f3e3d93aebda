package head

import (
	"testing"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/wire"
)

func TestSeriesStaysBoundedAndCoversItsTime(t *testing.T) {
	for _, n := range []int{1, chartPoints - 1, chartPoints, 5 * chartPoints, 100 * chartPoints} {
		var s series[int]
		for i := range n {
			s.add(i)
		}
		if len(s.pts) == 0 || len(s.pts) >= chartPoints {
			t.Fatalf("%d samples: %d points kept, want 1..%d", n, len(s.pts), chartPoints-1)
		}
		if s.pts[0] != 0 {
			t.Errorf("%d samples: the first point is %d, want 0 (the start)", n, s.pts[0])
		}
		if last := s.pts[len(s.pts)-1]; n-last > 2*s.stride {
			t.Errorf("%d samples: the last point is %d, older than two strides (%d)", n, last, s.stride)
		}
		for i := 1; i < len(s.pts); i++ {
			if s.pts[i] <= s.pts[i-1] {
				t.Fatalf("%d samples: points out of order at %d: %v", n, i, s.pts)
			}
		}
	}
}

func TestChartsKeepNewestJobsAndClassOrder(t *testing.T) {
	var c charts
	for round := range 3 {
		var jobs []jobSample
		for id := uint64(1); id <= chartJobs+10; id++ {
			jobs = append(jobs, jobSample{id, wire.WorkSample{At: int64(round), Done: round}})
		}
		c.add(jobs, []rm.ClassUsage{{Name: "b", Allocated: 2}, {Name: "a", Allocated: 1}},
			wire.ClusterSample{At: int64(round), SharesUsed: round, Shares: 8})
	}
	if len(c.jobs) != chartJobs {
		t.Errorf("%d job series, want %d", len(c.jobs), chartJobs)
	}
	if r := c.reply(1, nil); r.Work != nil {
		t.Errorf("the oldest job kept a series past the bound: %v", r.Work)
	}
	r := c.reply(chartJobs+10, []string{"a", "b", "gone"})
	if len(r.Work) != 3 || r.Work[2].Done != 2 {
		t.Errorf("newest job's series %v, want 3 samples ending at 2 done", r.Work)
	}
	if len(r.Classes) != 2 || r.Classes[0].Class != "a" || r.Classes[1].Points[0].Allocated != 2 {
		t.Errorf("classes %+v, want a then b in the order asked", r.Classes)
	}
	if len(r.Cluster) != 3 || r.Cluster[2].SharesUsed != 2 {
		t.Errorf("cluster %+v", r.Cluster)
	}
}
