package cgroup

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const mib = 1 << 20

func TestMain(m *testing.M) {
	if os.Getenv("DUCC_CGROUP_TEST_NEW") != "" {
		// Helper: try New as an unprivileged user; print the error.
		_, err := New(os.Getenv("DUCC_CGROUP_TEST_NEW"), slog.New(slog.DiscardHandler))
		switch {
		case err == nil:
			fmt.Println("ok")
		case errors.Is(err, ErrNotWritable):
			fmt.Println("notwritable:", err)
		default:
			fmt.Println("other:", err)
		}
		os.Exit(0)
	}
	if paths := os.Getenv(openHelperEnv); paths != "" {
		openDevices(strings.Fields(paths)) // devices_test.go
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// newManager returns a manager with a unique root, removed at the end.
func newManager(t testing.TB) *Manager {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	root := fmt.Sprintf("ducc-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"))
	m, err := New(root, testLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := m.RemoveRoot(); err != nil {
			t.Errorf("RemoveRoot: %v", err)
		}
	})
	return m
}

func create(t *testing.T, m *Manager, name string, r Resources) Group {
	t.Helper()
	g, err := m.Create(name, r)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if err := g.Kill(); err != nil {
			t.Errorf("cleanup Kill: %v", err)
		}
		if err := g.Delete(); err != nil {
			t.Errorf("cleanup Delete: %v", err)
		}
	})
	return g
}

// startIn starts `sh -c script` gated on stdin: the process is moved into g
// before the script runs. It returns the command (already running the script).
func startIn(t *testing.T, g Group, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "read x; "+script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := g.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestMode(t *testing.T) {
	m := newManager(t)
	// The mode must match what is mounted: v1 and hybrid have a memory
	// hierarchy with v1's files, v2 a cgroup2 mount with cgroup.controllers.
	switch m.Mode() {
	case ModeV1, ModeHybrid:
		if !exists(filepath.Join(m.Mountpoint(), "memory", "memory.limit_in_bytes")) {
			t.Fatalf("mode %s but no v1 memory hierarchy under %s", m.Mode(), m.Mountpoint())
		}
		unified := hostMode() == ModeHybrid
		if unified != (m.Mode() == ModeHybrid) {
			t.Fatalf("mode %s, but a cgroup2 mount at unified/ is %v", m.Mode(), unified)
		}
	case ModeV2:
		var st unix.Statfs_t
		if err := unix.Statfs(m.Mountpoint(), &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
			t.Fatalf("mode v2 but %s is not a cgroup2 mount (%v)", m.Mountpoint(), err)
		}
	default:
		t.Fatalf("Mode() = %q", m.Mode())
	}
	if !m.Enabled() {
		t.Fatal("not enabled")
	}
	t.Logf("mode %s root %s", m.Mode(), m.Root())
}

func TestOOMKill(t *testing.T) {
	m := newManager(t)
	g := create(t, m, "oom", Resources{MemoryLimit: 64 * mib, SwapLimit: NoSwap})
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.MemoryLimit != 64*mib {
		t.Fatalf("MemoryLimit = %d, want %d", st.MemoryLimit, 64*mib)
	}
	if n, err := g.OOMKills(); err != nil || n != 0 {
		t.Fatalf("OOMKills before = %d, %v", n, err)
	}
	cmd := startIn(t, g, "head -c 300M /dev/zero | tail")
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("process should fail, got %v", err)
	}
	t.Logf("exit: %v", ee)
	n, err := g.OOMKills()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("OOMKills = 0 after an OOM (exact=%v)", g.OOMExact())
	}
	st, err = g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats after OOM: %+v", st)
	if st.OOMKills == 0 || st.MemoryMaxUsage == 0 {
		t.Fatalf("stats did not move: %+v", st)
	}
	if st.MemoryMaxUsage > 64*mib {
		t.Fatalf("max usage %d above the cap", st.MemoryMaxUsage)
	}
}

// TestOOMKillChildren: kills of processes below the one the caller started
// count, also when that process survives them and exits 0.
func TestOOMKillChildren(t *testing.T) {
	m := newManager(t)
	g := create(t, m, "oomtree", Resources{MemoryLimit: 64 * mib, SwapLimit: NoSwap})
	const eat = "head -c 300M /dev/zero | tail"
	cmd := startIn(t, g, "("+eat+"); sh -c '"+eat+"'; exit 0")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the parent should survive its children and exit 0: %v", err)
	}
	n, err := g.OOMKills()
	if err != nil {
		t.Fatal(err)
	}
	if !g.OOMExact() {
		if n == 0 {
			t.Fatal("OOMKills = 0 after two OOM kills (failcnt fallback)")
		}
		t.Skipf("no exact OOM kill counter on this host (OOMKills = %d)", n)
	}
	if n != 2 {
		t.Fatalf("OOMKills = %d, want 2", n)
	}
}

func TestSwapCapped(t *testing.T) {
	m := newManager(t)
	g := create(t, m, "swap", Resources{MemoryLimit: 32 * mib, SwapLimit: NoSwap})
	switch m.Mode() {
	case ModeV1, ModeHybrid:
		f := filepath.Join(v1Mount, "memory", m.Root(), "swap", "memory.memsw.limit_in_bytes")
		if b, err := os.ReadFile(f); err == nil {
			if strings.TrimSpace(string(b)) != fmt.Sprint(32*mib) {
				t.Fatalf("memsw limit %s, want %d", b, 32*mib)
			}
		} else {
			t.Logf("no memsw on this host: %v", err)
		}
	case ModeV2:
		f := filepath.Join(g.Path(), "memory.swap.max")
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) != "0" {
			t.Fatalf("memory.swap.max = %s, want 0", b)
		}
	}
	// Raise then drop the limit: the write order must satisfy memsw >= limit.
	if err := g.Update(Resources{MemoryLimit: 128 * mib, SwapLimit: NoSwap}); err != nil {
		t.Fatal(err)
	}
	if st, _ := g.Stats(); st.MemoryLimit != 128*mib {
		t.Fatalf("limit after update %d", st.MemoryLimit)
	}
	if err := g.Update(Resources{MemoryLimit: 16 * mib, SwapLimit: NoSwap}); err != nil {
		t.Fatal(err)
	}
	if err := g.Update(Resources{}); err != nil {
		t.Fatal(err)
	}
	if st, _ := g.Stats(); st.MemoryLimit != 0 {
		t.Fatalf("limit after removal %d, want 0 (none)", st.MemoryLimit)
	}
}

func TestKillAll(t *testing.T) {
	m := newManager(t)
	g := create(t, m, "kill", Resources{MemoryLimit: 256 * mib, CPUWeight: 200})
	cmd := startIn(t, g, "sleep 100 & sleep 100 & (trap '' TERM; sleep 100) & wait")
	deadline := time.Now().Add(5 * time.Second)
	var pids []int
	for time.Now().Before(deadline) {
		var err error
		if pids, err = g.Procs(); err != nil {
			t.Fatal(err)
		}
		if len(pids) >= 4 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(pids) < 4 {
		t.Fatalf("expected >= 4 processes, got %v", pids)
	}
	if err := g.Delete(); err == nil {
		t.Fatal("Delete of a busy group should fail")
	}
	start := time.Now()
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Kill took %v", time.Since(start))
	if pids, _ := g.Procs(); len(pids) != 0 {
		t.Fatalf("left after Kill: %v", pids)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("sh should be SIGKILLed: %v", err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Load("kill"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Load after Delete: %v, want ErrNotExist", err)
	}
}

func TestStatsMove(t *testing.T) {
	m := newManager(t)
	g := create(t, m, "stats", Resources{MemoryLimit: 128 * mib})
	before, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	cmd := startIn(t, g, "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; head -c 20M /dev/zero | tail >/dev/null")
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	after, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before %+v after %+v", before, after)
	if after.CPUUsage <= before.CPUUsage {
		t.Fatalf("CPU did not move: %v -> %v", before.CPUUsage, after.CPUUsage)
	}
	if after.MemoryMaxUsage < 20*mib {
		t.Fatalf("max usage %d < 20 MiB", after.MemoryMaxUsage)
	}
	if peak, err := g.PeakMemory(); err != nil || peak != after.MemoryMaxUsage {
		t.Fatalf("PeakMemory() = %d, %v; want the max usage %d", peak, err, after.MemoryMaxUsage)
	}
	if after.OOMKills != 0 {
		t.Fatalf("unexpected OOM kills %d", after.OOMKills)
	}
}

func TestLoadAndStartIn(t *testing.T) {
	m := newManager(t)
	g := create(t, m, "enter", Resources{MemoryLimit: 512 * mib})
	g2, err := m.Load("enter")
	if err != nil {
		t.Fatal(err)
	}
	if g2.Path() != g.Path() {
		t.Fatalf("Load path %s != %s", g2.Path(), g.Path())
	}
	before := threadCgroups(t)
	cmd := exec.Command("/bin/sleep", "100")
	err = m.StartIn(g2, func(fd int) error {
		if fd != -1 {
			t.Errorf("v1 StartIn gave fd %d", fd)
		}
		if unix.Gettid() == unix.Getpid() {
			t.Error("StartIn forks from the main thread")
		}
		own, _ := os.ReadFile("/proc/thread-self/cgroup")
		if !strings.Contains(string(own), "/"+m.Root()+"/enter\n") {
			t.Errorf("the forking thread is not inside:\n%s", own)
		}
		return cmd.Start()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	assertInEvery(t, m, cmd.Process.Pid, "enter")
	if after := threadCgroups(t); !slices.Equal(before, after) {
		t.Fatalf("the test process's threads moved:\nbefore %q\nafter  %q", before, after)
	}
	if pids, err := g.Procs(); err != nil || !slices.Equal(pids, []int{cmd.Process.Pid}) {
		t.Fatalf("Procs = %v, %v; want only the child %d", pids, err, cmd.Process.Pid)
	}

	// start's own error comes back as is.
	errStart := errors.New("no fork today")
	if err := m.StartIn(g, func(int) error { return errStart }); err != errStart {
		t.Fatalf("StartIn = %v, want start's error", err)
	}

	// A group gone meanwhile: nothing moves and start is not called.
	gone := create(t, m, "gone", Resources{})
	if err := gone.Delete(); err != nil {
		t.Fatal(err)
	}
	err = m.StartIn(gone, func(int) error {
		t.Error("start called for a group that does not exist")
		return nil
	})
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("StartIn into a removed group = %v, want ErrNotExist", err)
	}
	if after := threadCgroups(t); !slices.Equal(before, after) {
		t.Fatalf("the test process's threads moved:\nbefore %q\nafter  %q", before, after)
	}

	if _, err := m.Load("nope"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Load(nope) = %v", err)
	}
	if _, err := m.Create("a/b", Resources{}); err == nil {
		t.Fatal("Create accepted a/b")
	}
}

// threadCgroups lists the distinct /proc/<tid>/cgroup contents of the test
// process's threads.
func threadCgroups(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range ents {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", de.Name(), "cgroup"))
		if err != nil {
			continue // a thread that ended meanwhile
		}
		out = append(out, string(b))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// assertInEvery checks that pid is in group name in every controller m uses.
func assertInEvery(t *testing.T, m *Manager, pid int, name string) {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	want := "/" + m.Root() + "/" + name
	in := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[2] == want {
			for _, c := range strings.Split(parts[1], ",") {
				in[c] = true
			}
		}
	}
	switch b := m.backend.(type) {
	case *v1Backend:
		for _, n := range b.names {
			if !in[string(n)] {
				t.Errorf("pid %d not in %s of controller %s:\n%s", pid, want, n, raw)
			}
		}
	case *v2Backend:
		// One hierarchy, whose line has no controllers: "0::/path".
		if !in[""] {
			t.Errorf("pid %d not in %s of the unified hierarchy:\n%s", pid, want, raw)
		}
	default:
		t.Fatalf("backend %T", b)
	}
}

// TestOwnThreadEnds checks that a thread onOwnThread's fn does not give
// back ends with its goroutine.
func TestOwnThreadEnds(t *testing.T) {
	tid := 0
	onOwnThread(func() bool {
		tid = unix.Gettid()
		return false
	})
	if tid == unix.Getpid() {
		t.Fatal("fn ran on the main thread")
	}
	deadline := time.Now().Add(10 * time.Second)
	for exists(fmt.Sprintf("/proc/self/task/%d", tid)) {
		if time.Now().After(deadline) {
			t.Fatalf("thread %d still there", tid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestV2Unified exercises the v2 backend on the cgroup2 mount of a hybrid
// host (no controllers there: no memory cap, but procs, clone-into-cgroup,
// cgroup.kill and delete work).
func TestV2Unified(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	mp := v1Mount
	if hostMode() == ModeHybrid {
		mp = filepath.Join(v1Mount, "unified")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mp, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Skip("no cgroup2 mount")
	}
	root := fmt.Sprintf("ducc-test-%d-v2", os.Getpid())
	m, err := NewWithOptions(Options{Root: root, Logger: testLogger(t), Mode: ModeV2, Mountpoint: mp})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := m.RemoveRoot(); err != nil {
			t.Error(err)
		}
	}()
	b := m.backend.(*v2Backend)
	r := Resources{}
	if b.ctrl["memory"] {
		r.MemoryLimit = 64 * mib
		r.SwapLimit = NoSwap
	} else if _, err := m.Create("nomem", Resources{MemoryLimit: mib}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("memory cap without memory controller: %v", err)
	}
	g, err := m.Create("g", r)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Delete()
	if fd, err := g.OpenFD(); err != nil {
		t.Fatal(err)
	} else {
		unix.Close(fd)
	}
	before := threadCgroups(t)
	cmd := exec.Command("/bin/sh", "-c", "sleep 100 & sleep 100; wait")
	err = m.StartIn(g, func(fd int) error {
		if fd < 0 {
			return fmt.Errorf("v2 StartIn gave fd %d", fd)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		return cmd.Start()
	})
	if err != nil {
		t.Fatal(err)
	}
	if after := threadCgroups(t); !slices.Equal(before, after) {
		t.Fatalf("the test process's threads moved:\nbefore %q\nafter  %q", before, after)
	}
	deadline := time.Now().Add(10 * time.Second)
	pids, err := g.Procs()
	for err == nil && len(pids) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		pids, err = g.Procs()
	}
	if err != nil || len(pids) < 2 || !slices.Contains(pids, cmd.Process.Pid) {
		t.Fatalf("Procs = %v, %v; want the shell %d and its children", pids, err, cmd.Process.Pid)
	}
	if n, err := g.OOMKills(); err != nil || n != 0 {
		t.Fatalf("OOMKills = %d, %v", n, err)
	}
	if _, err := g.Stats(); err != nil {
		t.Fatal(err)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
		t.Fatalf("not killed: %v", cmd.ProcessState)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
}

func TestDisabled(t *testing.T) {
	m := NewDisabled(testLogger(t))
	if m.Mode() != ModeDisabled || m.Enabled() {
		t.Fatal(m.Mode())
	}
	g, err := m.Create("x", Resources{MemoryLimit: mib})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddProc(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if p, err := g.Procs(); err != nil || len(p) != 0 {
		t.Fatal(p, err)
	}
	if _, err := g.Stats(); !errors.Is(err, ErrDisabled) {
		t.Fatal(err)
	}
	if _, err := g.OpenFD(); !errors.Is(err, ErrNoCgroupFD) {
		t.Fatal(err)
	}
	called := false
	if err := m.StartIn(g, func(fd int) error { called = fd == -1; return nil }); err != nil || !called {
		t.Fatalf("StartIn = %v, start called with fd -1: %v", err, called)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
}

// TestNotWritable runs New as nobody and expects a friendly ErrNotWritable.
func TestNotWritable(t *testing.T) {
	if os.Getuid() != 0 {
		_, err := New(fmt.Sprintf("ducc-test-%d-nw", os.Getpid()), nil)
		if !errors.Is(err, ErrNotWritable) {
			t.Fatalf("New as uid %d: %v", os.Getuid(), err)
		}
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary lives in a private temp dir: copy it somewhere nobody can run it.
	dir, err := os.MkdirTemp("", "ducc-cgtest-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cgtest")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), fmt.Sprintf("DUCC_CGROUP_TEST_NEW=ducc-test-%d-nw", os.Getpid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("cannot run helper as nobody: %v %s", err, out)
	}
	t.Logf("%s", out)
	if !strings.HasPrefix(string(out), "notwritable:") || !strings.Contains(string(out), "run the agent as root") {
		t.Fatalf("unexpected: %s", out)
	}
}

// TestSubGroups: a group with a sub-group below it (made behind the
// manager's back, as a process with delegation could) lists, kills and
// deletes what is below it too. The group is reached through Load, as the
// shim and an agent after a restart reach theirs.
func TestSubGroups(t *testing.T) {
	m := newManager(t)
	create(t, m, "tree", Resources{MemoryLimit: 128 * mib})
	g, err := m.Load("tree")
	if err != nil {
		t.Fatal(err)
	}
	var subDir string
	switch b := m.backend.(type) {
	case *v1Backend:
		for i, dir := range b.dirs { // memory's first
			d := filepath.Join(dir, b.root, "tree", "sub")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				subDir = d
			}
		}
	case *v2Backend:
		subDir = filepath.Join(b.mount, b.root, "tree", "sub")
		if err := os.Mkdir(subDir, 0o755); err != nil {
			t.Fatal(err)
		}
	default:
		t.Skipf("backend %T", b)
	}
	cmd := exec.Command("/bin/sh", "-c", "read x; sleep 100")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := os.WriteFile(filepath.Join(subDir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "go\n")
	pids, err := g.Procs()
	if err != nil || !slices.Contains(pids, cmd.Process.Pid) {
		t.Fatalf("Procs = %v, %v; want %d (in the sub-group) among them", pids, err, cmd.Process.Pid)
	}
	if err := g.Update(Resources{MemoryLimit: 64 * mib}); err != nil {
		t.Fatal(err)
	}
	if s, err := g.Stats(); err != nil || s.MemoryLimit != 64*mib {
		t.Fatalf("Stats = %+v, %v; want a 64 MiB limit", s, err)
	}
	if err := g.Delete(); err == nil {
		t.Fatal("Delete of a group with a process in a sub-group should fail")
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Load("tree"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Load after Delete: %v, want ErrNotExist", err)
	}
	if err := g.Delete(); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

// TestCreateReuses checks that Create on an existing group applies the new
// limits in an order the kernel accepts (a higher cap than the group's
// memory+swap cap needs the latter raised first).
func TestCreateReuses(t *testing.T) {
	m := newManager(t)
	create(t, m, "again", Resources{MemoryLimit: 16 * mib, SwapLimit: NoSwap})
	g, err := m.Create("again", Resources{MemoryLimit: 64 * mib, SwapLimit: NoSwap})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := g.Stats(); err != nil || st.MemoryLimit != 64*mib {
		t.Fatalf("limit after a second Create = %d, %v; want %d", st.MemoryLimit, err, 64*mib)
	}
}

// TestV1CoMounted checks on a made-up v1 tree that controllers sharing a
// hierarchy ("cpu" and "cpuacct" linked to "cpu,cpuacct") are entered,
// made and removed once.
func TestV1CoMounted(t *testing.T) {
	mount := t.TempDir()
	for _, d := range []string{"memory", "cpu,cpuacct", "pids"} {
		if err := os.Mkdir(filepath.Join(mount, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(mount, "memory", "memory.limit_in_bytes"), []byte("9223372036854771712\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(mount, l)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := newV1(mount, "r", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(mount, "memory"), filepath.Join(mount, "cpu,cpuacct"), filepath.Join(mount, "pids")}
	if !slices.Equal(b.dirs, want) {
		t.Fatalf("hierarchies %q, want %q", b.dirs, want)
	}
	if want := []string{"memory", "cpu", "pids"}; !slices.Equal(b.dirCtrl, want) {
		t.Fatalf("controllers of the hierarchies %q, want %q", b.dirCtrl, want)
	}
	if !slices.Equal(b.names, []string{"memory", "cpu", "cpuacct", "pids"}) {
		t.Fatalf("controllers %q", b.names)
	}
	for _, d := range want {
		if !exists(filepath.Join(d, "r")) {
			t.Fatalf("root group not made in %s", d)
		}
	}
}

// TestWritesSurviveSignals updates a group's memory cap over and over on a
// thread that another goroutine keeps sending signals to (SIGURG, which
// the Go runtime uses to preempt and otherwise ignores). The kernel gives
// up such a write with EINTR when a signal is pending; Update must retry.
func TestWritesSurviveSignals(t *testing.T) {
	m := newManager(t)
	g := create(t, m, "signals", Resources{MemoryLimit: 64 * mib})
	tids := make(chan int, 1)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { // the writer, on a thread of its own
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- unix.Gettid()
		var err error
		for i := 0; i < 2000 && err == nil; i++ {
			err = g.Update(Resources{MemoryLimit: int64(64+i%2) * mib, SwapLimit: NoSwap})
		}
		close(stop)
		done <- err
	}()
	tid := <-tids
	for {
		select {
		case <-stop:
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			return
		default:
			_ = unix.Tgkill(os.Getpid(), tid, unix.SIGURG)
		}
	}
}

// TestRemoveRootKeepsGroups: the root goes only once no group is left in
// it; an empty group under it (a process's, kept for the next agent) makes
// RemoveRoot fail and stays, unlike a group's own sub-groups, which Delete
// removes.
func TestRemoveRootKeepsGroups(t *testing.T) {
	m := newManager(t)
	g := create(t, m, "kept", Resources{MemoryLimit: 64 * mib})
	if err := m.RemoveRoot(); err == nil {
		t.Fatal("RemoveRoot with a group under the root should fail")
	}
	if _, err := m.Load("kept"); err != nil {
		t.Fatalf("the group under the root went with the failed RemoveRoot: %v", err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := m.RemoveRoot(); err != nil {
		t.Fatalf("RemoveRoot of an emptied root: %v", err)
	}
}
