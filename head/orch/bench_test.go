package orch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/head/state/statetest"
	"github.com/ducc-project/ducc/wire"
)

// nopPusher drops desired states.
type nopPusher struct{}

func (nopPusher) PushDesired(context.Context, string, string, wire.DesiredState) error { return nil }

// benchOrch returns an orchestrator over nodes up nodes and a state that
// holds finished managed reservations (each ran one process, long ago) and
// live ones, each with a running process, spread over the nodes. The first
// cycle has placed and pushed everything, so a further cycle is the steady
// state: nothing to start, nothing to push.
func benchOrch(b *testing.B, finished, live, nodes int) *Orchestrator {
	b.Helper()
	fsm := state.New()
	app := &statetest.Applier{FSM: fsm}
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Unix(1_800_000_000, 0)
	o := New(Config{FSM: fsm, Apply: app, Push: nopPusher{}, Now: func() time.Time { return now },
		Cycle: time.Hour, NodeTimeout: time.Hour})
	o.runCtx = ctx
	b.Cleanup(func() { cancel(); o.wg.Wait() })
	node := func(i int) string { return fmt.Sprintf("n%03d", i%nodes) }
	work := func() *state.Work {
		return &state.Work{Kind: wire.WorkManaged, User: "alice", Class: "fixed", Path: "true", Memory: 1 << 20}
	}
	id := uint64(0)
	ts := now.Add(-time.Hour).UnixMilli() // ended long ago: no report of them is still held
	const perEntry = 100
	var cmds []state.Command
	flush := func() {
		if _, err := app.Apply(ctx, cmds...); err != nil {
			b.Fatal(err)
		}
		cmds = cmds[:0]
	}
	for i := range finished + live {
		id++
		pid := fmt.Sprintf("%d.1", id)
		cmds = append(cmds,
			state.Command{Type: state.CmdSubmit, Time: ts, Work: work()},
			state.Command{Type: state.CmdAssign, Time: ts, WorkID: id, Assign: &state.Assignment{Node: node(i), Shares: 1, MemoryLimit: 1 << 20}},
			state.Command{Type: state.CmdProc, Time: ts, Proc: &wire.ProcStatus{ID: pid, WorkID: id, Node: node(i), State: wire.ProcRunning, PID: 100}})
		if i < finished {
			cmds = append(cmds, state.Command{Type: state.CmdProc, Time: ts, Proc: &wire.ProcStatus{ID: pid, WorkID: id, Node: node(i), State: wire.ProcExited, EndedAt: ts}})
		}
		if len(cmds) >= perEntry {
			flush()
		}
	}
	flush()
	for i := range nodes {
		o.Heartbeat(ctx, wire.Heartbeat{Node: node(i), Seq: 1, MemSchedulable: 1 << 40}, "peer")
	}
	if err := o.cycle(ctx); err != nil {
		b.Fatal(err)
	}
	return o
}

// BenchmarkDesired is one node's desired state (10 nodes, 100 running
// processes) with and without 10,000 finished jobs in the state.
func BenchmarkDesired(b *testing.B) {
	for _, finished := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("finished=%d", finished), func(b *testing.B) {
			o := benchOrch(b, finished, 100, 10)
			b.ReportAllocs()
			for b.Loop() {
				if ds := o.desired("n003"); len(ds.Procs) != 10 {
					b.Fatalf("%d processes on n003, want 10", len(ds.Procs))
				}
			}
		})
	}
}

// BenchmarkCycle is a steady scheduling cycle (10 nodes, 100 running
// processes, nothing to do) with and without 10,000 finished jobs.
func BenchmarkCycle(b *testing.B) {
	for _, finished := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("finished=%d", finished), func(b *testing.B) {
			o := benchOrch(b, finished, 100, 10)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := o.cycle(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
