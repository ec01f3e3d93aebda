package orch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// A node's desired state holds its own processes (those of finished work
// that still run, to be stopped, too) and acknowledges its own ended
// processes only, until the reports are pruned.
func TestDesiredIsPerNode(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	apply := func(cmds ...state.Command) {
		t.Helper()
		res, err := f.app.Apply(context.Background(), cmds...)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	// Four pieces of work, two on each node.
	for i := range 4 {
		id := f.submit(t)
		apply(state.Command{Type: state.CmdAssign, Time: 1, WorkID: id,
			Assign: &state.Assignment{Node: []string{"n1", "n2"}[i%2], Shares: 1, MemoryLimit: 1 << 30}})
	}
	now := f.clock.Now().UnixMilli()
	// 1.1 (n1) ends; 2.1 (n2) ends; 3.1 (n1) runs in finished work.
	f.o.Report(ctx, "n1", []wire.ProcStatus{{ID: "1.1", WorkID: 1, State: wire.ProcExited, EndedAt: now}})
	f.o.Report(ctx, "n2", []wire.ProcStatus{{ID: "2.1", WorkID: 2, State: wire.ProcExited, EndedAt: now}})
	apply(state.Command{Type: state.CmdFinish, Time: 2, WorkID: 3, Completion: state.CompletionCanceledBySystem})

	type procs struct {
		ids, stops, acks []string
	}
	get := func(node string) procs {
		var p procs
		ds := f.o.desired(node)
		for _, ps := range ds.Procs {
			p.ids = append(p.ids, ps.ID)
			if ps.Stop {
				p.stops = append(p.stops, ps.ID)
			}
		}
		p.acks = ds.Ack
		return p
	}
	tests := []struct {
		node, when                 string
		wantIDs, wantStop, wantAck []string
	}{
		{node: "n1", when: "reported", wantIDs: []string{"3.1"}, wantStop: []string{"3.1"}, wantAck: []string{"1.1"}},
		{node: "n2", when: "reported", wantIDs: []string{"4.1"}, wantAck: []string{"2.1"}},
		{node: "n3", when: "reported"},
		{node: "n1", when: "pruned", wantIDs: []string{"3.1"}, wantStop: []string{"3.1"}},
		{node: "n2", when: "pruned", wantIDs: []string{"4.1"}},
	}
	for _, tc := range tests {
		if tc.when == "pruned" {
			f.o.prune(f.clock.Now().Add(6 * time.Minute))
		}
		got := get(tc.node)
		if !slices.Equal(got.ids, tc.wantIDs) || !slices.Equal(got.stops, tc.wantStop) || !slices.Equal(got.acks, tc.wantAck) {
			t.Errorf("%s, %s: processes %v, stops %v, acks %v; want %v, %v, %v", tc.node, tc.when,
				got.ids, got.stops, got.acks, tc.wantIDs, tc.wantStop, tc.wantAck)
		}
	}
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	if len(f.o.endedOn) != 0 || len(f.o.reported) != 0 {
		t.Errorf("after pruning: endedOn %v, reported %d", f.o.endedOn, len(f.o.reported))
	}
}

// TestPruneInOrder checks that prune forgets the reports that ended more
// than five minutes ago, and only those, a report that ended later again
// included.
func TestPruneInOrder(t *testing.T) {
	f := newFixture(t)
	t0 := f.clock.Now()
	at := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	f.o.mu.Lock()
	f.o.noteReported(wire.ProcStatus{ID: "1.1", Node: "n1", State: wire.ProcExited, EndedAt: at(0)})
	f.o.noteReported(wire.ProcStatus{ID: "2.1", Node: "n1", State: wire.ProcExited, EndedAt: at(time.Minute)})
	f.o.noteReported(wire.ProcStatus{ID: "3.1", Node: "n1", State: wire.ProcExited, EndedAt: at(4 * time.Minute)})
	f.o.noteReported(wire.ProcStatus{ID: "4.1", Node: "n1", State: wire.ProcRunning})
	// 2.1's end, reported again, is later than first reported.
	f.o.noteReported(wire.ProcStatus{ID: "2.1", Node: "n1", State: wire.ProcExited, EndedAt: at(7 * time.Minute)})
	f.o.mu.Unlock()
	kept := func() []string {
		f.o.mu.Lock()
		defer f.o.mu.Unlock()
		var ids []string
		for id := range f.o.reported {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return ids
	}
	for _, tc := range []struct {
		now  time.Duration
		want []string
	}{
		{5*time.Minute - time.Millisecond, []string{"1.1", "2.1", "3.1", "4.1"}},
		{6 * time.Minute, []string{"2.1", "3.1", "4.1"}},
		{10 * time.Minute, []string{"2.1", "4.1"}},
		{13 * time.Minute, []string{"4.1"}},
	} {
		f.o.prune(t0.Add(tc.now))
		if got := kept(); !slices.Equal(got, tc.want) {
			t.Errorf("after prune at +%v: reports of %v, want %v", tc.now, got, tc.want)
		}
	}
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	if len(f.o.endedQ) != 0 {
		t.Errorf("queue left %v", f.o.endedQ)
	}
}
