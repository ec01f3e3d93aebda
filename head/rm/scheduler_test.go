package rm

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ducc-project/ducc/units"
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

// TestSchedulerKeptMemoryFollowsChanges changes, one at a time, each input
// of what a Scheduler keeps between cycles (the process ids, the pending
// reasons' sentences) while the works stay the same, and compares every
// plan with a fresh Schedule's: a kept sentence or count that is reused
// when what it was made of changed shows as a difference.
func TestSchedulerKeptMemoryFollowsChanges(t *testing.T) {
	base := steady(100, 500, 50)
	var sc Scheduler
	type change struct {
		name string
		edit func(in *Input)
	}
	renameProcs := func(in *Input, suffix string) {
		in.Work = cloneWork(in.Work)
		for i := range in.Work {
			for j := range in.Work[i].Procs {
				if j%2 == 0 {
					in.Work[i].Procs[j].ID += suffix
				}
			}
		}
	}
	fewer := func(in *Input) {
		in.Work = cloneWork(in.Work)
		for i := range in.Work {
			if n := len(in.Work[i].Procs); n > 0 && i%3 == 0 {
				in.Work[i].Procs = in.Work[i].Procs[:n-1]
			}
		}
	}
	allot := func(in *Input, a int64) {
		cfg := *in.Config
		cfg.GlobalAllotment = units.Size(a)
		in.Config = &cfg
	}
	changes := []change{
		{"same snapshot", func(*Input) {}},
		{"same again", func(*Input) {}},
		{"a preemption round a moment ago", func(in *Input) {
			in.Carry.LastPreemption = in.Now.Add(-in.Config.Preemption.Interval.D() / 4)
		}},
		{"and a little longer ago", func(in *Input) {
			in.Carry.LastPreemption = in.Now.Add(-in.Config.Preemption.Interval.D() / 2)
		}},
		{"no round waiting", func(*Input) {}},
		{"users renamed", func(in *Input) {
			in.Work = cloneWork(in.Work)
			for i := range in.Work {
				in.Work[i].User += "x"
			}
		}},
		{"users back", func(*Input) {}},
		{"the quantum, every node and every work twice as large", func(in *Input) {
			cfg := *in.Config
			cfg.ShareQuantum *= 2
			in.Config = &cfg
			in.Nodes = append([]Node(nil), in.Nodes...)
			for i := range in.Nodes {
				in.Nodes[i].MemSchedulable *= 2
			}
			in.Work = cloneWork(in.Work)
			for i := range in.Work {
				in.Work[i].Memory *= 2
			}
		}},
		{"sizes back", func(*Input) {}},
		{"waiting works one quantum larger", func(in *Input) {
			in.Work = cloneWork(in.Work)
			for i := range in.Work {
				if len(in.Work[i].Procs) == 0 {
					in.Work[i].Memory += int64(in.Config.ShareQuantum)
				}
			}
		}},
		{"classes renamed", func(in *Input) {
			cfg := *in.Config
			cfg.Classes = append([]Class(nil), cfg.Classes...)
			for i := range cfg.Classes {
				cfg.Classes[i].Name += "x"
			}
			in.Config = &cfg
			in.Work = cloneWork(in.Work)
			for i := range in.Work {
				in.Work[i].Class += "x"
			}
		}},
		{"classes back", func(*Input) {}},
		{"pool renamed", func(in *Input) {
			cfg := *in.Config
			cfg.Classes = append([]Class(nil), cfg.Classes...)
			cfg.Nodepools = append([]Nodepool(nil), cfg.Nodepools...)
			cfg.Nodepools[0].Name += "x"
			for i := range cfg.Classes {
				cfg.Classes[i].Nodepool = cfg.Nodepools[0].Name
			}
			in.Config = &cfg
		}},
		{"half the nodes gone", func(in *Input) { in.Nodes = in.Nodes[:len(in.Nodes)/2] }},
		{"all nodes back", func(*Input) {}},
		{"nodes listed the other way round", func(in *Input) {
			in.Nodes = append([]Node(nil), in.Nodes...)
			slices.Reverse(in.Nodes)
		}},
		{"processes on other nodes", func(in *Input) {
			in.Work = cloneWork(in.Work)
			for i := range in.Work {
				for j := range in.Work[i].Procs {
					if p := &in.Work[i].Procs[j]; j%2 == 1 {
						p.Node = in.Nodes[(i+j)%len(in.Nodes)].Name
					}
				}
			}
		}},
		{"a node renamed", func(in *Input) {
			in.Nodes = append([]Node(nil), in.Nodes...)
			in.Nodes[0].Name += "x"
		}},
		{"fewer processes", fewer},
		{"an allotment, fewer processes", func(in *Input) { allot(in, 4*GiB); fewer(in) }},
		{"the same", func(in *Input) { allot(in, 4*GiB); fewer(in) }},
		{"the allotment, all processes", func(in *Input) { allot(in, 4*GiB) }},
		{"a smaller allotment, fewer processes", func(in *Input) { allot(in, 2*GiB); fewer(in) }},
		{"a larger one", func(in *Input) { allot(in, 8*GiB); fewer(in) }},
		{"process ids renamed", func(in *Input) { renameProcs(in, "x") }},
		{"a process id twice", func(in *Input) {
			renameProcs(in, "x")
			for i := range in.Work {
				if p := in.Work[i].Procs; len(p) > 1 {
					p[1].ID = p[0].ID
					break
				}
			}
		}},
		{"process ids back", func(*Input) {}},
	}
	for _, tr := range []bool{true, false} {
		for _, c := range changes {
			in := base
			in.NoTrace = tr
			c.edit(&in)
			if got, want := sc.Schedule(in), Schedule(in); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s (no trace %v): the Scheduler's plan differs from Schedule's", c.name, tr)
			}
		}
	}
}

// cloneWork copies works and their process lists.
func cloneWork(ws []Work) []Work {
	out := append([]Work(nil), ws...)
	for i := range out {
		out[i].Procs = append([]Proc(nil), out[i].Procs...)
	}
	return out
}

// TestProcIDsCounts runs procIDs through random snapshots and checks its
// counts against a recount.
func TestProcIDsCounts(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var c procIDs
	var ws []Work
	for step := 0; step < 300; step++ {
		// Change a few works: new ones, gone ones, other processes.
		for k := r.Intn(4); k > 0; k-- {
			switch op := r.Intn(4); {
			case op == 0 || len(ws) == 0:
				ws = append(ws, Work{ID: uint64(r.Intn(40)), SubmitTime: t0.Add(time.Duration(r.Intn(20)) * time.Second)})
			case op == 1:
				i := r.Intn(len(ws))
				ws = append(ws[:i:i], ws[i+1:]...)
			default:
				w := &ws[r.Intn(len(ws))]
				w.Procs = append([]Proc(nil), w.Procs...)
				if len(w.Procs) > 0 && r.Intn(2) == 0 {
					w.Procs = w.Procs[:len(w.Procs)-1]
				} else {
					w.Procs = append(w.Procs, Proc{ID: fmt.Sprint("p", r.Intn(60))})
				}
			}
		}
		// Works listed twice are ignored, as build does.
		var keys []workKey
		seen := map[uint64]bool{}
		for i := range ws {
			if !seen[ws[i].ID] {
				seen[ws[i].ID] = true
				keys = append(keys, newWorkKey(&ws[i], i))
			}
		}
		if r.Intn(4) > 0 {
			sortWorkKeys(keys)
		}
		c.start(keys, 0)
		want := map[string]int32{}
		for rank, k := range keys {
			c.next(rank, ws[k.i].Procs)
			for _, p := range ws[k.i].Procs {
				want[p.ID]++
			}
		}
		c.finish()
		dups := 0
		for _, n := range want {
			if n > 1 {
				dups++
			}
		}
		if !reflect.DeepEqual(c.count, want) || c.dups != dups {
			t.Fatalf("step %d: counts %v (%d dups), want %v (%d dups)", step, c.count, c.dups, want, dups)
		}
	}
}
