package orch

import (
	"fmt"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

func nodeNamed(t *testing.T, o *Orchestrator, name string) Node {
	t.Helper()
	for _, n := range o.Nodes() {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s in %+v", name, o.Nodes())
	return Node{}
}

// A delta heartbeat keeps the inventory of the last full one and folds in
// the process changes it carries.
func TestDeltaHeartbeatKeepsInventory(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	id := f.submit(t)
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30, CPUs: 8, Addrs: []string{"/ip4/10.0.0.1/tcp/1"}}, "p")
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 1 })
	f.clock.Add(time.Second)
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 2, MemUsed: 1 << 30, Delta: true,
		Procs: []wire.ProcStatus{{ID: "1.1", WorkID: id, State: wire.ProcRunning, PID: 42}}}, "p")
	n := nodeNamed(t, f.o, "n1")
	if n.State != NodeUp || n.HB.MemSchedulable != 4<<30 || n.HB.CPUs != 8 || len(n.HB.Addrs) != 1 || n.HB.MemUsed != 1<<30 || n.HB.Seq != 2 {
		t.Errorf("node after delta: %+v", n)
	}
	if !n.LastSeen.Equal(f.clock.Now()) {
		t.Errorf("last seen %v, want %v", n.LastSeen, f.clock.Now())
	}
	f.fsm.View(func(v *state.View) {
		if p := v.Work(id).Procs[0]; p.State != wire.ProcRunning || p.PID != 42 {
			t.Errorf("process after delta: %+v", p)
		}
	})
}

// A new head that gets a delta from a node before any full heartbeat
// keeps the node alive but Unknown (no inventory, no new work) until the
// full one comes.
func TestDeltaBeforeFullKeepsNodeUnknown(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	for i := range 3 {
		f.clock.Add(6 * time.Second) // 18 s in all: past the 10 s node timeout
		f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: uint64(i + 1), Delta: true}, "p")
		f.o.checkNodes(ctx, f.clock.Now())
		if n := nodeNamed(t, f.o, "n1"); n.State != NodeUnknown || n.Inventory {
			t.Fatalf("after delta %d: %+v", i+1, n)
		}
	}
	id := f.submit(t)
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.o.Pending(id); got == "" {
		t.Errorf("work placed on a node without inventory")
	}
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 4, MemSchedulable: 4 << 30}, "p")
	if n := nodeNamed(t, f.o, "n1"); n.State != NodeUp || !n.Inventory || n.HB.MemSchedulable != 4<<30 {
		t.Fatalf("after full: %+v", n)
	}
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 1 })
}

// The announced interval grows with the nodes beyond
// MaxHeartbeatsPerSecond, the node timeout with it; when nodes go, the
// longer timeout holds until agents have had time to follow the shorter
// interval.
func TestHeartbeatIntervalStretches(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Heartbeat = time.Second; c.MaxHeartbeatsPerSecond = 100 })
	ctx := f.ctx
	beat := func(from, to int, seq uint64) {
		for i := from; i < to; i++ {
			f.o.Heartbeat(ctx, wire.Heartbeat{Node: fmt.Sprintf("n%03d", i), Seq: seq, MemSchedulable: 1 << 30}, "p")
		}
	}
	check := func(step string, iv, timeout time.Duration) {
		t.Helper()
		if got := f.o.HeartbeatInterval(); got != iv {
			t.Errorf("%s: interval %v, want %v", step, got, iv)
		}
		if got := f.o.NodeTimeoutNow(); got != timeout {
			t.Errorf("%s: node timeout %v, want %v", step, got, timeout)
		}
	}
	beat(0, 50, 1)
	check("50 nodes", time.Second, 10*time.Second)
	beat(50, 251, 1)
	f.clock.Add(time.Second) // recomputed once a second
	check("251 nodes", 2600*time.Millisecond, 26*time.Second)

	// 200 nodes stop; 51 go on. They are declared down after the
	// stretched timeout, not the base one.
	for range 25 {
		f.clock.Add(time.Second)
		beat(0, 51, 2)
		f.o.checkNodes(ctx, f.clock.Now())
	}
	if n := nodeNamed(t, f.o, "n100"); n.State != NodeUp {
		t.Fatalf("node down after 25 s with a 26 s timeout: %+v", n)
	}
	f.clock.Add(2 * time.Second)
	beat(0, 51, 3)
	f.o.checkNodes(ctx, f.clock.Now())
	if n := nodeNamed(t, f.o, "n100"); n.State != NodeDown {
		t.Fatalf("node up 27 s after its last heartbeat: %+v", n)
	}
	f.clock.Add(time.Second)
	// 51 nodes: back to 1 s, but the 26 s timeout holds for a while.
	check("51 nodes, just after", time.Second, 26*time.Second)
	f.clock.Add(31 * time.Second)
	beat(0, 51, 4)
	check("51 nodes, later", time.Second, 10*time.Second)
}

// Without MaxHeartbeatsPerSecond the interval never stretches.
func TestHeartbeatIntervalFixed(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Heartbeat = 500 * time.Millisecond })
	for i := range 1000 {
		f.o.Heartbeat(f.ctx, wire.Heartbeat{Node: fmt.Sprintf("n%04d", i), Seq: 1, MemSchedulable: 1 << 30}, "p")
	}
	if got, want := f.o.HeartbeatInterval(), 500*time.Millisecond; got != want {
		t.Errorf("interval %v, want %v", got, want)
	}
	if got, want := f.o.NodeTimeoutNow(), 10*time.Second; got != want {
		t.Errorf("node timeout %v, want %v", got, want)
	}
}
