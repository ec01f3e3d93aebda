package agent

import (
	"sync/atomic"
	"testing"
)

// TestParallel checks that parallel runs every function, never more than
// n at once, and that wait returns once all have.
func TestParallel(t *testing.T) {
	for _, tc := range []struct{ n, jobs int }{{1, 5}, {2, 7}, {8, 3}, {8, 100}} {
		p := newParallel(tc.n)
		var running, most, done atomic.Int32
		for range tc.jobs {
			p.do(func() {
				r := running.Add(1)
				for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
				}
				running.Add(-1)
				done.Add(1)
			})
		}
		p.wait()
		if got := done.Load(); got != int32(tc.jobs) {
			t.Errorf("n=%d: %d of %d ran before wait returned", tc.n, got, tc.jobs)
		}
		if m := most.Load(); m > int32(tc.n) {
			t.Errorf("n=%d: %d ran at once", tc.n, m)
		}
	}
}
