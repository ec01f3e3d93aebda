package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
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

// streamInputs writes the fast worker and an input of n items (0, 1, ...)
// into c's directory and returns their paths.
func streamInputs(b *testing.B, c *cluster, n int) (worker, input string) {
	worker = filepath.Join(c.dir, "fast.py")
	if err := os.WriteFile(worker, []byte(fastWorker), 0o644); err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	for i := range n {
		sb.WriteString(strconv.Itoa(i) + "\n")
	}
	input = filepath.Join(c.dir, "items")
	if err := os.WriteFile(input, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return worker, input
}

// runStream submits a job over input (n items; the fast worker run by py
// unless args say otherwise) and waits until all n are done.
func runStream(b *testing.B, c *cluster, py, worker, input string, n int, args ...string) wire.WorkInfo {
	sub := append([]string{"submit", "--process-memory-size", "1G", "--input-file", input,
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
	return w
}

func benchJob(b *testing.B, n int, args ...string) {
	py := needPython(b)
	c := startCluster(b)
	worker, input := streamInputs(b, c, n)
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		w := runStream(b, c, py, worker, input, n, args...)
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
	worker, input := streamInputs(b, c, items)
	for range jobs {
		runStream(b, c, py, worker, input, items)
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
