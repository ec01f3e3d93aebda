package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ducc-project/ducc/agent"
	"github.com/ducc-project/ducc/cgroup"
	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/wire"
)

// The harness shared by every end-to-end test: TestMain builds the
// executables once (ducc, and duccd and ducc-shim next to it),
// agentProc runs one `ducc agent` of them (ducc runs duccd), and the CLI is run
// against an agent's socket. The dev cluster (cluster, below) is one
// agentProc; the namespace cluster (netns_test.go) is one agentProc per
// node, each inside its network namespace.

// duccBin is the ducc TestMain built; set once before any test runs.
var duccBin string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ducc-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// ducc and, next to it, the daemon it runs for `ducc agent` and the
	// process shim the agent runs (as make build and the packages install
	// them).
	duccBin = filepath.Join(dir, "ducc")
	for _, b := range []struct {
		out, pkg string
		static   bool // as make build and the packages
	}{
		{duccBin, "cmd/ducc", true},
		{filepath.Join(dir, "duccd"), "cmd/duccd", false},
		{filepath.Join(dir, "ducc-shim"), "cmd/ducc-shim", true},
	} {
		cmd := exec.Command("go", "build", "-o", b.out, "github.com/ducc-project/ducc/"+b.pkg)
		if b.static {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", b.pkg, err, out)
			return 1
		}
	}
	return m.Run()
}

// exitUnreachable is the CLI's exit code when no head answers (README,
// "Exit codes"). The tests check the documented contract, so the number is
// spelled out here rather than taken from the code under test.
const exitUnreachable = 3

// agentProc is one agent process of the real binary. Its output goes to
// logPath; the CLI reaches it through sock.
type agentProc struct {
	t       testing.TB
	name    string   // the node's name
	argv    []string // the command line that starts it, program first
	env     []string // its environment; nil: the test's
	dataDir string
	sock    string
	logPath string
	cmd     *exec.Cmd
	log     *os.File
}

// start starts the agent; it does not wait for it to serve.
func (a *agentProc) start() {
	a.t.Helper()
	lf, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		a.t.Fatal(err)
	}
	a.log = lf
	a.cmd = exec.Command(a.argv[0], a.argv[1:]...)
	a.cmd.Env = a.env
	a.cmd.Stdout, a.cmd.Stderr = lf, lf
	if err := a.cmd.Start(); err != nil {
		lf.Close()
		a.t.Fatalf("start agent %s: %v", a.name, err)
	}
}

// running tells whether the agent was started and has not exited.
func (a *agentProc) running() bool { return a.cmd != nil && a.cmd.ProcessState == nil }

// stop sends SIGTERM and waits for a clean exit.
func (a *agentProc) stop() {
	if !a.running() {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			a.t.Errorf("agent %s did not exit cleanly on SIGTERM: %v\n%s", a.name, err, a.agentLog())
		}
	case <-time.After(20 * time.Second):
		// SIGQUIT first: the Go runtime writes every goroutine's stack to
		// the agent's log, which shows where the stop hangs.
		_ = a.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = a.cmd.Process.Kill()
			<-done
		}
		a.t.Errorf("agent %s did not stop within 20s of SIGTERM (its goroutines, from SIGQUIT, at the end of the log)\n%s", a.name, a.agentLog())
	}
	a.log.Close()
}

// kill9 kills the agent; the processes it started keep running.
func (a *agentProc) kill9() {
	if !a.running() {
		return
	}
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
	a.log.Close()
}

func (a *agentProc) agentLog() string {
	b, _ := os.ReadFile(a.logPath)
	return string(b)
}

// logTail is the end of the agent's log, for a failed test's output.
func (a *agentProc) logTail() string {
	const max = 6000
	log := a.agentLog()
	if len(log) > max {
		log = log[len(log)-max:]
	}
	return log
}

// ducc runs the CLI against this agent.
func (a *agentProc) ducc(args ...string) (stdout, stderr string, code int) {
	return runDucc(a.sock, args...)
}

// status asks the agent for the cluster status.
func (a *agentProc) status() (wire.StatusInfo, bool) {
	out, _, code := a.ducc("status", "--json")
	var st wire.StatusInfo
	return st, code == 0 && json.Unmarshal([]byte(out), &st) == nil
}

func (a *agentProc) show(id string) wire.WorkInfo {
	a.t.Helper()
	out, errs, code := a.ducc("show", id, "--json")
	if code != 0 {
		a.t.Fatalf("ducc show %s: exit %d: %s", id, code, errs)
	}
	var w wire.WorkInfo
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		a.t.Fatalf("ducc show %s: %v", id, err)
	}
	return w
}

// waitRunning waits until the work's process runs.
func (a *agentProc) waitRunning(id string) wire.WorkInfo {
	a.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		w := a.show(id)
		if w.State == "Running" && len(w.Procs) > 0 && w.Procs[0].PID > 0 {
			return w
		}
		if w.Ended {
			a.t.Fatalf("work %s ended before running: %+v", id, w)
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.t.Fatalf("work %s not running after 15s: %+v", id, a.show(id))
	return wire.WorkInfo{}
}

// waitEnd waits until the work ends; t is the (sub)test that waits.
func (a *agentProc) waitEnd(t testing.TB, id string, d time.Duration) wire.WorkInfo {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		w := a.show(id)
		if w.Ended {
			return w
		}
		time.Sleep(100 * time.Millisecond)
	}
	w := a.show(id)
	t.Fatalf("work %s did not end in %s: %s %s %+v", id, d, w.State, w.Reason, w.Job)
	return w
}

// runDucc runs the CLI with DUCC_SOCKET set to sock.
func runDucc(sock string, args ...string) (string, string, int) {
	cmd := exec.Command(duccBin, args...)
	cmd.Env = append(os.Environ(), "DUCC_SOCKET="+sock)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return out.String(), errb.String(), code
}

// scratchDir is a test's temp dir, opened so that other users (the test
// users the work runs as) reach the logs and files in it.
func scratchDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sharedLogDir makes dir a log directory every user may create their
// work's directories in (mode 1777, like /tmp): the agent creates a
// work's log directory as its user, who may not write in root's scratch
// dir.
func sharedLogDir(t testing.TB, dir string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// removeCgroups removes the cgroups of the agent of dataDir, emptied
// first: an agent removes its root only when it stops cleanly with no
// process left, and tests kill agents and leave ended processes
// unacknowledged.
func removeCgroups(dataDir string) {
	cg, err := cgroup.New(agent.CgroupRoot(dataDir), slog.New(slog.DiscardHandler))
	if err != nil || !cg.Enabled() {
		return
	}
	ents, _ := os.ReadDir(filepath.Join(dataDir, "procs"))
	for _, e := range ents {
		if g, err := cg.Load(e.Name()); err == nil {
			_ = g.Kill()
			_ = g.Delete()
		}
	}
	// The kernel may refuse the root for a moment after its last group
	// went (v1 takes a group offline in the background).
	for range 20 {
		if cg.RemoveRoot() == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killLeftovers kills what the tests left running (work outlives agents by
// design), shims included, and removes the data dir once they are gone.
func killLeftovers(dataDir string) {
	killShimServers(filepath.Join(dataDir, "procs"))
	ents, _ := os.ReadDir(filepath.Join(dataDir, "procs"))
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dataDir, "procs", e.Name(), "child.json"))
		if err != nil {
			continue
		}
		var st struct {
			PID     int `json:"pid"`
			ShimPID int `json:"shim_pid"`
		}
		if json.Unmarshal(b, &st) == nil && st.PID > 0 {
			_ = syscall.Kill(-st.PID, syscall.SIGKILL)
			_ = syscall.Kill(st.PID, syscall.SIGKILL)
			if st.ShimPID > 0 {
				_ = syscall.Kill(st.ShimPID, syscall.SIGKILL)
			}
		}
	}
	removeCgroups(dataDir)
	// A shim that was just starting may still write for a moment.
	for range 50 {
		if os.RemoveAll(dataDir) == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killShimServers kills the shim servers of a procs directory and waits
// for them to go: one still starting a process would create the agent's
// cgroup root again after removeCgroups removed it.
func killShimServers(procsDir string) {
	pids := shimServerPIDs(func(_ int, args []string) bool { return len(args) == 3 && args[2] == procsDir })
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range pids {
		for range 100 {
			if syscall.Kill(pid, 0) != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// shimServerPIDs lists the running shim servers for which keep holds,
// given the server's pid and command line.
func shimServerPIDs(keep func(pid int, args []string) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) >= 2 && args[1] == proc.ShimServerSubcommand && keep(pid, args) {
			out = append(out, pid)
		}
	}
	return out
}

// cluster is a one-node dev cluster: `ducc agent --dev` in a temp dir.
type cluster struct {
	*agentProc
	dir string
}

// startCluster starts a dev cluster with the extra agent flags given and
// waits until it serves. It is stopped, and what it left running killed,
// when the test ends.
func startCluster(t testing.TB, agentArgs ...string) *cluster {
	t.Helper()
	dir := scratchDir(t)
	return startClusterIn(t, dir, filepath.Join(dir, "data"), agentArgs...)
}

// startClusterIn starts a dev cluster in dir with its data directory at
// data (which may be on a filesystem of its own), like startCluster.
func startClusterIn(t testing.TB, dir, data string, agentArgs ...string) *cluster {
	t.Helper()
	c := &cluster{dir: dir, agentProc: &agentProc{
		t:       t,
		name:    "n1",
		argv:    append([]string{duccBin, "agent", "--dev", "--data-dir", data, "--memory", "16G", "--node", "n1"}, agentArgs...),
		dataDir: data,
		sock:    filepath.Join(data, "ducc.sock"),
		logPath: filepath.Join(dir, "agent.log"),
	}}
	c.start()
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("---- agent log (tail) ----\n%s", c.logTail())
		}
		killLeftovers(data)
	})
	return c
}

// start starts the agent and waits until it sees its node up.
func (c *cluster) start() {
	c.t.Helper()
	c.agentProc.start()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if st, ok := c.status(); ok && st.NodesUp == 1 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("dev cluster did not come up in 20s; agent log:\n%s", c.agentLog())
}

func isRoot() bool { return os.Geteuid() == 0 }

// ensureUser makes sure a test user exists with a home it owns, whatever
// earlier runs left on the machine (a user created without a home, a home
// removed since): runs without --log-dir log to ~/ducc/logs.
func ensureUser(t *testing.T, name string) *user.User {
	t.Helper()
	u := lookupOrAddUser(t, name, "-m")
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.MkdirAll(u.HomeDir, 0o755); err != nil {
		t.Fatalf("home of %s: %v", name, err)
	}
	if err := os.Chown(u.HomeDir, uid, gid); err != nil {
		t.Fatalf("home of %s: %v", name, err)
	}
	return u
}

// ensureHomelessUser makes sure a test user exists whose home does not
// exist and cannot be created by the user (it is under /nonexistent).
func ensureHomelessUser(t *testing.T, name string) *user.User {
	t.Helper()
	u := lookupOrAddUser(t, name, "-M", "-d", "/nonexistent/"+name)
	if _, err := os.Stat(u.HomeDir); err == nil {
		t.Fatalf("%s has a home %s: the test's premise is wrong", name, u.HomeDir)
	}
	return u
}

// lookupOrAddUser returns the user name, creating it with useradd and the
// extra options if it does not exist.
func lookupOrAddUser(t *testing.T, name string, opts ...string) *user.User {
	t.Helper()
	if u, err := user.Lookup(name); err == nil {
		return u
	}
	args := append(append([]string{}, opts...), "-s", "/usr/sbin/nologin", name)
	if out, err := exec.Command("useradd", args...).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v %s", name, err, out)
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// needPython returns a python3 that the test users may run, or skips.
func needPython(t testing.TB) string {
	t.Helper()
	// The system python: other users may not enter root's home (pyenv).
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	return py
}
