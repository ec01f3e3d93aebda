package cgroup

import (
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkStartIn starts b.N processes of /bin/true with StartIn, from 1,
// 4 and 16 callers at once, each into a group of its own (as the shim
// server does), and waits for each after StartIn returns: starts/s. On
// v1, a rate that does not rise with callers while CPU is left is StartIn
// running one at a time (docs/performance.md, "v1 launches in parallel").
//
//	go test -run XXX -bench StartIn -benchtime 2000x ./cgroup/
func BenchmarkStartIn(b *testing.B) {
	for _, callers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			m := newManager(b)
			groups := make([]Group, callers)
			for i := range groups {
				g, err := m.Create(fmt.Sprintf("bench%d", i), Resources{MemoryLimit: 256 << 20})
				if err != nil {
					b.Fatal(err)
				}
				groups[i] = g
				b.Cleanup(func() { _ = g.Kill(); _ = g.Delete() })
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, callers)
			b.ResetTimer()
			t0 := time.Now()
			for _, g := range groups {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						cmd := exec.Command("/bin/true")
						if err := m.StartIn(g, func(int) error { return cmd.Start() }); err != nil {
							errs <- err
							return
						}
						if err := cmd.Wait(); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			wall := time.Since(t0)
			b.StopTimer()
			select {
			case err := <-errs:
				b.Fatal(err)
			default:
			}
			b.ReportMetric(float64(b.N)/wall.Seconds(), "starts/s")
		})
	}
}
