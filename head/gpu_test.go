package head_test

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// The model of the test GPUs.
const h100 = "NVIDIA H100 80GB HBM3"

// gpus returns n 80 GiB GPUs of model h100, UUIDs "GPU-<node>-<i>".
func gpus(node string, n int) []wire.GPUDevice {
	out := make([]wire.GPUDevice, n)
	for i := range out {
		out[i] = wire.GPUDevice{UUID: fmt.Sprintf("GPU-%s-%d", node, i), Model: h100, Memory: 80 * gib, Minor: i}
	}
	return out
}

// gpuNode sends the first (full) heartbeat of an up node with mem of
// schedulable memory and these GPUs, and the processes it runs.
func (f *fixture) gpuNode(name string, mem int64, devs []wire.GPUDevice, procs ...wire.ProcStatus) {
	f.heartbeat(wire.Heartbeat{Node: name, Seq: 1, Time: f.clock.Now().UnixMilli(), MemTotal: mem + gib,
		MemSchedulable: mem, CPUs: 4, GPUs: devs, GPUDiscovery: "declared in node.gpus", Procs: procs})
}

// procSpec waits until node's desired state lists the process of work id
// and returns its spec.
func (f *fixture) procSpec(t *testing.T, node string, id uint64) wire.ProcSpec {
	t.Helper()
	var ps wire.ProcSpec
	eventually(t, fmt.Sprintf("work %d's process in %s's desired state", id, node), func() bool {
		ds, _ := f.push.last(node)
		for _, p := range ds.Procs {
			if p.WorkID == id {
				ps = p
				return true
			}
		}
		return false
	})
	return ps
}

// waitsFor waits until work id waits with reason code, and returns why.
func (f *fixture) waitsFor(t *testing.T, id uint64, code wire.ReasonCode) wire.WorkInfo {
	t.Helper()
	var info wire.WorkInfo
	eventually(t, fmt.Sprintf("work %d waits with %s", id, code), func() bool {
		info = f.show(t, id)
		return info.ReasonCode == code
	})
	return info
}

// gpuScheduler is testScheduler with a class that lets each user hold
// one GPU.
const gpuScheduler = testScheduler + `
    - name: onegpu
      policy: FIXED_SHARE
      priority: 5
      limits:
        - user: "*"
          max_gpus: 1
`

// TestGPUAdmission: a GPU request no node can ever hold, or a malformed
// one, is refused at once with a usage error that names the GPUs there
// are; a class's max_gpus holds a user to its GPUs.
func TestGPUAdmission(t *testing.T) {
	f := newFixture(t, options{scheduler: gpuScheduler})
	f.gpuNode("n1", 16*gib, gpus("n1", 2))
	f.node("n2", 16*gib) // no GPUs
	run := func(k int, mem int64, model string) wire.RunRequest {
		return wire.RunRequest{Path: "/bin/true", Memory: gib, GPUs: k, GPUMemory: mem, GPUModel: model}
	}
	sizes := "nodes have 2 × 80 GiB GPUs (1 node), no GPUs (1 node)"
	tests := []struct {
		name   string
		method string
		req    any
		parts  []string
	}{
		{"more GPUs than a node has", wire.MethodRun, run(3, 0, ""), []string{"no node has 3 GPUs; " + sizes}},
		{"a slice bigger than any GPU", wire.MethodRun, run(0, 100*gib, ""),
			[]string{"no GPU has 100 GiB of memory for the slice (the largest has 80 GiB); " + sizes}},
		{"both whole GPUs and a slice", wire.MethodRun, run(1, 10*gib, ""), []string{"process_gpus and process_gpu_memory are both given", "not both"}},
		{"negative GPUs", wire.MethodRun, run(-1, 0, ""), []string{"process_gpus must not be negative, got -1"}},
		{"negative slice", wire.MethodRun, run(0, -5, ""), []string{"process_gpu_memory must not be negative, got -5"}},
		{"an unknown model", wire.MethodRun, run(1, 0, "V100"), []string{`no GPU is of model "V100"; the models are "` + h100 + `"`}},
		{"a model without GPUs", wire.MethodRun, run(0, 0, h100), []string{"process_gpu_model needs process_gpus or process_gpu_memory"}},
		{"three of the model", wire.MethodRun, run(3, 0, h100), []string{`no node has 3 GPUs of model "` + h100 + `"`}},
		{"a job's processes", wire.MethodSubmit, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w", Memory: gib, GPUs: 4},
			Items: []string{"a"}}, []string{"no node has 4 GPUs"}},
		{"a service's instances", wire.MethodServiceRegister, wire.ServiceRegisterRequest{Spec: wire.ServiceSpec{Executable: "/bin/s",
			Endpoint: deadEndpoint, Memory: gib, GPUMemory: 81 * gib}}, []string{"no GPU has 81 GiB"}},
		{"a reservation of more GPUs than a node has", wire.MethodReserve, wire.ReserveRequest{Memory: 16 * gib, GPUs: 3},
			[]string{"no node has 3 GPUs"}},
		{"max_gpus", wire.MethodRun, wire.RunRequest{Path: "/bin/true", Memory: gib, Class: "onegpu", GPUs: 2},
			[]string{"limit reached", "user alice would hold 2 of at most 1 GPUs (max_gpus)", `class "onegpu"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := call(t, f.h, tc.method, alice, tc.req, &wire.SubmitReply{})
			wantErr(t, err, wire.CodeUsage, tc.parts...)
		})
	}
	// Within the limit, the next GPU is over it.
	f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: gib, Class: "onegpu", GPUs: 1})
	err := call(t, f.h, wire.MethodRun, alice, wire.RunRequest{Path: "/bin/true", Memory: gib, Class: "onegpu", GPUMemory: gib}, &wire.SubmitReply{})
	wantErr(t, err, wire.CodeUsage, "user alice would hold 2 of at most 1 GPUs")
	f.submitRun(t, bob, wire.RunRequest{Path: "/bin/true", Memory: gib, Class: "onegpu", GPUMemory: gib})
}

// TestGPUWholeDevices: on a node with two GPUs, `ducc run --gpus 1` gets a
// desired state with one of them, a second the other, a third waits with
// reason GPUs and says what is free where; a process without GPUs runs
// beside them with none; `ducc show` and `ducc nodes` name the GPUs; an
// ended holder frees its GPU for the one that waits.
func TestGPUWholeDevices(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.gpuNode("n1", 16*gib, gpus("n1", 2))
	a := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Memory: gib, GPUs: 1})
	psA := f.procSpec(t, "n1", a)
	b := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Memory: gib, GPUs: 1})
	psB := f.procSpec(t, "n1", b)
	if len(psA.GPUs) != 1 || len(psB.GPUs) != 1 || psA.GPUs[0] == psB.GPUs[0] || psA.GPUSlice != 0 {
		t.Fatalf("two runs of one GPU got %v and %v (slice %d), want one distinct GPU each", psA.GPUs, psB.GPUs, psA.GPUSlice)
	}
	c := f.submitRun(t, bob, wire.RunRequest{Path: "/bin/sleep", Memory: gib, GPUs: 1})
	info := f.waitsFor(t, c, wire.ReasonGPUs)
	for _, w := range []string{"waiting for GPUs", "1 whole GPU", "n1 0 of 2 GPUs free"} {
		if !strings.Contains(info.Reason, w) {
			t.Errorf("reason %q does not say %q", info.Reason, w)
		}
	}
	plain := f.submitRun(t, bob, wire.RunRequest{Path: "/bin/sleep", Memory: gib})
	if ps := f.procSpec(t, "n1", plain); ps.GPUs != nil {
		t.Errorf("a run without GPUs got %v", ps.GPUs)
	}

	// What people see.
	shown := f.show(t, a)
	if shown.GPUs != 1 || len(shown.Procs) != 1 || !slices.Equal(shown.Procs[0].GPUs, psA.GPUs) {
		t.Errorf("show: GPUs %d, processes %+v; want 1 and %v", shown.GPUs, shown.Procs, psA.GPUs)
	}
	n, _ := f.nodeInfo(t, "n1")
	if n.GPUDiscovery != "declared in node.gpus" || len(n.GPUs) != 2 {
		t.Fatalf("nodes: %+v", n)
	}
	for _, g := range n.GPUs {
		if g.Allocated != 80*gib || len(g.Holders) != 1 || g.Model != h100 {
			t.Errorf("nodes: GPU %+v, want all of it held by one process", g)
		}
	}

	// The holder of a's GPU ends: c gets that GPU.
	pa := f.work(a).Procs[0]
	f.report(t, "n1", wire.ProcStatus{ID: pa.ID, WorkID: a, State: wire.ProcRunning, PID: 7})
	f.report(t, "n1", wire.ProcStatus{ID: pa.ID, WorkID: a, State: wire.ProcExited})
	if psC := f.procSpec(t, "n1", c); !slices.Equal(psC.GPUs, psA.GPUs) {
		t.Errorf("the waiting run got %v, want the freed %v", psC.GPUs, psA.GPUs)
	}
}

// TestGPUSlices: four 40 GiB slices run on two 80 GiB GPUs, two on each;
// a fifth waits with reason GPUs. GPU-seconds count a slice as its
// fraction of the device.
func TestGPUSlices(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.gpuNode("n1", 16*gib, gpus("n1", 2))
	per := map[string]int{}
	var first uint64
	for i := range 4 {
		id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Memory: gib, GPUMemory: 40 * gib})
		if i == 0 {
			first = id
		}
		ps := f.procSpec(t, "n1", id)
		if len(ps.GPUs) != 1 || ps.GPUSlice != 40*gib {
			t.Fatalf("slice %d got GPUs %v slice %d, want one GPU and 40 GiB", i, ps.GPUs, ps.GPUSlice)
		}
		per[ps.GPUs[0]]++
	}
	if len(per) != 2 || per["GPU-n1-0"] != 2 || per["GPU-n1-1"] != 2 {
		t.Errorf("slices per GPU %v, want two on each", per)
	}
	fifth := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Memory: gib, GPUMemory: 40 * gib})
	info := f.waitsFor(t, fifth, wire.ReasonGPUs)
	if !strings.Contains(info.Reason, "a 40 GiB GPU memory slice") {
		t.Errorf("reason %q does not name the slice", info.Reason)
	}
	n, _ := f.nodeInfo(t, "n1")
	for _, g := range n.GPUs {
		if g.Allocated != 80*gib || len(g.Holders) != 2 {
			t.Errorf("nodes: GPU %+v, want two slices of 40 GiB", g)
		}
	}

	p := f.work(first).Procs[0]
	start := f.clock.Now().UnixMilli()
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: first, State: wire.ProcRunning, PID: 9, StartedAt: start, GPUMemory: 3 * gib, GPUMemoryPeak: 5 * gib})
	f.clock.Add(10 * time.Second)
	eventually(t, "show has the slice's GPU use", func() bool {
		pi := f.show(t, first).Procs[0]
		return pi.GPUMemory == 3*gib && pi.GPUMemoryPeak == 5*gib && math.Abs(pi.GPUSeconds-5) < 1e-9 && pi.GPUSlice == 40*gib
	})
}

// TestGPUJobProcesses: a job's GPU request is each job process's.
func TestGPUJobProcesses(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.gpuNode("n1", 16*gib, gpus("n1", 2))
	id := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w", Memory: gib, GPUs: 2},
		Items: []string{"a", "b"}})
	if ps := f.procSpec(t, "n1", id); len(ps.GPUs) != 2 {
		t.Fatalf("job process got GPUs %v, want both", ps.GPUs)
	}
	if w := f.show(t, id); w.GPUs != 2 {
		t.Errorf("show: job asks %d GPUs, want 2", w.GPUs)
	}
}

// TestGPUAllocationSurvivesFailover: a new head, on the state restored
// from the old one's snapshot, gives the scheduler back the GPUs the
// running processes hold: it pushes them the same GPUs, places new work
// on the GPU that is free and makes the next wait.
func TestGPUAllocationSurvivesFailover(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.gpuNode("n1", 16*gib, gpus("n1", 2))
	a := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Memory: gib, GPUs: 1})
	psA := f.procSpec(t, "n1", a)
	s := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Memory: gib, GPUMemory: 30 * gib})
	psS := f.procSpec(t, "n1", s)
	running := []wire.ProcStatus{
		{ID: psA.ID, WorkID: a, State: wire.ProcRunning, PID: 7, Node: "n1"},
		{ID: psS.ID, WorkID: s, State: wire.ProcRunning, PID: 8, Node: "n1"},
	}
	f.report(t, "n1", running...)

	g := newFixture(t, options{scheduler: testScheduler, fsm: restored(t, f.fsm)})
	g.clock.Add(time.Minute)
	g.gpuNode("n1", 16*gib, gpus("n1", 2), running...)
	if ps := g.procSpec(t, "n1", a); !slices.Equal(ps.GPUs, psA.GPUs) {
		t.Fatalf("after the failover the process holds %v, want %v", ps.GPUs, psA.GPUs)
	}
	if ps := g.procSpec(t, "n1", s); !slices.Equal(ps.GPUs, psS.GPUs) || ps.GPUSlice != 30*gib {
		t.Fatalf("after the failover the slice is %v (%d bytes), want %v", ps.GPUs, ps.GPUSlice, psS.GPUs)
	}
	// The slice is on a's GPU's sibling: no whole GPU is left.
	b := g.submitRun(t, bob, wire.RunRequest{Path: "/bin/sleep", Memory: gib, GPUs: 1})
	info := g.waitsFor(t, b, wire.ReasonGPUs)
	if !strings.Contains(info.Reason, "n1 0 of 2 GPUs free") {
		t.Errorf("reason %q", info.Reason)
	}
	// A slice that fits beside the other goes there.
	c := g.submitRun(t, bob, wire.RunRequest{Path: "/bin/sleep", Memory: gib, GPUMemory: 50 * gib})
	if ps := g.procSpec(t, "n1", c); !slices.Equal(ps.GPUs, psS.GPUs) {
		t.Errorf("a 50 GiB slice went to %v, want beside the 30 GiB one on %v", ps.GPUs, psS.GPUs)
	}
}

// restored returns a new state restored from a snapshot of fsm, as a new
// head's Raft member restores one.
func restored(t *testing.T, fsm *state.FSM) *state.FSM {
	t.Helper()
	snap, err := fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&snapSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	g := state.New()
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	return g
}

// snapSink is a raft.SnapshotSink in memory.
type snapSink struct{ *bytes.Buffer }

var _ raft.SnapshotSink = (*snapSink)(nil)

func (s *snapSink) ID() string    { return "test" }
func (s *snapSink) Cancel() error { return nil }
func (s *snapSink) Close() error  { return nil }

// TestGPUReservation: `ducc reserve --gpus N` gets a machine with at
// least N GPUs and holds every GPU of it; nothing else gets them.
func TestGPUReservation(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.node("n0", 16*gib) // the right size, no GPUs
	f.gpuNode("n1", 16*gib, gpus("n1", 2))
	var rep wire.SubmitReply
	f.mustCall(t, wire.MethodReserve, alice, wire.ReserveRequest{Memory: 16 * gib, GPUs: 1, GPUModel: h100}, &rep)
	p := f.waitProc(t, rep.ID)
	if p.Node != "n1" || !slices.Equal(p.GPUs, []string{"GPU-n1-0", "GPU-n1-1"}) {
		t.Fatalf("reservation on %s holds %v, want n1 and both its GPUs", p.Node, p.GPUs)
	}
	n, _ := f.nodeInfo(t, "n1")
	for _, g := range n.GPUs {
		if g.Allocated != 80*gib || !slices.Equal(g.Holders, []string{p.ID}) {
			t.Errorf("nodes: GPU %+v, want held by the reservation", g)
		}
	}
}

// TestGPUUtilization: `ducc nodes` has each GPU's utilization and memory
// in use from its node's latest heartbeat, full or delta (none where the
// agent gives none), and `ducc show` a process's SM utilization as its
// agent last reported it.
func TestGPUUtilization(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	devs := gpus("n1", 2)
	f.gpuNode("n1", 16*gib, devs)
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Memory: gib, GPUs: 1})
	ps := f.procSpec(t, "n1", id)
	held := slices.Index([]string{devs[0].UUID, devs[1].UUID}, ps.GPUs[0])
	pct := wire.Percent
	type gpuWant struct {
		util *int
		used int64
	}
	steps := []struct {
		name    string
		delta   bool
		use     []wire.GPUUse
		procs   []wire.ProcStatus
		want    [2]gpuWant
		procUse *int
	}{
		{
			name:  "a full heartbeat",
			use:   []wire.GPUUse{{UUID: devs[0].UUID, Util: pct(87), MemoryUsed: 30 * gib}, {UUID: devs[1].UUID, MemoryUsed: gib}},
			procs: []wire.ProcStatus{{ID: ps.ID, WorkID: id, State: wire.ProcRunning, PID: 7, GPUMemory: 20 * gib, GPUUtil: pct(60)}},
			want:  [2]gpuWant{{pct(87), 30 * gib}, {nil, gib}}, procUse: pct(60),
		},
		{
			name:  "a delta carries the devices' use, not the unchanged process",
			delta: true,
			use:   []wire.GPUUse{{UUID: devs[0].UUID, Util: pct(0), MemoryUsed: 2 * gib}, {UUID: devs[1].UUID, Util: pct(12)}},
			want:  [2]gpuWant{{pct(0), 2 * gib}, {pct(12), 0}}, procUse: pct(60),
		},
		{
			name:  "no use reported (no NVML): the holders' memory, no utilization",
			procs: []wire.ProcStatus{{ID: ps.ID, WorkID: id, State: wire.ProcRunning, PID: 7, GPUMemory: 20 * gib}},
			want: func() [2]gpuWant {
				var w [2]gpuWant
				w[held].used = 20 * gib
				return w
			}(),
		},
	}
	for i, st := range steps {
		hb := wire.Heartbeat{Node: "n1", Seq: uint64(i + 2), Time: f.clock.Now().UnixMilli(), Delta: st.delta, GPUUse: st.use, Procs: st.procs}
		if !st.delta {
			hb.MemTotal, hb.MemSchedulable, hb.CPUs, hb.GPUs, hb.GPUDiscovery = 17*gib, 16*gib, 4, devs, "NVML: 2 GPU(s)"
		}
		f.heartbeat(hb)
		n, _ := f.nodeInfo(t, "n1")
		if len(n.GPUs) != 2 {
			t.Fatalf("%s: nodes: %+v", st.name, n)
		}
		for j, w := range st.want {
			if g := n.GPUs[j]; !reflect.DeepEqual(g.Util, w.util) || g.Used != w.used {
				t.Errorf("%s: GPU %d: util %v used %d, want %v, %d", st.name, j, g.Util, g.Used, w.util, w.used)
			}
		}
		if got := f.show(t, id).Procs[0].GPUUtil; !reflect.DeepEqual(got, st.procUse) {
			t.Errorf("%s: show: GPU utilization %v, want %v", st.name, got, st.procUse)
		}
	}
}
