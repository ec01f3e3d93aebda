package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The agent runs as root, but the files it creates or writes for a user's
// work are created and written as that user: these tests are the attacks
// a user of the cluster could try.

// swapWorker is a stream worker that, once its log has its final name,
// replaces it with a symlink to the file given as its argument, then
// prints a line that is not protocol (which the agent appends to the
// log) before and while answering items.
const swapWorker = `import json, os, sys, time
target = sys.argv[1]
log = os.readlink("/proc/self/fd/2")
while "-starting-" in log:
    time.sleep(0.01)
    log = os.readlink("/proc/self/fd/2")
os.remove(log)
os.symlink(target, log)
print("not protocol: written to the log by the agent", flush=True)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    print("not protocol either", flush=True)
    print(json.dumps({"id": m["id"], "ok": True, "result": m["item"]}), flush=True)
`

// TestJobWorkerSwapsLogForSymlink: a user's worker replaces its log with a
// symlink to a file of root's and prints lines that are not protocol: the
// agent does not write them there, and the job completes.
func TestJobWorkerSwapsLogForSymlink(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root to create users")
	}
	ensureUser(t, "ducc-e2e")
	f := newJobFixture(t)
	worker := filepath.Join(f.dir, "swap.py")
	if err := os.WriteFile(worker, []byte(swapWorker), 0o644); err != nil {
		t.Fatal(err)
	}
	secretDir := filepath.Join(f.dir, "secret")
	if err := os.Mkdir(secretDir, 0o700); err != nil {
		t.Fatal(err)
	}
	const content = "root's own\n"
	rootOnly := filepath.Join(secretDir, "root-only")
	worldWritable := filepath.Join(f.dir, "world-writable") // root's, but anyone may write it
	for _, p := range []string{rootOnly, worldWritable} {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(worldWritable, 0o666); err != nil {
		t.Fatal(err)
	}
	input := f.items(t, "items", seqItems(3))
	ids := map[string]string{}
	for _, target := range []string{rootOnly, worldWritable} {
		out, errs, code := f.ducc("submit", "--as", "ducc-e2e", "--process-executable", f.py,
			"--process-executable-args", worker+" "+target, "--process-memory-size", "1G",
			"--input-file", input, "--log-directory", filepath.Join(f.dir, "logs"))
		if code != 0 {
			t.Fatalf("submit: exit %d: %s %s", code, out, errs)
		}
		ids[target] = strings.Fields(out)[1]
	}
	for target, id := range ids {
		w := f.waitEnd(t, id, 60*time.Second)
		if w.Completion != "EndOfJob" || w.Job.Done != 3 {
			t.Errorf("job %s ended %s %q: %+v", id, w.Completion, w.Reason, w.Job)
		}
		if b, err := os.ReadFile(target); err != nil || string(b) != content {
			t.Errorf("%s now holds %q (%v)", target, b, err)
		}
		if fi, err := os.Lstat(target); err != nil || fi.Mode() != map[string]os.FileMode{rootOnly: 0o600, worldWritable: 0o666}[target] {
			t.Errorf("%s: %v %v", target, fi.Mode(), err)
		}
	}
	if log := f.agentLog(); !strings.Contains(log, "its log cannot be written") {
		t.Errorf("the agent did not say it dropped the lines:\n%s", f.logTail())
	}
}

// TestRunLogDirNotTheUsers: a log directory the user may not create (in a
// directory of root's, or through a symlink to one, or the default one of a
// user without a home) fails the launch with the reason and what to do, and
// nothing is created there.
func TestRunLogDirNotTheUsers(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root to create users and switch to them")
	}
	ensureUser(t, "ducc-e2e")
	c := startCluster(t)
	rootOwned := filepath.Join(c.dir, "root-owned")
	linkedTo := filepath.Join(c.dir, "linked-to")
	for _, d := range []string{rootOwned, linkedTo} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The user's log directory, where <log-dir>/<id> is already a symlink
	// to a directory of root's (work ids start at 1 on a fresh cluster).
	userLogs := sharedLogDir(t, filepath.Join(c.dir, "logs"))
	for id := 1; id <= 3; id++ {
		if err := os.Symlink(linkedTo, filepath.Join(userLogs, fmt.Sprint(id))); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, logDir, want string
	}{
		{"in a directory of root's", filepath.Join(rootOwned, "logs"), "cannot create log directory " + filepath.Join(rootOwned, "logs") + " as ducc-e2e: permission denied"},
		{"through a symlink to a directory of root's", userLogs, "as ducc-e2e: permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := c.ducc("run", "--as", "ducc-e2e", "--log-dir", tc.logDir, "--", "sh", "-c", "echo ran")
			if code == 0 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr %q; want a failure saying %q", code, errs, tc.want)
			}
		})
	}
	for _, d := range []string{rootOwned, linkedTo} {
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Errorf("created in %s: %v", d, ents)
		}
	}

	// A user without a home gets no default log directory: the launch
	// fails saying so and what to do; a log directory of its own works.
	const homeless = "ducc-e2e-nohome"
	ensureHomelessUser(t, homeless)
	_, errs, code := c.ducc("run", "--as", homeless, "--", "sh", "-c", "echo ran")
	if want := "cannot create log directory /nonexistent as " + homeless + ": permission denied; give the work a log directory " + homeless + " may create (the default, ~/ducc/logs, needs a home " + homeless + " may write)"; code == 0 || !strings.Contains(errs, want) {
		t.Errorf("homeless run: exit %d, stderr %q; want a failure saying %q", code, errs, want)
	}
	out, errs, code := c.ducc("run", "--as", homeless, "--log-dir", filepath.Join(userLogs, "homeless"), "--", "sh", "-c", "echo ran")
	if code != 0 || !strings.Contains(out, "ran") {
		t.Errorf("homeless run with --log-dir: exit %d, out %q, stderr %q", code, out, errs)
	}
}
