package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// sharedDir is a directory every test user may write in (sticky, like
// /tmp), for logs of work that runs as them.
func sharedDir(t *testing.T, parent, name string) string {
	t.Helper()
	d := filepath.Join(parent, name)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o1777); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRunUmask: the process gets the caller's umask, and its files the
// modes that umask gives.
func TestRunUmask(t *testing.T) {
	c := startCluster(t)
	out := filepath.Join(c.dir, "out")
	// The CLI inherits its umask from the shell, as a user's would.
	logDir := filepath.Join(c.dir, "umask-logs")
	cmd := exec.Command("sh", "-c", `umask 077; exec "$0" "$@"`, duccBin, "run", "--log-dir", logDir, "--", "sh", "-c", "umask; : > "+out)
	cmd.Env = append(os.Environ(), "DUCC_SOCKET="+c.sock)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("ducc run: %v %s", err, b)
	}
	if string(b) != "0077\n" {
		t.Errorf("umask in the process %q, want 0077", b)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file made under umask 077: %v %v, want mode 0600", fi.Mode(), err)
	}
	logs, _ := filepath.Glob(filepath.Join(logDir, "*", "*.log"))
	if len(logs) != 1 {
		t.Fatalf("logs %v", logs)
	}
	if fi, err := os.Stat(logs[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log made under umask 077: %v %v, want mode 0600", fi.Mode(), err)
	}
	// The umask key wins over the caller's.
	if o, errs, code := c.ducc("run", "--umask", "027", "--", "sh", "-c", "umask"); code != 0 || o != "0027\n" {
		t.Errorf("--umask 027: exit %d, %q %q", code, o, errs)
	}
	if _, errs, code := c.ducc("run", "--umask", "u=rwx", "--", "true"); code != 2 || !strings.Contains(errs, "bad umask") {
		t.Errorf("--umask u=rwx: exit %d %q", code, errs)
	}
}

// TestJobResultsOfAnotherUser: items, results and arguments of a job are
// its owner's; others see that it exists.
func TestJobResultsOfAnotherUser(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root to create users and switch to them")
	}
	ensureUser(t, "ducc-e2e")
	ensureUser(t, "ducc-e2e2")
	f := newJobFixture(t)
	logs := sharedDir(t, f.dir, "shared-logs")
	out, errs, code := f.ducc("submit", "--as", "ducc-e2e", "--process-executable", f.py,
		"--process-executable-args", f.worker+" 0 0 --token=s3cret", "--process-memory-size", "1G",
		"--input-file", f.items(t, "items", []string{"alice-1", "alice-2"}), "--log-directory", logs)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	id := strings.Fields(out)[1]
	if w := f.waitEnd(t, id, 60*time.Second); w.Completion != "EndOfJob" {
		t.Fatalf("job ended %s %q", w.Completion, w.Reason)
	}

	if out, errs, code := f.ducc("results", "--as", "ducc-e2e", id); code != 0 || !strings.Contains(out, "alice-1!") {
		t.Errorf("owner's results: exit %d %q %q", code, out, errs)
	}
	out, errs, code = f.ducc("results", "--as", "ducc-e2e2", id)
	if code != 2 || out != "" || !strings.Contains(errs, "belongs to ducc-e2e; only ducc-e2e, root or an administrator may read") {
		t.Errorf("another user's results: exit %d %q %q", code, out, errs)
	}
	if out, _, code := f.ducc("results", id); code != 0 || !strings.Contains(out, "alice-2!") {
		t.Errorf("root's results: exit %d %q", code, out)
	}

	out, _, _ = f.ducc("show", "--as", "ducc-e2e2", id)
	if strings.Contains(out, "s3cret") || !strings.Contains(out, "arguments hidden") || !strings.Contains(out, f.py) {
		t.Errorf("another user's show:\n%s", out)
	}
	out, _, _ = f.ducc("show", "--as", "ducc-e2e2", "--json", id)
	var w wire.WorkInfo
	if err := json.Unmarshal([]byte(out), &w); err != nil || strings.Contains(out, "s3cret") || len(w.Redacted) != 1 {
		t.Errorf("another user's show --json: %v\n%s", err, out)
	}
	if out, _, _ := f.ducc("jobs", "--as", "ducc-e2e2", "--all", "--json"); strings.Contains(out, "s3cret") || !strings.Contains(out, `"user": "ducc-e2e"`) {
		t.Errorf("another user's jobs --json:\n%s", out)
	}
	if out, _, _ := f.ducc("show", "--as", "ducc-e2e", id); !strings.Contains(out, "--token=s3cret") {
		t.Errorf("the owner's show:\n%s", out)
	}
}

// TestServiceEnvironmentOfAnotherUser: a service's environment is shown
// to its owner and root, never to another user, on the CLI and on the
// dashboard.
func TestServiceEnvironmentOfAnotherUser(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root to create users and switch to them")
	}
	ensureUser(t, "ducc-e2e")
	ensureUser(t, "ducc-e2e2")
	c := startCluster(t)
	out, errs, code := c.ducc("services", "register", "--as", "ducc-e2e", "--service-request-endpoint", "TCP:127.0.0.1:1",
		"--environment", "DB_PASSWORD=s3cret")
	if code != 0 {
		t.Fatalf("register: exit %d %q %q", code, out, errs)
	}
	query := func(as ...string) string {
		t.Helper()
		out, errs, code := c.ducc(append([]string{"services", "query", "--json"}, as...)...)
		if code != 0 {
			t.Fatalf("query %v: exit %d %q", as, code, errs)
		}
		return out
	}
	if out := query("--as", "ducc-e2e"); !strings.Contains(out, "DB_PASSWORD=s3cret") {
		t.Errorf("the owner does not see the environment:\n%s", out)
	}
	if out := query(); !strings.Contains(out, "DB_PASSWORD=s3cret") {
		t.Errorf("root does not see the environment:\n%s", out)
	}
	if out := query("--as", "ducc-e2e2"); strings.Contains(out, "s3cret") || !strings.Contains(out, `"redacted"`) {
		t.Errorf("another user sees:\n%s", out)
	}
	// The dev dashboard knows a client on the node by the user who owns
	// its connection (web.local_users): the same rule as the CLI.
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("the dashboard part needs curl")
	}
	web := func(as string) string {
		t.Helper()
		out, err := exec.Command("runuser", "-u", as, "--", curl, "-sS", "--noproxy", "*", c.webURL()+"/api/v1/services").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "TCP:127.0.0.1:1") {
			t.Fatalf("GET /api/v1/services as %s: %v\n%s", as, err, out)
		}
		return string(out)
	}
	if out := web("ducc-e2e2"); strings.Contains(out, "s3cret") || !strings.Contains(out, `"redacted"`) {
		t.Errorf("another user's dashboard shows:\n%s", out)
	}
	if out := web("ducc-e2e"); !strings.Contains(out, "DB_PASSWORD=s3cret") {
		t.Errorf("the owner's dashboard does not show the environment:\n%s", out)
	}
}
