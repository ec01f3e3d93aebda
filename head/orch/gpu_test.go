package orch

import (
	"reflect"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// A full heartbeat's GPUs reach the scheduler's node, a delta keeps them,
// and the next full heartbeat replaces them.
func TestHeartbeatGPUsReachTheScheduler(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	devs := []wire.GPUDevice{{UUID: "GPU-a", Model: "H100", Memory: 80 << 30}, {UUID: "GPU-b", Model: "H100", Memory: 80 << 30, Minor: 1}}
	want := []rm.GPU{{ID: "GPU-a", Memory: 80 << 30, Model: "H100"}, {ID: "GPU-b", Memory: 80 << 30, Model: "H100"}}
	gpusOf := func() []rm.GPU {
		in := f.o.input(f.clock.Now(), f.o.Nodes(), nil)
		for _, n := range in.Nodes {
			if n.Name == "n1" {
				return n.GPUs
			}
		}
		t.Fatal("no node n1 in the scheduler's input")
		return nil
	}
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 4 << 30, GPUs: devs, GPUDiscovery: "declared"}, "p")
	if got := gpusOf(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a full heartbeat: %+v, want %+v", got, want)
	}
	f.clock.Add(time.Second)
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 2, Delta: true}, "p")
	if got := gpusOf(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a delta: %+v, want %+v", got, want)
	}
	if n := nodeNamed(t, f.o, "n1"); len(n.HB.GPUs) != 2 || n.HB.GPUDiscovery != "declared" {
		t.Fatalf("the node's heartbeat after a delta: %+v", n.HB)
	}
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 3, MemSchedulable: 4 << 30, GPUs: devs[:1]}, "p")
	if got := gpusOf(); !reflect.DeepEqual(got, want[:1]) {
		t.Fatalf("after a full heartbeat with one GPU: %+v", got)
	}
	nodes, known := f.o.GPUNodes()
	if !known || len(nodes) != 1 || len(nodes[0].GPUs) != 1 {
		t.Fatalf("GPUNodes = %+v, %v", nodes, known)
	}
}

// A start's GPUs go into its assignment, with a slice's size and its
// device's memory; the process record gives them back to the scheduler.
func TestPlanCommandsCarryGPUs(t *testing.T) {
	in := rm.Input{
		Config: rm.DefaultConfig(),
		Nodes:  []rm.Node{{Name: "n1", GPUs: []rm.GPU{{ID: "GPU-a", Memory: 80 << 30}, {ID: "GPU-b", Memory: 40 << 30}}}},
		Work:   []rm.Work{{ID: 1, GPUs: 2}, {ID: 2, GPUMemory: 10 << 30}, {ID: 3}},
	}
	plan := rm.Plan{Starts: []rm.Start{
		{WorkID: 1, Node: "n1", Shares: 1, Memory: 1 << 30, GPUs: []string{"GPU-a", "GPU-b"}},
		{WorkID: 2, Node: "n1", Shares: 1, Memory: 1 << 30, GPUs: []string{"GPU-b"}},
		{WorkID: 3, Node: "n1", Shares: 1, Memory: 1 << 30},
	}}
	active := []*state.Work{{ID: 1}, {ID: 2}, {ID: 3}}
	cmds, _ := planCommands(plan, active, 5, nil, gpuAsksOf(in))
	want := []*state.Assignment{
		{Node: "n1", Shares: 1, MemoryLimit: 1 << 30, GPUs: []string{"GPU-a", "GPU-b"}},
		{Node: "n1", Shares: 1, MemoryLimit: 1 << 30, GPUs: []string{"GPU-b"}, GPUSlice: 10 << 30, GPUDeviceMemory: 40 << 30},
		{Node: "n1", Shares: 1, MemoryLimit: 1 << 30},
	}
	if len(cmds) != len(want) {
		t.Fatalf("commands %+v", cmds)
	}
	for i, c := range cmds {
		if !reflect.DeepEqual(c.Assign, want[i]) {
			t.Errorf("assignment %d: %+v, want %+v", i, c.Assign, want[i])
		}
	}
	w := &state.Work{ID: 2, Kind: wire.WorkManaged}
	p := &state.Proc{ID: "2.1", Node: "n1", GPUs: want[1].GPUs, State: wire.ProcRunning}
	if got := rmProc(w, p).GPUs; !reflect.DeepEqual(got, want[1].GPUs) {
		t.Errorf("rmProc GPUs %v, want %v", got, want[1].GPUs)
	}
	if ps := procSpec(w, &state.Proc{ID: "2.1", GPUs: want[1].GPUs, GPUSlice: 10 << 30}, time.Second); !reflect.DeepEqual(ps.GPUs, want[1].GPUs) || ps.GPUSlice != 10<<30 {
		t.Errorf("procSpec GPUs %v slice %d", ps.GPUs, ps.GPUSlice)
	}
}

// GPUKinds keeps one node of each kind of GPUs (models and sizes, not
// ids) as full heartbeats add and change nodes.
func TestGPUKinds(t *testing.T) {
	f := newFixture(t)
	h100 := func(ids ...string) []wire.GPUDevice {
		var out []wire.GPUDevice
		for i, id := range ids {
			out = append(out, wire.GPUDevice{UUID: id, Model: "H100", Memory: 80 << 30, Minor: i})
		}
		return out
	}
	kinds := func() []int {
		ks, _ := f.o.GPUKinds()
		var out []int
		for _, k := range ks {
			out = append(out, len(k.GPUs))
		}
		return out
	}
	if _, known := f.o.GPUKinds(); known {
		t.Fatal("kinds known before any heartbeat")
	}
	steps := []struct {
		node string
		gpus []wire.GPUDevice
		want []int // GPUs of each kind's node, in the kinds' order
	}{
		{"n1", h100("a", "b"), []int{2}},
		{"n2", h100("c", "d"), []int{2}}, // same kind, other ids
		{"n3", nil, []int{0, 2}},         // no GPUs is a kind too
		{"n1", h100("a"), []int{0, 1, 2}},
		{"n2", h100("c"), []int{0, 1}}, // the last node of two GPUs changed
		{"n3", h100("e"), []int{1}},
	}
	for i, s := range steps {
		f.o.Heartbeat(f.ctx, wire.Heartbeat{Node: s.node, Seq: uint64(i + 1), MemSchedulable: 4 << 30, GPUs: s.gpus}, "p")
		if got := kinds(); !reflect.DeepEqual(got, s.want) {
			t.Fatalf("step %d (%s with %d GPUs): kinds %v, want %v", i, s.node, len(s.gpus), got, s.want)
		}
	}
}
