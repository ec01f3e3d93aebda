package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// fastWorker answers every item at once: it measures ducc's own per-item
// cost (dispatch, FIFOs, outcomes through Raft), not the worker's.
const fastWorker = `import json, sys
w = sys.stdout.write
w('{"ready": true}\n'); sys.stdout.flush()
for line in sys.stdin:
    w('{"id": "%s", "ok": true}\n' % json.loads(line)["id"])
    sys.stdout.flush()
`

func benchJob(b *testing.B, n int, args ...string) {
	py := needPython(b)
	c := startCluster(b)
	worker := filepath.Join(c.dir, "fast.py")
	if err := os.WriteFile(worker, []byte(fastWorker), 0o644); err != nil {
		b.Fatal(err)
	}
	items := filepath.Join(c.dir, "items")
	f, err := os.Create(items)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		f.WriteString(strconv.Itoa(i) + "\n")
	}
	f.Close()
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		sub := append([]string{"submit", "--process-memory-size", "1G", "--input-file", items,
			"--log-directory", filepath.Join(c.dir, "logs")}, args...)
		if len(args) == 0 {
			sub = append(sub, "--process-executable", py, "--process-executable-args", worker)
		}
		out, errs, code := c.ducc(sub...)
		if code != 0 {
			b.Fatalf("submit: %s %s", out, errs)
		}
		id := out[len("Job ") : len(out)-len(" submitted\n")]
		w := c.waitEnd(b, id, 10*time.Minute)
		if w.Completion != "EndOfJob" || w.Job.Done != n {
			b.Fatalf("job ended %s: %+v", w.Completion, w.Job)
		}
		total += time.UnixMilli(w.EndedAt).Sub(time.UnixMilli(w.SubmittedAt))
	}
	b.StopTimer()
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "items/s")
	b.ReportMetric(float64(total.Microseconds())/float64(n*b.N), "µs/item")
}

// BenchmarkJobStream100k: 100,000 items through a trivial stream worker.
func BenchmarkJobStream100k(b *testing.B) { benchJob(b, 100_000) }

// BenchmarkJobExec: items through `worker_protocol: exec`, one /bin/true
// per item.
func BenchmarkJobExec(b *testing.B) {
	benchJob(b, 10_000, "--process-executable", "/bin/true", "--worker-protocol", "exec")
}
