package orch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/head/state/statetest"
	"github.com/ducc-project/ducc/wire"
)

// logApplier keeps every entry it applies, as a Raft log would, so that a
// test can replay them into a new head's state.
type logApplier struct {
	inner state.Applier
	mu    sync.Mutex
	log   [][]byte
}

func (a *logApplier) Apply(ctx context.Context, cmds ...state.Command) ([]state.Result, error) {
	data, err := state.Encode(cmds...)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.log = append(a.log, data)
	a.mu.Unlock()
	return a.inner.Apply(ctx, cmds...)
}

// replay applies the kept entries to a new state, as a new head restoring
// from the log does.
func (a *logApplier) replay(t *testing.T) *state.FSM {
	t.Helper()
	fsm := state.New()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, data := range a.log {
		res, _ := fsm.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}).([]state.Result)
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("replay of entry %d: %v", i+1, r.Err)
			}
		}
	}
	return fsm
}

func (a *logApplier) entries() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.log)
}

func managedRun(mem int64) state.Command {
	return state.Command{Type: state.CmdSubmit, Time: 5, Work: &state.Work{
		Kind: wire.WorkManaged, User: "alice", Class: "fixed", Path: "true", Memory: mem}}
}

// TestSubmitPlaces: a managed reservation that fits on an idle node is
// assigned in its submission's own entry (and only then), its node is
// pushed the process, and a new head that replays the log knows the
// assignment and pushes the same process.
func TestSubmitPlaces(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, f *fixture)
		budget time.Duration
		mem    int64
		placed bool
	}{
		{name: "idle node with room", budget: time.Hour, mem: 1 << 30, placed: true},
		{name: "no node has room", budget: time.Hour, mem: 8 << 30},
		{name: "never (negative budget)", budget: -1, mem: 1 << 30},
		{name: "last pass over budget", budget: time.Hour, mem: 1 << 30, setup: func(_ *testing.T, f *fixture) {
			f.o.lastSched = 2 * time.Hour
		}},
		{name: "work waiting that fits first", budget: time.Hour, mem: 1 << 30, setup: func(t *testing.T, f *fixture) {
			f.submit(t) // not placed yet: no cycle ran since
		}},
		{name: "a cycle is planning", budget: time.Hour, mem: 1 << 30, setup: func(t *testing.T, f *fixture) {
			f.o.placeMu.Lock()
			t.Cleanup(f.o.placeMu.Unlock)
		}},
		{name: "a node overdue for its heartbeat", budget: time.Hour, mem: 1 << 30, setup: func(_ *testing.T, f *fixture) {
			f.clock.Add(11 * time.Second) // NodeTimeout 10s: the next cycle declares n1 down
		}},
		{name: "another submission under way", budget: time.Hour, mem: 1 << 30, setup: func(t *testing.T, f *fixture) {
			f.o.submitting.Add(1)
			t.Cleanup(func() { f.o.submitting.Add(-1) })
		}},
		{name: "orchestrator not running", budget: time.Hour, mem: 1 << 30, setup: func(_ *testing.T, f *fixture) {
			f.o.mu.Lock()
			f.o.stopped = true
			f.o.mu.Unlock()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &logApplier{}
			f := newFixture(t, func(c *Config) {
				rec.inner, c.Apply = c.Apply, rec
				c.SubmitPlaceBudget = tc.budget
			})
			ctx := f.ctx
			f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30}, "peer1")
			if err := f.o.cycle(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				tc.setup(t, f)
			}
			before := rec.entries()
			res, err := f.o.Submit(ctx, managedRun(tc.mem))
			if err != nil || len(res) != 1 || res[0].Err != nil {
				t.Fatalf("Submit: %v %+v", err, res)
			}
			if n := rec.entries() - before; n != 1 {
				t.Errorf("Submit wrote %d entries, want 1", n)
			}
			id := res[0].ID
			wantProc := ""
			if tc.placed {
				wantProc = fmt.Sprintf("%d.1", id)
			}
			if res[0].ProcID != wantProc {
				t.Errorf("Submit's result: proc %q, want %q", res[0].ProcID, wantProc)
			}
			check := func(who string, fsm *state.FSM) {
				fsm.View(func(v *state.View) {
					w := v.Work(id)
					switch {
					case w == nil:
						t.Errorf("%s: no work %d", who, id)
					case tc.placed && (len(w.Procs) != 1 || w.Procs[0].Node != "n1" || w.Procs[0].MemoryLimit != tc.mem ||
						w.Procs[0].State != wire.ProcStarting || w.State != state.StateAssigned):
						t.Errorf("%s: work %d is %s with %d processes, want one assigned to n1", who, id, w.State, len(w.Procs))
					case !tc.placed && len(w.Procs) != 0:
						t.Errorf("%s: work %d has processes %v, want none (not placed at submission)", who, id, w.Procs)
					}
				})
			}
			check("the head", f.fsm)
			if !tc.placed {
				return
			}
			f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 1 && ds.Procs[0].ID == wantProc })
			// The next cycle has nothing left to write.
			if err := f.o.cycle(ctx); err != nil {
				t.Fatal(err)
			}
			if n := rec.entries() - before; n != 1 {
				t.Errorf("the cycle after a placed submission wrote %d entries, want none", n-1)
			}

			// A new head replays the log: it knows the assignment and
			// wants the same process on n1.
			fsm := rec.replay(t)
			check("a new head", fsm)
			g := newFixture(t, func(c *Config) { c.FSM, c.Apply = fsm, &statetest.Applier{FSM: fsm} })
			g.o.seedNodes()
			g.o.Heartbeat(g.ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30}, "peer1")
			if err := g.o.cycle(g.ctx); err != nil {
				t.Fatal(err)
			}
			ds := g.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 1 })
			if ds.Procs[0].ID != wantProc || ds.Procs[0].WorkID != id {
				t.Errorf("the new head's desired state %+v, want process %s of work %d", ds.Procs, wantProc, id)
			}
		})
	}
}
