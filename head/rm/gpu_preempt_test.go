package rm

import (
	"testing"
	"time"
)

// TestGPUPreemption: GPUs taken by one piece of work are given back when
// fairness or priority says so, as memory is: a GPU job over its share
// shrinks for another GPU job, and FIXED_SHARE work evicts fair-share GPU
// holders of worse priority for their devices.
func TestGPUPreemption(t *testing.T) {
	nodes := gpuNodes("n", 4, 64*GiB, 2, 80*GiB) // 256 shares, 8 GPUs of 80 GiB
	tests := []struct {
		name   string
		first  Work // holds every GPU
		second Work // arrives later and asks for GPUs
		check  func(t *testing.T, h map[uint64]int)
	}{
		{"whole GPUs between two users", withGPUs(job(1, "gina", "normal", 2*GiB, 1000), 1, 0),
			withGPUs(job(2, "gus", "normal", 2*GiB, 1000), 1, 0),
			func(t *testing.T, h map[uint64]int) {
				if h[1] != 4 || h[2] != 4 {
					t.Errorf("holding %s, want 1:4 2:4 (the 8 GPUs shared)", fmtCounts(h))
				}
			}},
		{"slices between two users", withGPUs(job(1, "gina", "normal", 2*GiB, 1000), 0, 40*GiB),
			withGPUs(job(2, "gus", "normal", 2*GiB, 1000), 0, 40*GiB),
			func(t *testing.T, h map[uint64]int) {
				if h[1] != 8 || h[2] != 8 {
					t.Errorf("holding %s, want 1:8 2:8 (16 slices shared)", fmtCounts(h))
				}
			}},
		{"a whole GPU from slices", withGPUs(job(1, "gina", "normal", 2*GiB, 1000), 0, 40*GiB),
			withGPUs(job(2, "gus", "normal", 2*GiB, 1000), 1, 0),
			func(t *testing.T, h map[uint64]int) {
				if h[2] < 3 || h[1] < 6 {
					t.Errorf("holding %s: want gus to get whole GPUs back from gina's slices and both to keep a fair part", fmtCounts(h))
				}
			}},
		{"fixed share evicts", withGPUs(job(1, "gina", "normal", 2*GiB, 1000), 1, 0),
			run(2, "fred", 4*GiB, 2, 0),
			func(t *testing.T, h map[uint64]int) {
				if h[2] != 1 || h[1] != 6 {
					t.Errorf("holding %s, want 1:6 2:1 (the run's 2 GPUs evicted from the job)", fmtCounts(h))
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &sim{cfg: flat(DefaultConfig()), nodes: nodes, now: t0, work: []Work{tt.first}}
			for range 3 {
				s.step(time.Second)
			}
			if h := s.holding(); h[1] == 0 {
				t.Fatalf("the first work alone holds %s", fmtCounts(h))
			}
			w := tt.second
			w.SubmitTime = s.now
			s.work = append(s.work, w)
			for range 40 {
				s.step(10 * time.Second)
				// What the processes hold, stopping ones included.
				checkGPUs(t, Input{Nodes: s.nodes, Work: s.work}, Plan{})
			}
			tt.check(t, s.holding())
		})
	}
}
