package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// TestRaftStateSpoiled stops a dev cluster that ran work, spoils its Raft
// state, and starts the agent again: it must refuse to start, exit
// non-zero, and say once which file is at fault and how to recover, with
// no Go panic. --bootstrap-new then starts an empty cluster.
func TestRaftStateSpoiled(t *testing.T) {
	tests := []struct {
		name    string
		spoil   func(t *testing.T, db string)
		problem string
	}{
		{"truncated", func(t *testing.T, db string) {
			// bbolt grows its file ahead of use: keep less than it uses
			// (two meta pages, a freelist, the buckets and the log).
			if err := os.Truncate(db, int64(3*os.Getpagesize())); err != nil {
				t.Fatal(err)
			}
		}, "raft.db is corrupt (truncated"},
		{"garbage pages", func(t *testing.T, db string) {
			b, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			// Every page but the two meta pages.
			r := rand.New(rand.NewPCG(7, 7))
			for i := 2 * os.Getpagesize(); i < len(b); i++ {
				b[i] = byte(r.Uint32())
			}
			if err := os.WriteFile(db, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "raft.db is corrupt"},
		{"empty", func(t *testing.T, db string) {
			if err := os.Truncate(db, 0); err != nil {
				t.Fatal(err)
			}
		}, "raft.db is empty (0 bytes)"},
		{"deleted", func(t *testing.T, db string) {
			if err := os.Remove(db); err != nil {
				t.Fatal(err)
			}
		}, "raft.db is missing, but this node was a member of a head group"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t)
			if out, errs, code := c.ducc("run", "--", "/bin/true"); code != 0 {
				t.Fatalf("ducc run: exit %d: %s %s", code, out, errs)
			}
			before, ok := c.status()
			if !ok || before.Incarnation == "" {
				t.Fatalf("ducc status shows no incarnation: %+v", before)
			}
			c.stop()
			db := filepath.Join(c.dataDir, "raft", "raft.db")
			tc.spoil(t, db)

			code, stderr := runAgentToExit(t, c.argv)
			if code == 0 {
				t.Fatalf("the agent started over a spoiled Raft state:\n%s", stderr)
			}
			for _, want := range []string{db[:len(db)-len("raft.db")] + tc.problem, "restore the data directory",
				"joins the head group as a new member", "ducc agent --bootstrap-new", "refusing to start"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			for _, bad := range []string{"panic", "goroutine "} {
				if strings.Contains(stderr, bad) {
					t.Errorf("stderr has %q:\n%s", bad, stderr)
				}
			}
			if n := strings.Count(stderr, "ducc: the Raft state"); n != 1 {
				t.Errorf("the message appears %d times, want once:\n%s", n, stderr)
			}

			// An empty cluster on purpose: it starts, runs work, and its
			// ids do not repeat those of the old cluster.
			c.argv = append(c.argv, "--bootstrap-new")
			c.start()
			out, errs, code := c.ducc("run", "--", "/bin/true")
			if code != 0 {
				t.Fatalf("ducc run on the new cluster: exit %d: %s %s", code, out, errs)
			}
			if aside, _ := filepath.Glob(filepath.Join(c.dataDir, "raft.old-*")); tc.name != "deleted" && len(aside) != 1 {
				t.Errorf("old state moved aside: %v, want one directory", aside)
			}
			if after, ok := c.status(); !ok || after.Incarnation == "" || after.Incarnation == before.Incarnation {
				t.Errorf("incarnation %q after --bootstrap-new, was %q: want a new one", after.Incarnation, before.Incarnation)
			}
		})
	}
}

// runAgentToExit runs an agent command line that must exit on its own
// and returns its exit code and output.
func runAgentToExit(t *testing.T, argv []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, not a bound
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the agent did not exit within 2 minutes over a spoiled Raft state:\n%s", out.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// TestLeftoversOfAnEarlierCluster: work of a cluster whose Raft state was
// lost keeps running when the cluster starts anew (--bootstrap-new); the
// new cluster's work ids continue above it, the new work is not mistaken
// for it, it is listed by ducc nodes, and only --stop-leftovers stops it.
func TestLeftoversOfAnEarlierCluster(t *testing.T) {
	c := startCluster(t)
	argv := c.argv
	out, errs, code := c.ducc("run", "--detach", "--", "sleep", "600")
	if code != 0 {
		t.Fatalf("ducc run --detach: exit %d: %s", code, errs)
	}
	old := strings.TrimSpace(out)
	pid := c.waitRunning(old).Procs[0].PID
	c.stop()
	if err := os.Remove(filepath.Join(c.dataDir, "raft", "raft.db")); err != nil {
		t.Fatal(err)
	}
	c.argv = append(argv[:len(argv):len(argv)], "--bootstrap-new")
	c.start()

	var node wire.NodeInfo
	deadline := time.Now().Add(time.Minute) // a hang guard
	for len(node.Leftovers) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("ducc nodes never listed the leftover: %+v", node)
		}
		time.Sleep(100 * time.Millisecond)
		out, _, _ := c.ducc("nodes", "--json")
		var list wire.NodeList
		if json.Unmarshal([]byte(out), &list) == nil && len(list.Nodes) == 1 {
			node = list.Nodes[0]
		}
	}
	if l := node.Leftovers[0]; l.ID != old+".1" || l.PID != pid {
		t.Errorf("leftover listed as %+v, want %s.1 with pid %d", l, old, pid)
	}
	if out, _, _ := c.ducc("nodes"); !strings.Contains(out, "--stop-leftovers") {
		t.Errorf("ducc nodes does not say how to stop the leftover:\n%s", out)
	}

	// New work: a new id, runs to its end, and the leftover runs on.
	out, errs, code = c.ducc("run", "--detach", "--", "sh", "-c", "exit 4")
	if code != 0 {
		t.Fatalf("ducc run on the new cluster: exit %d: %s", code, errs)
	}
	id := strings.TrimSpace(out)
	if id == old {
		t.Fatalf("the new cluster reused work id %s", id)
	}
	if _, errs, code := c.ducc("wait", id); code != 4 {
		t.Fatalf("ducc wait %s: exit %d, want 4 (%s)", id, code, errs)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the leftover (pid %d) was stopped without an administrator's decision: %v", pid, err)
	}
	if !strings.Contains(c.agentLog(), "a process of an earlier cluster incarnation still runs here") {
		t.Error("the agent log does not report the leftover")
	}

	// The administrator's decision.
	c.stop()
	c.argv = append(argv[:len(argv):len(argv)], "--stop-leftovers")
	c.start()
	deadline = time.Now().Add(time.Minute) // a hang guard
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("--stop-leftovers did not stop the leftover (pid %d)", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
