package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gateWorker records every item it starts (like seenWorker) and answers
// it after 50 ms, except the item "gate", which it holds until the file
// "open" appears next to it; from then on it answers at once. The test
// decides when the job may end, and the job writes to the Raft log all
// along (item outcomes) however fast the machine.
const gateWorker = `import json, os, sys, time
here = os.path.dirname(sys.argv[0])
opened = os.path.join(here, "open")
seen = open(os.path.join(here, "seen"), "a")
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    seen.write(m["item"] + "\n"); seen.flush()
    if m["item"] == "gate":
        while not os.path.exists(opened):
            time.sleep(0.1)
    if not os.path.exists(opened):
        time.sleep(0.05)
    print(json.dumps({"id": m["id"], "ok": True, "result": m["item"]}), flush=True)
`

// smallFS mounts a tmpfs of the given size at dir for the test and
// unmounts it when the test ends (after the cleanups registered later,
// such as the agent's). It skips the test when it cannot mount.
func smallFS(t *testing.T, dir, size string) {
	t.Helper()
	if !isRoot() {
		t.Skip("mounting a small filesystem for the data directory needs root")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a %s tmpfs for the data directory (%v: %s)", size, err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		for range 50 {
			if exec.Command("umount", dir).Run() == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("cannot unmount the test filesystem %s", dir)
	})
}

// fillFS writes path until the filesystem has no space left.
func fillFS(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("fill the data directory: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill the data directory: %v", err)
			}
			break
		}
	}
	// Then byte by byte, so nothing is left at all.
	for {
		if _, err := f.Write(buf[:1]); err != nil {
			return
		}
	}
}

// TestDataDirFullTwice fills the head's data directory twice while a job
// runs: the head steps down, `ducc status` says why there is no head, and
// once the space comes back the node is head again and the job finishes
// with every item processed once.
func TestDataDirFullTwice(t *testing.T) {
	py := needPython(t)
	dir := scratchDir(t)
	fs := filepath.Join(dir, "fs")
	smallFS(t, fs, "64m")
	c := startClusterIn(t, dir, filepath.Join(fs, "data"))
	sharedLogDir(t, filepath.Join(dir, "logs"))
	w := filepath.Join(dir, "gate.py")
	if err := os.WriteFile(w, []byte(gateWorker), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	items := append(seqItems(n), "gate")
	input := filepath.Join(dir, "items")
	if err := os.WriteFile(input, []byte(strings.Join(items, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := c.ducc("submit", "--process-executable", py, "--process-executable-args", w,
		"--process-memory-size", "2G", "--process-deployments-max", "1", "--process-pipeline-count", "2",
		"--input-file", input, "--log-directory", filepath.Join(dir, "logs"))
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	id := strings.Fields(out)[1]
	waitDone := func(min int) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if j := c.show(id).Job; j != nil && j.Done >= min {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("job %s: fewer than %d items done after 2 minutes: %+v", id, min, c.show(id).Job)
	}
	waitDone(100)
	fill := filepath.Join(fs, "fill")
	for cycle := 1; cycle <= 2; cycle++ {
		fillFS(t, fill)
		// The head steps down once it cannot write, and says why.
		var said string
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			_, errs, code := c.ducc("status")
			if code != 0 && strings.Contains(errs, "no space left on device") {
				said = errs
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if said == "" {
			_, errs, code := c.ducc("status")
			t.Fatalf("cycle %d: the data directory is full, but `ducc status` does not say so after 2 minutes: exit %d: %s", cycle, code, errs)
		}
		if code := exitCode(c, "status"); code != exitUnreachable {
			t.Errorf("cycle %d: ducc status exit %d while the disk is full, want %d", cycle, code, exitUnreachable)
		}
		t.Logf("cycle %d: ducc status said: %s", cycle, strings.TrimSpace(said))
		if err := os.Remove(fill); err != nil {
			t.Fatal(err)
		}
		freed := time.Now()
		deadline = time.Now().Add(2 * time.Minute)
		for {
			if st, ok := c.status(); ok && st.Head != "" {
				break
			}
			if time.Now().After(deadline) {
				_, errs, code := c.ducc("status")
				t.Fatalf("cycle %d: no head 2 minutes after the space came back: exit %d: %s", cycle, code, errs)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("cycle %d: head again %s after the space came back", cycle, time.Since(freed).Round(10*time.Millisecond))
		done := c.show(id).Job.Done
		waitDone(done + 50)
	}
	if err := os.WriteFile(filepath.Join(dir, "open"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	end := c.waitEnd(t, id, 3*time.Minute)
	if end.Completion != "EndOfJob" || end.Job.Done != n+1 || end.Job.Failed != 0 {
		t.Fatalf("job ended %s %q: %+v", end.Completion, end.Reason, end.Job)
	}
	rs := (&jobFixture{cluster: c}).results(t, id)
	seen := map[int]bool{}
	for _, r := range rs {
		if !r.OK || seen[r.Index] {
			t.Fatalf("bad or repeated result %+v", r)
		}
		seen[r.Index] = true
	}
	if len(seen) != n+1 {
		t.Errorf("%d results, want %d", len(seen), n+1)
	}
	processedOnce(t, dir, n+1)
}

func exitCode(c *cluster, args ...string) int {
	_, _, code := c.ducc(args...)
	return code
}
