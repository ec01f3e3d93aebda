package rm

import (
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// TestSchedulerSameAsFromScratch: a Scheduler that keeps its memory between
// cycles gives, cycle after cycle, the plan a fresh Schedule gives for the
// same input. One Scheduler runs simulations of random clusters back to
// back (clusters of other sizes, so its slabs and maps grow and are left
// partly used), snapshots with nodes, works and process ids listed twice,
// and shuffled snapshots, with and without a trace.
func TestSchedulerSameAsFromScratch(t *testing.T) {
	var sc Scheduler
	for seed := int64(1); seed <= 120; seed++ {
		r := rand.New(rand.NewSource(seed))
		in := randomCluster(r)
		s := &sim{cfg: in.Config, nodes: in.Nodes, work: in.Work, now: in.Now}
		for c := 0; c < 6; c++ {
			snap := Input{Now: s.now, Config: s.cfg, Nodes: s.nodes, Work: s.work, Carry: s.carry, NoTrace: r.Intn(2) == 0}
			switch r.Intn(5) {
			case 0: // a node, a work and a process listed twice
				snap.Nodes = append(append([]Node(nil), snap.Nodes...), snap.Nodes[r.Intn(len(snap.Nodes))])
				snap.Work = append(append([]Work(nil), snap.Work...), snap.Work[r.Intn(len(snap.Work))])
				for i := range snap.Work {
					if w := &snap.Work[i]; len(w.Procs) > 0 {
						w.Procs = append(append([]Proc(nil), w.Procs...), w.Procs[0])
						break
					}
				}
			case 2: // a work replaced by a new one, as many works as before
				snap.Work = append([]Work(nil), snap.Work...)
				w := &snap.Work[r.Intn(len(snap.Work))]
				w.ID += 1000
				w.SubmitTime = t0.Add(time.Duration(r.Intn(3000)) * time.Second)
				w.Procs = nil
			case 1: // another order
				snap.Nodes = append([]Node(nil), snap.Nodes...)
				snap.Work = append([]Work(nil), snap.Work...)
				r.Shuffle(len(snap.Nodes), func(i, j int) { snap.Nodes[i], snap.Nodes[j] = snap.Nodes[j], snap.Nodes[i] })
				r.Shuffle(len(snap.Work), func(i, j int) { snap.Work[i], snap.Work[j] = snap.Work[j], snap.Work[i] })
			}
			want := Schedule(snap)
			if got := sc.Schedule(snap); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, cycle %d: the Scheduler's plan differs from Schedule's:\n got %+v\nwant %+v", seed, c, got, want)
			}
			s.step(time.Second)
		}
	}
}

// TestSchedulerBenchClusters compares a Scheduler with Schedule on busy
// benchmark clusters of growing and shrinking size.
func TestSchedulerBenchClusters(t *testing.T) {
	if testing.Short() {
		t.Skip("large clusters")
	}
	var sc Scheduler
	for _, sz := range []struct{ nodes, jobs, users int }{{300, 1500, 60}, {100, 500, 50}, {1000, 5000, 200}, {100, 500, 50}} {
		in := steady(sz.nodes, sz.jobs, sz.users)
		for _, tr := range []bool{false, true} {
			in.NoTrace = tr
			if got, want := sc.Schedule(in), Schedule(in); !reflect.DeepEqual(got, want) {
				t.Fatalf("%d nodes, no trace %v: the Scheduler's plan differs from Schedule's", sz.nodes, tr)
			}
		}
	}
}
