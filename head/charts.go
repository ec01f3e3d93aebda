package head

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/tick"
	"github.com/ducc-project/ducc/wire"
)

// The dashboard's charts (wire.MethodCharts) come from samples the head
// takes on a ticker of its term: every live job's item counts, every
// class's demand, fair share and allocation, and the shares used of the
// up nodes. A series holds at most chartPoints samples: when it is full,
// every other one is dropped and it keeps one sample in twice as many
// from then on, so it covers its whole time with a bounded number of
// points. The samples live in this head's memory only: a new head after a
// failover starts them anew.
const (
	chartEvery  = 5 * time.Second
	chartPoints = 240
	// chartJobs bounds the jobs with a series (the newest ids, ended
	// jobs included, so that a finished job keeps its chart a while).
	chartJobs = 256
)

// series is a bounded, thinning ring of samples.
type series[T any] struct {
	pts    []T
	stride int // keep one sample in stride
	skip   int
}

func (s *series[T]) add(p T) {
	if s.stride == 0 {
		s.stride = 1
	}
	if s.skip++; s.skip < s.stride {
		return
	}
	s.skip = 0
	s.pts = append(s.pts, p)
	if len(s.pts) >= chartPoints {
		n := 0
		for i := 0; i < len(s.pts); i += 2 {
			s.pts[n] = s.pts[i]
			n++
		}
		clear(s.pts[n:])
		s.pts = s.pts[:n]
		s.stride *= 2
	}
}

// charts holds the head's series.
type charts struct {
	mu      sync.Mutex
	jobs    map[uint64]*series[wire.WorkSample]
	classes map[string]*series[wire.ClassSample]
	cluster series[wire.ClusterSample]
}

// jobSample is one job's sample with its id.
type jobSample struct {
	id uint64
	s  wire.WorkSample
}

// add folds one round of samples in.
func (c *charts) add(jobs []jobSample, classes []rm.ClassUsage, cluster wire.ClusterSample) {
	slices.SortFunc(jobs, func(a, b jobSample) int { return cmp.Compare(b.id, a.id) })
	jobs = jobs[:min(len(jobs), chartJobs)]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jobs == nil {
		c.jobs = map[uint64]*series[wire.WorkSample]{}
		c.classes = map[string]*series[wire.ClassSample]{}
	}
	for _, j := range jobs {
		s := c.jobs[j.id]
		if s == nil {
			s = &series[wire.WorkSample]{}
			c.jobs[j.id] = s
		}
		s.add(j.s)
	}
	if extra := len(c.jobs) - chartJobs; extra > 0 {
		ids := make([]uint64, 0, len(c.jobs))
		for id := range c.jobs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids[:extra] {
			delete(c.jobs, id)
		}
	}
	for _, u := range classes {
		s := c.classes[u.Name]
		if s == nil {
			s = &series[wire.ClassSample]{}
			c.classes[u.Name] = s
		}
		s.add(wire.ClassSample{At: cluster.At, Demand: u.Demand, FairShare: u.FairShare, Allocated: u.Allocated})
	}
	c.cluster.add(cluster)
}

// reply copies the series out: the job's (id 0: none) and the classes
// in the order given.
func (c *charts) reply(id uint64, order []string) wire.ChartsReply {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out wire.ChartsReply
	if s := c.jobs[id]; id != 0 && s != nil {
		out.Work = slices.Clone(s.pts)
	}
	for _, name := range order {
		if s := c.classes[name]; s != nil && len(s.pts) > 0 {
			out.Classes = append(out.Classes, wire.ClassSeries{Class: name, Points: slices.Clone(s.pts)})
		}
	}
	out.Cluster = slices.Clone(c.cluster.pts)
	return out
}

// before returns the time and the finished items (done and failed) of
// job id's newest sample taken at or before cutoff (Unix ms), or its
// oldest sample when none is that old; ok is false when it has none.
func (c *charts) before(id uint64, cutoff int64) (at int64, items int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.jobs[id]
	if s == nil || len(s.pts) == 0 {
		return 0, 0, false
	}
	p := s.pts[0]
	for _, q := range s.pts {
		if q.At > cutoff {
			break
		}
		p = q
	}
	return p.At, p.Done + p.Failed, true
}

// Charts answers wire.MethodCharts. Its samples are counts that the work
// list shows anyone too, so every caller may have them.
func (h *Head) Charts(r wire.ChartsRequest) wire.ChartsReply {
	sc := h.sched()
	order := make([]string, 0, len(sc.Classes))
	for _, c := range sc.Classes {
		order = append(order, c.Name)
	}
	return h.charts.reply(r.Work, order)
}

// sampleCharts samples for the charts every chartEvery until ctx ends.
func (h *Head) sampleCharts(ctx context.Context) {
	t := time.NewTimer(tick.Until(time.Now(), chartEvery))
	defer t.Stop()
	for {
		h.sampleOnce(h.cfg.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(tick.Until(time.Now(), chartEvery))
		}
	}
}

// sampleOnce takes one round of samples: one pass over the live work
// under the state's read lock, and the last cycle's class usage.
func (h *Head) sampleOnce(now time.Time) {
	at := now.UnixMilli()
	var jobs []jobSample
	used := 0
	h.cfg.FSM.View(func(v *state.View) {
		for _, w := range v.Active() {
			live := 0
			for _, p := range w.Procs {
				if !p.Ended() {
					used += p.Shares
					live++
				}
			}
			if w.Job == nil {
				continue
			}
			total := w.Job.Total()
			if !w.Job.Committed && w.Job.DriverTotal > total {
				total = w.Job.DriverTotal
			}
			jobs = append(jobs, jobSample{w.ID, wire.WorkSample{At: at, Done: w.Job.Done, Failed: w.Job.Failed, Total: total, Procs: live}})
		}
	})
	cl := wire.ClusterSample{At: at, SharesUsed: used}
	if quantum := h.sched().Quantum(""); quantum > 0 {
		for _, n := range h.orch.Nodes() {
			if n.State == "Up" {
				cl.Shares += int(n.HB.MemSchedulable / quantum)
			}
		}
	}
	h.charts.add(jobs, h.orch.Classes(), cl)
}
