package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// TestMultiNodeDriverFailover: the head is killed (-9) while a driver
// process on a worker node streams a job's items. The driver keeps running,
// its agent goes on with the new head, and every item is in the job once
// and processed once.
func TestMultiNodeDriverFailover(t *testing.T) {
	const n = 3000
	c := startNetCluster(t, fairConfig, fiveNodes...)
	w1, w2 := c.nodes["w1"], c.nodes["w2"]
	py := needPython(t)
	driver, worker := filepath.Join(c.dir, "driver.py"), filepath.Join(c.dir, "seen.py")
	for p, src := range map[string]string{driver: testDriver, worker: netWorker} {
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errs, code := w1.ducc("submit", "--driver-executable", py, "--driver-executable-args", driver+" 3000",
		"--process-executable", py, "--process-executable-args", worker+" 0.01", "--process-memory-size", "1G",
		"--process-deployments-max", "4", "--machine-list", "w1 w2", "--log-directory", filepath.Join(c.dir, "logs"))
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	id := strings.Fields(out)[1]
	var drv wire.ProcInfo
	waitNetJob(t, w1, id, 60*time.Second, "a running driver and progress", func(w wire.WorkInfo) bool {
		for _, p := range w.Procs {
			if p.Kind == wire.ProcDriver && p.State == wire.ProcRunning && p.PID > 0 {
				drv = p
			}
		}
		return drv.PID > 0 && w.Job != nil && w.Job.Done > 200 && w.Job.Done < n/2
	})
	head := c.headNode(w2)
	t0 := time.Now()
	head.kill9()
	var newHead string
	for time.Since(t0) < hangGuard && newHead == "" {
		if st, ok := w2.status(); ok && st.Head != "" && st.Head != head.name {
			newHead = st.Head
		}
		time.Sleep(50 * time.Millisecond)
	}
	if newHead == "" {
		t.Fatalf("no new head within %v of killing %s", hangGuard, head.name)
	}
	t.Logf("killed head %s with driver %s on %s running; %s took over after %v", head.name, drv.ID, drv.Node, newHead, time.Since(t0).Round(time.Millisecond))
	head.start()
	end := waitNetJob(t, w1, id, 3*time.Minute, "end", func(w wire.WorkInfo) bool { return w.Ended })
	if end.Completion != "EndOfJob" || end.Job.Done != n || end.Job.Total != n {
		t.Fatalf("job ended %s %q: %+v", end.Completion, end.Reason, end.Job)
	}
	drivers := 0
	for _, p := range end.Procs {
		if p.Kind == wire.ProcDriver {
			drivers++
			if p.ID != drv.ID || p.PID != drv.PID || p.ExitCode != 0 {
				t.Errorf("driver after the failover: %+v; before: %+v", p, drv)
			}
		}
	}
	if drivers != 1 {
		t.Errorf("%d driver processes, want the one that ran before the failover", drivers)
	}
	checkResults(t, w1, id, n)
	processedOnce(t, c.dir, n)
	c.waitUp(5, 30*time.Second)
}
