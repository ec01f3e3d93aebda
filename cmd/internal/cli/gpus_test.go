package cli

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ducc-project/ducc/wire"
)

const (
	uuid0 = "GPU-8a5b6c3d-1e2f-3a4b-5c6d-7e8f9a0b1c2d"
	uuid1 = "GPU-1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"
	h100  = "NVIDIA H100 80GB HBM3"
)

// sampleGPUWork is a job whose processes hold whole GPUs and a managed
// reservation with a slice, as a head reports them.
func sampleGPUWork() []wire.WorkInfo {
	return []wire.WorkInfo{
		{ID: 21, Kind: wire.WorkJob, User: "alice", Class: "normal", State: "Running", Memory: 8 << 30,
			SubmittedAt: 1_700_000_000_000, StartedAt: 1_700_000_010_000, Nodes: []string{"gpu01"},
			GPUs: 1, GPUModel: h100, Job: &wire.JobStats{Total: 10, Done: 4},
			Procs: []wire.ProcInfo{
				{ID: "21.1", Node: "gpu01", State: wire.ProcRunning, PID: 4242, MemoryLimit: 8 << 30, Done: 2,
					GPUs: []string{uuid0}, GPUMemory: 30 << 30, GPUMemoryPeak: 31 << 30, GPUSeconds: 90, GPUUtil: wire.Percent(60)},
				{ID: "21.2", Node: "gpu01-with-a-long-name", State: wire.ProcExited, PID: 4243, MemoryLimit: 8 << 30, Done: 2,
					ExitCode: 143, Reason: "killed by SIGTERM", Stopped: "preempted",
					GPUs: []string{uuid1}, GPUMemoryPeak: 70 << 30, GPUSeconds: 5400, GPUUtil: wire.Percent(99)}, // ended: not shown
			}},
		{ID: 22, Kind: wire.WorkManaged, User: "bob", Class: "fixed", State: "Running", Memory: 4 << 30,
			SubmittedAt: 1_700_000_000_000, StartedAt: 1_700_000_010_000, Nodes: []string{"gpu01"},
			GPUMemory: 40 << 30, Command: []string{"python3", "train.py"},
			Procs: []wire.ProcInfo{{ID: "22.1", Node: "gpu01", State: wire.ProcRunning, PID: 5000, MemoryLimit: 4 << 30,
				GPUs: []string{uuid0}, GPUSlice: 40 << 30, GPUMemory: 12 << 30}}},
		{ID: 23, Kind: wire.WorkReservation, User: "carol", Class: "reserve", State: "WaitingForResources",
			ReasonCode: wire.ReasonGPUs, Memory: 64 << 30, GPUs: 8, SubmittedAt: 1_700_000_000_000, Command: []string{""},
			Reason: "no machine has 8 free GPUs; machines: 1 × 2 GPUs"},
	}
}

func TestShowGPUs(t *testing.T) {
	ws := sampleGPUWork()
	tests := []struct {
		name string
		w    wire.WorkInfo
		want []string
		not  []string
	}{
		{"whole GPUs", ws[0], []string{
			"GPUs: 1 per job process, whole, on one node (model " + h100 + ")",
			"GPU use: 1h31m of GPU time held; peak 70 GiB of GPU memory in one process",
			"GPUS", "21.1 GPUs: " + uuid0 + "; using 30 GiB; utilization 60%; peak 31 GiB; GPU time 1m30s",
			"21.2 GPUs: " + uuid1 + "; peak 70 GiB; GPU time 1h30m",
		}, []string{"GPU memory:", "99%"}},
		{"slice", ws[1], []string{
			"GPU memory: 40 GiB slice of one GPU per process",
			"22.1 GPUs: 40 GiB of " + uuid0 + "; using 12 GiB",
			"GPU use: peak 12 GiB of GPU memory in one process",
		}, []string{"GPUs: 1", "(model", "utilization"}},
		{"reservation", ws[2], []string{"GPUs: a machine with at least 8; the reservation holds all of its GPUs", "State: WaitingForResources (GPUs)"},
			[]string{"GPU use", "GPUS"}},
		{"no GPUs", sampleWork()[0], nil, []string{"GPU", "GPUS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkShow(t, tt.w, tt.want, tt.not)
		})
	}
	// The process table's GPUS column: one whole GPU, a 40G slice.
	var b bytes.Buffer
	printWorkWidth(&b, ws[0], 80, showNow)
	if !strings.Contains(b.String(), "  GPUS  ") {
		t.Errorf("no GPUS column:\n%s", b.String())
	}
	b.Reset()
	printWorkWidth(&b, ws[1], 0, showNow)
	if !strings.Contains(b.String(), " 40G ") {
		t.Errorf("the slice is not in the table:\n%s", b.String())
	}
}

// The GPU fields reach --json as the wire types name them.
func TestGPUJSON(t *testing.T) {
	var b bytes.Buffer
	if err := printJSON(&b, sampleGPUWork()[1]); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"gpu_memory": 42949672960`, `"gpus": [`, `"gpu_slice": 42949672960`} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("show --json lacks %s:\n%s", s, b.String())
		}
	}
	b.Reset()
	if err := printJSON(&b, wire.NodeList{Nodes: sampleGPUNodes()}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"gpus": [`, `"uuid": "` + uuid0 + `"`, `"allocated": 85899345920`, `"gpu_discovery": "NVML: 2 GPU(s)`} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("nodes --json lacks %s", s)
		}
	}
	b.Reset()
	rec := wire.HistoryRecord{ID: 1, GPUs: 2, GPUSeconds: 7200.5, GPUMemoryPeak: 3 << 30}
	if err := printJSON(&b, wire.HistoryReply{Records: []wire.HistoryRecord{rec}}); err != nil {
		t.Fatal(err)
	}
	var back wire.HistoryReply
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Records) != 1 || !reflect.DeepEqual(back.Records[0], rec) {
		t.Errorf("history --json round trip: %+v, %v\n%s", back, err, b.String())
	}
	for _, s := range []string{`"gpus": 2`, `"gpu_seconds": 7200.5`, `"gpu_memory_peak": 3221225472`} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("history --json lacks %s", s)
		}
	}
}

func sampleGPUNodes() []wire.NodeInfo {
	now := showNow.UnixMilli()
	return []wire.NodeInfo{
		{Name: "gpu01.cluster.example.org", State: "Up", MemTotal: 503 << 30, MemSchedulable: 480 << 30, MemUsed: 12 << 30,
			Shares: 480, SharesUsed: 56, Procs: 3, LastHeartbeat: now - 1200, GPUDiscovery: "NVML: 2 GPU(s), driver 550.54",
			GPUs: []wire.NodeGPU{
				{GPUDevice: wire.GPUDevice{UUID: uuid0, Model: h100, Memory: 80 << 30}, Allocated: 80 << 30, Holders: []string{"21.1", "22.1"}, Used: 42 << 30,
					Util: wire.Percent(87)},
				{GPUDevice: wire.GPUDevice{UUID: uuid1, Model: h100, Memory: 80 << 30, Minor: 1}, Used: 500 << 20, Util: wire.Percent(0)},
			}},
		{Name: "mixed", State: "Up", MemTotal: 64 << 30, MemSchedulable: 60 << 30, Shares: 60, LastHeartbeat: now,
			GPUDiscovery: "node.gpus: 3 GPU(s) declared",
			GPUs: []wire.NodeGPU{
				{GPUDevice: wire.GPUDevice{UUID: "GPU-a", Model: "L4", Memory: 24 << 30}},
				{GPUDevice: wire.GPUDevice{UUID: "MIG-b", Model: "A100 MIG 3g.40gb", Memory: 40 << 30, Parent: "GPU-c"}, Allocated: 10 << 30, Holders: []string{"30.1"}},
				{GPUDevice: wire.GPUDevice{UUID: "GPU-d", Model: "L4", Memory: 24 << 30}},
			}},
		{Name: "cpu01", State: "Up", MemTotal: 64 << 30, MemSchedulable: 60 << 30, Shares: 60, LastHeartbeat: now, GPUDiscovery: "no NVML library"},
	}
}

func TestNodesGPUs(t *testing.T) {
	nodes := sampleGPUNodes()
	if got := nodeGPUCell(nodes[0]); got != "2×80G (1 in use)" {
		t.Errorf("cell %q", got)
	}
	if got := nodeGPUCell(nodes[1]); got != "2×24G+1×40G (1 in use)" {
		t.Errorf("mixed cell %q", got)
	}
	if got := nodeGPUCell(nodes[2]); got != "-" {
		t.Errorf("no GPUs: %q", got)
	}
	for _, width := range []int{0, 80} {
		var b bytes.Buffer
		dropped, err := nodeTable(nodes, showNow).write(&b, width, true)
		if err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if width > 0 && utf8.RuneCountInString(l) > width {
				t.Errorf("line of %d columns: %q", utf8.RuneCountInString(l), l)
			}
		}
		for _, s := range []string{"GPUS", "2×80G (1 in use)", "gpu01.cluster.example.org"} {
			if !strings.Contains(out, s) {
				t.Errorf("width %d: nodes lacks %q:\n%s", width, s, out)
			}
		}
		if width == 0 && (len(dropped) > 0 || !strings.Contains(out, "1.2s ago")) {
			t.Errorf("whole table left out %v:\n%s", dropped, out)
		}
	}
	// Without GPUs the table is as it was: no GPUS column.
	var b bytes.Buffer
	if _, err := nodeTable(nodes[2:], showNow).write(&b, 0, true); err != nil {
		t.Fatal(err)
	}
	if want := "NAME   STATE  MEM TOTAL  SCHEDULABLE  USED  SHARES  PROCS  HEARTBEAT\ncpu01  Up     64 GiB     60 GiB       0 B   0/60    0      0s ago\n"; b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	// --gpus: every GPU, and how each node found them.
	for _, width := range []int{0, 80} {
		var out, errOut bytes.Buffer
		if err := printGPUs(&out, &errOut, nodes, width); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
			if width > 0 && utf8.RuneCountInString(l) > width {
				t.Errorf("--gpus: line of %d columns: %q", utf8.RuneCountInString(l), l)
			}
		}
		for _, s := range []string{uuid0, uuid1, "MIG-b (MIG)", "80G", "42G", "gpu01.cluster.example.org: NVML: 2 GPU(s), driver 550.54", "cpu01: no NVML library"} {
			if !strings.Contains(out.String(), s) {
				t.Errorf("width %d: --gpus lacks %q:\n%s", width, s, out.String())
			}
		}
		if width == 0 && !strings.Contains(out.String(), "21.1,22.1") {
			t.Errorf("--gpus lacks the holders:\n%s", out.String())
		}
		if width == 0 {
			// Utilization where NVML gives it (0% is a figure), "-" where
			// it does not (declared GPUs, a MIG instance).
			for _, want := range []string{
				`(?m)^gpu01\.cluster\.example\.org +` + uuid0 + ` +.* 42G +87% +21\.1,22\.1$`,
				`(?m)^gpu01\.cluster\.example\.org +` + uuid1 + ` +.* 500M +0% +-$`,
				`(?m)^mixed +MIG-b \(MIG\) +.* 10G +- +- +30\.1$`,
				`(?m)^NODE +GPU +MODEL +MEMORY +ALLOC +USED +UTIL +HOLDERS$`,
			} {
				if !regexp.MustCompile(want).MatchString(out.String()) {
					t.Errorf("--gpus does not match %s:\n%s", want, out.String())
				}
			}
		}
	}
	var out bytes.Buffer
	if err := printGPUs(&out, &out, nodes[2:], 0); err != nil || !strings.HasPrefix(out.String(), "No node has GPUs.\ncpu01: no NVML library") {
		t.Errorf("--gpus without GPUs: %q, %v", out.String(), err)
	}
}

func TestHistoryGPUs(t *testing.T) {
	now := time.Date(2026, 11, 22, 15, 30, 0, 0, time.Local)
	var recs []wire.HistoryRecord
	for _, full := range wire.Completions() {
		recs = append(recs, wire.HistoryRecord{
			ID: 12345678, Kind: wire.WorkJob, User: "a-very-long-user-name", Class: "a-very-long-class",
			StartedAt: now.Add(-80 * time.Hour).UnixMilli(), EndedAt: now.Add(-30 * time.Hour).UnixMilli(),
			Completion: string(full), ExitCode: 255, MaxRSS: 1536 << 30, CPUSeconds: 1e6, Items: 1_000_000, Done: 999_990, Failed: 10,
			GPUs: 8, GPUSeconds: 1e9, GPUMemoryPeak: 80 << 30,
		})
	}
	recs = append(recs, wire.HistoryRecord{ID: 1, Kind: wire.WorkManaged, User: "bob", EndedAt: now.Add(-48 * time.Hour).UnixMilli(),
		Completion: "ProgramExit", ExitCode: 0, GPUMemory: 20 << 30, GPUSeconds: 5400},
		wire.HistoryRecord{ID: 2, Kind: wire.WorkManaged, User: "bob", EndedAt: now.UnixMilli(), Completion: "ProgramExit"})
	var out bytes.Buffer
	printHistory(&out, recs, now)
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if len(line) > 80 {
			t.Errorf("%d columns: %q", len(line), line)
		}
	}
	for _, s := range []string{"GPU ", "32y", " 1.5h ", "a-ve+"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("history lacks %q:\n%s", s, out.String())
		}
	}
	// Without GPUs, no column.
	out.Reset()
	printHistory(&out, recs[len(recs)-1:], now)
	if strings.Contains(out.String(), "GPU") {
		t.Errorf("a GPU column without GPUs:\n%s", out.String())
	}
	for s, want := range map[float64]string{0: "-", 1: "<1m", 900: "15m", 3600: "1h", 5400: "1.5h", 36000: "10h", 1e6: "278h", 1e7: "116d", 1e9: "32y"} {
		if got := gpuTimeShort(s); got != want {
			t.Errorf("gpuTimeShort(%v) = %q, want %q", s, got, want)
		}
	}
}

func TestJobsGPUColumn(t *testing.T) {
	cols, err := pickJobColumns("id,gpus")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := printWorkTable(&b, append(sampleGPUWork(), sampleWork()[0]), cols, showNow, 0, true); err != nil {
		t.Fatal(err)
	}
	if want := "ID  GPUS\n21  1\n22  40G\n23  8\n12  -\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	wide, _ := pickJobColumns("wide")
	found := false
	for _, c := range wide {
		found = found || c.name == "gpus"
	}
	if !found {
		t.Error("-o wide has no gpus column")
	}
}
