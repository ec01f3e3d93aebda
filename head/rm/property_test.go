package rm

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/ducc-project/ducc/units"
)

var fairClasses = []string{"background", "low", "normal", "high", "urgent"}

// randomCluster builds a consistent snapshot: existing processes fit their nodes.
func randomCluster(r *rand.Rand) Input {
	cfg := DefaultConfig()
	if r.Intn(2) == 0 {
		cfg = flat(cfg)
	}
	cfg.Preemption.ObserveOnly = r.Intn(8) == 0
	cfg.Preemption.MinRuntime = units.Duration(time.Duration(r.Intn(3)) * time.Minute)
	sizes := []int64{4, 8, 16, 32, 64}
	nn := 1 + r.Intn(25)
	nodes := make([]Node, nn)
	free := make([]int, nn)
	for i := range nodes {
		nodes[i] = Node{Name: fmt.Sprintf("n%03d", i), MemSchedulable: sizes[r.Intn(len(sizes))] * GiB}
		switch r.Intn(12) {
		case 0:
			nodes[i].State = NodeDown
		case 1:
			nodes[i].State = NodeQuiescing
		case 2:
			nodes[i].State = NodeVariedOff
		}
		free[i] = int(nodes[i].MemSchedulable / GiB)
	}
	now := t0.Add(time.Hour)
	nw := 1 + r.Intn(25)
	var works []Work
	for i := 0; i < nw; i++ {
		id := uint64(i + 1)
		w := Work{ID: id, User: fmt.Sprintf("u%d", r.Intn(6)), SubmitTime: t0.Add(time.Duration(r.Intn(3000)) * time.Second),
			Memory: int64(1+r.Intn(12)) * GiB}
		k := r.Intn(20)
		switch {
		case k < 14:
			w.Kind, w.Class = Job, fairClasses[r.Intn(len(fairClasses))]
			w.ItemsRemaining, w.Pipelines = r.Intn(200), 1+r.Intn(4)
			w.EverInitialized = r.Intn(3) > 0
			w.MeanItemTime, w.MeanInitTime = time.Duration(r.Intn(30))*time.Second, time.Duration(r.Intn(60))*time.Second
			if r.Intn(5) == 0 {
				w.DeploymentsMax = 1 + r.Intn(10)
			}
		case k < 17:
			w.Kind, w.Class, w.ServiceID, w.Instance = Service, "fixed", fmt.Sprintf("s%d", r.Intn(3)), i
		case k < 19:
			w.Kind, w.Class = ManagedReservation, "fixed"
		default:
			w.Kind, w.Class = Reservation, "reserve"
			w.Memory = sizes[r.Intn(len(sizes))] * GiB
		}
		if r.Intn(30) == 0 {
			w.Class = "nonesuch"
		}
		order := int(w.Memory / GiB)
		nprocs := r.Intn(6)
		if w.Kind != Job {
			nprocs = r.Intn(2)
		}
		for j := 0; j < nprocs; j++ {
			n := r.Intn(nn)
			sh := order
			if w.Kind == Reservation {
				if free[n] != int(nodes[n].MemSchedulable/GiB) || sh != free[n] {
					continue
				}
			}
			if free[n] < sh {
				continue
			}
			free[n] -= sh
			p := Proc{ID: fmt.Sprintf("%d.%d", id, j+1), Node: nodes[n].Name, Shares: sh, State: ProcRunning,
				StartedAt: now.Add(-time.Duration(r.Intn(600)) * time.Second)}
			p.InitializedAt = p.StartedAt.Add(time.Second)
			switch r.Intn(6) {
			case 0:
				p.State, p.InitializedAt = ProcInitializing, time.Time{}
			case 1:
				p.State = ProcStopping
			}
			w.Procs = append(w.Procs, p)
		}
		works = append(works, w)
	}
	carry := Carry{}
	if r.Intn(2) == 0 {
		carry.LastPreemption = now.Add(-time.Duration(r.Intn(5)) * time.Second)
	}
	return Input{Now: now, Config: cfg, Nodes: nodes, Work: works, Carry: carry}
}

func checkPlan(t *testing.T, in Input, p Plan) {
	t.Helper()
	shares := map[string]int{}
	up := map[string]bool{}
	for _, n := range in.Nodes {
		shares[n.Name] = int(n.MemSchedulable / int64(in.Config.ShareQuantum))
		up[n.Name] = n.State == NodeUp
	}
	used := map[string]int{}
	procs := map[string]Proc{}
	kind := map[uint64]Work{}
	for _, w := range in.Work {
		kind[w.ID] = w
		for _, pr := range w.Procs {
			used[pr.Node] += pr.Shares
			procs[pr.ID] = pr
		}
	}
	added := map[string]int{}
	for _, s := range p.Starts {
		if !up[s.Node] {
			t.Fatalf("start on unschedulable node %s", s.Node)
		}
		added[s.Node] += s.Shares
		if s.Memory != int64(s.Shares)*int64(in.Config.ShareQuantum) {
			t.Fatalf("start memory %d for %d shares", s.Memory, s.Shares)
		}
	}
	for n, a := range added {
		if used[n]+a > shares[n] {
			t.Fatalf("node %s overcommitted: %d used + %d started > %d shares", n, used[n], a, shares[n])
		}
	}
	seen := map[string]bool{}
	for _, s := range append(append([]Stop{}, p.Stops...), p.WouldPreempt...) {
		w := kind[s.WorkID]
		if w.Kind != Job || w.Class == "fixed" {
			t.Fatalf("non-preemptable work stopped: %+v", s)
		}
		pr, ok := procs[s.ProcID]
		if !ok || pr.State == ProcStopping || seen[s.ProcID] {
			t.Fatalf("bad stop %+v (known %v, state %v, twice %v)", s, ok, pr.State, seen[s.ProcID])
		}
		seen[s.ProcID] = true
	}
	st, sp := countStarts(p), countStops(p)
	for id := range sp {
		if st[id] > 0 {
			t.Fatalf("work %d both gains and loses", id)
		}
	}
	for _, x := range p.Pending {
		if x.Reason == "" {
			t.Fatalf("pending without a reason: %+v", x)
		}
	}
}

// checkDeterministic checks that in, scheduled again and with its nodes
// and work shuffled (by r), gives the plan p again: the order of nodes and
// work in the snapshot does not matter.
func checkDeterministic(t *testing.T, r *rand.Rand, in Input, p Plan) {
	t.Helper()
	if q := Schedule(in); !reflect.DeepEqual(p, q) {
		t.Fatal("same input, different plan")
	}
	sh := in
	sh.Nodes = append([]Node(nil), in.Nodes...)
	sh.Work = append([]Work(nil), in.Work...)
	r.Shuffle(len(sh.Nodes), func(i, j int) { sh.Nodes[i], sh.Nodes[j] = sh.Nodes[j], sh.Nodes[i] })
	r.Shuffle(len(sh.Work), func(i, j int) { sh.Work[i], sh.Work[j] = sh.Work[j], sh.Work[i] })
	if q := Schedule(sh); !reflect.DeepEqual(p, q) {
		t.Fatal("shuffled input, different plan")
	}
}

func TestPropertyRandomClusters(t *testing.T) {
	for seed := int64(1); seed <= 400; seed++ {
		r := rand.New(rand.NewSource(seed))
		in := randomCluster(r)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			p := Schedule(in)
			checkPlan(t, in, p)
			checkDeterministic(t, r, in, p)
		})
	}
}

// Each user gets within one process of an equal share when every user wants more.
func TestPropertyUsersWithinOneProcess(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		nodes := mkNodes("n", 1+r.Intn(20), int64(1+r.Intn(32))*GiB)
		capacity := 0
		for _, n := range nodes {
			capacity += int(n.MemSchedulable / GiB)
		}
		nu := 1 + r.Intn(8)
		var ws []Work
		id := uint64(1)
		for u := 0; u < nu; u++ {
			for j := 0; j <= r.Intn(3); j++ {
				ws = append(ws, job(id, fmt.Sprintf("u%d", u), "normal", GiB, 10000))
				id++
			}
		}
		p := Schedule(Input{Now: t0, Config: flat(DefaultConfig()), Nodes: nodes, Work: ws, NoTrace: true})
		per := map[string]int{}
		for _, s := range p.Starts {
			per[ws[s.WorkID-1].User]++
		}
		lo, hi := capacity/nu, (capacity+nu-1)/nu
		for u := 0; u < nu; u++ {
			if n := per[fmt.Sprintf("u%d", u)]; n < lo-1 || n > hi+1 {
				t.Fatalf("seed %d: user u%d got %d, fair share %d..%d (capacity %d, %d users)", seed, u, n, lo, hi, capacity, nu)
			}
		}
	}
}

// Over many cycles of a simulated cluster: nodes are never overcommitted and
// non-preemptable work is never stopped.
func TestPropertyMultiCycle(t *testing.T) {
	for seed := int64(1); seed <= 150; seed++ {
		r := rand.New(rand.NewSource(seed))
		in := randomCluster(r)
		s := &sim{cfg: in.Config, nodes: in.Nodes, work: in.Work, now: in.Now}
		for c := 0; c < 8; c++ {
			before := Input{Now: s.now.Add(time.Second), Config: s.cfg, Nodes: s.nodes, Carry: s.carry}
			for _, w := range s.work {
				w2 := w
				var keep []Proc
				for _, p := range w.Procs {
					if p.State != ProcStopping {
						keep = append(keep, p)
					}
				}
				w2.Procs = keep
				before.Work = append(before.Work, w2)
			}
			p := s.step(time.Second)
			checkPlan(t, before, p)
		}
	}
}
