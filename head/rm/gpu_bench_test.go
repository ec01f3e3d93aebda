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
