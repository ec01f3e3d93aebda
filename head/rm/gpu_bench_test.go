package rm

import (
	"fmt"
	"math/rand"
	"testing"
)

// gpuBenchCluster is benchCluster with eight 80 GiB GPUs on every node and
// a fifth of the works asking one whole GPU, a fifth a 20 GiB slice.
func gpuBenchCluster(nodes, jobs, users int) Input {
	in := benchCluster(nodes, jobs, users)
	for i := range in.Nodes {
		for g := 0; g < 8; g++ {
			in.Nodes[i].GPUs = append(in.Nodes[i].GPUs, GPU{ID: fmt.Sprintf("%s-g%d", in.Nodes[i].Name, g), Memory: 80 * GiB})
		}
	}
	r := rand.New(rand.NewSource(7))
	for i := range in.Work {
		switch w := &in.Work[i]; {
		case w.Kind == Reservation:
		case r.Intn(5) == 0:
			w.GPUs = 1
		case r.Intn(4) == 0:
			w.GPUMemory = 20 * GiB
		}
	}
	return in
}

// The cost of a cycle on a cluster with GPUs, to compare with
// BenchmarkSchedule's cold cycles of the same sizes.
func BenchmarkScheduleGPU(b *testing.B) {
	for _, sz := range benchSizes {
		if sz.nodes < 1000 || (testing.Short() && sz.nodes > 1000) {
			continue
		}
		in := gpuBenchCluster(sz.nodes, sz.jobs, sz.users)
		in.NoTrace = true
		p := Schedule(in)
		b.Run(fmt.Sprintf("cold-notrace/nodes=%d/jobs=%d", sz.nodes, sz.jobs), func(b *testing.B) {
			b.ReportMetric(float64(len(p.Starts)), "starts")
			loop(b, in)
		})
	}
}

// The burst: 2,000 workers of one job on 10,000 nodes with eight
// 80 GiB GPUs each, whole GPUs or 20 GiB slices, beside the same burst
// without GPUs on the same nodes.
func BenchmarkScheduleGPUBurst(b *testing.B) {
	nodes := gpuNodes("n", 10000, 256*GiB, 8, 80*GiB)
	for _, tc := range []struct {
		name string
		gpus int
		gmem int64
	}{{"memory-only", 0, 0}, {"whole-gpu", 1, 0}, {"slice-20G", 0, 20 * GiB}} {
		w := withGPUs(job(1, "u", "normal", 8*GiB, 2000), tc.gpus, tc.gmem)
		in := Input{Now: t0, Config: flat(DefaultConfig()), Nodes: nodes, Work: []Work{w}, NoTrace: true}
		p := Schedule(in)
		b.Run(tc.name+"/nodes=10000/workers=2000", func(b *testing.B) {
			b.ReportMetric(float64(len(p.Starts)), "starts")
			loop(b, in)
		})
		// As the head runs it: one Scheduler, whose buffers outlive a cycle.
		b.Run(tc.name+"/scheduler/nodes=10000/workers=2000", func(b *testing.B) {
			var sc Scheduler
			b.ReportMetric(float64(len(p.Starts)), "starts")
			loopWith(b, in, sc.Schedule)
		})
	}
}
