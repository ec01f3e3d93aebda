package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// BenchmarkFlatWithHistory: does a head that has run a lot stay as fast
// and as small as a fresh one (issue 12, "flat with history")? On one dev
// cluster whose retention keeps finished work and results 4 minutes (long
// enough that no purge runs while the history is measured, short enough
// to see the purge after): the
// 500-job rate (as BenchmarkShortJobs500) and the median of 20 `ducc run
// -- true`, fresh; then 10,000 short jobs (submitted 4 at a time) and ten
// jobs of 100,000 items; the two measures again with all of that in the
// state; then, once retention has purged it, the agent's RSS.
// DUCC_BENCH_HISTORY=JOBS,STREAMS scales the history down (e.g. 1000,1).
//
//	go test -run XXX -bench FlatWithHistory -benchtime 1x -timeout 60m ./e2e/
func BenchmarkFlatWithHistory(b *testing.B) {
	shorts, streams := 10_000, 10
	if s := os.Getenv("DUCC_BENCH_HISTORY"); s != "" {
		a, z, _ := strings.Cut(s, ",")
		shorts, _ = strconv.Atoi(a)
		streams, _ = strconv.Atoi(z)
	}
	py := needPython(b)
	cfg := filepath.Join(b.TempDir(), "ducc.yaml")
	if err := os.WriteFile(cfg, []byte("head: {retention: {work: 4m, results: 4m, history: 30d}}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	c := startCluster(b, "--config", cfg)
	pid := c.cmd.Process.Pid
	c.ducc("run", "--", "true") // warm up

	measure := func() (jobsPerSec, runMS float64) {
		const n = 500
		_, e2e := shortJobs(b, c, n, 1)
		jobsPerSec = n / e2e.Seconds()
		durs := make([]time.Duration, 0, 20)
		for range 20 {
			start := time.Now()
			if _, errs, code := c.ducc("run", "--", "true"); code != 0 {
				b.Fatalf("run: exit %d: %s", code, errs)
			}
			durs = append(durs, time.Since(start))
		}
		sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
		return jobsPerSec, float64(durs[len(durs)/2].Microseconds()) / 1000
	}

	b.ResetTimer()
	for range b.N {
		freshRate, freshRun := measure()
		freshRSS := rssKiB(b, pid)

		// History: short jobs, 4 submitters at a time.
		t0 := time.Now()
		var mu sync.Mutex
		ids := make(map[uint64]bool, shorts)
		var wg sync.WaitGroup
		next := make(chan struct{})
		go func() {
			defer close(next)
			for range shorts {
				next <- struct{}{}
			}
		}()
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range next {
					id, err := detachTrue(c)
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					ids[id] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
		waitHistory(b, c, ids, t0)
		// Streams of 100,000 items.
		worker, items := streamInputs(b, c, 100_000)
		for range streams {
			runStream(b, c, py, worker, items, 100_000)
		}
		historyRSS := rssKiB(b, pid)
		histRate, histRun := measure()

		// Retention: wait until the live state holds no finished work.
		deadline := time.Now().Add(10 * time.Minute)
		for {
			out, errs, code := c.ducc("jobs", "--all", "--json")
			if code != 0 {
				b.Fatalf("jobs: exit %d: %s", code, errs)
			}
			var list wire.WorkList
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				b.Fatalf("jobs: %v", err)
			}
			if len(list.Work) == 0 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d pieces of finished work still live 10 minutes after the last ended", len(list.Work))
			}
			time.Sleep(time.Second)
		}
		// The head hands freed memory back at most once a minute
		// (head.releaseEvery): wait past the next time it may.
		time.Sleep(70 * time.Second)
		b.ReportMetric(freshRate, "fresh-jobs/s")
		b.ReportMetric(histRate, "history-jobs/s")
		b.ReportMetric(freshRun, "fresh-run-ms")
		b.ReportMetric(histRun, "history-run-ms")
		b.ReportMetric(float64(freshRSS)/1024, "fresh-RSS-MiB")
		b.ReportMetric(float64(historyRSS)/1024, "history-RSS-MiB")
		b.ReportMetric(float64(rssKiB(b, pid))/1024, "retained-RSS-MiB")
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
}
