package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The first moments of a cluster (issue 26, items 5 and 6): what a script
// that starts a cluster and submits as soon as it answers meets must be
// the cluster a person meets seconds later.

// startClusterUnwaited starts a dev cluster like startCluster but returns
// at once, without waiting for its node to be up: the tests of a
// cluster's first moments wait as a script would (firstAnswer).
func startClusterUnwaited(t *testing.T) *cluster {
	t.Helper()
	dir := scratchDir(t)
	data := filepath.Join(dir, "data")
	c := &cluster{dir: dir, agentProc: &agentProc{
		t:       t,
		name:    "n1",
		argv:    []string{duccBin, "agent", "--dev", "--data-dir", data, "--memory", "16G", "--node", "n1"},
		dataDir: data,
		sock:    filepath.Join(data, "ducc.sock"),
		logPath: filepath.Join(dir, "agent.log"),
	}}
	c.agentProc.start()
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("---- agent log (tail) ----\n%s", c.logTail())
		}
		killLeftovers(data)
	})
	return c
}

// firstAnswer waits, as a script would, for the first 'ducc status' that
// succeeds, and returns at once.
func firstAnswer(t *testing.T, a *agentProc) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a hang guard
	for {
		if _, _, code := a.ducc("status", "--json"); code == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ducc status never answered in 30s; agent log:\n%s", a.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestImpossibleWorkRefusedAtOnce: right after a fresh dev cluster first
// answers, work its only node (16 GiB) can never hold is refused with the
// message it gets later (exit 2), not accepted to wait for ever.
func TestImpossibleWorkRefusedAtOnce(t *testing.T) {
	tests := []struct {
		name string
		args func(c *cluster) []string
		want string
	}{
		{"reservation of no node's size", func(*cluster) []string {
			return []string{"reserve", "--json", "--memory", "1G"}
		}, "no node has exactly 1 GiB schedulable"},
		{"job bigger than every node", func(c *cluster) []string {
			return []string{"submit", "--input-file", writeItems(t, c.dir, "1"), "--process-memory-size", "1T", "--", "/bin/true"}
		}, "no node can hold 1 TiB"},
		{"run bigger than every node", func(*cluster) []string {
			return []string{"run", "--detach", "--memory", "1T", "--", "/bin/true"}
		}, "no node can hold 1 TiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := startClusterUnwaited(t)
			firstAnswer(t, c.agentProc)
			out, errs, code := c.ducc(tc.args(c)...)
			if code != 2 || !strings.Contains(out+errs, tc.want) {
				t.Errorf("ducc %s at the cluster's first answer: exit %d, want 2 and %q\nstdout: %s\nstderr: %s",
					strings.Join(tc.args(c), " "), code, tc.want, out, errs)
			}
		})
	}
}

// TestFirstWorkAfterBootstrapNew: a cluster whose Raft state was lost left
// process 1.1 running; started anew (--bootstrap-new), its very first work,
// submitted as soon as the cluster answers, gets an id above the
// leftover's and runs (it used to get id 1 and end "LaunchFailure:
// process 1.1 already exists").
func TestFirstWorkAfterBootstrapNew(t *testing.T) {
	c := startCluster(t)
	argv := c.argv
	out, errs, code := c.ducc("run", "--detach", "--", "sleep", "600")
	if code != 0 {
		t.Fatalf("ducc run --detach: exit %d: %s", code, errs)
	}
	old, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	if err != nil || old != 1 {
		t.Fatalf("the old cluster's first work is %q, want 1 (the test's premise)", out)
	}
	c.waitRunning("1")
	c.stop()
	if err := os.Remove(filepath.Join(c.dataDir, "raft", "raft.db")); err != nil {
		t.Fatal(err)
	}
	c.argv = append(argv[:len(argv):len(argv)], "--bootstrap-new")
	c.agentProc.start()
	firstAnswer(t, c.agentProc)

	out, errs, code = c.ducc("run", "--detach", "--", "sh", "-c", "exit 0")
	if code != 0 {
		t.Fatalf("the new cluster's first ducc run: exit %d: %s %s", code, out, errs)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	if err != nil || id <= old {
		t.Errorf("the new cluster's first work got id %q, want one above the leftover's (%d)", strings.TrimSpace(out), old)
	}
	if _, errs, code := c.ducc("wait", strings.TrimSpace(out)); code != 0 {
		w := c.show(strings.TrimSpace(out))
		t.Errorf("ducc wait %s: exit %d (%s), want 0: %s %s", strings.TrimSpace(out), code, errs, w.Completion, w.Reason)
	}
}
