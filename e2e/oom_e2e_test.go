package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// eatMemory makes one process of the tree (tail, holding its one endless
// "line" of zeros) go over any cap below 3000 MiB; the shell that runs it
// survives.
const eatMemory = "head -c 3000M /dev/zero | tail"

// TestRunChildOOM: a child of a 'ducc run' process killed at the memory
// cap while the process itself exits 0 is not silent: 'ducc run' and
// 'ducc wait' say so on stderr and exit 137 (wire.CodeMemoryCap), and
// 'ducc show' records it on the process.
func TestRunChildOOM(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root for cgroups")
	}
	c := startCluster(t)
	const want = "exited normally; memory cap hit: 1 process killed by the OOM killer (cap 512 MiB)"
	out, errs, code := c.ducc("run", "--memory", "512M", "--", "sh", "-c", eatMemory+"; echo survived; exit 0")
	if code != wire.CodeMemoryCap {
		t.Fatalf("ducc run: exit %d, want %d\nstdout: %s\nstderr: %s", code, wire.CodeMemoryCap, out, errs)
	}
	if !strings.HasSuffix(out, "survived\n") { // after what the shell and head say of the kill
		t.Errorf("stdout %q, want the process's own output ending in %q", out, "survived\n")
	}
	m := regexp.MustCompile(`(?m)^ducc: (\d+) (.*)$`).FindStringSubmatch(errs)
	if m == nil || m[2] != want {
		t.Fatalf("stderr %q does not say %q", errs, "ducc: ID "+want)
	}
	id := m[1]

	// ducc wait gives the same answer later.
	if _, werrs, wcode := c.ducc("wait", id); wcode != wire.CodeMemoryCap || !strings.Contains(werrs, want) {
		t.Errorf("ducc wait %s: exit %d, stderr %q; want %d and %q", id, wcode, werrs, wire.CodeMemoryCap, want)
	}

	// ducc show: the process's record and the work's reason.
	w := c.show(id)
	if w.Completion != "ProgramExit" || w.ExitCode != 0 || w.Reason != want || len(w.Procs) != 1 {
		t.Fatalf("show: %+v", w)
	}
	if p := w.Procs[0]; p.OOMKills != 1 || p.ExitCode != 0 || p.Reason != want {
		t.Errorf("process record: %+v; want 1 OOM kill, exit 0, reason %q", p, want)
	}
	text, serrs, scode := c.ducc("show", id)
	if scode != 0 {
		t.Fatalf("ducc show %s: exit %d: %s", id, scode, serrs)
	}
	flat := strings.Join(strings.Fields(text), " ")
	for _, s := range []string{"Reason: " + want, "OOM kills: 1 (processes killed by the OOM killer at their memory cap"} {
		if !strings.Contains(flat, s) {
			t.Errorf("ducc show lacks %q:\n%s", s, text)
		}
	}

	// Without an OOM kill nothing changes: exit 0, nothing said.
	if out, errs, code := c.ducc("run", "--memory", "512M", "--", "sh", "-c", "echo fine"); code != 0 || out != "fine\n" || errs != "" {
		t.Errorf("plain run: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestJobChildOOM: a job process keeps the same record. Each exec item's
// command has a child killed at the cap and still succeeds; the job ends
// EndOfJob and its process, once gone, names the kills in 'ducc show'.
func TestJobChildOOM(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root for cgroups")
	}
	c := startCluster(t)
	out, errs, code := c.ducc("submit", "--worker-protocol", "exec", "--input-file", writeItems(t, c.dir, "2"),
		"--process-memory-size", "512M", "--process-deployments-max", "1", "--", "sh", "-c", eatMemory+"; echo item {}")
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	id := strings.Fields(out)[1]
	if end := waitEnded(t, c, id, 2*time.Minute); end.Completion != "EndOfJob" {
		t.Fatalf("job ended %s: %+v", end.Completion, end)
	}
	// The job process is released once the items are done; its record is
	// complete when it has ended (the deadline only turns a hang into a
	// failure).
	var w wire.WorkInfo
	for deadline := time.Now().Add(time.Minute); ; {
		w = c.show(id)
		if len(w.Procs) == 1 && w.Procs[0].State != wire.ProcStarting && w.Procs[0].State != wire.ProcRunning && w.Procs[0].State != wire.ProcStopping {
			break
		}
		if time.Now().After(deadline) {
			js, _ := json.Marshal(w)
			t.Fatalf("job process did not end: %s", js)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p := w.Procs[0]
	if p.OOMKills != 2 || !strings.Contains(p.Reason, "memory cap hit: 2 processes killed by the OOM killer (cap 512 MiB)") {
		t.Errorf("job process record: %+v; want 2 OOM kills named in the reason", p)
	}
	text, _, _ := c.ducc("show", id)
	if flat := strings.Join(strings.Fields(text), " "); !strings.Contains(flat, "OOM kills: 2 ") {
		t.Errorf("ducc show of the job lacks the OOM kills:\n%s", text)
	}
}
