package agent

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ducc-project/ducc/gpu"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// twoGPUs is a node.gpus declaration of two 80 GiB GPUs.
const twoGPUs = "node:\n  gpus:\n    - {uuid: GPU-a, model: H100, memory: 80G, minor: 0}\n    - {uuid: GPU-b, model: H100, memory: 80G, minor: 1}\n"

func TestParseConfigGPUs(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // UUIDs declared; nil: discover through NVML
		errs []string // every one must be in the error
	}{
		{name: "two GPUs", yaml: "head: {eligible: true}\n" + twoGPUs, want: []string{"GPU-a", "GPU-b"}},
		{name: "none declared: NVML", yaml: "head: {eligible: true}\n"},
		{name: "an empty list: no GPUs, no NVML", yaml: "head: {eligible: true}\nnode: {gpus: []}\n", want: []string{}},
		{
			name: "every mistake at once",
			yaml: "head: {eligible: true}\nnode:\n  gpus:\n    - {uuid: GPU-a, model: H100, memory: 80G, minor: 0}\n" +
				"    - {uuid: GPU-a, memory: 0, minor: -1}\n    - {model: H100, memory: lots}\n",
			errs: []string{
				"node.gpus is wrong (fix each entry named, or remove node.gpus to discover the GPUs through NVML)",
				"node.gpus[1]: uuid GPU-a is also node.gpus[0]; each GPU once",
				"node.gpus[1]: model is missing",
				`node.gpus[1]: memory "0" is not positive; give the GPU's memory, like 80G`,
				"node.gpus[1]: minor -1 is negative",
				"node.gpus[2]: uuid is missing; give the GPU's UUID as nvidia-smi -L prints it",
				`node.gpus[2]: memory: memory size "lots"`,
				"node.gpus[2]: minor is missing; give the N of its /dev/nvidiaN",
			},
		},
		{name: "unknown key in an entry", yaml: "head: {eligible: true}\nnode: {gpus: [{uuid: GPU-a, model: H100, memory: 80G, minor: 0, index: 3}]}\n",
			errs: []string{"field index not found"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.yaml))
			if len(tc.errs) > 0 {
				if err == nil {
					t.Fatalf("no error; GPUs %+v", c.GPUs)
				}
				for _, e := range tc.errs {
					if !strings.Contains(err.Error(), e) {
						t.Errorf("error %q does not say %q", err, e)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (c.GPUs == nil) != (tc.want == nil) {
				t.Fatalf("GPUs %#v, want %v (nil: NVML)", c.GPUs, tc.want)
			}
			var got []string
			for _, d := range c.GPUs {
				got = append(got, d.UUID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("GPUs %v, want %v", got, tc.want)
			}
		})
	}
}

// `ducc agent --dev --config FILE` honours node.gpus and still names the
// node keys it ignores.
func TestLoadDevConfigGPUs(t *testing.T) {
	path := t.TempDir() + "/ducc.yaml"
	if err := os.WriteFile(path, []byte(twoGPUs+"  memory: 64G\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, ignored, err := LoadDevConfig(path, "/tmp/devdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.GPUs) != 2 || c.GPUs[1].UUID != "GPU-b" || c.Memory != 0 {
		t.Errorf("dev config GPUs %+v, memory %v", c.GPUs, c.Memory)
	}
	if !slices.Equal(ignored, []string{"node.memory"}) {
		t.Errorf("ignored %q, want only node.memory", ignored)
	}
	if err := os.WriteFile(path, []byte("node: {gpus: [{uuid: GPU-a}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadDevConfig(path, "/tmp/devdata"); err == nil || !strings.Contains(err.Error(), "node.gpus[0]: model is missing") {
		t.Errorf("a bad declaration in dev mode: %v", err)
	}
}

// fakeReader is a gpu.MemoryReader whose answers a test sets.
type fakeReader struct {
	mu     sync.Mutex
	use    func() gpu.Usage
	err    error
	reads  int
	closed bool
}

func (f *fakeReader) Usage() (gpu.Usage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return gpu.Usage{}, f.err
	}
	return f.use(), nil
}

func (f *fakeReader) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

// set makes the reader answer err, or the processes' memory mem (device
// UUID → pid → bytes) without any utilization.
func (f *fakeReader) set(mem map[string]map[int]int64, err error) {
	f.setUsage(memUsage(mem), err)
}

func (f *fakeReader) setUsage(u gpu.Usage, err error) {
	f.mu.Lock()
	f.use, f.err = func() gpu.Usage { return u }, err
	f.mu.Unlock()
}

// memUsage is a read of the processes' memory mem (device UUID → pid →
// bytes), in UUID order, where NVML gives no utilization.
func memUsage(mem map[string]map[int]int64) gpu.Usage {
	var u gpu.Usage
	for _, uuid := range slices.Sorted(maps.Keys(mem)) {
		u.Devices = append(u.Devices, gpu.DeviceUse{UUID: uuid, Util: gpu.Unknown, MemUtil: gpu.Unknown, Procs: mem[uuid]})
	}
	return u
}

// bufLogger logs into a buffer, for what a test must find logged once.
func bufLogger() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

func TestDiscoverGPUs(t *testing.T) {
	zero, one := 0, 1
	declared := []gpu.Declared{{UUID: "GPU-a", Model: "H100", Memory: "80G", Minor: &zero}, {UUID: "GPU-b", Model: "H100", Memory: "80G", Minor: &one}}
	noLib := func() (gpu.MemoryReader, gpu.Inventory) {
		return nil, gpu.Inventory{Status: gpu.StatusNoLibrary, Err: errors.New("libnvidia-ml.so.1 could not be loaded")}
	}
	nvml := &fakeReader{}
	found := func() (gpu.MemoryReader, gpu.Inventory) {
		return nvml, gpu.Inventory{Status: gpu.StatusFound, Driver: "550.54", Devices: []gpu.Device{
			{UUID: "GPU-x", Model: "A100", Memory: 40 << 30, Minor: 0, MIG: gpu.MIGEnabled},
			{UUID: "MIG-x-1", Model: "A100", Memory: 20 << 30, Minor: 0, MIG: gpu.MIGInstance, Parent: "GPU-x"},
			{UUID: "GPU-y", Model: "A100", Memory: 40 << 30, Minor: 1, MIG: gpu.MIGDisabled},
		}}
	}
	tests := []struct {
		name      string
		declared  []gpu.Declared
		open      func() (gpu.MemoryReader, gpu.Inventory)
		devs      []wire.GPUDevice
		says      string
		reader    bool
		logs, not []string
	}{
		{name: "declared, no NVML", declared: declared, open: noLib,
			devs: []wire.GPUDevice{{UUID: "GPU-a", Model: "H100", Memory: 80 << 30, Minor: 0}, {UUID: "GPU-b", Model: "H100", Memory: 80 << 30, Minor: 1}},
			says: "declared in node.gpus: 2 GPU(s)",
			logs: []string{"GPU discovery: declared in node.gpus: 2 GPU(s)",
				"GPU memory cannot be read on this node (no NVML library: libnvidia-ml.so.1 could not be loaded): processes report no GPU memory and GPU memory slices are NOT enforced"}},
		{name: "NVML, a MIG instance", open: found, reader: true,
			devs: []wire.GPUDevice{{UUID: "MIG-x-1", Model: "A100", Memory: 20 << 30, Minor: 0, Parent: "GPU-x"}, {UUID: "GPU-y", Model: "A100", Memory: 40 << 30, Minor: 1}},
			says: "NVML: 2 GPU(s), 1 MIG instance(s), driver 550.54", not: []string{"NOT enforced"}},
		{name: "no NVML, nothing declared", open: noLib, says: "no NVML library: libnvidia-ml.so.1 could not be loaded",
			logs: []string{"GPU discovery: no NVML library"}, not: []string{"NOT enforced"}},
		{name: "an empty declaration", declared: []gpu.Declared{}, open: noLib, says: "NVML found, 0 GPUs", not: []string{"NOT enforced"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, buf := bufLogger()
			g, err := discoverGPUs(&Config{GPUs: tc.declared}, log, tc.open)
			if err != nil {
				t.Fatal(err)
			}
			var hb wire.Heartbeat
			g.fillHeartbeat(&hb)
			if !slices.Equal(hb.GPUs, tc.devs) || hb.GPUDiscovery != tc.says {
				t.Errorf("heartbeat GPUs %+v %q, want %+v %q", hb.GPUs, hb.GPUDiscovery, tc.devs, tc.says)
			}
			if (g.reader != nil) != tc.reader {
				t.Errorf("reader %v, want one: %v", g.reader, tc.reader)
			}
			for _, l := range tc.logs {
				if n := strings.Count(buf.String(), l); n != 1 {
					t.Errorf("logged %q %d times, want once:\n%s", l, n, buf)
				}
			}
			for _, l := range tc.not {
				if strings.Contains(buf.String(), l) {
					t.Errorf("logged %q:\n%s", l, buf)
				}
			}
		})
	}
}

func TestGPUEnv(t *testing.T) {
	onGPUs := newGPUNode(gpu.Inventory{Status: gpu.StatusDeclared, Devices: []gpu.Device{
		{UUID: "GPU-a", Minor: 0}, {UUID: "GPU-b", Minor: 1}}}, nil, slog.Default())
	plain := newGPUNode(gpu.Inventory{Status: gpu.StatusNoLibrary}, nil, slog.Default())
	tests := []struct {
		name string
		node *gpuNode
		env  []string
		user string
		gpus []string
		want []string
	}{
		{name: "one GPU", node: onGPUs, env: []string{"PATH=/bin", "HOME=/home/ann"}, gpus: []string{"GPU-b"},
			want: []string{"PATH=/bin", "HOME=/home/ann", "CUDA_VISIBLE_DEVICES=GPU-b", "NVIDIA_VISIBLE_DEVICES=GPU-b"}},
		{name: "two GPUs", node: onGPUs, env: []string{"PATH=/bin"}, gpus: []string{"GPU-a", "GPU-b"},
			want: []string{"PATH=/bin", "CUDA_VISIBLE_DEVICES=GPU-a,GPU-b", "NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b"}},
		{name: "none on a GPU node: set and empty", node: onGPUs, env: []string{"PATH=/bin"},
			want: []string{"PATH=/bin", "CUDA_VISIBLE_DEVICES=", "NVIDIA_VISIBLE_DEVICES="}},
		{name: "the user's own values give way", node: onGPUs, env: []string{"CUDA_VISIBLE_DEVICES=0,1", "PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all"}, gpus: []string{"GPU-a"},
			want: []string{"PATH=/bin", "CUDA_VISIBLE_DEVICES=GPU-a", "NVIDIA_VISIBLE_DEVICES=GPU-a"}},
		{name: "no environment on a GPU node: the minimal one and the two", node: onGPUs, user: "ann",
			want: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/", "USER=ann", "LOGNAME=ann",
				"CUDA_VISIBLE_DEVICES=", "NVIDIA_VISIBLE_DEVICES="}},
		{name: "a node without GPUs leaves the environment alone", node: plain, env: []string{"CUDA_VISIBLE_DEVICES=0", "PATH=/bin"},
			want: []string{"CUDA_VISIBLE_DEVICES=0", "PATH=/bin"}},
		{name: "nor a nil one", node: plain},
		{name: "nor an agent without a GPU state", node: nil, env: []string{"PATH=/bin"}, want: []string{"PATH=/bin"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.node.gpuEnv(slices.Clone(tc.env), tc.user, tc.gpus)
			if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("env %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGPUMinors(t *testing.T) {
	g := newGPUNode(gpu.Inventory{Status: gpu.StatusFound, Devices: []gpu.Device{
		{UUID: "GPU-x", Minor: 3, MIG: gpu.MIGEnabled},
		{UUID: "MIG-1", Minor: 3, MIG: gpu.MIGInstance, Parent: "GPU-x"},
		{UUID: "MIG-2", Minor: 3, MIG: gpu.MIGInstance, Parent: "GPU-x"},
		{UUID: "GPU-y", Minor: 1},
	}}, nil, slog.Default())
	got, err := g.gpuMinors(wire.ProcSpec{GPUs: []string{"MIG-2", "GPU-y", "MIG-1"}})
	if err != nil || !slices.Equal(got, []int{1, 3}) {
		t.Errorf("minors %v, %v; want [1 3]", got, err)
	}
	if got, err := g.gpuMinors(wire.ProcSpec{}); err != nil || got != nil {
		t.Errorf("no GPUs: %v, %v", got, err)
	}
	// The parent of MIG instances is not schedulable, nor a GPU the node
	// does not have.
	for _, uuid := range []string{"GPU-x", "GPU-z"} {
		if _, err := g.gpuMinors(wire.ProcSpec{GPUs: []string{uuid}}); err == nil ||
			!strings.Contains(err.Error(), "GPU "+uuid+" is not on this node (it has MIG-1, MIG-2, GPU-y)") {
			t.Errorf("%s: %v", uuid, err)
		}
	}
	var none *gpuNode
	if _, err := none.gpuMinors(wire.ProcSpec{GPUs: []string{"GPU-a"}}); err == nil || !strings.Contains(err.Error(), "it has no GPUs") {
		t.Errorf("a node without GPUs: %v", err)
	}
}

// The watchdog stops a process over its slice (once, with the message),
// not one under it nor one holding whole GPUs, records every process's
// memory and peak, and its end report carries the flag, the message, the
// exit code and the peak.
func TestGPUWatchdog(t *testing.T) {
	const gib = int64(1) << 30
	r := &fakeReader{}
	log, buf := bufLogger()
	g := newGPUNode(gpu.Inventory{Status: gpu.StatusDeclared, Devices: []gpu.Device{{UUID: "GPU-a"}, {UUID: "GPU-b", Minor: 1}}}, r, log)
	r.set(map[string]map[int]int64{}, nil)
	if stops := g.poll(nil); stops != nil || r.reads != 1 {
		t.Fatalf("nothing watched: %v, %d reads; want one read (the devices' use)", stops, r.reads)
	}
	g.track(wire.ProcSpec{ID: "1.1", GPUs: []string{"GPU-a"}, GPUSlice: 20 * gib}) // over
	g.track(wire.ProcSpec{ID: "1.2", GPUs: []string{"GPU-a"}, GPUSlice: 20 * gib}) // under
	g.track(wire.ProcSpec{ID: "1.3", GPUs: []string{"GPU-b"}})                     // whole, over anyone's slice
	g.track(wire.ProcSpec{ID: "1.4", GPUs: []string{"GPU-b"}, GPUSlice: gib})      // gone
	g.track(wire.ProcSpec{ID: "1.5"})                                              // no GPUs: not watched
	pids := func(id string) ([]int, bool) {
		return map[string][]int{"1.1": {11, 12}, "1.2": {20}, "1.3": {30}}[id], id != "1.4"
	}
	r.set(map[string]map[int]int64{
		"GPU-a": {11: 15 * gib, 12: 6 * gib, 20: 19 * gib, 99: 50 * gib},
		"GPU-b": {30: 70 * gib},
	}, nil)
	stops := g.poll(pids)
	want := []sliceStop{{id: "1.1", reason: "GPU memory slice exceeded: used 21 GiB of 20 GiB"}}
	if !slices.Equal(stops, want) {
		t.Fatalf("stops %+v, want %+v", stops, want)
	}
	// Less memory now: the peak stays; nobody is stopped twice.
	r.set(map[string]map[int]int64{"GPU-a": {11: 30 * gib, 20: 2 * gib}, "GPU-b": {30: 10 * gib}}, nil)
	if stops := g.poll(pids); stops != nil {
		t.Errorf("second poll stops %+v", stops)
	}
	hb := wire.Heartbeat{Procs: []wire.ProcStatus{{ID: "1.2", State: wire.ProcRunning}, {ID: "1.3", State: wire.ProcRunning},
		{ID: "1.5", State: wire.ProcRunning}, {ID: "1.9", State: wire.ProcExited}}}
	g.fillHeartbeat(&hb)
	for i, w := range [][2]int64{{2 * gib, 19 * gib}, {10 * gib, 70 * gib}, {0, 0}, {0, 0}} {
		if p := hb.Procs[i]; p.GPUMemory != w[0] || p.GPUMemoryPeak != w[1] {
			t.Errorf("%s: GPU memory %d, peak %d; want %d, %d", p.ID, p.GPUMemory, p.GPUMemoryPeak, w[0], w[1])
		}
	}
	if _, _, tracked := g.ended("1.4"); tracked {
		t.Error("a process that is gone is still watched")
	}

	// The ends, as onExit reports them.
	over := wire.ProcStatus{ID: "1.1", State: wire.ProcExited, Signal: "KILL", ExitCode: 137}
	g.markEnded(&over)
	if !over.GPUSliceExceeded || over.Reason != "GPU memory slice exceeded: used 21 GiB of 20 GiB" || over.ExitCode != wire.CodeGPUSlice ||
		over.GPUMemoryPeak != 30*gib {
		t.Errorf("end of the process over its slice: %+v", over)
	}
	under := wire.ProcStatus{ID: "1.2", State: wire.ProcExited, Reason: "exit 0"}
	g.markEnded(&under)
	if under.GPUSliceExceeded || under.Reason != "exit 0" || under.ExitCode != 0 || under.GPUMemoryPeak != 19*gib {
		t.Errorf("end of the process under its slice: %+v", under)
	}
	if _, _, tracked := g.ended("1.1"); tracked {
		t.Error("an ended process is still watched")
	}

	// A read that fails is logged once per error, and stops nobody.
	r.set(nil, errors.New("NVML device GPU-a: running compute processes: Insufficient Permissions"))
	for range 3 {
		if stops := g.poll(pids); stops != nil {
			t.Errorf("stops %+v without a reading", stops)
		}
	}
	if n := strings.Count(buf.String(), "cannot read the GPU memory of processes"); n != 1 {
		t.Errorf("the read error logged %d times, want once:\n%s", n, buf)
	}

	// Without NVML (declared GPUs), nothing is read.
	blind := newGPUNode(g.inv, nil, log)
	blind.track(wire.ProcSpec{ID: "2.1", GPUs: []string{"GPU-a"}, GPUSlice: gib})
	if stops := blind.poll(pids); stops != nil {
		t.Errorf("stops %+v without NVML", stops)
	}
}

// One NVML read per heartbeat gives the heartbeat each device's
// utilization and memory in use and each process's SM utilization, where
// NVML gives them: a figure it does not give is none (nil), not 0.
func TestGPUUtilization(t *testing.T) {
	const gib = int64(1) << 30
	inv := gpu.Inventory{Status: gpu.StatusFound, Devices: []gpu.Device{{UUID: "GPU-a"}, {UUID: "GPU-b", Minor: 1},
		{UUID: "GPU-c", Minor: 2}, {UUID: "MIG-d", Minor: 3, MIG: gpu.MIGInstance, Parent: "GPU-p"}}}
	pct := wire.Percent
	read := gpu.Usage{Devices: []gpu.DeviceUse{
		{UUID: "GPU-a", Util: 87, MemUtil: 40, MemoryUsed: 30 * gib, Procs: map[int]int64{11: 10 * gib, 12: 10 * gib},
			SM: map[int]int{11: 30, 12: 50, 99: 7}, ProcUtilKnown: true},
		{UUID: "GPU-b", Util: 0, MemUtil: 0, MemoryUsed: gib, SM: map[int]int{20: 40}, ProcUtilKnown: true},
		{UUID: "GPU-c", Util: 5, MemUtil: 1, ProcUtilKnown: true}, // no samples: its processes ran no kernel
		{UUID: "MIG-d", Util: gpu.Unknown, MemUtil: gpu.Unknown, MemoryUsed: 2 * gib, Procs: map[int]int64{30: 2 * gib}},
		{UUID: "GPU-x", Util: 50, ProcUtilKnown: true}, // not in the inventory: left out
	}}
	procs := []wire.ProcSpec{
		{ID: "1.1", GPUs: []string{"GPU-a"}},
		{ID: "1.2", GPUs: []string{"GPU-b", "GPU-c"}},
		{ID: "1.3", GPUs: []string{"MIG-d"}, GPUSlice: 10 * gib},
		{ID: "1.4", GPUs: []string{"GPU-c", "MIG-d"}},
	}
	pids := map[string][]int{"1.1": {11, 12}, "1.2": {20}, "1.3": {30}, "1.4": {40}}
	tests := []struct {
		name   string
		reader bool
		err    error
		use    []wire.GPUUse
		util   map[string]*int // process id → GPUUtil
	}{
		{
			name: "NVML gives what it can", reader: true,
			use: []wire.GPUUse{{UUID: "GPU-a", Util: pct(87), MemoryUsed: 30 * gib}, {UUID: "GPU-b", Util: pct(0), MemoryUsed: gib},
				{UUID: "GPU-c", Util: pct(5)}, {UUID: "MIG-d", MemoryUsed: 2 * gib}},
			util: map[string]*int{"1.1": pct(80), "1.2": pct(20), "1.3": nil, "1.4": pct(0)},
		},
		{
			name: "a read fails: no figures", reader: true, err: errors.New("NVML device GPU-a: memory: GPU is lost"),
			util: map[string]*int{"1.1": nil, "1.2": nil, "1.3": nil, "1.4": nil},
		},
		{
			name: "no NVML (declared GPUs): nothing",
			util: map[string]*int{"1.1": nil, "1.2": nil, "1.3": nil, "1.4": nil},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, _ := bufLogger()
			var r gpu.MemoryReader
			if tc.reader {
				f := &fakeReader{}
				f.setUsage(read, tc.err)
				r = f
			}
			g := newGPUNode(inv, r, log)
			for _, p := range procs {
				g.track(p)
			}
			if stops := g.poll(func(id string) ([]int, bool) { return pids[id], true }); stops != nil {
				t.Fatalf("stops %+v", stops)
			}
			hb := wire.Heartbeat{}
			for _, p := range procs {
				hb.Procs = append(hb.Procs, wire.ProcStatus{ID: p.ID, State: wire.ProcRunning})
			}
			g.fillHeartbeat(&hb)
			if !reflect.DeepEqual(hb.GPUUse, tc.use) {
				t.Errorf("GPU use %s, want %s", useLine(hb.GPUUse), useLine(tc.use))
			}
			for _, p := range hb.Procs {
				if want := tc.util[p.ID]; !reflect.DeepEqual(p.GPUUtil, want) {
					t.Errorf("%s: GPU utilization %s, want %s", p.ID, pctLine(p.GPUUtil), pctLine(want))
				}
			}
		})
	}
}

func pctLine(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%d%%", *p)
}

func useLine(use []wire.GPUUse) string {
	var b strings.Builder
	for _, u := range use {
		fmt.Fprintf(&b, "[%s %s %d] ", u.UUID, pctLine(u.Util), u.MemoryUsed)
	}
	return b.String()
}

// An agent with two declared GPUs reports them, gives a process its GPU
// (and one without GPUs none), and stops a process over its GPU memory
// slice with the message, the flag and the exit code ducc run returns.
func TestAgentGPUs(t *testing.T) {
	psk := wiretest.Key(t)
	fh := newFakeHead(t, psk, "fake-head", 1)
	cfg := workerConfig(t, psk, fh)
	zero, one := 0, 1
	cfg.GPUs = []gpu.Declared{{UUID: "GPU-a", Model: "H100", Memory: "80G", Minor: &zero}, {UUID: "GPU-b", Model: "H100", Memory: "80G", Minor: &one}}
	r := &fakeReader{}
	r.set(map[string]map[int]int64{}, nil)
	a := startAgentWith(t, cfg, func(ag *Agent) {
		ag.openGPUs = func() (gpu.MemoryReader, gpu.Inventory) { return r, gpu.Inventory{Status: gpu.StatusFound} }
	})
	self := a.peerID(t)
	fh.waitFor("a heartbeat of n1 with its GPUs", func() bool {
		hb := fh.beats["n1"]
		return len(hb.GPUs) == 2 && hb.GPUs[1] == wire.GPUDevice{UUID: "GPU-b", Model: "H100", Memory: 80 << 30, Minor: 1} &&
			hb.GPUDiscovery == "declared in node.gpus: 2 GPU(s)"
	})

	logs := logDir(t)
	me := currentUser(t)
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	spec := func(id, script string, gpus []string, slice int64) wire.ProcSpec {
		return wire.ProcSpec{ID: id, WorkID: 1, Kind: "POP", User: me, UID: uid, GID: gid, Env: []string{"PATH=/usr/bin:/bin"},
			Path: "/bin/sh", Args: []string{"-c", script}, LogDir: logs, MemoryLimit: 256 << 20, GPUs: gpus, GPUSlice: slice}
	}
	const show = `echo "[${CUDA_VISIBLE_DEVICES-unset}] [${NVIDIA_VISIBLE_DEVICES-unset}]"`
	const gib = int64(1) << 30
	// The fake NVML says 1.3's process uses 30 GiB of GPU-b.
	r.mu.Lock()
	r.use = func() gpu.Usage {
		if st, ok := a.procs.Status("1.3"); ok && st.PID > 0 {
			return memUsage(map[string]map[int]int64{"GPU-b": {st.PID: 30 * gib}})
		}
		return gpu.Usage{}
	}
	r.mu.Unlock()
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 1, Procs: []wire.ProcSpec{
		spec("1.1", show, []string{"GPU-a"}, 0),
		spec("1.2", show, nil, 0),
		spec("1.3", "exec sleep 600", []string{"GPU-b"}, 20*gib),
	}})
	for id, want := range map[string]string{"1.1": "[GPU-a] [GPU-a]", "1.2": "[] []"} {
		fh.waitFor("the exit of "+id, func() bool { r, ok := fh.lastReport(id); return ok && r.Ended() })
		fh.mu.Lock()
		rep, _ := fh.lastReport(id)
		fh.mu.Unlock()
		if b, err := os.ReadFile(rep.LogPath); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s printed %q (%v), want %q", id, b, err, want)
		}
	}
	fh.waitFor("1.3 stopped for its slice", func() bool { r, ok := fh.lastReport("1.3"); return ok && r.Ended() })
	fh.mu.Lock()
	rep, _ := fh.lastReport("1.3")
	fh.mu.Unlock()
	if !rep.GPUSliceExceeded || rep.Reason != "GPU memory slice exceeded: used 30 GiB of 20 GiB" || rep.ExitCode != wire.CodeGPUSlice ||
		rep.Signal != "SIGKILL" || rep.GPUMemoryPeak != 30*gib {
		t.Errorf("report of 1.3: %+v", rep)
	}
}
