package orch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// flakyApplier fails the applies it is told to, then applies as the
// wrapped one does.
type flakyApplier struct {
	state.Applier
	mu    sync.Mutex
	fails int
}

func (a *flakyApplier) Apply(ctx context.Context, cmds ...state.Command) ([]state.Result, error) {
	a.mu.Lock()
	fail := a.fails > 0
	if fail {
		a.fails--
	}
	a.mu.Unlock()
	if fail {
		return nil, errors.New("not the leader")
	}
	return a.Applier.Apply(ctx, cmds...)
}

// ended records the ProcEnded calls.
type ended struct {
	mu    sync.Mutex
	calls []string
}

func (e *ended) add(_ context.Context, _ uint64, proc string) {
	e.mu.Lock()
	e.calls = append(e.calls, proc)
	e.mu.Unlock()
}

func (e *ended) count(proc string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, c := range e.calls {
		if c == proc {
			n++
		}
	}
	return n
}

// runningOn places one process on n1 and returns its status as the agent
// reports it.
func runningOn(t *testing.T, f *fixture) wire.ProcStatus {
	t.Helper()
	id := f.submit(t)
	f.o.Heartbeat(f.ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30}, "p1")
	if err := f.o.cycle(f.ctx); err != nil {
		t.Fatal(err)
	}
	st := wire.ProcStatus{ID: "1.1", WorkID: id, State: wire.ProcRunning, PID: 42, StartedAt: 5}
	f.o.Report(f.ctx, "n1", []wire.ProcStatus{st})
	return st
}

func procState(f *fixture, id uint64) string {
	var s string
	f.fsm.View(func(v *state.View) { s = v.Work(id).Procs[0].State })
	return s
}

// TestFrozenNodeComesBack: n1's agent stops sending heartbeats (frozen)
// for longer than node_timeout, then goes on. Its process is written off
// once; on its return the head does not want it (the agent stops it), the
// agent's report of it running changes nothing, and its end is
// acknowledged without a second write-off.
func TestFrozenNodeComesBack(t *testing.T) {
	var gone ended
	f := newFixture(t, func(c *Config) { c.ProcEnded = gone.add })
	ctx := f.ctx
	st := runningOn(t, f)

	f.clock.Add(11 * time.Second)
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := procState(f, st.WorkID); s != wire.ProcLost || gone.count(st.ID) != 1 {
		t.Fatalf("after node_timeout: process %s, %d ProcEnded calls", s, gone.count(st.ID))
	}

	// The agent goes on: a heartbeat that still shows the process running.
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 2, MemSchedulable: 4 << 30, Procs: []wire.ProcStatus{st}}, "p1")
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := nodeNamed(t, f.o, "n1"); n.State != NodeUp {
		t.Fatalf("n1 after its return: %s", n.State)
	}
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 0 })
	if s := procState(f, st.WorkID); s != wire.ProcLost {
		t.Errorf("the returning agent's report revived the process: %s", s)
	}

	// The agent stops it and reports its end: acknowledged, not ended twice.
	st.State, st.EndedAt, st.ExitCode = wire.ProcExited, 20, -1
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 3, MemSchedulable: 4 << 30, Procs: []wire.ProcStatus{st}}, "p1")
	f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Ack) == 1 && ds.Ack[0] == st.ID })
	f.clock.Add(11 * time.Second)
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 4, MemSchedulable: 4 << 30}, "p1")
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := gone.count(st.ID); n != 1 {
		t.Errorf("ProcEnded called %d times for %s, want 1", n, st.ID)
	}
}

// TestWriteOffRetried: the write-off of a down node's processes fails (the
// head could not apply it); the next cycle tries again, so their items are
// not held forever.
func TestWriteOffRetried(t *testing.T) {
	var gone ended
	flaky := &flakyApplier{}
	f := newFixture(t, func(c *Config) {
		flaky.Applier = c.Apply
		c.Apply, c.ProcEnded = flaky, gone.add
	})
	ctx := f.ctx
	st := runningOn(t, f)

	f.clock.Add(11 * time.Second)
	flaky.fails = 1
	_ = f.o.cycle(ctx)
	if n := nodeNamed(t, f.o, "n1"); n.State != NodeDown {
		t.Fatalf("n1: %s, want down", n.State)
	}
	if s := procState(f, st.WorkID); s == wire.ProcLost || gone.count(st.ID) != 0 {
		t.Fatalf("written off although the apply failed: %s", s)
	}
	f.clock.Add(time.Second)
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := procState(f, st.WorkID); s != wire.ProcLost || gone.count(st.ID) != 1 {
		t.Errorf("after the next cycle: process %s, %d ProcEnded calls; want lost, 1", s, gone.count(st.ID))
	}
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := gone.count(st.ID); n != 1 {
		t.Errorf("ProcEnded called %d times, want 1", n)
	}
}
