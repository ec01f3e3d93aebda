package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testDriver is a driver process (docs/jobs.md, "Driver process protocol")
// producing N items "item-<i>". Modes: "initfail" fails before it is
// ready, with a message on stderr; "die" exits with code 5 after N/2
// items.
const testDriver = `import json, sys
n, mode = int(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else "")
if mode == "initfail":
    print("cannot open the collection: /no/such/corpus", file=sys.stderr, flush=True)
    sys.exit(3)
print("driver starting", flush=True)
print(json.dumps({"ready": True}), flush=True)
print(json.dumps({"total": n}), flush=True)
i = 0
for line in sys.stdin:
    k = json.loads(line)["more"]
    out = []
    while k > 0 and i < n:
        if mode == "die" and i == n // 2:
            sys.stdout.write("".join(out)); sys.stdout.flush()
            print("reader crashed at item %d" % i, file=sys.stderr, flush=True)
            sys.exit(5)
        out.append('{"item": "item-%d"}\n' % i)
        i += 1
        k -= 1
    if i >= n:
        out.append('{"end": true}\n')
    sys.stdout.write("".join(out))
    sys.stdout.flush()
    if i >= n:
        sys.exit(0)
`

type driverFixture struct {
	*jobFixture
	driver, fast string
}

func newDriverFixture(t *testing.T) *driverFixture {
	f := newJobFixture(t)
	d := &driverFixture{jobFixture: f, driver: filepath.Join(f.dir, "driver.py"), fast: filepath.Join(f.dir, "fast.py")}
	for p, src := range map[string]string{d.driver: testDriver, d.fast: fastWorker} {
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// submitDriven submits a job whose items come from the test driver.
func (d *driverFixture) submitDriven(t *testing.T, n int, mode string, worker []string, extra ...string) string {
	t.Helper()
	args := append([]string{"submit", "--driver-executable", d.py, "--driver-executable-args", fmt.Sprintf("%s %d %s", d.driver, n, mode),
		"--process-executable", d.py, "--process-executable-args", strings.Join(worker, " "),
		"--process-memory-size", "1G", "--log-directory", filepath.Join(d.dir, "logs")}, extra...)
	out, errs, code := d.ducc(args...)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	fields := strings.Fields(out)
	if len(fields) < 2 || fields[0] != "Job" {
		t.Fatalf("submit printed %q", out)
	}
	return fields[1]
}

func TestDriverJob2000Items(t *testing.T) {
	d := newDriverFixture(t)
	id := d.submitDriven(t, 2000, "", []string{d.worker, "0", "0"})
	w := d.waitEnd(t, id, 120*time.Second)
	if w.Completion != "EndOfJob" || w.Job.Done != 2000 || w.Job.Total != 2000 || w.Job.Failed != 0 {
		t.Fatalf("job ended %s (%s): %+v", w.Completion, w.Reason, w.Job)
	}
	rs := d.results(t, id)
	if len(rs) != 2000 {
		t.Fatalf("%d results, want 2000", len(rs))
	}
	for _, r := range rs {
		if want := "item-" + strconv.Itoa(r.Index); !r.OK || r.Item != want || r.Result != want+"!" {
			t.Fatalf("result %+v", r)
		}
	}
	var driver string
	for _, p := range w.Procs {
		if p.Kind == "JD" {
			driver = p.ID
			if p.ExitCode != 0 || p.State != "Exited" {
				t.Errorf("driver process %+v", p)
			}
		}
	}
	if driver == "" {
		t.Fatalf("no driver process in %+v", w.Procs)
	}
	// Its log, like any process's: the non-protocol line it printed.
	out, errs, code := d.ducc("logs", id, "--process", driver)
	if code != 0 || !strings.Contains(out, "driver starting") {
		t.Errorf("ducc logs %s --process %s: exit %d: %q %s", id, driver, code, out, errs)
	}
}

func TestDriverInitializationFailure(t *testing.T) {
	d := newDriverFixture(t)
	id := d.submitDriven(t, 10, "initfail", []string{d.worker, "0", "0"})
	w := d.waitEnd(t, id, 60*time.Second)
	t.Logf("%s: %s", w.Completion, w.Reason)
	if w.Completion != "DriverInitializationFailure" || !strings.Contains(w.Reason, "cannot open the collection: /no/such/corpus") {
		t.Fatalf("job ended %s: %q", w.Completion, w.Reason)
	}
	for _, p := range w.Procs {
		if p.Kind != "JD" {
			t.Errorf("a job process was started for a job whose driver failed: %+v", p)
		}
	}
}

func TestDriverProcessFailed(t *testing.T) {
	d := newDriverFixture(t)
	id := d.submitDriven(t, 4000, "die", []string{d.worker, "0", "0"})
	w := d.waitEnd(t, id, 120*time.Second)
	t.Logf("%s: %s", w.Completion, w.Reason)
	if w.Completion != "DriverProcessFailed" || !strings.Contains(w.Reason, "reader crashed at item 2000") {
		t.Fatalf("job ended %s: %q %+v", w.Completion, w.Reason, w.Job)
	}
	if w.Job.Done+w.Job.Failed > 2000 {
		t.Errorf("%d items done or failed; the driver sent 2000", w.Job.Done+w.Job.Failed)
	}
}

func TestDriverCancel(t *testing.T) {
	d := newDriverFixture(t)
	id := d.submitDriven(t, 1_000_000, "", []string{d.worker, "0", "0.5"})
	deadline := time.Now().Add(60 * time.Second)
	for d.show(id).Job.Done == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no item done in 60s: %+v", d.show(id))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, errs, code := d.ducc("cancel", id); code != 0 {
		t.Fatalf("cancel: %d %s %s", code, out, errs)
	}
	w := d.waitEnd(t, id, 60*time.Second)
	if w.Completion != "CanceledByUser" {
		t.Fatalf("job ended %s: %q", w.Completion, w.Reason)
	}
	for _, p := range w.Procs {
		if p.State != "Exited" {
			t.Errorf("process %s is %s after the cancel", p.ID, p.State)
		}
	}
}

// TestDriverMillionItemsBounded runs a 1,000,000-item driver against fast
// workers and checks, while it runs, that the head never queues more than
// the high-water mark of items no job process has taken.
func TestDriverMillionItemsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	const n, pipelines = 1_000_000, 8
	d := newDriverFixture(t)
	id := d.submitDriven(t, n, "", []string{d.fast}, "--process-pipeline-count", strconv.Itoa(pipelines),
		"--process-memory-size", "512M", "--process-deployments-max", "4")
	start := time.Now()
	maxQueued, maxProcs, samples := 0, 0, 0
	deadline := time.Now().Add(20 * time.Minute)
	var w = d.show(id)
	for !w.Ended {
		if time.Now().After(deadline) {
			t.Fatalf("not done in 20 minutes: %+v", w.Job)
		}
		if w.Job != nil {
			samples++
			maxQueued = max(maxQueued, w.Job.Queued)
			maxProcs = max(maxProcs, w.Job.Processes)
			// The bound: max(1000, 4 × pipelines × processes), docs/jobs.md.
			if hw := max(1000, 4*pipelines*maxProcs); w.Job.Queued > hw {
				t.Fatalf("the head queues %d items, over the high-water mark %d (%d processes)", w.Job.Queued, hw, w.Job.Processes)
			}
		}
		time.Sleep(200 * time.Millisecond)
		w = d.show(id)
	}
	el := time.Since(start)
	if w.Completion != "EndOfJob" || w.Job.Done != n {
		t.Fatalf("job ended %s (%s): %+v", w.Completion, w.Reason, w.Job)
	}
	if samples < 5 {
		t.Fatalf("only %d samples", samples)
	}
	t.Logf("%d items through a driver in %s (%.0f items/s); at most %d queued, %d processes, %d samples",
		n, el.Round(time.Second), float64(n)/el.Seconds(), maxQueued, maxProcs, samples)
}

// BenchmarkDriverJob100k: 100,000 items produced by a driver process and
// consumed by a trivial stream worker (compare BenchmarkJobStream100k,
// the same items from a file).
func BenchmarkDriverJob100k(b *testing.B) {
	const n = 100_000
	py := needPython(b)
	c := startCluster(b)
	driver, worker := filepath.Join(c.dir, "driver.py"), filepath.Join(c.dir, "fast.py")
	for p, src := range map[string]string{driver: testDriver, worker: fastWorker} {
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		out, errs, code := c.ducc("submit", "--driver-executable", py, "--driver-executable-args", fmt.Sprintf("%s %d", driver, n),
			"--process-executable", py, "--process-executable-args", worker, "--process-memory-size", "1G",
			"--log-directory", filepath.Join(c.dir, "logs"))
		if code != 0 {
			b.Fatalf("submit: %s %s", out, errs)
		}
		id := strings.Fields(out)[1]
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
