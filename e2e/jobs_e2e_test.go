package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// testWorker is a stream-protocol worker: it sleeps INIT seconds (a model
// load), then answers each item after SLEEP seconds; the item "bad" always
// fails and the item "hang" never answers.
const testWorker = `import json, sys, time
init, per = float(sys.argv[1]), float(sys.argv[2])
time.sleep(init)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m["item"] == "hang":
        time.sleep(3600)
    time.sleep(per)
    if m["item"] == "bad":
        print(json.dumps({"id": m["id"], "error": "bad item"}), flush=True)
    else:
        print(json.dumps({"id": m["id"], "ok": True, "result": m["item"] + "!"}), flush=True)
`

// jobFixture is a dev cluster with the test worker and a world-readable
// scratch dir.
type jobFixture struct {
	*cluster
	worker string
	py     string
}

func newJobFixture(t *testing.T, agentArgs ...string) *jobFixture {
	py := needPython(t)
	c := startCluster(t, agentArgs...)
	w := filepath.Join(c.dir, "worker.py")
	if err := os.WriteFile(w, []byte(testWorker), 0o644); err != nil {
		t.Fatal(err)
	}
	sharedLogDir(t, filepath.Join(c.dir, "logs"))
	return &jobFixture{cluster: c, worker: w, py: py}
}

func (f *jobFixture) items(t *testing.T, name string, items []string) string {
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(strings.Join(items, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// submit submits a job of the test worker and returns its id.
func (f *jobFixture) submit(t *testing.T, input string, initSec, perSec float64, extra ...string) string {
	t.Helper()
	args := append([]string{"submit", "--process-executable", f.py,
		"--process-executable-args", fmt.Sprintf("%s %g %g", f.worker, initSec, perSec),
		"--process-memory-size", "2G", "--input-file", input, "--log-directory", filepath.Join(f.dir, "logs")}, extra...)
	out, errs, code := f.ducc(args...)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	fields := strings.Fields(out)
	if len(fields) < 2 || fields[0] != "Job" {
		t.Fatalf("submit printed %q", out)
	}
	return fields[1]
}

func (f *jobFixture) results(t *testing.T, id string, flags ...string) []wire.ItemResult {
	t.Helper()
	out, errs, code := f.ducc(append([]string{"results", id}, flags...)...)
	if code != 0 {
		t.Fatalf("results: exit %d: %s", code, errs)
	}
	var rs []wire.ItemResult
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r wire.ItemResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("results line %q: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func seqItems(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "item-" + strconv.Itoa(i)
	}
	return out
}

func TestJob10000Items(t *testing.T) {
	f := newJobFixture(t)
	input := f.items(t, "items", seqItems(10_000))
	id := f.submit(t, input, 0, 0)
	w := f.waitEnd(t, id, 90*time.Second)
	if w.Completion != "EndOfJob" || w.Job.Done != 10_000 || w.Job.Failed != 0 {
		t.Fatalf("job ended %s: %+v", w.Completion, w.Job)
	}
	rs := f.results(t, id)
	if len(rs) != 10_000 {
		t.Fatalf("%d results, want 10000", len(rs))
	}
	seen := map[int]bool{}
	for _, r := range rs {
		if !r.OK || seen[r.Index] || r.Result != "item-"+strconv.Itoa(r.Index)+"!" {
			t.Fatalf("bad result %+v", r)
		}
		seen[r.Index] = true
	}
	// `ducc wait` exits 0 only for EndOfJob.
	if _, errs, code := f.ducc("wait", id); code != 0 {
		t.Errorf("wait: exit %d: %s", code, errs)
	}
}

func TestJobFailingItem(t *testing.T) {
	f := newJobFixture(t)
	items := seqItems(20)
	items[7] = "bad"
	id := f.submit(t, f.items(t, "items", items), 0, 0, "--max-item-retries", "1")
	w := f.waitEnd(t, id, 60*time.Second)
	if w.Completion != "Error" || w.Job.Done != 19 || w.Job.Failed != 1 || w.Job.Retried != 1 {
		t.Fatalf("job ended %s %q: %+v", w.Completion, w.Reason, w.Job)
	}
	failed := f.results(t, id, "--failed")
	if len(failed) != 1 || failed[0].Item != "bad" || failed[0].Error != "bad item" || failed[0].Attempts != 2 {
		t.Fatalf("failed results %+v", failed)
	}
	if _, _, code := f.ducc("wait", id); code != 1 {
		t.Errorf("wait on a job that ended Error: exit %d, want 1", code)
	}
}

func TestJobWorkerKilledItemsRerun(t *testing.T) {
	f := newJobFixture(t)
	id := f.submit(t, f.items(t, "items", seqItems(300)), 0, 0.02, "--process-pipeline-count", "2")
	// Wait for a job process with some items done, then kill -9 it.
	var victim int
	deadline := time.Now().Add(30 * time.Second)
	for victim == 0 && time.Now().Before(deadline) {
		w := f.show(id)
		for _, p := range w.Procs {
			if p.State == "Running" && p.Done > 5 && p.PID > 0 {
				victim = p.PID
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if victim == 0 {
		t.Fatalf("no running job process: %+v", f.show(id))
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w := f.waitEnd(t, id, 90*time.Second)
	if w.Completion != "EndOfJob" || w.Job.Done != 300 || w.Job.Failed != 0 {
		t.Fatalf("job ended %s %q: %+v", w.Completion, w.Reason, w.Job)
	}
	if w.Job.Preempted == 0 {
		t.Errorf("no item was re-queued after the kill: %+v", w.Job)
	}
	if rs := f.results(t, id); len(rs) != 300 {
		t.Errorf("%d results, want 300", len(rs))
	}
}

func TestJobInitTimeout(t *testing.T) {
	f := newJobFixture(t)
	id := f.submit(t, f.items(t, "items", seqItems(5)), 30, 0, "--process-initialization-time-max", "2s")
	w := f.waitEnd(t, id, 30*time.Second)
	if w.Completion != "ProcessInitializationFailure" || !strings.Contains(w.Reason, "did not initialize within 2s") {
		t.Fatalf("job ended %s: %q", w.Completion, w.Reason)
	}
}

func TestJobItemTimeout(t *testing.T) {
	f := newJobFixture(t)
	items := seqItems(6)
	items[2] = "hang"
	id := f.submit(t, f.items(t, "items", items), 0, 0, "--process-per-item-time-max", "2s")
	w := f.waitEnd(t, id, 60*time.Second)
	if w.Completion != "Error" || w.Job.Failed != 1 || w.Job.Done != 5 {
		t.Fatalf("job ended %s %q: %+v", w.Completion, w.Reason, w.Job)
	}
	failed := f.results(t, id, "--failed")
	if len(failed) != 1 || failed[0].Item != "hang" || !strings.Contains(failed[0].Error, "timed out after 2s") {
		t.Fatalf("failed results %+v", failed)
	}
}

func TestJobCancel(t *testing.T) {
	f := newJobFixture(t)
	id := f.submit(t, f.items(t, "items", seqItems(1000)), 0, 0.05)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if w := f.show(id); w.Job != nil && w.Job.Done > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, errs, code := f.ducc("cancel", id); code != 0 {
		t.Fatalf("cancel: %s", errs)
	}
	w := f.waitEnd(t, id, 30*time.Second)
	if w.Completion != "CanceledByUser" {
		t.Fatalf("completion %s", w.Completion)
	}
	for _, p := range w.Procs {
		if p.PID > 0 && syscall.Kill(p.PID, 0) == nil {
			// Give the stop a moment: the job ends when its processes are gone.
			t.Errorf("process %s (pid %d) still alive after the job was canceled", p.ID, p.PID)
		}
	}
}

func TestJobBadSpec(t *testing.T) {
	f := newJobFixture(t)
	input := f.items(t, "items", seqItems(3))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown class", []string{"--scheduling-class", "hgih"}, `unknown class "hgih"`},
		// A job may use a RESERVE class (as DUCC): each process then needs a
		// whole machine of exactly its memory, which this node is not.
		{"reserve class, no machine of that size", []string{"--scheduling-class", "reserve"}, "gets a whole machine of exactly its size"},
		{"too big", []string{"--process-memory-size", "64G"}, "no node can hold 64 GiB"},
		{"bad protocol", []string{"--worker-protocol", "carrier-pigeon"}, "--worker-protocol: unknown worker protocol \"carrier-pigeon\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"submit", "--process-executable", f.py, "--input-file", input}, tc.args...)
			_, errs, code := f.ducc(args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs, tc.want)
			}
		})
	}
}

// procsOf counts a job's live processes.
func procsOf(w wire.WorkInfo) int {
	n := 0
	for _, p := range w.Procs {
		if p.State == "Running" || p.State == "Initializing" || p.State == "Starting" {
			n++
		}
	}
	return n
}

func TestJobFairShareAndPreemption(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root to create users")
	}
	ensureUser(t, "ducc-e2e")
	ensureUser(t, "ducc-e2e2")
	// Prediction off: these jobs are short enough that the RM would
	// rightly not expand them (their items end before a new process would
	// be ready), and this test is about shares.
	cfg := filepath.Join(t.TempDir(), "ducc.yaml")
	if err := os.WriteFile(cfg, []byte(fairConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newJobFixture(t, "--config", cfg)
	input := f.items(t, "items", seqItems(400))
	// 16 GiB node, 2 GiB per process: 8 processes in all.
	a := f.submit(t, input, 0, 0.25, "--as", "ducc-e2e")
	b := f.submit(t, input, 0, 0.25, "--as", "ducc-e2e2")

	// Two users in one class split the node evenly within a few cycles.
	deadline := time.Now().Add(30 * time.Second)
	var wa, wb wire.WorkInfo
	for time.Now().Before(deadline) {
		wa, wb = f.show(a), f.show(b)
		if procsOf(wa) == 4 && procsOf(wb) == 4 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if procsOf(wa) != 4 || procsOf(wb) != 4 {
		t.Fatalf("processes after 30s: %d and %d, want 4 and 4\n%+v\n%+v", procsOf(wa), procsOf(wb), wa, wb)
	}

	// A job of a class with twice the weight takes its share by preemption.
	hi := f.submit(t, input, 0, 0.25, "--as", "ducc-e2e", "--scheduling-class", "high")
	deadline = time.Now().Add(45 * time.Second)
	var wh wire.WorkInfo
	for time.Now().Before(deadline) {
		wh = f.show(hi)
		if procsOf(wh) >= 4 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if procsOf(wh) < 4 {
		t.Fatalf("high-weight job has %d processes after 45s, want at least 4 (reason %q)", procsOf(wh), wh.Reason)
	}
	preempted := 0
	for _, id := range []string{a, b, hi} {
		w := f.waitEnd(t, id, 3*time.Minute)
		if w.Completion != "EndOfJob" || w.Job.Failed != 0 || w.Job.Done != 400 {
			t.Errorf("job %s ended %s %q: %+v", id, w.Completion, w.Reason, w.Job)
		}
		preempted += w.Job.Preempted
	}
	if preempted == 0 {
		t.Errorf("no item was re-queued by preemption")
	}
}

const fairConfig = `scheduler:
  share_quantum: 1G
  preemption: {interval: 1s, kill_wait: 2s}
  nodepools:
    - {name: default, nodes: "*"}
  classes:
    - {name: normal, policy: FAIR_SHARE, priority: 10, weight: 100, nodepool: default, default: true, use_prediction: false}
    - {name: high,   policy: FAIR_SHARE, priority: 10, weight: 200, nodepool: default, use_prediction: false}
    - {name: fixed,  policy: FIXED_SHARE, priority: 5, nodepool: default, default: true}
    - {name: reserve, policy: RESERVE, priority: 1, nodepool: default, default: true}
`

// seenWorker records every item it starts in a file next to it, so the test
// can tell whether any item was processed twice.
const seenWorker = `import json, os, sys, time
seen = open(os.path.join(os.path.dirname(sys.argv[0]), "seen"), "a")
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    seen.write(m["item"] + "\n"); seen.flush()
    time.sleep(0.02)
    print(json.dumps({"id": m["id"], "ok": True, "result": m["item"]}), flush=True)
`

func TestJobSurvivesAgentKill9(t *testing.T) {
	f := newJobFixture(t)
	w := filepath.Join(f.dir, "seen.py")
	if err := os.WriteFile(w, []byte(seenWorker), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := f.ducc("submit", "--process-executable", f.py, "--process-executable-args", w,
		"--process-memory-size", "2G", "--input-file", f.items(t, "items", seqItems(400)), "--process-pipeline-count", "2")
	if code != 0 {
		t.Fatalf("submit: %s", errs)
	}
	id := strings.Fields(out)[1]
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if j := f.show(id).Job; j != nil && j.Done > 50 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	before := f.show(id)
	f.kill9()
	time.Sleep(500 * time.Millisecond) // workers keep going and answer into their FIFOs
	f.start()
	end := f.waitEnd(t, id, 2*time.Minute)
	if end.Completion != "EndOfJob" || end.Job.Done != 400 {
		t.Fatalf("job ended %s %q: %+v", end.Completion, end.Reason, end.Job)
	}
	// No process was restarted: the same processes finished the job.
	pids := map[int]bool{}
	for _, p := range before.Procs {
		pids[p.PID] = true
	}
	for _, p := range end.Procs {
		if p.Done > 0 && !pids[p.PID] && p.StartedAt < before.SubmittedAt {
			t.Errorf("unexpected process %+v", p)
		}
	}
	processedOnce(t, f.dir, 400)
	if !strings.Contains(f.agentLog(), "resuming a re-adopted worker") {
		t.Errorf("the restarted agent did not resume feeding its workers")
	}
}
