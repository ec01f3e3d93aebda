package rm

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// gpuNodes makes n nodes of mem bytes, each with k GPUs of gmem bytes
// (ids "<node>-g<i>").
func gpuNodes(prefix string, n int, mem int64, k int, gmem int64) []Node {
	nodes := mkNodes(prefix, n, mem)
	for i := range nodes {
		for g := 0; g < k; g++ {
			nodes[i].GPUs = append(nodes[i].GPUs, GPU{ID: fmt.Sprintf("%s-g%d", nodes[i].Name, g), Memory: gmem})
		}
	}
	return nodes
}

// run is a `ducc run`: a managed reservation of one process.
func run(id uint64, user string, mem int64, gpus int, gmem int64) Work {
	return Work{ID: id, Kind: ManagedReservation, User: user, Class: "fixed", Memory: mem,
		SubmitTime: t0.Add(time.Duration(id) * time.Second), GPUs: gpus, GPUMemory: gmem}
}

// withGPUs is w asking GPUs per process.
func withGPUs(w Work, gpus int, gmem int64) Work {
	w.GPUs, w.GPUMemory = gpus, gmem
	return w
}

// startGPUs lists the GPU ids each work's starts got, by work id.
func startGPUs(p Plan) map[uint64][][]string {
	m := map[uint64][][]string{}
	for _, s := range p.Starts {
		m[s.WorkID] = append(m[s.WorkID], s.GPUs)
	}
	return m
}

// gpuCase is one case of TestGPUPlacement.
type gpuCase struct {
	name     string
	nodes    []Node
	work     []Work
	gpus     map[uint64][][]string // GPU ids of the starts per work (nil entry: not started)
	pend     map[uint64]WaitCode
	pendHas  map[uint64][]string // words the pending reason must contain
	noStarts []uint64
}

// gpuCases are the example on two 80 GiB GPUs, and the placement
// rules one by one.
func gpuCases() []gpuCase { return append(gpuFirstCases(), gpuMoreCases()...) }

// gpuFirstCases are the first of gpuCases: whole GPUs, slices, packing.
func gpuFirstCases() []gpuCase {
	two := func() []Node { return gpuNodes("n", 1, 64*GiB, 2, 80*GiB) }
	return []gpuCase{
		{
			name:    "whole GPUs, a third waits",
			nodes:   two(),
			work:    []Work{run(1, "a", GiB, 1, 0), run(2, "a", GiB, 1, 0), run(3, "b", GiB, 1, 0)},
			gpus:    map[uint64][][]string{1: {{"n01-g0"}}, 2: {{"n01-g1"}}},
			pend:    map[uint64]WaitCode{3: WaitGPUs},
			pendHas: map[uint64][]string{3: {"waiting for GPUs", "1 whole GPU", "n01 0 of 2 GPUs free"}},
		},
		{
			name:  "four 40 GiB slices on two GPUs, a fifth waits",
			nodes: two(),
			work: []Work{run(1, "a", GiB, 0, 40*GiB), run(2, "a", GiB, 0, 40*GiB), run(3, "a", GiB, 0, 40*GiB),
				run(4, "a", GiB, 0, 40*GiB), run(5, "a", GiB, 0, 40*GiB)},
			gpus:    map[uint64][][]string{1: {{"n01-g0"}}, 2: {{"n01-g0"}}, 3: {{"n01-g1"}}, 4: {{"n01-g1"}}},
			pend:    map[uint64]WaitCode{5: WaitGPUs},
			pendHas: map[uint64][]string{5: {"40 GiB GPU memory slice"}},
		},
		{
			name:  "slices pack onto a partly used GPU before a free one",
			nodes: two(),
			work: []Work{
				func() Work {
					w := run(1, "a", GiB, 0, 30*GiB)
					w.Procs = []Proc{{ID: "1.1", Node: "n01", Shares: 1, State: ProcRunning, StartedAt: t0, GPUs: []string{"n01-g1"}}}
					return w
				}(),
				run(2, "b", GiB, 0, 50*GiB),
			},
			gpus: map[uint64][][]string{2: {{"n01-g1"}}},
		},
		{
			name:  "no slice on a GPU held whole",
			nodes: two(),
			work: []Work{
				func() Work {
					w := run(1, "a", GiB, 1, 0)
					w.Procs = []Proc{{ID: "1.1", Node: "n01", Shares: 1, State: ProcRunning, StartedAt: t0, GPUs: []string{"n01-g0"}}}
					return w
				}(),
				run(2, "b", GiB, 0, 10*GiB), run(3, "b", GiB, 0, 70*GiB), run(4, "b", GiB, 0, 10*GiB),
			},
			gpus: map[uint64][][]string{2: {{"n01-g1"}}, 3: {{"n01-g1"}}},
			pend: map[uint64]WaitCode{4: WaitGPUs},
		},
	}
}

// gpuMoreCases are the rest of gpuCases: holders that stop, refusals,
// whole-GPU fit, reservations, fair jobs.
func gpuMoreCases() []gpuCase {
	two := func() []Node { return gpuNodes("n", 1, 64*GiB, 2, 80*GiB) }
	return []gpuCase{
		{
			name:  "a stopping process keeps its GPU until it is gone",
			nodes: two(),
			work: []Work{
				func() Work {
					w := run(1, "a", GiB, 2, 0)
					w.Procs = []Proc{{ID: "1.1", Node: "n01", Shares: 1, State: ProcStopping, StartedAt: t0, GPUs: []string{"n01-g0", "n01-g1"}}}
					return w
				}(),
				run(2, "b", GiB, 1, 0),
			},
			pend: map[uint64]WaitCode{2: WaitGPUs},
		},
		{
			name:     "more GPUs than any node has is refused with the sizes",
			nodes:    append(two(), mkNodes("m", 1, 64*GiB)...),
			work:     []Work{run(1, "a", GiB, 3, 0)},
			pend:     map[uint64]WaitCode{1: WaitNoFit},
			pendHas:  map[uint64][]string{1: {"no node has 3 GPUs; nodes have 2 × 80 GiB GPUs (1 node), no GPUs (1 node)"}},
			noStarts: []uint64{1},
		},
		{
			name:    "both whole GPUs and a slice is said, not guessed",
			nodes:   two(),
			work:    []Work{run(1, "a", GiB, 1, 10*GiB)},
			pend:    map[uint64]WaitCode{1: WaitNoFit},
			pendHas: map[uint64][]string{1: {"ask one of the two"}},
		},
		{
			name:  "whole GPUs of one process are on one node, best fit",
			nodes: append(gpuNodes("a", 1, 64*GiB, 4, 80*GiB), gpuNodes("b", 1, 64*GiB, 2, 80*GiB)...),
			work:  []Work{run(1, "a", GiB, 2, 0), run(2, "a", GiB, 3, 0)},
			gpus:  map[uint64][][]string{1: {{"b01-g0", "b01-g1"}}, 2: {{"a01-g0", "a01-g1", "a01-g2"}}},
		},
		{
			name:  "a whole-machine reservation holds every GPU of its node",
			nodes: two(),
			work: []Work{
				{ID: 1, Kind: Reservation, User: "a", Class: "reserve", Memory: 64 * GiB, SubmitTime: t0},
				run(2, "b", GiB, 0, GiB),
			},
			gpus:    map[uint64][][]string{1: {{"n01-g0", "n01-g1"}}},
			pend:    map[uint64]WaitCode{2: WaitGPUs},
			pendHas: map[uint64][]string{2: {"n01 0 of 2 GPUs free"}},
		},
		{
			name:    "a fair job waits for GPUs other work holds",
			nodes:   two(),
			work:    []Work{run(1, "a", GiB, 2, 0), withGPUs(job(2, "b", "normal", GiB, 10), 0, GiB)},
			gpus:    map[uint64][][]string{1: {{"n01-g0", "n01-g1"}}},
			pend:    map[uint64]WaitCode{2: WaitGPUs},
			pendHas: map[uint64][]string{2: {"fair share is 0 processes: no GPUs are left to share", "a 1 GiB GPU memory slice"}},
		},
		{
			name:    "a fair job's processes take GPUs up to what is free",
			nodes:   two(),
			work:    []Work{withGPUs(job(1, "a", "normal", GiB, 10), 1, 0)},
			gpus:    map[uint64][][]string{1: {{"n01-g0"}, {"n01-g1"}}},
			pend:    map[uint64]WaitCode{1: WaitAtShare},
			pendHas: map[uint64][]string{1: {"dominant resource", "1 whole GPU", "n01 0 of 2 GPUs free"}},
		},
	}
}

func TestGPUPlacement(t *testing.T) {
	for _, tc := range gpuCases() {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Now: t0.Add(time.Hour), Config: flat(DefaultConfig()), Nodes: tc.nodes, Work: tc.work}
			p := Schedule(in)
			checkPlan(t, in, p)
			checkGPUs(t, in, p)
			got := startGPUs(p)
			for id, want := range tc.gpus {
				if !reflect.DeepEqual(got[id], want) {
					t.Errorf("work %d got GPUs %v, want %v", id, got[id], want)
				}
			}
			for _, id := range tc.noStarts {
				if len(got[id]) > 0 {
					t.Errorf("work %d started: %v", id, got[id])
				}
			}
			checkPending(t, p, tc.pend, tc.pendHas)
		})
	}
}

// checkPending checks that each work of pend is pending with its code,
// and that the pending reason of each work of has says each of its words.
func checkPending(t *testing.T, p Plan, pend map[uint64]WaitCode, has map[uint64][]string) {
	t.Helper()
	for id, code := range pend {
		if x, ok := pendingEntry(p, id); !ok || x.Code != code {
			t.Errorf("work %d pending %+v (listed %v), want code %d", id, x, ok, code)
		}
	}
	for id, words := range has {
		x, _ := pendingEntry(p, id)
		for _, w := range words {
			if !strings.Contains(x.Reason, w) {
				t.Errorf("work %d reason %q does not say %q", id, x.Reason, w)
			}
		}
	}
}

func TestGPUFit(t *testing.T) {
	mixed := append(gpuNodes("a", 4, 64*GiB, 2, 80*GiB), gpuNodes("b", 1, 64*GiB, 8, 40*GiB)...)
	mixed = append(mixed, mkNodes("c", 3, 64*GiB)...)
	tests := []struct {
		name  string
		k     int
		mem   int64
		nodes []Node
		want  string // "" fits; else the whole message
	}{
		{"nothing asked", 0, 0, nil, ""},
		{"two fit", 2, 0, mixed, ""},
		{"eight fit on b", 8, 0, mixed, ""},
		{"nine do not", 9, 0, mixed, "no node has 9 GPUs; nodes have 2 × 80 GiB GPUs (4 nodes), no GPUs (3 nodes), 8 × 40 GiB GPUs (1 node)"},
		{"a slice fits", 0, 80 * GiB, mixed, ""},
		{"a slice too big", 0, 100 * GiB, mixed, "no GPU has 100 GiB of memory for the slice (the largest has 80 GiB); nodes have 2 × 80 GiB GPUs (4 nodes), no GPUs (3 nodes), 8 × 40 GiB GPUs (1 node)"},
		{"no GPUs at all", 1, 0, mkNodes("c", 2, 64*GiB), "no node has a GPU; nodes have no GPUs (2 nodes)"},
		{"no nodes", 1, 0, nil, "no node has a GPU; there are no nodes"},
		{"one GPU, mixed sizes", 3, 0, []Node{{Name: "x", GPUs: []GPU{{ID: "g0", Memory: 80 * GiB}, {ID: "g1", Memory: 40 * GiB}}}},
			"no node has 3 GPUs; nodes have 1 × 80 GiB + 1 × 40 GiB GPUs (1 node)"},
		{"both", 1, GiB, mixed, "asks both 1 whole GPUs and a 1 GiB GPU memory slice per process; ask one of the two"},
		{"negative", -1, 0, mixed, "GPU request is negative (gpus -1, gpu memory 0); ask a positive number of GPUs or a positive slice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := GPUFit(tc.k, tc.mem, tc.nodes); got != tc.want {
				t.Errorf("GPUFit(%d, %d) = %q\nwant %q", tc.k, tc.mem, got, tc.want)
			}
		})
	}
}

// checkGPUs checks the GPU invariants of a plan over its input: every GPU
// a start gets is on its node; a whole-GPU process gets exactly its
// number of distinct devices, a slice one; no device has two whole
// holders, a whole holder and a slice, or slices over its memory
// (existing processes, stopping ones included, counted).
func checkGPUs(t *testing.T, in Input, p Plan) {
	t.Helper()
	type dev struct {
		mem   int64
		whole int
		used  int64
	}
	devs := map[string]map[string]*dev{}
	for _, n := range in.Nodes {
		devs[n.Name] = map[string]*dev{}
		for _, g := range n.GPUs {
			devs[n.Name][g.ID] = &dev{mem: g.Memory}
		}
	}
	works := map[uint64]Work{}
	for _, w := range in.Work {
		works[w.ID] = w
	}
	take := func(w Work, node string, ids []string, what string) {
		if w.Class == "reserve" {
			return // a whole machine: checked below
		}
		if w.GPUs == 0 && w.GPUMemory == 0 {
			if len(ids) > 0 {
				t.Fatalf("%s of work %d asks no GPUs but got %v", what, w.ID, ids)
			}
			return
		}
		want := w.GPUs
		if want == 0 {
			want = 1
		}
		if len(ids) != want || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != want {
			t.Fatalf("%s of work %d got GPUs %v, want %d distinct", what, w.ID, ids, want)
		}
		for _, id := range ids {
			d := devs[node][id]
			if d == nil {
				t.Fatalf("%s of work %d got GPU %s, not on node %s", what, w.ID, id, node)
			}
			if w.GPUs > 0 {
				d.whole++
			} else {
				d.used += w.GPUMemory
			}
			if d.whole > 1 || (d.whole > 0 && d.used > 0) || d.used > d.mem {
				t.Fatalf("%s of work %d breaks GPU %s on %s: %d whole holders, %d of %d bytes of slices", what, w.ID, id, node, d.whole, d.used, d.mem)
			}
		}
	}
	for _, w := range in.Work {
		for _, pr := range w.Procs {
			if _, ok := devs[pr.Node]; ok {
				take(w, pr.Node, pr.GPUs, "process "+pr.ID)
			}
		}
	}
	for i, s := range p.Starts {
		w := works[s.WorkID]
		if w.Class == "reserve" {
			if len(s.GPUs) != len(devs[s.Node]) {
				t.Fatalf("reservation %d on %s holds GPUs %v, not all %d", w.ID, s.Node, s.GPUs, len(devs[s.Node]))
			}
			continue
		}
		take(w, s.Node, s.GPUs, fmt.Sprintf("start %d", i))
	}
}

// randomGPUCluster is randomCluster with GPUs on most nodes and GPU
// requests on some works; existing processes hold consistent GPUs.
func randomGPUCluster(r *rand.Rand) Input {
	in := randomCluster(r)
	gsizes := []int64{16 * GiB, 40 * GiB, 80 * GiB}
	for i := range in.Nodes {
		if r.Intn(4) == 0 {
			continue
		}
		k, gm := 1+r.Intn(8), gsizes[r.Intn(len(gsizes))]
		for g := 0; g < k; g++ {
			in.Nodes[i].GPUs = append(in.Nodes[i].GPUs, GPU{ID: fmt.Sprintf("%s-g%d", in.Nodes[i].Name, g), Memory: gm})
		}
	}
	free := map[string][]int64{} // per node, per device: bytes free (-1: held whole)
	full := map[string]int64{}   // per node: the size of its devices (all one size)
	for _, n := range in.Nodes {
		for _, g := range n.GPUs {
			free[n.Name] = append(free[n.Name], g.Memory)
			full[n.Name] = g.Memory
		}
	}
	for i := range in.Work {
		w := &in.Work[i]
		if w.Class == "reserve" {
			for _, p := range w.Procs {
				for g := range free[p.Node] {
					free[p.Node][g] = -1
				}
			}
			continue
		}
		switch r.Intn(3) {
		case 0:
			w.GPUs = 1 + r.Intn(3)
		case 1:
			w.GPUMemory = int64(1+r.Intn(40)) * GiB
		}
		var keep []Proc
		for _, p := range w.Procs {
			ids, ok := holdRandom(free[p.Node], full[p.Node], w.GPUs, w.GPUMemory)
			if !ok {
				continue
			}
			for _, g := range ids {
				p.GPUs = append(p.GPUs, fmt.Sprintf("%s-g%d", p.Node, g))
			}
			keep = append(keep, p)
		}
		w.Procs = keep
	}
	return in
}

// holdRandom takes k whole devices (untouched ones, of size full) or a
// slice of mem bytes from free (the first that fit), or says it cannot.
func holdRandom(free []int64, full int64, k int, mem int64) ([]int, bool) {
	var ids []int
	switch {
	case k > 0:
		for g, f := range free {
			if f == full && len(ids) < k {
				ids = append(ids, g)
			}
		}
		if len(ids) < k {
			return nil, false
		}
		for _, g := range ids {
			free[g] = -1
		}
	case mem > 0:
		for g, f := range free {
			if f >= mem {
				free[g] -= mem
				return []int{g}, true
			}
		}
		return nil, false
	}
	return ids, true
}

// The GPU invariants hold on random clusters with GPUs, in one cycle and
// over many, and a cycle is deterministic whatever the input order.
func TestPropertyGPUClusters(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		in := randomGPUCluster(r)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			p := Schedule(in)
			checkPlan(t, in, p)
			checkGPUs(t, in, p)
			checkDeterministic(t, r, in, p)
		})
	}
}

func TestPropertyGPUMultiCycle(t *testing.T) {
	for seed := int64(1); seed <= 150; seed++ {
		r := rand.New(rand.NewSource(seed))
		in := randomGPUCluster(r)
		s := &sim{cfg: in.Config, nodes: in.Nodes, work: in.Work, now: in.Now, stopped: map[string]time.Time{}}
		if r.Intn(2) == 0 {
			s.linger = 3 * time.Second // victims take a while to go
		}
		for c := 0; c < 10; c++ {
			before := Input{Now: s.now.Add(time.Second), Config: s.cfg, Nodes: s.nodes, Carry: s.carry}
			for _, w := range s.work {
				w2 := w
				// As sim.step will: stopped processes stay for linger.
				w2.Procs = slices.DeleteFunc(slices.Clone(w.Procs), func(p Proc) bool {
					at, ok := s.stopped[p.ID]
					return p.State == ProcStopping && (!ok || before.Now.Sub(at) >= s.linger)
				})
				before.Work = append(before.Work, w2)
			}
			p := s.step(time.Second)
			checkPlan(t, before, p)
			checkGPUs(t, before, p)
		}
	}
}

// Fair share by dominant resource: a GPU user and a memory-only user who
// both want more than their share both get work running, from an empty
// cluster and from one the other filled first (by preemption), and the
// GPU user's GPUs never go to waste for the memory user's sake.
func TestGPUFairShare(t *testing.T) {
	nodes := gpuNodes("n", 4, 32*GiB, 2, 80*GiB) // 128 shares, 8 GPUs
	gpuJob := withGPUs(job(1, "gina", "normal", 2*GiB, 1000), 1, 0)
	memJob := job(2, "mem", "normal", GiB, 1000)
	t.Run("from empty", func(t *testing.T) {
		s := &sim{cfg: flat(DefaultConfig()), nodes: nodes, now: t0, work: []Work{gpuJob, memJob}}
		for range 3 {
			s.step(time.Second)
		}
		h := s.holding()
		// DRF: gina's dominant share is GPUs (1/8 each), mem's is memory
		// (1/128 each). Equal dominant shares until the GPUs run out: all
		// 8 GPUs for gina, the 112 shares left for mem.
		if h[1] != 8 || h[2] != 112 {
			t.Fatalf("holding %s, want 1:8 2:112", fmtCounts(h))
		}
	})
	t.Run("memory user first", func(t *testing.T) {
		cfg := flat(DefaultConfig())
		s := &sim{cfg: cfg, nodes: nodes, now: t0, work: []Work{memJob}}
		s.step(time.Second)
		if h := s.holding(); h[2] != 128 {
			t.Fatalf("memory user alone holds %s, want all 128", fmtCounts(h))
		}
		g := gpuJob
		g.SubmitTime = s.now
		s.work = append(s.work, g)
		for range 30 {
			s.step(10 * time.Second)
		}
		h := s.holding()
		if h[1] == 0 || h[2] == 0 {
			t.Fatalf("one starves: %s", fmtCounts(h))
		}
		if h[1] < 4 {
			t.Errorf("GPU user got %d processes back from the memory user, want at least half the GPUs", h[1])
		}
	})
	t.Run("both want GPUs and memory", func(t *testing.T) {
		a := withGPUs(job(1, "a", "normal", 8*GiB, 1000), 0, 20*GiB)
		b := job(2, "b", "normal", 4*GiB, 1000)
		s := &sim{cfg: flat(DefaultConfig()), nodes: nodes, now: t0, work: []Work{a, b}}
		for range 3 {
			s.step(time.Second)
		}
		h := s.holding()
		if h[1] == 0 || h[2] == 0 {
			t.Fatalf("one starves: %s", fmtCounts(h))
		}
	})
}

// A cluster without GPUs decides exactly as before for every work that
// asks none, and a memory-only work on GPU nodes gets no GPU.
func TestGPUMemoryOnlyUnchanged(t *testing.T) {
	for seed := int64(1); seed <= 100; seed++ {
		in := randomCluster(rand.New(rand.NewSource(seed)))
		withDevs := in
		withDevs.Nodes = slices.Clone(in.Nodes)
		for i := range withDevs.Nodes {
			withDevs.Nodes[i].GPUs = []GPU{{ID: "g", Memory: 80 * GiB}}
		}
		p, q := Schedule(in), Schedule(withDevs)
		for i := range q.Starts {
			if q.Starts[i].GPUs != nil && in.Work[0].Class != "reserve" {
				k := slices.IndexFunc(in.Work, func(w Work) bool { return w.ID == q.Starts[i].WorkID })
				if in.Work[k].Class != "reserve" {
					t.Fatalf("seed %d: memory-only start got GPUs: %+v", seed, q.Starts[i])
				}
			}
			q.Starts[i].GPUs = nil
		}
		if !reflect.DeepEqual(p.Starts, q.Starts) || !reflect.DeepEqual(p.Stops, q.Stops) {
			t.Fatalf("seed %d: GPUs that nobody asks for changed the plan", seed)
		}
	}
}

// fitWhole and fitSlice choose the node scanGPU would, request after
// request, while devices fill up on random clusters.
func TestGPUFitMatchesScan(t *testing.T) {
	found := 0
	for seed := int64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		in := randomGPUCluster(r)
		in.NoTrace = true
		var sc Scheduler
		s := &sched{in: &in, cfg: in.Config, now: in.Now, mem: &sc.mem,
			classShare: map[string]int{}, classUsers: map[string]int{}, userShare: map[classUser]int{}, poolCap: map[poolBand]int{},
			schedState: schedState{shrinking: map[uint64]*Shrinking{}, observed: map[*work]bool{}, userHeld: map[string]*int{}}}
		s.build()
		for _, p := range s.pools {
			p.index = newFitIndex(p.nodes)
		}
		for step := 0; step < 200; step++ {
			w := s.works[r.Intn(len(s.works))]
			if w.class == nil || !w.gpu || w.whole || len(w.w.MachineList) > 0 || w.w.ServiceID != "" || gpuBadAsk(w.w) != "" {
				continue
			}
			p := s.pools[r.Intn(len(s.pools))]
			want := s.scanGPU(w, p)
			var got *node
			if w.w.GPUs > 0 {
				got = s.fitWhole(w, p)
			} else {
				got = s.fitSlice(w, p)
			}
			if got != want {
				t.Fatalf("seed %d step %d: work %d (%d GPUs, slice %d) in pool %s: fit chose %v, the scan %v",
					seed, step, w.id, w.w.GPUs, w.w.GPUMemory, p.name, nodeName(got), nodeName(want))
			}
			if got != nil {
				found++
				s.start(w, got, w.order, "test")
			}
		}
	}
	if found < 500 {
		t.Fatalf("only %d placements compared; the test compares too little", found)
	}
}

func nodeName(n *node) string {
	if n == nil {
		return "none"
	}
	return n.n.Name
}
