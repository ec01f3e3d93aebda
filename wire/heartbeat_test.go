package wire

import (
	"reflect"
	"testing"
)

func shapedHeartbeat(seq uint64, mem int64, procs ...ProcStatus) Heartbeat {
	return Heartbeat{Node: "n1", PeerID: "p1", Addrs: []string{"/ip4/10.0.0.1/tcp/42134"}, Seq: seq, Time: int64(seq),
		MemTotal: 64 << 30, MemSchedulable: mem, MemUsed: int64(seq), CPUs: 16, Version: "v1", Procs: procs}
}

func TestHeartbeatShaper(t *testing.T) {
	run := ProcStatus{ID: "1.1", WorkID: 1, State: ProcRunning, PID: 10}
	run2 := ProcStatus{ID: "2.1", WorkID: 2, State: ProcStarting, PID: 20}
	run2up := run2
	run2up.State = ProcRunning
	ended := ProcStatus{ID: "1.1", WorkID: 1, State: ProcExited, PID: 10, EndedAt: 5}
	type step struct {
		hb       Heartbeat
		head     string
		unpushed bool // the head has not pushed the node a desired state
		delta    bool
		procs    []string // ids the sent heartbeat carries
	}
	tests := []struct {
		name  string
		every int
		steps []step
	}{
		{"first full, then deltas, full every 3rd", 3, []step{
			{hb: shapedHeartbeat(1, 8<<30, run), head: "h/1", procs: []string{"1.1"}},
			{hb: shapedHeartbeat(2, 8<<30, run), head: "h/1", delta: true},
			{hb: shapedHeartbeat(3, 8<<30, run), head: "h/1", delta: true},
			{hb: shapedHeartbeat(4, 8<<30, run), head: "h/1", procs: []string{"1.1"}},
			{hb: shapedHeartbeat(5, 8<<30, run), head: "h/1", delta: true},
		}},
		{"process changes and ended processes go in deltas", 0, []step{
			{hb: shapedHeartbeat(1, 8<<30, run), head: "h/1", procs: []string{"1.1"}},
			{hb: shapedHeartbeat(2, 8<<30, run, run2), head: "h/1", delta: true, procs: []string{"2.1"}},
			{hb: shapedHeartbeat(3, 8<<30, run, run2up), head: "h/1", delta: true, procs: []string{"2.1"}},
			{hb: shapedHeartbeat(4, 8<<30, ended, run2up), head: "h/1", delta: true, procs: []string{"1.1"}},
			{hb: shapedHeartbeat(5, 8<<30, ended, run2up), head: "h/1", delta: true, procs: []string{"1.1"}},
			{hb: shapedHeartbeat(6, 8<<30, run2up), head: "h/1", delta: true},
		}},
		{"full until the head pushed", 0, []step{
			{hb: shapedHeartbeat(1, 8<<30), head: "h/1", unpushed: true},
			{hb: shapedHeartbeat(2, 8<<30), head: "h/1", unpushed: true},
			{hb: shapedHeartbeat(3, 8<<30), head: "h/1", delta: true},
			{hb: shapedHeartbeat(4, 8<<30), head: "h/2", unpushed: true},
			{hb: shapedHeartbeat(5, 8<<30), head: "h/2", unpushed: true},
			{hb: shapedHeartbeat(6, 8<<30), head: "h/2", delta: true},
		}},
		{"inventory change and new head send a full one", 0, []step{
			{hb: shapedHeartbeat(1, 8<<30), head: "h/1"},
			{hb: shapedHeartbeat(2, 8<<30), head: "h/1", delta: true},
			{hb: shapedHeartbeat(3, 4<<30), head: "h/1"},
			{hb: shapedHeartbeat(4, 4<<30), head: "h/1", delta: true},
			{hb: shapedHeartbeat(5, 4<<30), head: "h/2"},
			{hb: shapedHeartbeat(6, 4<<30), head: "h/2", delta: true},
		}},
	}
	gpus := func(hb Heartbeat, mem ...int64) Heartbeat {
		for i, m := range mem {
			hb.GPUs = append(hb.GPUs, GPUDevice{UUID: "GPU-" + string(rune('a'+i)), Model: "H100", Memory: m, Minor: i})
		}
		hb.GPUDiscovery = "declared"
		return hb
	}
	tests = append(tests, struct {
		name  string
		every int
		steps []step
	}{"a change of GPUs sends a full one, deltas carry none", 0, []step{
		{hb: gpus(shapedHeartbeat(1, 8<<30), 80<<30, 80<<30), head: "h/1"},
		{hb: gpus(shapedHeartbeat(2, 8<<30), 80<<30, 80<<30), head: "h/1", delta: true},
		{hb: gpus(shapedHeartbeat(3, 8<<30), 80<<30), head: "h/1"},
		{hb: gpus(shapedHeartbeat(4, 8<<30), 80<<30), head: "h/1", delta: true},
		{hb: gpus(shapedHeartbeat(5, 8<<30), 40<<30), head: "h/1"},
		{hb: shapedHeartbeat(6, 8<<30), head: "h/1"},
	}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := HeartbeatShaper{FullEvery: tt.every}
			for i, st := range tt.steps {
				got := s.Shape(st.hb, st.head, !st.unpushed)
				var ids []string
				for _, p := range got.Procs {
					ids = append(ids, p.ID)
				}
				if got.Delta != st.delta || !reflect.DeepEqual(ids, st.procs) {
					t.Fatalf("step %d: delta %v procs %v, want delta %v procs %v", i, got.Delta, ids, st.delta, st.procs)
				}
				if got.Delta && (got.MemSchedulable != 0 || got.Addrs != nil || got.Version != "" || got.GPUs != nil || got.GPUDiscovery != "") {
					t.Fatalf("step %d: delta carries inventory: %+v", i, got)
				}
				if !got.Delta && !reflect.DeepEqual(got, st.hb) {
					t.Fatalf("step %d: full heartbeat changed: %+v", i, got)
				}
			}
		})
	}
}

func TestHeartbeatShaperForceFull(t *testing.T) {
	var s HeartbeatShaper
	s.Shape(shapedHeartbeat(1, 8<<30), "h", true)
	if !s.Shape(shapedHeartbeat(2, 8<<30), "h", true).Delta {
		t.Fatal("second heartbeat not a delta")
	}
	s.ForceFull()
	if s.Shape(shapedHeartbeat(3, 8<<30), "h", true).Delta {
		t.Fatal("heartbeat after ForceFull is a delta")
	}
}

func TestHeartbeatOver(t *testing.T) {
	full := shapedHeartbeat(1, 8<<30, ProcStatus{ID: "1.1", State: ProcRunning})
	full.GPUs, full.GPUDiscovery = []GPUDevice{{UUID: "GPU-a", Model: "H100", Memory: 80 << 30}}, "NVML" // kept by deltas
	full.GPUUse = []GPUUse{{UUID: "GPU-a", Util: Percent(10), MemoryUsed: 1 << 30}}
	var s HeartbeatShaper
	s.Shape(full, "h", true)
	next := shapedHeartbeat(2, 8<<30, ProcStatus{ID: "1.1", State: ProcRunning})
	next.GPUs, next.GPUDiscovery = full.GPUs, full.GPUDiscovery
	next.GPUUse = []GPUUse{{UUID: "GPU-a", Util: Percent(95), MemoryUsed: 70 << 30}} // carried by deltas
	d := s.Shape(next, "h", true)
	if !d.Delta || d.GPUs != nil {
		t.Fatalf("second heartbeat: delta %v, GPUs %v; want a delta without GPUs", d.Delta, d.GPUs)
	}
	if !reflect.DeepEqual(d.GPUUse, next.GPUUse) {
		t.Fatalf("delta GPU use %v, want %v", d.GPUUse, next.GPUUse)
	}
	d.DesiredVersion, d.Raft = 7, "Follower"
	got := d.Over(full)
	want := full
	want.Seq, want.Time, want.MemUsed, want.DesiredVersion, want.Raft, want.Procs = 2, 2, 2, 7, "Follower", nil
	want.GPUUse = next.GPUUse
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("over:\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(full.Over(Heartbeat{Node: "x"}), full) {
		t.Fatal("a full heartbeat is not returned unchanged")
	}
}

// What GPUUse costs a heartbeat, per GPU, beyond its UUID: a device
// figure NVML does not give is left out, and 0% is a figure, kept.
func TestGPUUseSize(t *testing.T) {
	const uuid = "GPU-4a3c2b1d-0e9f-8a7b-6c5d-4e3f2a1b0c9d"
	tests := []struct {
		name string
		use  GPUUse
		max  int // bytes beyond the UUID's
	}{
		{"busy, 70 GiB used", GPUUse{UUID: uuid, Util: Percent(87), MemoryUsed: 70 << 30}, 17},
		{"idle", GPUUse{UUID: uuid, Util: Percent(0)}, 8},
		{"utilization unknown", GPUUse{UUID: uuid, MemoryUsed: 1 << 30}, 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Marshal(tc.use)
			if err != nil {
				t.Fatal(err)
			}
			if extra := len(b) - len(uuid); extra > tc.max {
				t.Errorf("%d bytes beyond the UUID, want at most %d", extra, tc.max)
			}
			var got GPUUse
			if err := Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.use) {
				t.Fatalf("round trip: got %+v, want %+v", got, tc.use)
			}
		})
	}
}

// The sizes a head decodes: a full heartbeat of a node with 8 processes
// and the delta that follows it (b.ReportMetric: bytes).
func BenchmarkHeartbeatCodec(b *testing.B) {
	var procs []ProcStatus
	for i := range 8 {
		procs = append(procs, ProcStatus{ID: "123." + string(rune('1'+i)), WorkID: 123, State: ProcRunning, PID: 40000 + i,
			RSS: 1 << 30, CPUSeconds: 12.5, StartedAt: 1_800_000_000_000, MemoryLimit: 4 << 30,
			LogPath: "/var/log/ducc/123/123.1.log", Node: "node0042.cluster.example.org"})
	}
	full := Heartbeat{Node: "node0042.cluster.example.org", PeerID: "12D3KooWFbBgqBuhHaoVghgtvE3csKfHa352MdsyKiv6WPkVKcze",
		Addrs: []string{"/ip4/10.1.2.42/tcp/42134", "/ip6/fd00::42/tcp/42134"}, Seq: 1000, Time: 1_800_000_000_000,
		MemTotal: 256 << 30, MemSchedulable: 240 << 30, MemUsed: 100 << 30, SwapTotal: 8 << 30, CPUs: 64, Load1: 12.3,
		DesiredVersion: 1 << 40, Version: "0.9.0", Procs: procs}
	var s HeartbeatShaper
	s.Shape(full, "h", true)
	next := full
	next.Seq, next.Time = 1001, 1_800_000_001_000
	delta := s.Shape(next, "h", true)
	for _, c := range []struct {
		name string
		hb   Heartbeat
	}{{"full", full}, {"delta", delta}} {
		data, err := Marshal(c.hb)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/encode", func(b *testing.B) {
			for b.Loop() {
				if _, err := Marshal(c.hb); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "bytes")
		})
		b.Run(c.name+"/decode", func(b *testing.B) {
			for b.Loop() {
				var hb Heartbeat
				if err := UnmarshalLimit(data, &hb, MaxHeartbeatSize); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "bytes")
		})
	}
}
