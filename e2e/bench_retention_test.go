package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// BenchmarkRetentionRSS: 30 jobs of 20,000 items (600,000 items of
// history) on a cluster that keeps finished work 5 s and results 10 s;
// once retention has purged them all, the agent's RSS 55 s later (the
// head hands freed memory back at most once a minute) must come back:
// it reports the RSS after the last job, and a minute after the purge,
// with its anonymous and file-backed parts (issue 26: under 100 MiB).
//
//	go test -run XXX -bench RetentionRSS -benchtime 1x ./e2e/
func BenchmarkRetentionRSS(b *testing.B) {
	const jobs, items = 30, 20_000
	py := needPython(b)
	cfg := filepath.Join(b.TempDir(), "ducc.yaml")
	if err := os.WriteFile(cfg, []byte("head: {retention: {work: 5s, results: 10s, history: 30d}}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	c := startCluster(b, "--config", cfg)
	pid := c.cmd.Process.Pid
	worker, input := streamInputs(b, c, items)
	b.ResetTimer()
	for range b.N {
		for range jobs {
			runStream(b, c, py, worker, input, items)
		}
	}
	b.StopTimer()
	afterJobs := rssKiB(b, pid)
	// Purged: no finished work left in the live state.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var l wire.WorkList
		out, _, _ := c.ducc("jobs", "--all", "--json")
		if err := json.Unmarshal([]byte(out), &l); err == nil && len(l.Work) == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("finished work still in the live state after 2 minutes: %.300s", out)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(55 * time.Second) // within a minute (the head releases memory at most once a minute)
	b.ReportMetric(float64(afterJobs)/1024, "MiB-rss-after-jobs")
	b.ReportMetric(float64(rssKiB(b, pid))/1024, "MiB-rss-after-purge")
	b.ReportMetric(float64(statusKiB(b, pid, "RssAnon:"))/1024, "MiB-anon-after-purge")
	b.ReportMetric(float64(statusKiB(b, pid, "RssFile:"))/1024, "MiB-file-after-purge")
}
