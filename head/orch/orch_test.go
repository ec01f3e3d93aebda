package orch

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/head/state/statetest"
	"github.com/ducc-project/ducc/wire"
)

type recPusher struct {
	mu   sync.Mutex
	got  map[string][]wire.DesiredState
	cond chan struct{}
}

func (p *recPusher) PushDesired(_ context.Context, node, _ string, ds wire.DesiredState) error {
	p.mu.Lock()
	p.got[node] = append(p.got[node], ds)
	p.mu.Unlock()
	select {
	case p.cond <- struct{}{}:
	default:
	}
	return nil
}

func (p *recPusher) last(node string) (wire.DesiredState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.got[node]
	if len(l) == 0 {
		return wire.DesiredState{}, false
	}
	return l[len(l)-1], true
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	ctx   context.Context
	cfg   Config
	o     *Orchestrator
	old   []*Orchestrator // of earlier terms (newTerm)
	fsm   *state.FSM
	app   *statetest.Applier
	push  *recPusher
	clock *fakeClock
}

// newFixture returns an orchestrator whose periodic cycle never comes
// during a test; opts adjust its Config.
func newFixture(t *testing.T, opts ...func(*Config)) *fixture {
	f := &fixture{fsm: state.New(), push: &recPusher{got: map[string][]wire.DesiredState{}, cond: make(chan struct{}, 1)},
		clock: &fakeClock{t: time.Unix(1_800_000_000, 0)}}
	f.app = &statetest.Applier{FSM: f.fsm}
	cfg := Config{FSM: f.fsm, Apply: f.app, Push: f.push, Now: f.clock.Now,
		Cycle: time.Hour, NodeTimeout: 10 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	f.cfg = cfg
	f.o = New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	f.ctx = ctx
	f.o.runCtx = ctx // as Run sets it; the tests drive cycles by hand
	t.Cleanup(func() {
		cancel()
		for _, o := range append(f.old, f.o) {
			o.wg.Wait()
		}
	})
	return f
}

// newTerm replaces the orchestrator with the one of a new leadership term
// over the same state, started as Run starts it.
func (f *fixture) newTerm() {
	o := New(f.cfg)
	o.runCtx = f.ctx
	o.seedNodes()
	f.old = append(f.old, f.o)
	f.o = o
}

func (f *fixture) submit(t *testing.T) uint64 {
	res, err := f.app.Apply(context.Background(), state.Command{Type: state.CmdSubmit, Time: 1,
		Work: &state.Work{Kind: wire.WorkManaged, User: "alice", Class: "fixed", Path: "true", Memory: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].ID
}

// waitPush waits for the pusher goroutine to deliver a desired state that
// satisfies ok.
func (f *fixture) waitPush(t *testing.T, node string, ok func(wire.DesiredState) bool) wire.DesiredState {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		if ds, got := f.push.last(node); got && ok(ds) {
			return ds
		}
		select {
		case <-f.push.cond:
		case <-deadline:
			ds, _ := f.push.last(node)
			t.Fatalf("no matching desired state for %s; last %+v", node, ds)
		}
	}
}

func TestAssignPushReportAck(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	id := f.submit(t)

	// No node yet: pending with a reason.
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.o.Pending(id); !strings.Contains(got, "is up to hold 1 GiB") {
		t.Errorf("pending reason %q", got)
	}

	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30}, "peer1")
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	ds := f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 1 })
	if p := ds.Procs[0]; p.ID != "1.1" || p.User != "alice" || p.Stop || p.MemoryLimit != 1<<30 {
		t.Errorf("desired proc %+v", p)
	}

	// The agent reports the process running, then ended.
	f.o.Report(ctx, "n1", []wire.ProcStatus{{ID: "1.1", WorkID: id, State: wire.ProcRunning, PID: 42}})
	f.o.Report(ctx, "n1", []wire.ProcStatus{{ID: "1.1", WorkID: id, State: wire.ProcExited, ExitCode: 4}})
	f.fsm.View(func(v *state.View) {
		w := v.Work(id)
		if !w.Ended() || w.ExitCode != 4 || w.Procs[0].PID != 42 {
			t.Errorf("work after exit: %+v", w)
		}
	})
	// The ended process is acknowledged and no longer wanted.
	ds = f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Ack) == 1 })
	if len(ds.Procs) != 0 || ds.Ack[0] != "1.1" {
		t.Errorf("desired after exit %+v", ds)
	}
	// Versions only grow.
	f.push.mu.Lock()
	all := f.push.got["n1"]
	for i := 1; i < len(all); i++ {
		if all[i].Version <= all[i-1].Version {
			t.Errorf("version went from %d to %d", all[i-1].Version, all[i].Version)
		}
	}
	f.push.mu.Unlock()
}

func TestReportIsIdempotent(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	id := f.submit(t)
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30}, "p")
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	before := f.app.Applied()
	st := wire.ProcStatus{ID: "1.1", WorkID: id, State: wire.ProcRunning, PID: 7}
	for range 5 {
		f.o.Report(ctx, "n1", []wire.ProcStatus{st})
	}
	if n := f.app.Applied() - before; n != 1 {
		t.Errorf("5 identical reports made %d Raft applies, want 1", n)
	}
}

// holdingApplier keeps ApplyLater's commands until the next Apply, which
// writes them first in its own entry, as the head's group commit does
// within the linger.
type holdingApplier struct {
	*statetest.Applier
	held  []state.Command
	thens []func([]state.Result, error)
}

func (a *holdingApplier) ApplyLater(cmds []state.Command, _ time.Duration, then func([]state.Result, error)) {
	a.held = append(a.held, cmds...)
	a.thens = append(a.thens, then)
}

func (a *holdingApplier) Apply(ctx context.Context, cmds ...state.Command) ([]state.Result, error) {
	all := append(a.held, cmds...)
	res, err := a.Applier.Apply(ctx, all...)
	for _, then := range a.thens {
		then(nil, err) // these callers look at the error only
	}
	a.held, a.thens = nil, nil
	if err != nil {
		return nil, err
	}
	return res[len(res)-len(cmds):], nil
}

// A report of starts alone waits for the next entry; the process's end
// takes it along, in order, in one entry.
func TestStartRidesWithTheEnd(t *testing.T) {
	var app *holdingApplier
	f := newFixture(t, func(c *Config) {
		app = &holdingApplier{Applier: c.Apply.(*statetest.Applier)}
		c.Apply = app
	})
	id := f.submit(t)
	f.o.Heartbeat(f.ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30}, "p")
	if err := f.o.cycle(f.ctx); err != nil {
		t.Fatal(err)
	}
	before := f.app.Applied()
	procState := func() (st string) {
		f.fsm.View(func(v *state.View) { st = v.Work(id).Procs[0].State })
		return st
	}

	f.o.Report(f.ctx, "n1", []wire.ProcStatus{{ID: "1.1", WorkID: id, State: wire.ProcRunning, PID: 7, StartedAt: 5}})
	if st := procState(); st != wire.ProcStarting || len(app.held) != 1 {
		t.Fatalf("after the start report: durable state %s, %d held; want Starting, 1", st, len(app.held))
	}
	f.o.Report(f.ctx, "n1", []wire.ProcStatus{{ID: "1.1", WorkID: id, State: wire.ProcExited, StartedAt: 5}})
	if n := f.app.Applied() - before; n != 1 || len(app.held) != 0 {
		t.Fatalf("start and end took %d entries (%d still held), want 1", n, len(app.held))
	}
	f.fsm.View(func(v *state.View) {
		if p := v.Work(id).Procs[0]; p.State != wire.ProcExited || p.PID != 7 || p.StartedAt != 5 {
			t.Errorf("process after its end: %+v", p)
		}
	})
	// Both are filed as reported: repeating them applies nothing.
	f.o.Report(f.ctx, "n1", []wire.ProcStatus{{ID: "1.1", WorkID: id, State: wire.ProcExited, StartedAt: 5}})
	if n := f.app.Applied() - before; n != 1 || len(app.held) != 0 {
		t.Errorf("a repeated end applied again: %d entries, %d held", n, len(app.held))
	}
}

func TestNodeDeathWritesOffProcesses(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	id := f.submit(t)
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30}, "p")
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(11 * time.Second)
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.o.Nodes(); len(n) != 1 || n[0].State != NodeDown {
		t.Errorf("nodes %+v", n)
	}
	f.fsm.View(func(v *state.View) {
		w := v.Work(id)
		if !w.Ended() || w.Completion != state.CompletionProcessFailure || w.Procs[0].State != wire.ProcLost {
			t.Errorf("work on dead node: %s %s %s", w.State, w.Completion, w.Procs[0].State)
		}
	})
}

// A heartbeat that shows the node's own last push causes no resend, even
// when other nodes got newer versions since; one that misses it does, once
// the push had time to arrive.
func TestHeartbeatResendsOnlyMissedPushes(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	f.submit(t)
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30}, "p1")
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n2", Seq: 1, MemSchedulable: 4 << 30}, "p2")
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	d1 := f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 1 })
	d2 := f.waitPush(t, "n2", func(ds wire.DesiredState) bool { return ds.Version > 0 })
	count := func() int {
		f.push.mu.Lock()
		defer f.push.mu.Unlock()
		return len(f.push.got["n1"]) + len(f.push.got["n2"])
	}
	before := count()
	f.clock.Add(5 * time.Second)
	// n1 applied its version, which is older than n2's: nothing to resend.
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 2, MemSchedulable: 4 << 30, DesiredVersion: d1.Version}, "p1")
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n2", Seq: 2, MemSchedulable: 4 << 30, DesiredVersion: d2.Version}, "p2")
	if got := count(); got != before {
		t.Fatalf("%d pushes after heartbeats that showed the last push, want none", got-before)
	}
	// n2 lost its push (a restarted agent): it is sent again.
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n2", Seq: 3, MemSchedulable: 4 << 30}, "p2")
	f.waitPush(t, "n2", func(ds wire.DesiredState) bool { return ds.Version > d2.Version })
}

// Run's cycles follow the state's changes and the volatile inputs without
// anyone calling Trigger after a write. Each cycle waits in Tick until the
// test takes it from cycles, so the test knows which cycle saw what; the
// periodic cycle (an hour) never comes.
func TestRunCyclesOnStateChanges(t *testing.T) {
	cycles := make(chan struct{})
	f := newFixture(t, func(c *Config) {
		c.Tick = func(ctx context.Context, _ time.Time) {
			select {
			case cycles <- struct{}{}:
			case <-ctx.Done():
			}
		}
	})
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.o.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	nextCycle := func(why string) {
		t.Helper()
		select {
		case <-cycles:
		case <-time.After(10 * time.Second):
			t.Fatalf("no scheduling cycle after %s", why)
		}
	}
	apply := func(c state.Command) {
		t.Helper()
		if res, err := f.app.Apply(context.Background(), c); err != nil || res[0].Err != nil {
			t.Fatalf("apply %d: %v %v", c.Type, err, res)
		}
	}

	nextCycle("the start")
	id := f.submit(t)
	nextCycle("a submission") // no node yet: the work waits
	f.o.Heartbeat(f.ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 1 << 30}, "p1")
	nextCycle("a new node")
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 1 })

	second := f.submit(t)
	nextCycle("a submission") // n1 is full: the second work waits
	f.o.Heartbeat(f.ctx, wire.Heartbeat{Node: "n1", Seq: 2, MemSchedulable: 2 << 30}, "p1")
	nextCycle("a node's capacity grew")
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 2 })

	apply(state.Command{Type: state.CmdCancel, Time: 2, WorkID: second, By: "alice"})
	nextCycle("a cancel")
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool {
		return len(ds.Procs) == 2 && ds.Procs[1].ID == "2.1" && ds.Procs[1].Stop
	})

	f.o.Report(f.ctx, "n1", []wire.ProcStatus{{ID: "1.1", WorkID: id, State: wire.ProcExited, ExitCode: 0}})
	nextCycle("a process exit")

	apply(state.Command{Type: state.CmdNodeAdmin, Time: 3, Node: "n1", NodeState: state.NodeVariedOff})
	nextCycle("a node varied off")

	f.o.SetScheduler(f.o.cfg.Scheduler)
	nextCycle("a new scheduler configuration")
}

// onlyApply hides ApplyLater (state.LaterApplier): every report is
// applied before Report returns.
type onlyApply struct{ state.Applier }

// A node's pusher lives as long as the term, not as long as the call that
// created it. After a head change the first push to a node that already
// runs work comes from its first heartbeat, whose context ends with the
// call; later desired states must still reach the node.
func TestPusherOutlivesTheCallThatStartedIt(t *testing.T) {
	f := newFixture(t)
	first := f.submit(t)
	f.o.Heartbeat(f.ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30}, "p")
	if err := f.o.cycle(f.ctx); err != nil {
		t.Fatal(err)
	}
	ds := f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 1 })
	running := wire.ProcStatus{ID: ds.Procs[0].ID, WorkID: first, State: wire.ProcRunning, PID: 7}

	// A new term over the same state: n1 is Unknown until it reports. Its
	// applier writes a start at once, so that the report pushes.
	cfg := f.o.cfg
	cfg.Apply = onlyApply{cfg.Apply}
	f.o = New(cfg)
	f.o.runCtx = f.ctx
	f.o.seedNodes()
	call, cancel := context.WithCancel(context.Background())
	f.o.Heartbeat(call, wire.Heartbeat{Node: "n1", Seq: 2, MemSchedulable: 4 << 30, Procs: []wire.ProcStatus{running}}, "p")
	cancel()
	f.o.mu.Lock()
	started := f.o.pushers["n1"] != nil
	f.o.mu.Unlock()
	if !started {
		t.Fatal("the heartbeat did not start n1's pusher; this test no longer covers the case")
	}

	second := f.submit(t)
	if err := f.o.cycle(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool {
		return len(ds.Procs) == 2 && ds.Procs[0].WorkID == first && ds.Procs[1].WorkID == second
	})
}

// A new head declares no node down within the failover grace of its
// term's start, however long ago the node last heartbeated the old head
// and whether the new head heard from it once or not; after the grace,
// node_timeout after the last heartbeat holds as ever.
func TestFailoverGrace(t *testing.T) {
	const nodeTimeout = 10 * time.Second
	tests := []struct {
		name  string
		grace time.Duration // 0: node_timeout
		beats []time.Duration
		check time.Duration // when the new head checks, from its term's start
		down  bool
	}{
		{"silent, within node_timeout of the term's start", 0, nil, 9 * time.Second, false},
		{"silent past node_timeout of the term's start", 0, nil, 11 * time.Second, true},
		{"silent, within a longer grace", 30 * time.Second, nil, 29 * time.Second, false},
		{"silent past a longer grace", 30 * time.Second, nil, 31 * time.Second, true},
		{"one heartbeat early in the term, then silent within the grace", 30 * time.Second, []time.Duration{time.Second}, 29 * time.Second, false},
		{"one heartbeat late in the grace, node_timeout not passed", 30 * time.Second, []time.Duration{25 * time.Second}, 34 * time.Second, false},
		{"one heartbeat late in the grace, silent past node_timeout", 30 * time.Second, []time.Duration{25 * time.Second}, 36 * time.Second, true},
		{"heartbeats resume within node_timeout", 0, []time.Duration{9 * time.Second}, 18 * time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.FailoverGrace = tc.grace })
			ctx := f.ctx
			// Under the old head, n1 is up and runs a process.
			id := f.submit(t)
			hb := wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30}
			f.o.Heartbeat(ctx, hb, "p1")
			if err := f.o.cycle(ctx); err != nil {
				t.Fatal(err)
			}
			var proc wire.ProcStatus
			f.fsm.View(func(v *state.View) {
				if w := v.Work(id); len(w.Procs) == 1 {
					proc = wire.ProcStatus{ID: w.Procs[0].ID, WorkID: id, State: wire.ProcRunning, PID: 42}
				}
			})
			if proc.ID == "" {
				t.Fatal("no process placed on n1")
			}
			f.o.Report(ctx, "n1", []wire.ProcStatus{proc})

			// The old head dies; the election takes longer than
			// node_timeout, so n1's last heartbeat to any head is old
			// when the new term starts.
			f.clock.Add(2 * nodeTimeout)
			start := f.clock.Now()
			f.newTerm()
			if n := f.o.Nodes(); len(n) != 1 || n[0].State != NodeUnknown {
				t.Fatalf("nodes at the start of the term: %+v", n)
			}
			for i, b := range tc.beats {
				f.clock.Add(start.Add(b).Sub(f.clock.Now()))
				hb.Seq = uint64(2 + i)
				hb.Procs = []wire.ProcStatus{proc}
				f.o.Heartbeat(ctx, hb, "p1")
				if err := f.o.cycle(ctx); err != nil {
					t.Fatal(err)
				}
			}
			f.clock.Add(start.Add(tc.check).Sub(f.clock.Now()))
			if err := f.o.cycle(ctx); err != nil {
				t.Fatal(err)
			}
			n := f.o.Nodes()
			if len(n) != 1 || (n[0].State == NodeDown) != tc.down {
				t.Errorf("n1 at %v into the term: %+v; want down %v", tc.check, n, tc.down)
			}
			f.fsm.View(func(v *state.View) {
				lost := v.Work(id).Procs[0].State == wire.ProcLost
				if lost != tc.down {
					t.Errorf("process %s lost %v, want %v", proc.ID, lost, tc.down)
				}
			})
		})
	}
}

// An acknowledgement goes out in the desired state the node receives, not
// in every later one; a report of the process that still comes after it
// (the node had not applied it yet, or lost it) is acknowledged again.
func TestAckDeliveredOnce(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	id := f.submit(t)
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30}, "peer1")
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 1 })
	ended := wire.ProcStatus{ID: "1.1", WorkID: id, State: wire.ProcExited, PID: 42}
	f.o.Report(ctx, "n1", []wire.ProcStatus{ended})
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return slices.Equal(ds.Ack, []string{"1.1"}) })

	// Once delivered, the acknowledgement is not computed again, and a
	// cycle pushes nothing new.
	deadline := time.Now().Add(10 * time.Second)
	for len(f.o.desired("n1").Ack) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the delivered acknowledgement is still in the desired state: %+v", f.o.desired("n1"))
		}
		time.Sleep(time.Millisecond)
	}
	pushes := func() int {
		f.push.mu.Lock()
		defer f.push.mu.Unlock()
		return len(f.push.got["n1"])
	}
	before := pushes()
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := pushes(); got != before {
		t.Errorf("cycles after the delivered acknowledgement pushed %d more desired states", got-before)
	}

	// The node reports the process again: acknowledged again.
	f.o.Report(ctx, "n1", []wire.ProcStatus{ended})
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return slices.Equal(ds.Ack, []string{"1.1"}) && pushes() > before })
}

// TestPushesFollowTheState: pushes come from several goroutines at once
// (cycles, reports, heartbeats, Submit). A desired state computed from an
// older view of the durable state must never be numbered after one
// computed from a newer view: the agent applies the newest version, and
// would stop what the newer state started. Here works are only added, so
// in version order the number of processes never shrinks.
func TestPushesFollowTheState(t *testing.T) {
	const works = 60
	f := newFixture(t)
	f.o.Heartbeat(f.ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 2 * works << 30}, "p1")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 { // as reports and heartbeats push beside the cycle
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				f.o.pushNode("n1", true)
			}
		}()
	}
	for range works {
		f.submit(t)
		if err := f.o.cycle(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	f.o.pushNode("n1", true)
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == works })
	f.push.mu.Lock()
	defer f.push.mu.Unlock()
	all := f.push.got["n1"]
	for i := 1; i < len(all); i++ {
		if all[i].Version <= all[i-1].Version {
			t.Fatalf("push %d: version went from %d to %d", i, all[i-1].Version, all[i].Version)
		}
		if len(all[i].Procs) < len(all[i-1].Procs) {
			t.Fatalf("push %d (version %d) has %d processes, the one before (version %d) %d: a state older than one already pushed was pushed after it",
				i, all[i].Version, len(all[i].Procs), all[i-1].Version, len(all[i-1].Procs))
		}
	}
}
