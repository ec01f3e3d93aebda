package orch

import (
	"reflect"
	"testing"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

func TestRequested(t *testing.T) {
	cfg := rm.DefaultConfig()
	in := rm.Input{Config: cfg, Work: []rm.Work{{ID: 1, Memory: 256 << 20}, {ID: 2}}}
	got := requested(in)
	if got[1] != 256<<20 || got[2] != cfg.DefaultMemory.Bytes() || len(got) != 2 {
		t.Errorf("requested = %v, want 1: 256 MiB, 2: the default %d", got, cfg.DefaultMemory.Bytes())
	}
}

func TestServiceKeyRoundTrip(t *testing.T) {
	for _, c := range []struct {
		id   uint64
		inst int
	}{{1, 0}, {7, 3}, {1 << 40, maxInstances - 1}} {
		id, inst := fromKey(svcKey(c.id, c.inst))
		if id != c.id || inst != c.inst {
			t.Errorf("fromKey(svcKey(%d, %d)) = %d, %d", c.id, c.inst, id, inst)
		}
	}
	if id, inst := fromKey(42); id != 42 || inst != 0 {
		t.Errorf("fromKey(42) = %d, %d", id, inst)
	}
}

func TestPlanCommands(t *testing.T) {
	const ts = 1000
	active := []*state.Work{{ID: 1}, {ID: 2, Canceling: true}, {ID: 3}}
	tests := []struct {
		name        string
		plan        rm.Plan
		asked       map[uint64]int64
		wantCmds    []state.Command
		wantPending map[uint64]Waiting
	}{
		{
			name:        "empty plan",
			wantPending: map[uint64]Waiting{},
		},
		{
			name: "starts of canceling work are dropped, service instances keep their id",
			plan: rm.Plan{Starts: []rm.Start{
				{WorkID: 1, Node: "n1", Shares: 2, Memory: 2 << 30},
				{WorkID: 2, Node: "n1", Shares: 1, Memory: 1 << 30},
				{WorkID: svcKey(3, 4), Node: "n2", Shares: 1, Memory: 1 << 30},
			}},
			wantCmds: []state.Command{
				{Type: state.CmdAssign, Time: ts, WorkID: 1, Assign: &state.Assignment{Node: "n1", Shares: 2, MemoryLimit: 2 << 30}},
				{Type: state.CmdAssign, Time: ts, WorkID: 3, Assign: &state.Assignment{Node: "n2", Shares: 1, MemoryLimit: 1 << 30, Instance: 4}},
			},
			wantPending: map[uint64]Waiting{},
		},
		{
			name: "the memory cap is what was asked, under the shares held",
			plan: rm.Plan{Starts: []rm.Start{
				{WorkID: 1, Node: "n1", Shares: 1, Memory: 1 << 30},
				{WorkID: drvKey(3), Node: "n1", Shares: 1, Memory: 1 << 30},
				{WorkID: svcKey(3, 0), Node: "n2", Shares: 2, Memory: 2 << 30},
				{WorkID: svcKey(3, 1), Node: "n2", Shares: 1, Memory: 1 << 30},
			}},
			asked: map[uint64]int64{1: 256 << 20, drvKey(3): 300 << 20, svcKey(3, 0): 1536 << 20, svcKey(3, 1): 4 << 30},
			wantCmds: []state.Command{
				{Type: state.CmdAssign, Time: ts, WorkID: 1, Assign: &state.Assignment{Node: "n1", Shares: 1, MemoryLimit: 256 << 20}},
				{Type: state.CmdAssign, Time: ts, WorkID: 3, Assign: &state.Assignment{Node: "n1", Shares: 1, MemoryLimit: 300 << 20, Kind: wire.ProcDriver}},
				{Type: state.CmdAssign, Time: ts, WorkID: 3, Assign: &state.Assignment{Node: "n2", Shares: 2, MemoryLimit: 1536 << 20}},
				// Never above the shares held.
				{Type: state.CmdAssign, Time: ts, WorkID: 3, Assign: &state.Assignment{Node: "n2", Shares: 1, MemoryLimit: 1 << 30, Instance: 1}},
			},
			wantPending: map[uint64]Waiting{},
		},
		{
			name: "stops say why, in the scheduler's words or its reason",
			plan: rm.Plan{Stops: []rm.Stop{
				{ProcID: "1.1", WorkID: 1, Reason: rm.Preempted},
				{ProcID: "3.2", WorkID: svcKey(3, 1), Reason: rm.Evicted, Text: "evicted for work 9"},
			}},
			wantCmds: []state.Command{
				{Type: state.CmdStopProc, Time: ts, WorkID: 1, ProcID: "1.1", Reason: "preempted"},
				{Type: state.CmdStopProc, Time: ts, WorkID: 3, ProcID: "3.2", Reason: "evicted for work 9"},
			},
			wantPending: map[uint64]Waiting{},
		},
		{
			name: "first pending reason of a work wins; shrinking overrides",
			plan: rm.Plan{
				Pending: []rm.Pending{
					{WorkID: svcKey(3, 0), Reason: "instance 0 waits"},
					{WorkID: svcKey(3, 1), Reason: "instance 1 waits"},
					{WorkID: 1, Have: 1, Want: 3, Code: rm.WaitResources, Reason: "no room"},
				},
				Shrinking: []rm.Shrinking{{WorkID: 1, Procs: []string{"1.1"}, Reason: "gives back its share"}},
			},
			wantPending: map[uint64]Waiting{
				1: {Code: rm.WaitShrinking, Reason: "gives back its share", Have: 1, Want: 3},
				3: {Reason: "instance 0 waits"},
			},
		},
		{
			name: "held jobs say why, next to why they wait",
			plan: rm.Plan{
				Pending: []rm.Pending{{WorkID: 1, Have: 1, Want: 2, Code: rm.WaitAtShare, Reason: "at fair share"}},
				Held: []rm.Held{
					{WorkID: 1, Want: 2, Max: 8, Code: rm.HeldDoubling, Class: "normal"},
					{WorkID: 3, Want: 1, Max: 4, Code: rm.HeldInitialization, Class: "normal", Arg: 1},
				},
			},
			wantPending: map[uint64]Waiting{
				1: {Code: rm.WaitAtShare, Reason: "at fair share", Have: 1, Want: 2, HeldCode: rm.HeldDoubling,
					Held: rm.Held{WorkID: 1, Want: 2, Max: 8, Code: rm.HeldDoubling, Class: "normal"}},
				3: {Want: 1, HeldCode: rm.HeldInitialization, Held: rm.Held{WorkID: 3, Want: 1, Max: 4, Code: rm.HeldInitialization, Class: "normal", Arg: 1}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmds, pending := planCommands(tc.plan, active, ts, tc.asked, gpuAsks{})
			if !reflect.DeepEqual(cmds, tc.wantCmds) {
				t.Errorf("commands\n got %+v\nwant %+v", cmds, tc.wantCmds)
			}
			if !reflect.DeepEqual(pending, tc.wantPending) {
				t.Errorf("pending %v, want %v", pending, tc.wantPending)
			}
		})
	}
}
