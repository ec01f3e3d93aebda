package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// tmuxTerm is an 80×24 terminal: a tmux server of its own (-L) running
// sh with the CLI on its PATH, talking to one cluster.
type tmuxTerm struct {
	t      *testing.T
	bin    string
	server string
	n      int // commands typed, for their end markers
}

// newTmuxTerm starts the terminal; it is killed when the test ends.
func newTmuxTerm(t *testing.T, sock string) *tmuxTerm {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is missing (.ci/run installs it)")
		}
		t.Skip("needs tmux")
	}
	tm := &tmuxTerm{t: t, bin: bin, server: fmt.Sprintf("ducc-e2e-%d", os.Getpid())}
	shell := fmt.Sprintf("env DUCC_SOCKET=%s PATH=%s:%s TERM=xterm PS1='$ ' sh", sock, filepath.Dir(duccBin), os.Getenv("PATH"))
	tm.run("new-session", "-d", "-x", strconv.Itoa(termCols), "-y", strconv.Itoa(termRows), "-s", "t", shell)
	t.Cleanup(func() { _ = exec.Command(bin, "-L", tm.server, "kill-server").Run() })
	return tm
}

func (tm *tmuxTerm) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command(tm.bin, append([]string{"-L", tm.server}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen types line into the shell after clearing the screen, waits until
// it has run, and returns what the terminal shows: each line as the
// terminal wrapped it (rows) and as printed (lines, wrapped rows joined).
func (tm *tmuxTerm) screen(line string) (rows, lines []string) {
	tm.t.Helper()
	tm.n++
	done := fmt.Sprintf("__done_%d__", tm.n)
	tm.run("send-keys", "-t", "t", "clear; "+line+"; echo "+done, "Enter")
	for deadline := time.Now().Add(time.Minute); ; {
		joined := tm.run("capture-pane", "-p", "-J", "-t", "t")
		lines = strings.Split(strings.TrimRight(joined, "\n"), "\n")
		if i := indexOf(lines, done); i >= 0 {
			rows = strings.Split(strings.TrimRight(tm.run("capture-pane", "-p", "-t", "t"), "\n"), "\n")
			return rows, lines[:i]
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("%q did not end within a minute; the screen:\n%s", line, joined)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func indexOf(lines []string, s string) int {
	for i, l := range lines {
		if strings.TrimSpace(l) == s {
			return i
		}
	}
	return -1
}

// TestTables80Columns runs `ducc jobs --all`, `ducc classes` and `ducc
// services query` in an 80×24 tmux terminal against a dev cluster: no
// line wraps, and the states of ended work are whole (they were cut to
// "Exit(1…" and "EndOfJ…", and `ducc classes` was 113 columns wide).
func TestTables80Columns(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root for cgroups and --as")
	}
	c := startCluster(t)
	// A newcomer with a long name: the tables must still fit.
	u := ensureUser(t, "ducc-e2e-newcomer")
	if _, errs, code := c.ducc("--as", u.Username, "run", "--description", "killed", "--", "sh", "-c", "kill -KILL $$"); code != 137 {
		t.Fatalf("run that kills itself: exit %d, want 137: %s", code, errs)
	}
	// (As root: the exec worker is the test's ducc-shim, which other users
	// may not run from the test's private folder.)
	out, errs, code := c.ducc("submit", "--worker-protocol", "exec", "--input-file", writeItems(t, c.dir, "3"),
		"--process-memory-size", "256M", "--description", "three items", "--wait", "--", "echo", "{}")
	if code != 0 {
		t.Fatalf("submit --wait: exit %d: %s %s", code, out, errs)
	}
	c.mustDucc(t, "services", "register", "--service-request-endpoint", "TCP:localhost:1", "--description", "a service")
	// A run and a reservation of the whole node, one of which waits: a
	// reason code in NODES(REASON) widens the table as in the issue, where
	// the states were cut.
	c.mustDucc(t, "run", "--detach", "--memory", "1G", "--", "sleep", "600")
	if out, errs, code := c.ducc("reserve", "--memory", "16G"); code != 0 {
		t.Fatalf("reserve: exit %d: %s %s", code, out, errs)
	}

	tm := newTmuxTerm(t, c.sock)
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"ducc jobs --all", []string{"Exit(137)", "EndOfJob", "STATE"}},
		{"ducc classes", []string{"NAME", "POLICY", "DEMAND", "FAIR SHARE", "ALLOCATED", "(* = default class of its policy)"}},
		{"ducc services list", []string{"ENDPOINT", "TCP:localhost:1", "STATE"}},
	} {
		rows, lines := tm.screen(tc.line)
		shown := strings.Join(lines, "\n")
		t.Logf("%s at %d columns:\n%s", tc.line, termCols, strings.Join(rows, "\n"))
		if len(lines) < 2 {
			t.Errorf("%s printed nothing:\n%s", tc.line, shown)
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > termCols {
				t.Errorf("%s: a line of %d columns wraps on an %d-column terminal: %q", tc.line, n, termCols, l)
			}
		}
		for _, s := range tc.want {
			if !strings.Contains(shown, s) {
				t.Errorf("%s does not show %q whole:\n%s", tc.line, s, shown)
			}
		}
		if strings.Contains(shown, "…") && tc.line == "ducc jobs --all" {
			for _, l := range lines {
				for _, f := range strings.Fields(l) {
					if strings.HasSuffix(f, "…") && (strings.HasPrefix(f, "Exit") || strings.HasPrefix(f, "End")) {
						t.Errorf("%s cuts a state: %q", tc.line, l)
					}
				}
			}
		}
	}
}
