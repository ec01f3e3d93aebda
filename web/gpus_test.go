package web

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ducc-project/ducc/wire"
)

const (
	gpu0 = "GPU-8a5b6c3d-1e2f-3a4b-5c6d-7e8f9a0b1c2d"
	gpu1 = "GPU-1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"
	h100 = "NVIDIA H100 80GB HBM3"
)

// gpuFake is newFake with a GPU node, a job whose processes hold whole
// GPUs and a managed reservation with a slice.
func gpuFake() *fakeSource {
	f := newFake()
	f.nodes = append(f.nodes, wire.NodeInfo{Name: "g1", State: "Up", MemTotal: 512 << 30, MemSchedulable: 480 << 30,
		Shares: 480, SharesUsed: 16, Procs: 2, LastHeartbeat: ms(time.Second), GPUDiscovery: "NVML: 2 GPU(s), driver 550.54",
		GPUs: []wire.NodeGPU{
			{GPUDevice: wire.GPUDevice{UUID: gpu0, Model: h100, Memory: 80 << 30}, Allocated: 80 << 30, Holders: []string{"8.1"}, Used: 42 << 30,
				Util: wire.Percent(87)},
			{GPUDevice: wire.GPUDevice{UUID: gpu1, Model: h100, Memory: 80 << 30, Minor: 1}, Allocated: 20 << 30, Holders: []string{"9.1"}},
		}})
	f.work = append(f.work,
		wire.WorkInfo{ID: 8, Kind: wire.WorkJob, User: "dave", Class: "normal", State: "Running", Memory: 8 << 30,
			SubmittedAt: ms(5 * time.Minute), StartedAt: ms(4 * time.Minute), Command: []string{"train.py"}, GPUs: 1, GPUModel: h100,
			Job: &wire.JobStats{Total: 10, Done: 1, Processes: 1},
			Procs: []wire.ProcInfo{{ID: "8.1", Node: "g1", State: "Running", PID: 90, MemoryLimit: 8 << 30, StartedAt: ms(4 * time.Minute),
				GPUs: []string{gpu0}, GPUMemory: 42 << 30, GPUMemoryPeak: 50 << 30, GPUSeconds: 240, GPUUtil: wire.Percent(60)}}},
		wire.WorkInfo{ID: 9, Kind: wire.WorkManaged, User: "erin", Class: "fixed", State: "Running", Memory: 4 << 30, Node: "g1",
			SubmittedAt: ms(3 * time.Minute), StartedAt: ms(2 * time.Minute), Command: []string{"infer.py"}, GPUMemory: 20 << 30,
			Procs: []wire.ProcInfo{{ID: "9.1", Node: "g1", State: "Running", PID: 91, MemoryLimit: 4 << 30, StartedAt: ms(2 * time.Minute),
				GPUs: []string{gpu1}, GPUSlice: 20 << 30}}},
	)
	return f
}

func TestPagesGPUs(t *testing.T) {
	srv, _ := newTestServer(t, gpuFake(), nil)
	for _, tc := range []struct {
		name, path string
		want, not  []string
	}{
		{"machines", "/machines", []string{"<th>GPUs</th>", "2 × 80 GiB · 2 in use · 100 GiB allocated · 42 GiB used", `<td class="gpus">—</td>`}, nil},
		{"node", "/machines/g1", []string{`id="node-gpus">2 × 80 GiB · 2 in use`, `id="node-gpu-discovery">NVML: 2 GPU(s), driver 550.54`,
			`id="gpu-` + gpu0 + `"`, h100, `<meter max="85899345920" value="21474836480"></meter> 20 GiB`, `<a href="/jobs/8#proc-8.1">8.1</a>`,
			"<th>Utilization</th>", `<td class="num gpu-util">87%</td>`, `<td class="num gpu-util">—</td>`}, nil},
		{"node without GPUs", "/machines/n1", nil, []string{"node-gpus", "node-gpu-table", "GPU discovery"}},
		{"job with whole GPUs", "/jobs/8", []string{`id="work-gpus">1 GPU per process, whole, on one node of model ` + h100,
			"<th>GPUs</th>", gpu0 + " · using 42 GiB · utilization 60% · peak 50 GiB · GPU time 4m00s"}, nil},
		{"job with a slice", "/jobs/9", []string{`id="work-gpus">a 20 GiB slice of one GPU&#39;s memory per process`, "20 GiB of " + gpu1}, nil},
		{"job without GPUs", "/jobs/2", nil, []string{"work-gpus", "<th>GPUs</th>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := get(t, srv.URL+tc.path)
			if code != 200 {
				t.Fatalf("GET %s: %d\n%s", tc.path, code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: missing %q\n%s", tc.path, w, body)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(body, w) {
					t.Errorf("GET %s: unexpected %q", tc.path, w)
				}
			}
		})
	}
	// Without GPUs anywhere the machines page has no GPU column.
	plain, _ := newTestServer(t, newFake(), nil)
	if _, body, _ := get(t, plain.URL+"/machines"); strings.Contains(body, "GPUs") {
		t.Error("a GPU column on a cluster without GPUs")
	}
	// The API carries the fields as the wire types name them.
	_, body, _ := get(t, srv.URL+"/api/v1/nodes")
	var nodes wire.NodeList
	if err := json.Unmarshal([]byte(body), &nodes); err != nil {
		t.Fatal(err)
	}
	g := nodes.Nodes[len(nodes.Nodes)-1]
	if len(g.GPUs) != 2 || g.GPUs[0].UUID != gpu0 || g.GPUs[0].Used != 42<<30 || g.GPUDiscovery == "" {
		t.Errorf("/api/v1/nodes: %+v", g)
	}
	if !strings.Contains(body, `"gpu_discovery"`) || !strings.Contains(body, `"allocated"`) {
		t.Errorf("/api/v1/nodes lacks the GPU fields' names:\n%s", body)
	}
}

func TestMetricsGPUs(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	hm := NewHeadMetrics(reg)
	defer hm.ServeCluster(func() Cluster {
		c := testCluster()
		f := gpuFake()
		g := f.nodes[len(f.nodes)-1]
		// The same UUID twice (a bad declaration) must not fail the scrape.
		g.GPUs = append(g.GPUs, g.GPUs[0])
		c.Nodes = append(c.Nodes, g)
		return c
	})()
	want := `
# HELP ducc_gpu_memory_allocated_bytes GPU memory the scheduler has given out: the whole device to a process that holds it whole, else the sum of the slices on it.
# TYPE ducc_gpu_memory_allocated_bytes gauge
ducc_gpu_memory_allocated_bytes{model="",node="n1",uuid="GPU-a"} 4.294967296e+10
ducc_gpu_memory_allocated_bytes{model="NVIDIA H100 80GB HBM3",node="g1",uuid="GPU-1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"} 2.147483648e+10
ducc_gpu_memory_allocated_bytes{model="NVIDIA H100 80GB HBM3",node="g1",uuid="GPU-8a5b6c3d-1e2f-3a4b-5c6d-7e8f9a0b1c2d"} 8.589934592e+10
# HELP ducc_gpu_memory_bytes Memory of a GPU (or MIG instance) of a node.
# TYPE ducc_gpu_memory_bytes gauge
ducc_gpu_memory_bytes{model="",node="n1",uuid="GPU-a"} 8.589934592e+10
ducc_gpu_memory_bytes{model="NVIDIA H100 80GB HBM3",node="g1",uuid="GPU-1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"} 8.589934592e+10
ducc_gpu_memory_bytes{model="NVIDIA H100 80GB HBM3",node="g1",uuid="GPU-8a5b6c3d-1e2f-3a4b-5c6d-7e8f9a0b1c2d"} 8.589934592e+10
# HELP ducc_gpu_memory_used_bytes GPU memory in use on a GPU, where the agent can read it (NVML); 0 otherwise.
# TYPE ducc_gpu_memory_used_bytes gauge
ducc_gpu_memory_used_bytes{model="",node="n1",uuid="GPU-a"} 1.073741824e+09
ducc_gpu_memory_used_bytes{model="NVIDIA H100 80GB HBM3",node="g1",uuid="GPU-1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"} 0
ducc_gpu_memory_used_bytes{model="NVIDIA H100 80GB HBM3",node="g1",uuid="GPU-8a5b6c3d-1e2f-3a4b-5c6d-7e8f9a0b1c2d"} 4.5097156608e+10
# HELP ducc_gpu_utilization_ratio Fraction of the last sample period in which a kernel ran on a GPU (0..1), as NVML reports it; only GPUs whose figure NVML gives.
# TYPE ducc_gpu_utilization_ratio gauge
ducc_gpu_utilization_ratio{model="NVIDIA H100 80GB HBM3",node="g1",uuid="GPU-8a5b6c3d-1e2f-3a4b-5c6d-7e8f9a0b1c2d"} 0.87
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ducc_gpu_memory_bytes", "ducc_gpu_memory_allocated_bytes", "ducc_gpu_memory_used_bytes",
		"ducc_gpu_utilization_ratio"); err != nil {
		t.Error(err)
	}
	// Without GPUs, no GPU series.
	reg2 := prometheus.NewPedanticRegistry()
	defer NewHeadMetrics(reg2).ServeCluster(func() Cluster {
		c := testCluster()
		for i := range c.Nodes {
			c.Nodes[i].GPUs = nil
		}
		return c
	})()
	if n, err := testutil.GatherAndCount(reg2, "ducc_gpu_memory_bytes"); err != nil || n != 0 {
		t.Errorf("%d GPU series without GPUs, %v", n, err)
	}
}
