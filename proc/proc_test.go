package proc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ducc-project/ducc/cgroup"
)

const mib = 1 << 20

func TestMain(m *testing.M) {
	if os.Getenv("DUCC_TEST_SHIM") == "1" {
		if len(os.Args) > 1 && os.Args[1] == ShimServerSubcommand {
			os.Exit(RunShimServer(os.Args[2:]))
		}
		os.Exit(RunShim(os.Args[1:]))
	}
	os.Exit(m.Run())
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// exits collects OnExit calls.
type exits struct {
	mu sync.Mutex
	ch map[string]chan Status
}

func (x *exits) get(id string) chan Status {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ch == nil {
		x.ch = map[string]chan Status{}
	}
	c, ok := x.ch[id]
	if !ok {
		c = make(chan Status, 8)
		x.ch[id] = c
	}
	return c
}

func (x *exits) onExit(st Status) { x.get(st.ID) <- st }

func (x *exits) wait(t testing.TB, id string, d time.Duration) Status {
	t.Helper()
	select {
	case st := <-x.get(id):
		return st
	case <-time.After(d):
		t.Fatalf("no OnExit for %s within %v", id, d)
		return Status{}
	}
}

type env struct {
	dataDir string
	cg      *cgroup.Manager
	x       *exits
	log     *slog.Logger
	// perProcess: one shim per process instead of the shim server.
	perProcess bool
}

// forEachShim runs f with the shim server and with one shim per process.
func forEachShim(t *testing.T, f func(t *testing.T, perProcess bool)) {
	for _, pp := range []bool{false, true} {
		name := "server"
		if pp {
			name = "per-process"
		}
		t.Run(name, func(t *testing.T) { f(t, pp) })
	}
}

// newEnv makes a data dir and a cgroup manager with a unique root; cleanup
// kills and removes everything.
func newEnv(t testing.TB) *env {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	e := &env{dataDir: t.TempDir(), x: &exits{}, log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	name := strings.NewReplacer("/", "_", "#", "_").Replace(t.Name())
	cg, err := cgroup.New(fmt.Sprintf("ducc-test-%d-%s", os.Getpid(), name), e.log)
	if err != nil {
		t.Fatal(err)
	}
	e.cg = cg
	t.Cleanup(func() {
		ents, _ := os.ReadDir(filepath.Join(e.dataDir, "procs"))
		for _, de := range ents {
			if g, err := cg.Load(de.Name()); err == nil {
				_ = g.Kill()
				_ = g.Delete()
			}
		}
		if err := cg.RemoveRoot(); err != nil {
			t.Errorf("remove cgroup root: %v", err)
		}
	})
	return e
}

func (e *env) manager(t testing.TB) *Manager {
	t.Helper()
	m, err := NewManager(e.config(e.x))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// config is the Manager configuration of e's tests, reporting to x.
func (e *env) config(x *exits) Config {
	c := Config{
		DataDir:           e.dataDir,
		ShimCommand:       []string{os.Args[0]},
		ShimServerCommand: []string{os.Args[0], ShimServerSubcommand},
		ShimEnv:           []string{"DUCC_TEST_SHIM=1"},
		Cgroups:           e.cg,
		Logger:            e.log,
		OnExit:            x.onExit,
	}
	if e.perProcess {
		c.ShimServerCommand = nil
	}
	return c
}

// adopt starts a new Manager on e's data directory, reporting to its own
// exits, and adopts what it finds there (as a restarted agent does).
func (e *env) adopt(t testing.TB) (*Manager, *exits, []Status) {
	t.Helper()
	x := &exits{}
	m, err := NewManager(e.config(x))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	sts, err := m.Adopt(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m, x, sts
}

// flagSpec is a process that runs until the file flag exists, then exits
// with code.
func flagSpec(id, flag string, code int) Spec {
	return shSpec(id, fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done; exit %d", flag, code))
}

func shSpec(id, script string) Spec {
	return Spec{ID: id, WorkID: 17, Kind: "POP", Node: "n1", Path: "/bin/sh", Args: []string{"-c", script}}
}

func TestExitCodeAndLog(t *testing.T) { forEachShim(t, testExitCodeAndLog) }

func testExitCodeAndLog(t *testing.T, perProcess bool) {
	e := newEnv(t)
	e.perProcess = perProcess
	m := e.manager(t)
	sp := shSpec("17.1", "echo hello out; echo hello err >&2; exit 7")
	sp.LogDir = filepath.Join(e.dataDir, "logs", "17")
	st, err := m.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	// Start answers once the process runs; a process this short may have
	// ended (and its end been recorded) by the time Start returns.
	if (st.State != Running && st.State != Exited) || st.PID <= 0 || st.ShimPID <= 0 {
		t.Fatalf("Start status %+v", st)
	}
	want := filepath.Join(sp.LogDir, fmt.Sprintf("17-POP-n1-%d.log", st.PID))
	if st.LogPath != want {
		t.Fatalf("LogPath %s, want %s", st.LogPath, want)
	}
	end := e.x.wait(t, "17.1", 10*time.Second)
	if end.State != Exited || end.ExitCode != 7 || end.Signal != "" || end.OOMKilled {
		t.Fatalf("end status %+v", end)
	}
	if end.Reason != "exited with code 7" {
		t.Fatalf("reason %q", end.Reason)
	}
	if end.MaxRSS <= 0 || end.CPUSeconds < 0 {
		t.Fatalf("accounting: max RSS %d, CPU %v s", end.MaxRSS, end.CPUSeconds)
	}
	if !end.EndedAt.After(end.StartedAt) || end.PID != st.PID {
		t.Fatalf("times/pid %+v", end)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "hello out\nhello err\n" {
		t.Fatalf("log content %q", b)
	}
	if got, ok := m.Status("17.1"); !ok || got.ExitCode != 7 {
		t.Fatalf("Status() = %+v %v", got, ok)
	}
	if err := m.Forget("17.1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Status("17.1"); ok {
		t.Fatal("still known after Forget")
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "procs", "17.1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dir not removed: %v", err)
	}
	if _, err := e.cg.Load("17.1"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cgroup not removed: %v", err)
	}
}

func TestLaunchFailed(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	cases := []struct {
		id, want string
		spec     Spec
	}{
		{"1.1", "exec: /nonexistent/prog: no such file or directory", Spec{Path: "/nonexistent/prog"}},
		{"1.2", `exec: "no-such-program-xyz": executable file not found in $PATH`, Spec{Path: "no-such-program-xyz"}},
		{"1.3", "working directory /nonexistent-dir: no such file or directory", Spec{Path: "/bin/true", Dir: "/nonexistent-dir"}},
		{"1.4", `unknown user "no-such-user-xyz"`, Spec{Path: "/bin/true", User: "no-such-user-xyz"}},
		{"1.5", "exec: /etc/passwd: permission denied", Spec{Path: "/etc/passwd"}},
	}
	for _, c := range cases {
		c.spec.ID, c.spec.WorkID, c.spec.Kind, c.spec.Node = c.id, 1, "JP", "n1"
		st, err := m.Start(context.Background(), c.spec)
		if err != nil {
			t.Fatalf("%s: Start error %v", c.id, err)
		}
		if st.State != LaunchFailed || st.Reason != c.want {
			t.Errorf("%s: Start status %+v, want reason %q", c.id, st, c.want)
		}
		end := e.x.wait(t, c.id, 10*time.Second)
		if end.State != LaunchFailed || end.Reason != c.want || end.ExitCode != -1 {
			t.Errorf("%s: OnExit status %+v", c.id, end)
		}
		// No stray "starting" log file.
		logs, _ := filepath.Glob(filepath.Join(e.dataDir, "procs", c.id, "*.log"))
		for _, l := range logs {
			if !strings.HasSuffix(l, "shim.log") {
				t.Errorf("%s: leftover log %s", c.id, l)
			}
		}
	}
	if _, err := m.Start(context.Background(), Spec{ID: "../x", Path: "/bin/true"}); err == nil {
		t.Fatal("bad id accepted")
	}
	if _, err := m.Start(context.Background(), Spec{ID: "1.1", Path: "/bin/true"}); err == nil {
		t.Fatal("duplicate id accepted")
	}
}

// TestOOMKilled runs programs whose tree goes over the cap in a real cgroup:
// every OOM kill in the tree is counted and named, also when the process
// itself survives it and exits 0.
func TestOOMKilled(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	const eat = "head -c 300M /dev/zero | tail" // tail holds the one "line" in memory
	cases := []struct {
		id, script string
		killed     bool
		kills      uint64
		exit       int
		reason     string
	}{
		{"3.1", eat, true, 1, 137, "exceeded its memory limit of 48 MiB"},
		{"3.2", eat + "; exit 0", false, 1, 0, "exited normally; memory cap hit: 1 process killed by the OOM killer (cap 48 MiB)"},
		{"3.3", "(" + eat + "); (" + eat + "); exit 0", false, 2, 0, "exited normally; memory cap hit: 2 processes killed by the OOM killer (cap 48 MiB)"},
		{"3.4", "(" + eat + "); (" + eat + "); exit 3", true, 2, 3, "exceeded its memory limit of 48 MiB: 2 processes killed by the OOM killer"},
		{"3.5", "setsid sh -c '" + eat + "'; echo survived", false, 1, 0, "exited normally; memory cap hit: 1 process killed by the OOM killer (cap 48 MiB)"},
		{"3.6", "exit 0", false, 0, 0, "exited normally"},
	}
	for _, c := range cases {
		sp := shSpec(c.id, c.script)
		sp.MemoryLimit = 48 * mib
		if _, err := m.Start(context.Background(), sp); err != nil {
			t.Fatal(err)
		}
		end := e.x.wait(t, c.id, 60*time.Second)
		t.Logf("%s: %+v", c.id, end)
		if end.OOMKilled != c.killed || end.OOMKills != c.kills || end.ExitCode != c.exit || end.Reason != c.reason || end.MemoryLimit != 48*mib {
			t.Errorf("%s (%s): got killed %v, %d kills, exit %d, reason %q; want %v, %d, %d, %q",
				c.id, c.script, end.OOMKilled, end.OOMKills, end.ExitCode, end.Reason, c.killed, c.kills, c.exit, c.reason)
		}
	}
}

// TestStopGrace checks the order of a stop, not its speed: SIGTERM first;
// a process that handles it and stays is not killed while the grace lasts
// and gets SIGKILL once it is over; a process that dies of the SIGTERM is
// not killed. The deadlines below only guard against a hang.
func TestStopGrace(t *testing.T) { forEachShim(t, testStopGrace) }

func testStopGrace(t *testing.T, perProcess bool) {
	e := newEnv(t)
	e.perProcess = perProcess
	m := e.manager(t)
	ctx := context.Background()
	// Notes SIGTERM in its log and stays: needs the SIGKILL. (Its sleeps
	// die of the SIGTERM to the process group; the loop starts new ones.)
	stubborn := shSpec("4.1", "trap 'echo term' TERM; echo ready; while :; do sleep 0.05; done")
	// Dies on SIGTERM.
	polite := shSpec("4.2", "sleep 100 & sleep 100; wait")
	for _, sp := range []Spec{stubborn, polite} {
		if _, err := m.Start(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	st, ok := m.Status("4.1")
	if !ok {
		t.Fatal("no status for 4.1")
	}
	waitLog(t, st.LogPath, "ready")

	// The polite one, with a grace far longer than it needs: it must end
	// of the SIGTERM alone.
	politeDone := make(chan error, 1)
	go func() { politeDone <- m.Stop(ctx, "4.2", time.Minute) }()

	// The stubborn one, first with a grace that does not end during the
	// test: it gets SIGTERM, notes it, and Stop keeps waiting.
	waiting, cancel := context.WithCancel(ctx)
	defer cancel()
	stubbornDone := make(chan error, 1)
	go func() { stubbornDone <- m.Stop(waiting, "4.1", time.Hour) }()
	waitLog(t, st.LogPath, "term")
	select {
	case err := <-stubbornDone:
		t.Fatalf("Stop returned while the grace lasted and the process ran: %v", err)
	default:
	}
	if now, _ := m.Status("4.1"); now.State.Ended() {
		t.Fatalf("killed during the grace period: %+v", now)
	}
	// Giving up the wait does not kill the process.
	cancel()
	select {
	case err := <-stubbornDone:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Stop with a cancelled context = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stop hung after its context was cancelled")
	}
	if now, _ := m.Status("4.1"); now.State.Ended() {
		t.Fatalf("ended when Stop's context was cancelled: %+v", now)
	}
	// Now with a short grace: SIGTERM again, then SIGKILL.
	if err := m.Stop(ctx, "4.1", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-politeDone:
		if err != nil {
			t.Fatalf("polite stop: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("polite stop hung")
	}
	s1 := e.x.wait(t, "4.1", 30*time.Second)
	if s1.Signal != "SIGKILL" || !s1.Stopped || !strings.Contains(s1.Reason, "grace period") {
		t.Fatalf("stubborn: %+v", s1)
	}
	s2 := e.x.wait(t, "4.2", 30*time.Second)
	if s2.Signal != "SIGTERM" || !s2.Stopped || s2.Reason != "killed by SIGTERM" {
		t.Fatalf("polite: %+v", s2)
	}
	// Nothing left in the cgroups.
	for _, id := range []string{"4.1", "4.2"} {
		g, err := e.cg.Load(id)
		if err != nil {
			t.Fatal(err)
		}
		if pids, _ := g.Procs(); len(pids) > 0 {
			t.Fatalf("%s: left in cgroup: %v", id, pids)
		}
	}
	if err := m.Stop(ctx, "4.1", time.Second); err != nil {
		t.Fatalf("Stop of an ended process: %v", err)
	}
	if err := m.Stop(ctx, "nope", time.Second); !errors.Is(err, ErrUnknown) {
		t.Fatalf("Stop(nope) = %v", err)
	}
}

func ensureTestUser(t *testing.T) (uid, gid uint32) {
	t.Helper()
	if _, _, _, err := LookupUser("ducctest"); err != nil {
		out, err := exec.Command("useradd", "-M", "-s", "/usr/sbin/nologin", "ducctest").CombinedOutput()
		if err != nil {
			t.Skipf("cannot create user ducctest: %v %s", err, out)
		}
	}
	uid, gid, _, err := LookupUser("ducctest")
	if err != nil {
		t.Fatal(err)
	}
	return uid, gid
}

// userHome is a fresh directory owned by uid:gid, in a directory every
// user may enter: a stand-in for the user's home.
func userHome(t *testing.T, uid, gid uint32) string {
	t.Helper()
	base, err := os.MkdirTemp("", "ducc-proc-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	home := filepath.Join(base, "home")
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, int(uid), int(gid)); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestRunAsUser(t *testing.T) {
	e := newEnv(t)
	uid, gid := ensureTestUser(t)
	m := e.manager(t)
	sp := shSpec("5.1", "id -u; id -g; pwd; umask; echo $HOME $USER")
	sp.User = "ducctest" // resolved by the shim
	umask := 0o027
	sp.Umask = &umask
	sp.LogDir = filepath.Join(userHome(t, uid, gid), "ducc", "logs", "5")
	sp.Dir = "/tmp"
	if _, err := m.Start(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	end := e.x.wait(t, "5.1", 10*time.Second)
	if end.ExitCode != 0 {
		t.Fatalf("%+v", end)
	}
	b, err := os.ReadFile(end.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d\n%d\n/tmp\n0027\n/ ducctest\n", uid, gid)
	if string(b) != want {
		t.Fatalf("log %q, want %q", b, want)
	}
	// The log directories and the log are the user's, made with the
	// process's umask.
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{filepath.Dir(filepath.Dir(sp.LogDir)), os.ModeDir | 0o750}, {sp.LogDir, os.ModeDir | 0o750}, {end.LogPath, 0o640}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if s := fi.Sys().(*syscall.Stat_t); s.Uid != uid || s.Gid != gid {
			t.Fatalf("%s owned by %d:%d, want %d:%d", c.path, s.Uid, s.Gid, uid, gid)
		}
		if fi.Mode() != c.mode {
			t.Errorf("%s has mode %v, want %v", c.path, fi.Mode(), c.mode)
		}
	}
	// Explicit uid/gid, supplementary groups dropped.
	sp2 := shSpec("5.2", "id -u; id -G")
	sp2.UID, sp2.GID = uid, gid
	if _, err := m.Start(context.Background(), sp2); err != nil {
		t.Fatal(err)
	}
	end = e.x.wait(t, "5.2", 10*time.Second)
	b, _ = os.ReadFile(end.LogPath)
	if string(b) != fmt.Sprintf("%d\n%d\n", uid, gid) {
		t.Fatalf("log %q", b)
	}
}

// The process starts with no signal ignored or blocked, whatever its shim
// does with signals (an ignored signal stays ignored across exec: a shell
// could not trap it).
func TestChildSignals(t *testing.T) { forEachShim(t, testChildSignals) }

func testChildSignals(t *testing.T, perProcess bool) {
	e := newEnv(t)
	e.perProcess = perProcess
	// The agent may itself inherit ignored signals (nohup, a runner that
	// ignores signal 32): its shims must not pass them on.
	for _, sig := range []uintptr{uintptr(syscall.SIGHUP), 32, 40} {
		ignoreSignal(t, sig)
	}
	m := e.manager(t)
	if _, err := m.Start(context.Background(), shSpec("5.1", "grep -E '^Sig(Ign|Blk)' /proc/self/status")); err != nil {
		t.Fatal(err)
	}
	end := e.x.wait(t, "5.1", 10*time.Second)
	b, err := os.ReadFile(end.LogPath)
	if err != nil || end.ExitCode != 0 {
		t.Fatalf("%+v: %v", end, err)
	}
	want := "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
	if string(b) != want {
		t.Fatalf("the child's signal masks:\n%s\nwant\n%s", b, want)
	}
}

// ignoreSignal sets sig to SIG_IGN in the test process (its shims inherit
// that) until the test ends.
func ignoreSignal(t *testing.T, sig uintptr) {
	t.Helper()
	var old sigaction
	ign := sigaction{handler: sigIgn}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&ign)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		t.Fatalf("ignore signal %d: %v", sig, e)
	}
	t.Cleanup(func() {
		_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	})
}

// The process runs with the umask it is given (the submitter's), and its
// files get the modes that umask gives them.
func TestUmask(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	umask := func(u int) *int { return &u }
	tests := []struct {
		id    string
		umask *int
		want  string      // umask printed by the process
		mode  os.FileMode // of a file it creates with 0666
	}{
		{"6.1", nil, "0022", 0o644},
		{"6.2", umask(0o077), "0077", 0o600},
		{"6.3", umask(0o027), "0027", 0o640},
		{"6.4", umask(0), "0000", 0o666},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			sp := shSpec(tc.id, "umask; : > "+out)
			sp.Umask = tc.umask
			sp.LogDir = filepath.Join(e.dataDir, "logs", tc.id)
			if _, err := m.Start(context.Background(), sp); err != nil {
				t.Fatal(err)
			}
			end := e.x.wait(t, tc.id, 10*time.Second)
			b, err := os.ReadFile(end.LogPath)
			if err != nil || end.ExitCode != 0 {
				t.Fatalf("%+v: %v", end, err)
			}
			if got := strings.TrimSpace(string(b)); got != tc.want {
				t.Errorf("umask %q, want %q", got, tc.want)
			}
			fi, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.mode {
				t.Errorf("file mode %v, want %v", fi.Mode().Perm(), tc.mode)
			}
			// The log and its directory follow the umask too (0644, 0755 at most).
			u := os.FileMode(0o022)
			if tc.umask != nil {
				u = os.FileMode(*tc.umask)
			}
			for p, want := range map[string]os.FileMode{end.LogPath: 0o644 &^ u, sp.LogDir: 0o755 &^ u} {
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
					t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
				}
			}
		})
	}
}

func TestAdoptRunning(t *testing.T) { forEachShim(t, testAdoptRunning) }

func testAdoptRunning(t *testing.T, perProcess bool) {
	e := newEnv(t)
	e.perProcess = perProcess
	m1 := e.manager(t)
	flag := filepath.Join(e.dataDir, "go")
	st, err := m1.Start(context.Background(), flagSpec("6.1", flag, 3))
	if err != nil {
		t.Fatal(err)
	}
	assertPlacement(t, st, "6.1", e.cg.Mode())
	m1.Close() // must not kill anything
	if err := syscall.Kill(st.PID, 0); err != nil {
		t.Fatalf("process died with Close: %v", err)
	}
	m2, x2, sts := e.adopt(t)
	if len(sts) != 1 || sts[0].ID != "6.1" || sts[0].State != Running || sts[0].PID != st.PID {
		t.Fatalf("Adopt = %+v", sts)
	}
	if rss, cpu, err := m2.Stats("6.1"); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("stats rss=%d cpu=%v", rss, cpu)
	}
	if err := m2.Forget("6.1"); !errors.Is(err, ErrRunning) {
		t.Fatalf("Forget of a running process: %v", err)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	end := x2.wait(t, "6.1", 10*time.Second)
	if end.ExitCode != 3 || end.State != Exited || end.PID != st.PID {
		t.Fatalf("adopted end %+v", end)
	}
	select {
	case st := <-e.x.get("6.1"):
		t.Fatalf("closed manager reported %+v", st)
	default:
	}
	// A third manager re-reports the ended process until it is forgotten.
	m3, x3, _ := e.adopt(t)
	if again := x3.wait(t, "6.1", 5*time.Second); again.ExitCode != 3 {
		t.Fatalf("re-report %+v", again)
	}
	if err := m3.Forget("6.1"); err != nil {
		t.Fatal(err)
	}
	if l := m3.List(); len(l) != 0 {
		t.Fatalf("List after Forget: %+v", l)
	}
}

func TestShimKilledIsLost(t *testing.T) { forEachShim(t, testShimKilledIsLost) }

func testShimKilledIsLost(t *testing.T, perProcess bool) {
	e := newEnv(t)
	e.perProcess = perProcess
	m := e.manager(t)
	st, err := m.Start(context.Background(), shSpec("7.1", "sleep 100 & sleep 100"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.ShimPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	end := e.x.wait(t, "7.1", 10*time.Second)
	if end.Reason != "lost: shim died" || end.State != Lost {
		t.Fatalf("%+v", end)
	}
	g, err := e.cg.Load("7.1")
	if err != nil {
		t.Fatal(err)
	}
	if pids, _ := g.Procs(); len(pids) != 0 {
		t.Fatalf("survivors not killed: %v", pids)
	}
	// The loss is recorded: a new manager reports it as ended, not lost again.
	m.Close()
	_, x2, _ := e.adopt(t)
	if again := x2.wait(t, "7.1", 5*time.Second); again.Reason != "lost: shim died" {
		t.Fatalf("%+v", again)
	}
}

func TestAdoptRecycledPID(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	// A directory whose child.json names a live process that is not a shim
	// (our own pid, wrong start time) must be reported as lost.
	dir := filepath.Join(e.dataDir, "procs", "8.1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(dir, specFile, shimSpec{Spec: shSpec("8.1", "true")}, false); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(dir, childFile, childInfo{PID: 1, ShimPID: os.Getpid(), ShimStart: 1}, false); err != nil {
		t.Fatal(err)
	}
	sts, err := m.Adopt(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 || sts[0].Reason != "lost: shim died" || sts[0].State != Lost {
		t.Fatalf("%+v", sts)
	}
	e.x.wait(t, "8.1", 5*time.Second)
}

func TestStatsAndDisabled(t *testing.T) {
	dataDir := t.TempDir()
	x := &exits{}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	m, err := NewManager(Config{DataDir: dataDir, ShimCommand: []string{os.Args[0]}, ShimEnv: []string{"DUCC_TEST_SHIM=1"}, Logger: logger, OnExit: x.onExit})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sp := shSpec("9.1", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 2; exit 4")
	sp.UID = uint32(os.Getuid())
	sp.MemoryLimit = 16 * mib // not enforced
	if _, err := m.Start(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rss, cpu, err := m.Stats("9.1")
		if err != nil {
			t.Fatal(err)
		}
		if rss > 0 && cpu > 0 {
			t.Logf("rss=%d cpu=%v", rss, cpu)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats did not move: rss=%d cpu=%v", rss, cpu)
		}
		time.Sleep(50 * time.Millisecond)
	}
	end := x.wait(t, "9.1", 30*time.Second)
	if end.ExitCode != 4 {
		t.Fatalf("%+v", end)
	}
}

func TestStatsCgroup(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	if _, err := m.Start(context.Background(), shSpec("10.1", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 100")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, cpu, err := m.Stats("10.1")
		if err != nil {
			t.Fatal(err)
		}
		if cpu > 50*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cpu did not move: %v", cpu)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := m.Stop(context.Background(), "10.1", 0); err != nil {
		t.Fatal(err)
	}
	end := e.x.wait(t, "10.1", 5*time.Second)
	if !end.Stopped || end.Signal != "SIGKILL" {
		t.Fatalf("%+v", end)
	}
}

// waitLog waits until the log file contains s.
func waitLog(t *testing.T, path, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %q (got %q)", path, s, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertPlacement checks that the child is in its cgroup in every
// controller ducc uses (v1) or in the unified hierarchy (v2), and that no
// thread of the shim is in it.
func assertPlacement(t *testing.T, st Status, id, mode string) {
	t.Helper()
	child, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", st.PID))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(child)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && strings.HasSuffix(parts[2], "/"+id) {
			for _, c := range strings.Split(parts[1], ",") {
				in[c] = true
			}
		}
	}
	want := []string{"memory", "cpu", "cpuacct", "freezer", "pids"}
	if mode == cgroup.ModeV2 {
		want = []string{""} // the unified hierarchy's line, "0::/..."
	}
	for _, c := range want {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); c != "" && err != nil {
			continue // controller not mounted
		}
		if !in[c] {
			t.Errorf("child not in its cgroup (controller %q):\n%s", c, child)
		}
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", st.ShimPID))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		shim, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/cgroup", st.ShimPID, task.Name()))
		if err != nil {
			continue // a thread that ended meanwhile
		}
		if strings.Contains(string(shim), "/"+id+"\n") {
			t.Errorf("shim thread %s left inside the process cgroup:\n%s", task.Name(), shim)
		}
	}
}

// TestCgroupV2CloneInto runs the shim with the v2 backend (on a hybrid host:
// the controller-less cgroup2 mount), so the child is placed with
// clone-into-cgroup and stopped with cgroup.kill.
func TestCgroupV2CloneInto(t *testing.T) {
	e := newEnv(t)
	mp := "/sys/fs/cgroup"
	if e.cg.Mode() == cgroup.ModeHybrid {
		mp = "/sys/fs/cgroup/unified"
	}
	root := fmt.Sprintf("ducc-test-%d-v2proc", os.Getpid())
	cg, err := cgroup.NewWithOptions(cgroup.Options{Root: root, Mode: cgroup.ModeV2, Mountpoint: mp, Logger: e.log})
	if err != nil {
		t.Skipf("no cgroup v2: %v", err)
	}
	defer func() {
		if g, err := cg.Load("11.1"); err == nil {
			_ = g.Kill()
			_ = g.Delete()
		}
		if err := cg.RemoveRoot(); err != nil {
			t.Error(err)
		}
	}()
	m, err := NewManager(Config{DataDir: e.dataDir, ShimCommand: []string{os.Args[0]}, ShimEnv: []string{"DUCC_TEST_SHIM=1"}, Cgroups: cg, Logger: e.log, OnExit: e.x.onExit})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st, err := m.Start(context.Background(), shSpec("11.1", "trap '' TERM; echo ready; sleep 100 & sleep 100; wait"))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != Running {
		t.Fatalf("%+v", st)
	}
	assertPlacement(t, st, "11.1", cgroup.ModeV2)
	waitLog(t, st.LogPath, "ready")
	if err := m.Stop(context.Background(), "11.1", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	end := e.x.wait(t, "11.1", 5*time.Second)
	if end.Signal != "SIGKILL" || !end.Stopped {
		t.Fatalf("%+v", end)
	}
	if err := m.Forget("11.1"); err != nil {
		t.Fatal(err)
	}
}

func TestValidID(t *testing.T) {
	for _, id := range []string{"17.1", "a_b-c", "0"} {
		if ValidID(id) != nil {
			t.Errorf("%q rejected", id)
		}
	}
	for _, id := range []string{"", ".", "..", ".hidden", "a/b", "a b", strings.Repeat("x", 129)} {
		if ValidID(id) == nil {
			t.Errorf("%q accepted", id)
		}
	}
}

// BenchmarkStartTrue measures Start of /bin/true until OnExit (and Start
// alone, reported as start-ns/op); run with -benchtime=200x.
// "server, GPU fence" starts each process with a GPUFence of one GPU
// (docs/performance.md, "GPU fencing cost").
func BenchmarkStartTrue(b *testing.B) {
	b.Run("server", func(b *testing.B) { benchStartTrue(b, false, nil) })
	b.Run("server, GPU fence", func(b *testing.B) { benchStartTrue(b, false, &GPUFence{Allowed: []int{0}}) })
	b.Run("per-process", func(b *testing.B) { benchStartTrue(b, true, nil) })
}

func benchStartTrue(b *testing.B, perProcess bool, fence *GPUFence) {
	e := newEnv(b)
	e.perProcess = perProcess
	done := make(chan Status, 1)
	cfg := e.config(e.x)
	cfg.Logger, cfg.OnExit = slog.New(slog.DiscardHandler), func(s Status) { done <- s }
	m, err := NewManager(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	var starts, totals []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		id := "b." + strconv.Itoa(i)
		t0 := time.Now()
		if _, err := m.Start(ctx, Spec{ID: id, WorkID: 1, Kind: "POP", Node: "n", Path: "/bin/true", MemoryLimit: 256 * mib, GPUFence: fence}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		st := <-done
		t2 := time.Now()
		if st.ExitCode != 0 {
			b.Fatalf("%+v", st)
		}
		starts = append(starts, t1.Sub(t0))
		totals = append(totals, t2.Sub(t0))
		b.StopTimer()
		if err := m.Forget(id); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(starts)
	slices.Sort(totals)
	b.ReportMetric(float64(starts[0].Microseconds()), "start-min-µs")
	b.ReportMetric(float64(starts[len(starts)/2].Microseconds()), "start-median-µs")
	b.ReportMetric(float64(totals[len(totals)/2].Microseconds()), "exit-median-µs")
	b.ReportMetric(float64(totals[len(totals)*9/10].Microseconds()), "exit-p90-µs")
}

// BenchmarkStartStop starts a process that would run for minutes, kills it
// (Stop without grace: SIGKILL to everything in its cgroup) and forgets it
// (the cgroup is removed): the agent's side of stopping work.
func BenchmarkStartStop(b *testing.B) {
	e := newEnv(b)
	done := make(chan Status, 1)
	m, err := NewManager(Config{DataDir: e.dataDir, ShimCommand: []string{os.Args[0]}, ShimEnv: []string{"DUCC_TEST_SHIM=1"}, Cgroups: e.cg, Logger: slog.New(slog.DiscardHandler), OnExit: func(s Status) { done <- s }})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		id := "s." + strconv.Itoa(i)
		if _, err := m.Start(ctx, Spec{ID: id, WorkID: 1, Kind: "POP", Node: "n", Path: "/bin/sleep", Args: []string{"600"}, MemoryLimit: 256 * mib}); err != nil {
			b.Fatal(err)
		}
		if err := m.Stop(ctx, id, 0); err != nil {
			b.Fatal(err)
		}
		if st := <-done; st.Signal != "SIGKILL" {
			b.Fatalf("%+v", st)
		}
		if err := m.Forget(id); err != nil {
			b.Fatal(err)
		}
	}
}

// TestShimEnv checks that the shim runs with GOMAXPROCS=1 and that neither
// that nor the rest of the shim's environment reaches the process, which
// gets the spec's (here the default one).
func TestShimEnv(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	sp := shSpec("18.1", "env; exec sleep 60")
	sp.LogDir = filepath.Join(e.dataDir, "logs", "18")
	st, err := m.Start(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	shimEnv, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", st.ShimPID))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(shimEnv), "\x00"), "GOMAXPROCS=1") {
		t.Fatalf("shim environment has no GOMAXPROCS=1: %q", shimEnv)
	}
	var out []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if out, _ = os.ReadFile(st.LogPath); strings.Contains(string(out), "PATH=") {
			break
		}
	}
	if !strings.Contains(string(out), "PATH=") {
		t.Fatalf("no environment in the log: %q", out)
	}
	for _, leak := range []string{"GOMAXPROCS", "DUCC_TEST_SHIM"} {
		if strings.Contains(string(out), leak) {
			t.Errorf("the shim's %s reached the process:\n%s", leak, out)
		}
	}
	_ = syscall.Kill(st.PID, syscall.SIGKILL)
	e.x.wait(t, "18.1", 10*time.Second)
}
