package rm

import (
	"fmt"
	"math/rand"
	"slices"
	"syscall"
	"testing"
	"time"
)

// benchCluster builds a realistic mixed cluster: nodes of 64–256 GiB, jobs of
// 2–28 GiB processes spread over users and the five fair classes, services,
// managed reservations and a few whole-machine reservations.
func benchCluster(nodes, jobs, users int) Input {
	r := rand.New(rand.NewSource(int64(nodes)))
	cfg := DefaultConfig()
	in := Input{Now: t0.Add(time.Hour), Config: cfg}
	sizes := []int64{64, 128, 256}
	for i := 0; i < nodes; i++ {
		in.Nodes = append(in.Nodes, Node{Name: fmt.Sprintf("node%05d", i), MemSchedulable: sizes[r.Intn(3)] * GiB})
	}
	mems := []int64{2, 4, 8, 16, 28}
	for i := 0; i < jobs; i++ {
		w := Work{ID: uint64(i + 1), User: fmt.Sprintf("user%04d", r.Intn(users)),
			SubmitTime: t0.Add(time.Duration(r.Intn(3600)) * time.Second), Memory: mems[r.Intn(len(mems))] * GiB}
		switch k := r.Intn(100); {
		case k < 90:
			w.Kind, w.Class = Job, fairClasses[r.Intn(len(fairClasses))]
			w.ItemsRemaining, w.Pipelines = 10+r.Intn(2000), 1+r.Intn(4)
			w.MeanItemTime, w.MeanInitTime = time.Duration(1+r.Intn(60))*time.Second, time.Duration(r.Intn(120))*time.Second
		case k < 97:
			w.Kind, w.Class, w.ServiceID, w.Instance = Service, "fixed", fmt.Sprintf("svc%d", r.Intn(jobs/20+1)), i
		case k < 99:
			w.Kind, w.Class = ManagedReservation, "fixed"
		default:
			w.Kind, w.Class, w.Memory = Reservation, "reserve", sizes[r.Intn(3)]*GiB
		}
		in.Work = append(in.Work, w)
	}
	return in
}

// steady runs a few cycles so the cluster is busy, then returns the input of
// the next cycle: some processes finished, some new jobs arrived.
func steady(nodes, jobs, users int) Input {
	in := benchCluster(nodes, jobs, users)
	all := in.Work
	in.Work = all[:len(all)*9/10]
	s := &sim{cfg: in.Config, nodes: in.Nodes, work: in.Work, now: in.Now}
	for i := 0; i < 4; i++ {
		s.step(4 * time.Second)
	}
	r := rand.New(rand.NewSource(1))
	for i := range s.work {
		w := &s.work[i]
		if w.Kind == Job && len(w.Procs) > 0 && r.Intn(20) == 0 {
			w.Procs = w.Procs[:len(w.Procs)-1]
		}
	}
	s.work = append(s.work, all[len(all)*9/10:]...)
	return Input{Now: s.now.Add(4 * time.Second), Config: s.cfg, Nodes: s.nodes, Work: s.work, Carry: s.carry}
}

// steadyCycles is steady's input followed by the inputs of the next k-1
// cycles of the simulated cluster, each after the plan before it was
// carried out: the same works, other processes.
func steadyCycles(nodes, jobs, users, k int) []Input {
	in := steady(nodes, jobs, users)
	s := &sim{cfg: in.Config, nodes: in.Nodes, work: in.Work, now: in.Now.Add(-4 * time.Second), carry: in.Carry}
	var out []Input
	for i := 0; i < k; i++ {
		out = append(out, Input{Now: s.now.Add(4 * time.Second), Config: s.cfg, Nodes: s.nodes,
			Work: slices.Clone(s.work), Carry: s.carry, NoTrace: true})
		s.step(4 * time.Second)
	}
	return out
}

var benchSizes = []struct{ nodes, jobs, users int }{
	{100, 500, 50}, {1000, 5000, 200}, {5000, 25000, 500}, {10000, 50000, 1000},
}

// cpuTime is the CPU time this process has used (user and system), which
// on a shared machine says more about a cycle's cost than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs Schedule(in) b.N times and reports the process's CPU time per
// cycle as cpu-ns/op beside the wall-clock ns/op (run with -cpu 1 so the
// two measure the same core).
func loop(b *testing.B, in Input) {
	loopWith(b, in, Schedule)
}

// loopWith is loop with another cycle function (a Scheduler's).
func loopWith(b *testing.B, in Input, schedule func(Input) Plan) {
	c0, n := cpuTime(), 0
	for b.Loop() {
		schedule(in)
		n++
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(n), "cpu-ns/op")
}

func BenchmarkSchedule(b *testing.B) {
	for _, sz := range benchSizes {
		if testing.Short() && sz.nodes > 1000 {
			continue
		}
		cold := benchCluster(sz.nodes, sz.jobs, sz.users)
		b.Run(fmt.Sprintf("cold/nodes=%d/jobs=%d/users=%d", sz.nodes, sz.jobs, sz.users), func(b *testing.B) {
			loop(b, cold)
		})
		warm := steady(sz.nodes, sz.jobs, sz.users)
		p := Schedule(warm)
		b.Run(fmt.Sprintf("steady/nodes=%d/jobs=%d/users=%d", sz.nodes, sz.jobs, sz.users), func(b *testing.B) {
			b.ReportMetric(float64(len(p.Starts)), "starts")
			b.ReportMetric(float64(len(p.Stops)), "stops")
			loop(b, warm)
		})
		warm.NoTrace = true
		b.Run(fmt.Sprintf("steady-notrace/nodes=%d", sz.nodes), func(b *testing.B) {
			loop(b, warm)
		})
		// What the orchestrator runs: one Scheduler, cycle after cycle.
		b.Run(fmt.Sprintf("steady-notrace-kept/nodes=%d", sz.nodes), func(b *testing.B) {
			var sc Scheduler
			loopWith(b, warm, sc.Schedule)
		})
		// Four successive cycles, over and over, each from scratch and with
		// one Scheduler: the snapshot changes from one cycle to the next.
		seq := steadyCycles(sz.nodes, sz.jobs, sz.users, 4)
		b.Run(fmt.Sprintf("cycles-notrace/nodes=%d", sz.nodes), func(b *testing.B) {
			i := 0
			loopWith(b, seq[0], func(Input) Plan { i++; return Schedule(seq[i%len(seq)]) })
		})
		b.Run(fmt.Sprintf("cycles-notrace-kept/nodes=%d", sz.nodes), func(b *testing.B) {
			var sc Scheduler
			i := 0
			loopWith(b, seq[0], func(Input) Plan { i++; return sc.Schedule(seq[i%len(seq)]) })
		})
	}
}
