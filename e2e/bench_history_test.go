package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// BenchmarkFlatWithHistory: does a head that has run a lot stay as fast
// and as small as a fresh one (issue 12, "flat with history")? Two dev
// clusters whose retention keeps finished work and results 4 minutes (long
// enough that no purge runs while the history is measured, short enough to
// see the purge after): one is given 10,000 short jobs (submitted 4 at a
// time) and ten jobs of 100,000 items, the other nothing. Then, in paired
// rounds that alternate which goes first (this machine's speed drifts by
// tens of percent within minutes, so a fresh figure taken before the
// history is no baseline), each runs a batch of short jobs (as
// BenchmarkShortJobs500, from one loop) and five `ducc run -- true`. It
// reports each cluster's medians and the medians of the per-round ratios
// history/fresh of the rate, the agent's CPU per job and the run latency;
// then, once retention has purged the history, the agent's RSS.
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
	const rounds, batch, runs = 10, 100, 5
	py := needPython(b)
	cfg := filepath.Join(b.TempDir(), "ducc.yaml")
	if err := os.WriteFile(cfg, []byte("head: {retention: {work: 4m, results: 4m, history: 30d}}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	c := startCluster(b, "--config", cfg)
	fresh := startCluster(b, "--config", cfg)
	pid := c.cmd.Process.Pid
	c.ducc("run", "--", "true") // warm up
	fresh.ducc("run", "--", "true")
	freshRSS := rssKiB(b, fresh.cmd.Process.Pid)

	b.ResetTimer()
	for range b.N {
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

		var fr, hr paired
		for r := range rounds {
			first, second := fresh, c
			if r%2 == 1 {
				first, second = c, fresh
			}
			m1, m2 := measureBatch(b, first, batch, runs), measureBatch(b, second, batch, runs)
			if first == fresh {
				fr.add(m1)
				hr.add(m2)
			} else {
				fr.add(m2)
				hr.add(m1)
			}
		}
		ratio := func(h, f []float64) float64 {
			rs := make([]float64, len(h))
			for i := range h {
				rs[i] = h[i] / f[i]
			}
			return median(rs)
		}

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
		b.ReportMetric(median(fr.rate), "fresh-jobs/s")
		b.ReportMetric(median(hr.rate), "history-jobs/s")
		b.ReportMetric(ratio(hr.rate, fr.rate), "rate-ratio")
		b.ReportMetric(median(fr.cpu), "fresh-cpu-ms/job")
		b.ReportMetric(median(hr.cpu), "history-cpu-ms/job")
		b.ReportMetric(ratio(hr.cpu, fr.cpu), "cpu-ratio")
		b.ReportMetric(median(fr.run), "fresh-run-ms")
		b.ReportMetric(median(hr.run), "history-run-ms")
		b.ReportMetric(ratio(hr.runRound, fr.runRound), "run-ratio")
		b.ReportMetric(float64(freshRSS)/1024, "fresh-RSS-MiB")
		b.ReportMetric(float64(historyRSS)/1024, "history-RSS-MiB")
		b.ReportMetric(float64(rssKiB(b, pid))/1024, "retained-RSS-MiB")
		// Of which the pages of files it maps (the Raft log's bbolt file),
		// which the kernel reclaims first under pressure.
		b.ReportMetric(float64(statusKiB(b, pid, "RssFile:"))/1024, "retained-file-RSS-MiB")
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
}

// batchFigures is one batch of BenchmarkFlatWithHistory on one cluster.
type batchFigures struct {
	rate, cpu float64   // jobs/s, first submit to last end; agent CPU ms per job
	runs      []float64 // `ducc run -- true`, ms each
}

// paired collects one cluster's batches, round by round.
type paired struct {
	rate, cpu, runRound, run []float64
}

func (p *paired) add(f batchFigures) {
	p.rate = append(p.rate, f.rate)
	p.cpu = append(p.cpu, f.cpu)
	p.runRound = append(p.runRound, median(f.runs))
	p.run = append(p.run, f.runs...)
}

// measureBatch runs n short jobs on c from one loop, waits for them with
// `ducc jobs` (which reads only live work, the same on both clusters), and
// then runs `ducc run -- true` runs times.
func measureBatch(b *testing.B, c *cluster, n, runs int) batchFigures {
	b.Helper()
	pid := c.cmd.Process.Pid
	s0, c0 := cpuTicks(b, pid)
	h0 := shimServerTicks(b, pid)
	t0 := time.Now()
	ids := make(map[uint64]bool, n)
	for range n {
		id, err := detachTrue(c)
		if err != nil {
			b.Fatal(err)
		}
		ids[id] = true
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out, errs, code := c.ducc("jobs", "--noheader")
		if code != 0 {
			b.Fatalf("jobs: exit %d: %s", code, errs)
		}
		if strings.TrimSpace(out) == "" {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("short jobs still live after 5 minutes:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s1, c1 := cpuTicks(b, pid)
	ticks := s1 - s0 + c1 - c0 + shimServerTicks(b, pid) - h0
	last := waitHistory(b, c, ids, t0)
	f := batchFigures{
		rate: float64(n) / last.Sub(t0).Seconds(),
		cpu:  float64(time.Duration(ticks)*clockTick) / float64(time.Millisecond) / float64(n),
	}
	for range runs {
		start := time.Now()
		if _, errs, code := c.ducc("run", "--", "true"); code != 0 {
			b.Fatalf("run: exit %d: %s", code, errs)
		}
		f.runs = append(f.runs, float64(time.Since(start).Microseconds())/1000)
	}
	return f
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
