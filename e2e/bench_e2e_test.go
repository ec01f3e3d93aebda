package e2e

import (
	"os"
	"path/filepath"
	"regexp"
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

// BenchmarkRestart600k: the restart of a one-node cluster right after 30
// jobs of 20,000 items (600,000 items of history), from SIGTERM to the
// node up again, restoring the newest Raft snapshot and replaying the log
// after it. It fails when the restart did not restore a snapshot.
//
//	go test -run XXX -bench Restart600k -benchtime 3x ./e2e/
func BenchmarkRestart600k(b *testing.B) {
	const jobs, items = 30, 20_000
	py := needPython(b)
	c := startCluster(b)
	worker := filepath.Join(c.dir, "fast.py")
	if err := os.WriteFile(worker, []byte(fastWorker), 0o644); err != nil {
		b.Fatal(err)
	}
	input := filepath.Join(c.dir, "items")
	f, err := os.Create(input)
	if err != nil {
		b.Fatal(err)
	}
	for i := range items {
		f.WriteString(strconv.Itoa(i) + "\n")
	}
	f.Close()
	for range jobs {
		out, errs, code := c.ducc("submit", "--process-memory-size", "1G", "--input-file", input,
			"--log-directory", filepath.Join(c.dir, "logs"), "--process-executable", py, "--process-executable-args", worker)
		if code != 0 {
			b.Fatalf("submit: %s %s", out, errs)
		}
		id := out[len("Job ") : len(out)-len(" submitted\n")]
		if w := c.waitEnd(b, id, 10*time.Minute); w.Completion != "EndOfJob" || w.Job.Done != items {
			b.Fatalf("job ended %s: %+v", w.Completion, w.Job)
		}
	}
	raftDB := filepath.Join(c.dataDir, "raft", "raft.db")
	replayed := regexp.MustCompile(`msg="replayed raft log".* entries=(\d+)`)
	var total, restore time.Duration
	var dbSize, snapSize, entries int64
	b.ResetTimer()
	for range b.N {
		c.stop()
		fi, err := os.Stat(raftDB)
		if err != nil {
			b.Fatal(err)
		}
		dbSize = fi.Size()
		start := time.Now()
		c.start()
		total += time.Since(start)
		st, ok := c.status()
		if !ok || st.Snapshot == nil || st.Snapshot.RestoredIndex == 0 {
			b.Fatalf("the restart restored no snapshot: %+v", st.Snapshot)
		}
		restore += time.Duration(st.Snapshot.RestoreMS) * time.Millisecond
		snapSize = st.Snapshot.Size
		if m := replayed.FindAllStringSubmatch(c.agentLog(), -1); len(m) > 0 {
			entries, _ = strconv.ParseInt(m[len(m)-1][1], 10, 64)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "restart-ms")
	b.ReportMetric(float64(restore.Milliseconds())/float64(b.N), "restore-ms")
	b.ReportMetric(float64(entries), "replayed-entries")
	b.ReportMetric(float64(dbSize)/1e6, "raft.db-MB")
	b.ReportMetric(float64(snapSize)/1e6, "snapshot-MB")
	b.ReportMetric(0, "ns/op")
}
