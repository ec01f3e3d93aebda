package rm

import (
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/units"
)

// DUCC documentation: with a 15 GB quantum, a job declaring 14 GB whose fair
// share is 20 shares gets 20 processes; one declaring 28 GB gets 10.
func TestQuantum15GB(t *testing.T) {
	cfg := flat(mustConfig(t, "share_quantum: 15G\n"))
	for _, tc := range []struct {
		mem  int64
		want int
	}{{14 * GiB, 20}, {28 * GiB, 10}, {15 * GiB, 20}, {16 * GiB, 10}} {
		// 5 nodes of 60 GiB = 4 shares each = 20 shares.
		p := Schedule(Input{Now: t0, Config: cfg, Nodes: mkNodes("n", 5, 60*GiB),
			Work: []Work{job(1, "alice", "normal", tc.mem, 1000)}})
		if got := countStarts(p)[1]; got != tc.want {
			t.Errorf("%s job: %d processes, want %d", units.FormatSize(tc.mem), got, tc.want)
		}
		for _, s := range p.Starts {
			if s.Memory != int64(s.Shares)*15*GiB {
				t.Errorf("start memory %d is not shares×quantum", s.Memory)
			}
		}
	}
}

func TestUsersSplitEvenly(t *testing.T) {
	cfg := flat(DefaultConfig())
	nodes := mkNodes("n", 4, 10*GiB) // 40 shares
	p := Schedule(Input{Now: t0, Config: cfg, Nodes: nodes, Work: []Work{
		job(1, "alice", "normal", GiB, 100),
		job(2, "bob", "normal", GiB, 100),
	}})
	if c := countStarts(p); c[1] != 20 || c[2] != 20 {
		t.Fatalf("two users: got %s, want 20/20", fmtCounts(c))
	}
	// A user's jobs split that user's share equally.
	p = Schedule(Input{Now: t0, Config: cfg, Nodes: nodes, Work: []Work{
		job(1, "alice", "normal", GiB, 100),
		job(2, "alice", "normal", GiB, 100),
		job(3, "bob", "normal", GiB, 100),
	}})
	if c := countStarts(p); c[1] != 10 || c[2] != 10 || c[3] != 20 {
		t.Fatalf("alice 2 jobs, bob 1: got %s, want 10/10/20", fmtCounts(c))
	}
	// Shares a user cannot use go to the other (water-filling).
	p = Schedule(Input{Now: t0, Config: cfg, Nodes: nodes, Work: []Work{
		job(1, "alice", "normal", GiB, 5),
		job(2, "bob", "normal", GiB, 100),
	}})
	if c := countStarts(p); c[1] != 5 || c[2] != 35 {
		t.Fatalf("water-filling: got %s, want 5/35", fmtCounts(c))
	}
}

func TestWeights(t *testing.T) {
	cfg := flat(mustConfig(t, `
classes:
  - {name: a, policy: FAIR_SHARE, priority: 10, weight: 100, default: true}
  - {name: b, policy: FAIR_SHARE, priority: 10, weight: 200}
`))
	p := Schedule(Input{Now: t0, Config: cfg, Nodes: mkNodes("n", 3, 10*GiB), Work: []Work{
		job(1, "alice", "a", GiB, 100),
		job(2, "bob", "b", GiB, 100),
	}})
	if c := countStarts(p); c[1] != 10 || c[2] != 20 {
		t.Fatalf("weights 100:200 over 30 shares: got %s, want 10/20", fmtCounts(c))
	}
	// guaranteed and max.
	cfg = flat(mustConfig(t, `
classes:
  - {name: a, policy: FAIR_SHARE, priority: 10, weight: 1, guaranteed: 12G, default: true}
  - {name: b, policy: FAIR_SHARE, priority: 10, weight: 100, max: 15G}
  - {name: c, policy: FAIR_SHARE, priority: 10, weight: 100}
`))
	p = Schedule(Input{Now: t0, Config: cfg, Nodes: mkNodes("n", 4, 10*GiB), Work: []Work{
		job(1, "u1", "a", GiB, 100),
		job(2, "u2", "b", GiB, 100),
		job(3, "u3", "c", GiB, 100),
	}})
	c := countStarts(p)
	if c[1] < 12 || c[2] > 15 || c[1]+c[2]+c[3] != 40 {
		t.Fatalf("guaranteed 12/max 15: got %s", fmtCounts(c))
	}
}

func TestReserveExactMachine(t *testing.T) {
	cfg := DefaultConfig()
	nodes := []Node{{Name: "big1", MemSchedulable: 128 * GiB}, {Name: "small1", MemSchedulable: 64 * GiB}}
	res := Work{ID: 9, Kind: Reservation, User: "ann", Class: "reserve", Memory: 64 * GiB, SubmitTime: t0}
	p := Schedule(Input{Now: t0, Config: cfg, Nodes: nodes, Work: []Work{res}})
	if len(p.Starts) != 1 || p.Starts[0].Node != "small1" || p.Starts[0].Shares != 64 {
		t.Fatalf("reservation: %+v, want small1 with 64 shares", p.Starts)
	}
	// The 64 GiB machine holds a service: never promoted to the 128 GiB one.
	svc := running(Work{ID: 1, Kind: Service, User: "x", Class: "fixed", Memory: 4 * GiB, ServiceID: "s"}, 4, "small1")
	p = Schedule(Input{Now: t0, Config: cfg, Nodes: nodes, Work: []Work{svc, res}})
	if len(p.Starts) != 0 || len(p.Stops) != 0 {
		t.Fatalf("reservation must wait, got starts %+v stops %+v", p.Starts, p.Stops)
	}
	if r := pendingOf(p, 9); !strings.Contains(r, "cannot be evicted") {
		t.Fatalf("pending reason %q", r)
	}
	// No 64 GiB machine at all: a reason listing the sizes.
	p = Schedule(Input{Now: t0, Config: cfg, Nodes: nodes[:1], Work: []Work{res}})
	if r := pendingOf(p, 9); !strings.Contains(r, "exactly 64 GiB") || !strings.Contains(r, "1 × 128 GiB") {
		t.Fatalf("pending reason %q", r)
	}
	// A machine whose only occupants are fair-share is freed.
	fair := running(job(2, "bob", "normal", 16*GiB, 10), 16, "small1", "small1", "big1")
	p = Schedule(Input{Now: t0, Config: cfg, Nodes: nodes, Work: []Work{fair, res}})
	if c := countStops(p); c[2] != 2 || len(p.Starts) != 0 {
		t.Fatalf("freeing small1: stops %+v starts %+v", p.Stops, p.Starts)
	}
	for _, s := range p.Stops {
		if s.Node != "small1" || s.Reason != Evicted {
			t.Fatalf("bad stop %+v", s)
		}
	}
	if r := pendingOf(p, 9); !strings.HasPrefix(r, "waiting for preemptions") {
		t.Fatalf("pending reason %q", r)
	}
}

func TestManagedReservationTooBig(t *testing.T) {
	p := Schedule(Input{Now: t0, Nodes: mkNodes("n", 3, 16*GiB), Work: []Work{
		{ID: 5, Kind: ManagedReservation, User: "u", Class: "fixed", Memory: 64 * GiB, SubmitTime: t0},
	}})
	if r := pendingOf(p, 5); r != "no node can hold 64 GiB; largest schedulable is 16 GiB" {
		t.Fatalf("reason %q", r)
	}
}

func TestFixedNeverPreempted(t *testing.T) {
	s := &sim{cfg: flat(DefaultConfig()), nodes: mkNodes("n", 2, 8*GiB), now: t0}
	s.work = []Work{
		running(Work{ID: 1, Kind: Service, User: "svc", Class: "fixed", Memory: 4 * GiB, ServiceID: "db", SubmitTime: t0}, 4, "n01"),
		running(Work{ID: 2, Kind: ManagedReservation, User: "m", Class: "fixed", Memory: 4 * GiB, SubmitTime: t0}, 4, "n02"),
		job(3, "alice", "urgent", GiB, 1000),
		job(4, "bob", "urgent", GiB, 1000),
	}
	for i := 0; i < 10; i++ {
		p := s.step(2 * time.Second)
		for _, st := range p.Stops {
			if st.WorkID == 1 || st.WorkID == 2 {
				t.Fatalf("cycle %d: fixed work stopped: %+v", i, st)
			}
		}
	}
	if h := s.holding(); h[1] != 1 || h[2] != 1 || h[3] != 4 || h[4] != 4 {
		t.Fatalf("holding %s", fmtCounts(h))
	}
}

func TestServicesSpread(t *testing.T) {
	var ws []Work
	for i := 0; i < 3; i++ {
		ws = append(ws, Work{ID: uint64(i + 1), Kind: Service, User: "s", Class: "fixed", Memory: GiB, ServiceID: "web", Instance: i, SubmitTime: t0})
	}
	p := Schedule(Input{Now: t0, Nodes: mkNodes("n", 3, 64*GiB), Work: ws})
	seen := map[string]bool{}
	for _, st := range p.Starts {
		if seen[st.Node] {
			t.Fatalf("instances stacked before spreading: %+v", p.Starts)
		}
		seen[st.Node] = true
	}
}

func TestMachineListAndNodeStates(t *testing.T) {
	nodes := mkNodes("n", 4, 4*GiB)
	nodes[0].State = NodeDown
	nodes[1].State = NodeQuiescing
	nodes[2].State = NodeVariedOff
	w := job(1, "a", "normal", GiB, 100)
	p := Schedule(Input{Now: t0, Config: flat(DefaultConfig()), Nodes: nodes, Work: []Work{w}})
	for _, s := range p.Starts {
		if s.Node != "n04" {
			t.Fatalf("placed on unschedulable node: %+v", s)
		}
	}
	w.MachineList = []string{"n03", "n04"}
	nodes[3].State = NodeUp
	p = Schedule(Input{Now: t0, Config: flat(DefaultConfig()), Nodes: mkNodes("n", 4, 4*GiB), Work: []Work{w}})
	for _, s := range p.Starts {
		if s.Node != "n03" && s.Node != "n04" {
			t.Fatalf("machine_list ignored: %+v", s)
		}
	}
	// Vary-off drains fair-share work but not services.
	nodes = mkNodes("n", 1, 8*GiB)
	nodes[0].State = NodeVariedOff
	p = Schedule(Input{Now: t0, Nodes: nodes, Work: []Work{
		running(job(1, "a", "normal", GiB, 100), 1, "n01", "n01"),
		running(Work{ID: 2, Kind: Service, User: "s", Class: "fixed", Memory: GiB, ServiceID: "x"}, 1, "n01"),
	}})
	if c := countStops(p); c[1] != 2 || c[2] != 0 {
		t.Fatalf("vary-off stops %s", fmtCounts(c))
	}
}

func poolsConfig(t *testing.T) *Config {
	return flat(mustConfig(t, `
nodepools:
  - name: default
    nodes: "*"
    pools:
      - {name: gpu, nodes: "gpu*", search_order: 100}
classes:
  - {name: normal, policy: FAIR_SHARE, priority: 10, weight: 100, nodepool: default, default: true}
  - {name: gpu, policy: FAIR_SHARE, priority: 10, weight: 100, nodepool: gpu}
  - {name: fixed, policy: FIXED_SHARE, priority: 5, nodepool: default, default: true}
`))
}

func TestSquattersEvictedFirst(t *testing.T) {
	cfg := poolsConfig(t)
	nodes := append(mkNodes("cpu", 2, 4*GiB), mkNodes("gpu", 2, 4*GiB)...)
	// normal spills into the gpu pool as a squatter.
	p := Schedule(Input{Now: t0, Config: cfg, Nodes: nodes, Work: []Work{job(1, "alice", "normal", GiB, 100)}})
	if c := countStarts(p); c[1] != 16 {
		t.Fatalf("squatting: got %s, want 16", fmtCounts(c))
	}
	squat := 0
	for _, s := range p.Starts {
		if strings.HasPrefix(s.Node, "gpu") {
			squat++
			if !strings.Contains(s.Reason, "squatting") {
				t.Fatalf("reason %q", s.Reason)
			}
		}
	}
	if squat != 8 {
		t.Fatalf("squatters: %d", squat)
	}
	// A gpu resident arrives: only squatters go, residents stay.
	w := job(1, "alice", "normal", GiB, 100)
	w = running(w, 1, "cpu01", "cpu01", "cpu01", "cpu01", "cpu02", "cpu02", "cpu02", "cpu02",
		"gpu01", "gpu01", "gpu01", "gpu01", "gpu02", "gpu02", "gpu02", "gpu02")
	p = Schedule(Input{Now: t0, Config: cfg, Nodes: nodes, Work: []Work{w, job(2, "bob", "gpu", GiB, 100)}})
	if len(p.Stops) == 0 {
		t.Fatal("no squatter evicted")
	}
	for _, st := range p.Stops {
		if !strings.HasPrefix(st.Node, "gpu") || st.Reason != Evicted {
			t.Fatalf("evicted a resident or with wrong reason: %+v", st)
		}
	}
	// NP work never squats.
	p = Schedule(Input{Now: t0, Config: cfg, Nodes: mkNodes("gpu", 2, 4*GiB), Work: []Work{
		{ID: 3, Kind: ManagedReservation, User: "u", Class: "fixed", Memory: GiB, SubmitTime: t0}}})
	if len(p.Starts) != 0 {
		t.Fatalf("fixed work placed in a sub-pool: %+v", p.Starts)
	}
}

func TestNeedyJobDefragmentation(t *testing.T) {
	cfg := flat(DefaultConfig())
	nodes := mkNodes("n", 3, 8*GiB)
	a := running(job(1, "a", "normal", GiB, 100), 1, "n01", "n01", "n01", "n01", "n02", "n02", "n02", "n02")
	c := running(job(2, "c", "normal", GiB, 100), 1, "n01", "n01", "n01", "n02", "n02", "n02", "n03", "n03")
	b := job(3, "b", "normal", 8*GiB, 10)
	s := &sim{cfg: cfg, nodes: nodes, now: t0, work: []Work{a, c, b}}
	p := s.step(0)
	if len(p.Stops) == 0 {
		t.Fatalf("no defragmentation; pending %+v\n%s", p.Pending, strings.Join(p.Trace, "\n"))
	}
	for _, st := range p.Stops {
		if st.Reason != Defragmentation || st.Node != "n03" {
			t.Fatalf("bad stop %+v\n%s", st, strings.Join(p.Trace, "\n"))
		}
	}
	if r := pendingOf(p, 3); !strings.HasPrefix(r, "waiting for preemptions") {
		t.Fatalf("reason %q", r)
	}
	p = s.step(time.Second)
	if c := countStarts(p); c[3] != 1 {
		t.Fatalf("needy job not placed in freed space: %+v\n%s", p.Starts, strings.Join(p.Trace, "\n"))
	}
}

func preemptSetup(cfg *Config) *sim {
	var nodes []string
	for i := 0; i < 10; i++ {
		for j := 0; j < 10; j++ {
			nodes = append(nodes, mkNodes("n", 10, 0)[i].Name)
		}
	}
	a := running(job(1, "alice", "normal", GiB, 1000), 1, nodes...)
	return &sim{cfg: cfg, nodes: mkNodes("n", 10, 10*GiB), now: t0, work: []Work{a, job(2, "bob", "normal", GiB, 1000)}}
}

func TestPreemptionPolicy(t *testing.T) {
	s := preemptSetup(flat(DefaultConfig()))
	p := s.step(0)
	// Fair share 50/50; excess 50 × 0.2 = 10, max_per_round 10% of 100 shares = 10.
	if c := countStops(p); c[1] != 10 || len(p.Stops) != 10 {
		t.Fatalf("round 1 stops %s", fmtCounts(c))
	}
	for _, st := range p.Stops {
		if st.Reason != Preempted || st.Grace != 15*time.Second {
			t.Fatalf("stop %+v", st)
		}
	}
	if r := pendingOf(p, 2); !strings.HasPrefix(r, "waiting for preemptions") {
		t.Fatalf("reason %q", r)
	}
	// Within the interval: no new preemption, the freed space goes to bob.
	p = s.step(time.Second)
	if len(p.Stops) != 0 || countStarts(p)[2] != 10 || countStarts(p)[1] != 0 {
		t.Fatalf("cycle 2: stops %d starts %s", len(p.Stops), fmtCounts(countStarts(p)))
	}
	if r := pendingOf(p, 2); !strings.Contains(r, "next preemption round") {
		t.Fatalf("reason %q", r)
	}
	p = s.step(2 * time.Second)
	// Excess 40 × 0.2 = 8.
	if c := countStops(p); c[1] != 8 {
		t.Fatalf("round 2 stops %s", fmtCounts(c))
	}
	// Converges to 50/50 without ping-pong.
	for i := 0; i < 30; i++ {
		s.step(3 * time.Second)
	}
	if h := s.holding(); h[1] < 50 || h[1] > 55 || h[2] < 45 || h[2] > 50 {
		t.Fatalf("not converged: %s", fmtCounts(h))
	}
}

func TestPreemptionDeadzoneAndObserveOnly(t *testing.T) {
	// alice holds 54 of a 50 fair share: within the 10% deadzone.
	var on []string
	for i := 0; i < 54; i++ {
		on = append(on, mkNodes("n", 10, 0)[i/10].Name)
	}
	cfg := flat(DefaultConfig())
	in := Input{Now: t0, Config: cfg, Nodes: mkNodes("n", 10, 10*GiB), Work: []Work{
		running(job(1, "alice", "normal", GiB, 1000), 1, on...),
		running(job(2, "bob", "normal", GiB, 1000), 1, "n06", "n06", "n06", "n06", "n06", "n06",
			"n07", "n07", "n07", "n07", "n07", "n07", "n07", "n07", "n07", "n07"),
	}}
	// Fill the rest with bob so there is no free space.
	for i := 0; i < 30; i++ {
		in.Work[1] = running(in.Work[1], 1, mkNodes("n", 10, 0)[7+i/10].Name)
	}
	p := Schedule(in)
	if len(p.Stops) != 0 {
		t.Fatalf("preempted inside the deadzone: %+v", p.Stops)
	}
	// observe_only: preemptions are only reported.
	s := preemptSetup(flat(DefaultConfig()))
	s.cfg.Preemption.ObserveOnly = true
	p = s.step(0)
	if len(p.Stops) != 0 || len(p.WouldPreempt) != 10 {
		t.Fatalf("observe_only: stops %d would %d", len(p.Stops), len(p.WouldPreempt))
	}
	if r := pendingOf(p, 2); !strings.Contains(r, "observe-only") {
		t.Fatalf("reason %q", r)
	}
}

func TestMinRuntime(t *testing.T) {
	s := preemptSetup(flat(DefaultConfig()))
	s.cfg.Preemption.MinRuntime = units.Duration(time.Hour)
	p := s.step(time.Minute)
	if len(p.Stops) != 0 {
		t.Fatalf("min_runtime ignored: %d stops", len(p.Stops))
	}
}

// No ping-pong: over many cycles of churn no job gains and loses in one
// cycle, a preempted job never regains the held space at once, and the
// cluster settles.
func TestNoPingPong(t *testing.T) {
	cfg := flat(DefaultConfig())
	s := &sim{cfg: cfg, nodes: mkNodes("n", 6, 16*GiB), now: t0}
	s.work = []Work{
		job(1, "alice", "normal", 2*GiB, 1000),
		job(2, "bob", "high", 4*GiB, 1000),
	}
	var lastStops []Stop
	total := 0
	for i := 0; i < 40; i++ {
		if i == 5 {
			s.work = append(s.work, job(3, "carol", "normal", 3*GiB, 1000))
		}
		if i == 12 {
			s.work = append(s.work, job(4, "dave", "low", GiB, 1000))
		}
		p := s.step(time.Second)
		st, sp := countStarts(p), countStops(p)
		total += len(p.Stops)
		for id := range sp {
			if st[id] > 0 {
				t.Fatalf("cycle %d: job %d gains and loses", i, id)
			}
		}
		// A job preempted last cycle does not get the freed space back.
		for _, old := range lastStops {
			for _, n := range p.Starts {
				if n.WorkID == old.WorkID && n.Node == old.Node {
					t.Fatalf("cycle %d: job %d got space back on %s right after losing it", i, n.WorkID, n.Node)
				}
			}
		}
		lastStops = p.Stops
		if i > 30 && len(p.Stops) > 0 {
			t.Fatalf("cycle %d: still preempting: %+v", i, p.Stops)
		}
	}
	if total == 0 {
		t.Fatal("the story never preempted; it tests nothing")
	}
}

// As in DUCC, a reservation in a FIXED_SHARE class holds its memory in
// shares on a node (not a whole machine), and the processes of a job in a
// RESERVE class each get a whole machine of exactly their memory.
func TestClassPolicyDecidesWholeMachines(t *testing.T) {
	cfg := flat(DefaultConfig()) // a job gets its processes in one cycle
	nodes := []Node{{Name: "big1", MemSchedulable: 128 * GiB}, {Name: "m1", MemSchedulable: 16 * GiB}, {Name: "m2", MemSchedulable: 16 * GiB}}
	fixedRes := Work{ID: 1, Kind: Reservation, User: "ann", Class: "fixed", Memory: 4 * GiB, SubmitTime: t0}
	p := Schedule(Input{Now: t0, Config: cfg, Nodes: nodes, Work: []Work{fixedRes}})
	if len(p.Starts) != 1 || p.Starts[0].Shares != 4 {
		t.Fatalf("reservation in a FIXED_SHARE class: %+v, want one hold of 4 shares", p.Starts)
	}
	resJob := job(2, "bob", "reserve", 16*GiB, 10)
	resJob.DeploymentsMax = 2
	p = Schedule(Input{Now: t0, Config: cfg, Nodes: nodes, Work: []Work{resJob}})
	got := map[string]int{}
	for _, s := range p.Starts {
		got[s.Node] = s.Shares
	}
	if len(p.Starts) != 2 || got["m1"] != 16 || got["m2"] != 16 {
		t.Fatalf("job in a RESERVE class: starts %+v, want whole machines m1 and m2 (16 shares each)", p.Starts)
	}
}
