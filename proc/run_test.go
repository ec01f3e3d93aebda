package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func shRun(name, script string) RunSpec {
	return RunSpec{Name: name, Path: "/bin/sh", Args: []string{"-c", script}, Timeout: time.Minute}
}

// assertNoRunLeft checks that runs leave no directory behind (their cgroups
// are checked by newEnv's cleanup, which removes the cgroup root).
func assertNoRunLeft(t *testing.T, dataDir string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dataDir, runsDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Fatalf("runs left behind: %v", ents)
	}
}

func TestRun(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	uid, gid := ensureTestUser(t)
	rootOnly := t.TempDir() // 0700, root's
	tests := []struct {
		name      string
		spec      RunSpec
		stdout    string
		stderr    string
		exitCode  int
		reason    string
		truncated bool
	}{
		{name: "stdin-stdout-stderr", spec: shRun("io", "cat; echo oops >&2; exit 3"),
			stdout: `{"service":7}` + "\n", stderr: "oops\n", exitCode: 3, reason: "exited with code 3"},
		{name: "as-user-by-name", spec: func() RunSpec {
			rs := shRun("user", "id -u; id -g; pwd; echo $HOME")
			rs.User, rs.Dir, rs.Env = "ducctest", "/tmp", []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
			return rs
		}(), stdout: fmt.Sprintf("%d\n%d\n/tmp\n/nonexistent\n", uid, gid), reason: "exited normally"},
		{name: "as-user-by-uid", spec: func() RunSpec {
			rs := shRun("uid", "id -u; id -G")
			rs.UID, rs.GID = uid, gid
			return rs
		}(), stdout: fmt.Sprintf("%d\n%d\n", uid, gid), reason: "exited normally"},
		{name: "dir-if-exists-missing", spec: func() RunSpec {
			rs := shRun("nodir", "pwd")
			rs.User, rs.Dir, rs.DirIfExists = "ducctest", "/nonexistent-dir", true
			return rs
		}(), stdout: "/\n", reason: "exited normally"},
		{name: "dir-if-exists-root-only", spec: func() RunSpec {
			// Root's 0700 directory exists, but not for the user: the shim
			// looks as the user.
			rs := shRun("rootdir", "pwd")
			rs.User, rs.Dir, rs.DirIfExists = "ducctest", rootOnly, true
			return rs
		}(), stdout: "/\n", reason: "exited normally"},
		{name: "output-bounded", spec: func() RunSpec {
			rs := shRun("big", "head -c 300000 /dev/zero | tr '\\0' x; echo; echo last; head -c 100000 /dev/zero | tr '\\0' y >&2")
			rs.MaxOutput = 1000
			return rs
		}(), stdout: strings.Repeat("x", 994) + "\nlast\n", stderr: strings.Repeat("y", 1000), reason: "exited normally", truncated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Stdin = []byte(`{"service":7}` + "\n")
			res, err := m.Run(context.Background(), tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Stdout) != tc.stdout || string(res.Stderr) != tc.stderr {
				t.Errorf("stdout %q stderr %q, want %q and %q", res.Stdout, res.Stderr, tc.stdout, tc.stderr)
			}
			if res.ExitCode != tc.exitCode || res.Reason != tc.reason || res.TimedOut || res.OOMKilled {
				t.Errorf("result %+v, want exit code %d (%s)", res, tc.exitCode, tc.reason)
			}
			if res.Truncated != tc.truncated {
				t.Errorf("truncated %v, want %v", res.Truncated, tc.truncated)
			}
		})
	}
	assertNoRunLeft(t, e.dataDir)
}

// TestRunFDs: the program gets stdin, stdout and stderr and none of the
// pipes between the agent and the shim (only fds this test process itself
// inherited without close-on-exec may show up too).
func TestRunFDs(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	want := map[string]bool{"0": true, "1": true, "2": true}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range ents {
		fd, _ := strconv.Atoi(de.Name())
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); fd > 2 && err == nil && flags&unix.FD_CLOEXEC == 0 {
			want[de.Name()] = true
		}
	}
	for fd := 3; ; fd++ { // ls's own directory fd
		if !want[strconv.Itoa(fd)] {
			want[strconv.Itoa(fd)] = true
			break
		}
	}
	res, err := m.Run(context.Background(), shRun("fds", "exec ls /proc/self/fd"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range strings.Fields(string(res.Stdout)) {
		got[f] = true
	}
	if !maps.Equal(got, want) {
		t.Fatalf("the program has fds %q, want %v", res.Stdout, slices.Sorted(maps.Keys(want)))
	}
}

func TestRunMemoryCap(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	rs := shRun("oom", "head -c 300M /dev/zero | tail")
	rs.MemoryLimit = 48 * mib
	res, err := m.Run(context.Background(), rs)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OOMKilled || res.Reason != "exceeded its memory limit of 48 MiB" || res.TimedOut {
		t.Fatalf("not reported as OOM: %+v", res)
	}
	assertNoRunLeft(t, e.dataDir)
}

// TestRunTimeout: at the timeout the program, its process group and (with
// cgroups) everything in its cgroup are killed, with or without cgroups.
func TestRunTimeout(t *testing.T) {
	e := newEnv(t)
	disabled, err := NewManager(Config{DataDir: t.TempDir(), ShimCommand: []string{os.Args[0]}, ShimEnv: []string{"DUCC_TEST_SHIM=1"},
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(disabled.Close)
	for name, m := range map[string]*Manager{"cgroup": e.manager(t), "no-cgroup": disabled} {
		t.Run(name, func(t *testing.T) {
			// A background child in the same process group, and one that
			// left it (killed through the cgroup only).
			script := "sleep 300 & echo $!; "
			if name == "cgroup" {
				script += "setsid sleep 301 & echo $!; "
			}
			script += "echo started >&2; wait"
			rs := shRun("slow", script)
			rs.Timeout = 2 * time.Second
			res, err := m.Run(context.Background(), rs)
			if err != nil {
				t.Fatal(err)
			}
			if !res.TimedOut || res.Signal != "SIGKILL" || res.ExitCode != -1 {
				t.Fatalf("result %+v, want a timeout", res)
			}
			if string(res.Stderr) != "started\n" {
				t.Fatalf("stderr %q", res.Stderr)
			}
			pids := strings.Fields(string(res.Stdout))
			if len(pids) == 0 {
				t.Fatalf("no pids in %q", res.Stdout)
			}
			for _, s := range pids {
				pid, _ := strconv.Atoi(s)
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					if st, _ := procStat(pid); len(st) > 0 && st[0] == "Z" {
						continue // a zombie waiting for init is dead
					}
					t.Errorf("background process %d survived the timeout: %v", pid, err)
				}
			}
		})
	}
	assertNoRunLeft(t, e.dataDir)
}

func TestRunCanceled(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	ctx, cancel := context.WithCancel(context.Background())
	rs := shRun("cancel", "echo started; exec sleep 300")
	done := make(chan error, 1)
	go func() {
		_, err := m.Run(ctx, rs)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v, want context.Canceled", err)
	}
	assertNoRunLeft(t, e.dataDir)
}

func TestRunLaunchFailure(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	tests := []struct {
		name string
		spec RunSpec
		want string
	}{
		{"missing-program", RunSpec{Name: "x", Path: "/nonexistent/pinger", Timeout: time.Minute}, "exec: /nonexistent/pinger: no such file or directory"},
		{"missing-user", RunSpec{Name: "x", User: "no-such-user-ducc", Path: "/bin/true", Timeout: time.Minute}, "no-such-user-ducc"},
		{"missing-dir", RunSpec{Name: "x", Path: "/bin/true", Dir: "/nonexistent", Timeout: time.Minute}, "working directory /nonexistent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Run(context.Background(), tc.spec)
			var le *LaunchError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a LaunchError with %q", err, tc.want)
			}
		})
	}
	for _, rs := range []RunSpec{{Name: "a/b", Path: "/bin/true", Timeout: time.Second}, {Name: "x", Path: "/bin/true"}, {Name: "x", Timeout: time.Second}} {
		if _, err := m.Run(context.Background(), rs); err == nil {
			t.Errorf("Run(%+v) accepted", rs)
		}
	}
	assertNoRunLeft(t, e.dataDir)
}

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		max       int
		writes    []string
		want      string
		truncated bool
	}{
		{5, nil, "", false},
		{5, []string{"abc", "de"}, "abcde", false},
		{5, []string{"abcdef"}, "bcdef", true},
		{6, []string{"ab", "cdefghijklm", "no"}, "jklmno", true},
		{2, []string{"a", "b", "c", "d", "e"}, "de", true},
	}
	for _, tc := range tests {
		b := &tailBuffer{max: tc.max}
		for _, w := range tc.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write: %d %v", n, err)
			}
		}
		if got := b.bytes(); !bytes.Equal(got, []byte(tc.want)) || b.dropped != tc.truncated {
			t.Errorf("%q: got %q (dropped %v), want %q (%v)", tc.writes, got, b.dropped, tc.want, tc.truncated)
		}
	}
}
