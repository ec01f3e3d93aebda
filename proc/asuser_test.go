package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rootDir is a directory of root's with the given mode inside a directory
// every user may enter.
func rootDir(t *testing.T, mode os.FileMode) string {
	t.Helper()
	base, err := os.MkdirTemp("", "ducc-proc-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(base, "root")
	if err := os.Mkdir(d, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, mode); err != nil {
		t.Fatal(err)
	}
	return d
}

// rootSecret is a root-only file (0600 in a 0700 directory) with known
// content.
func rootSecret(t *testing.T) (path, content string) {
	t.Helper()
	path = filepath.Join(rootDir(t, 0o700), "secret")
	content = "root's own\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, content
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// TestLogDirAsUser: the shim creates the log directory and file as the
// user, so a log directory the user could not create is a launch failure
// with the reason, and nothing is created where the user may not write.
func TestLogDirAsUser(t *testing.T) {
	e := newEnv(t)
	uid, gid := ensureTestUser(t)
	m := e.manager(t)
	home := userHome(t, uid, gid)

	rootOwned := rootDir(t, 0o755)
	linked := rootDir(t, 0o755)
	if err := os.Mkdir(filepath.Join(home, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(linked, filepath.Join(home, "logs", "9")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, id, logDir string
		want             string // the reason's start
		untouched        string // a directory that must stay empty
	}{
		{"log dir in a directory of root's", "8.1", filepath.Join(rootOwned, "logs", "8"),
			"cannot create log directory " + filepath.Join(rootOwned, "logs") + " as ducctest: permission denied", rootOwned},
		{"log dir a symlink to a directory of root's", "9.1", filepath.Join(home, "logs", "9"),
			"cannot create log file " + filepath.Join(home, "logs", "9") + "/9-POP-n1-starting-", linked},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := shSpec(c.id, "echo should not run")
			sp.WorkID = map[string]uint64{"8.1": 8, "9.1": 9}[c.id]
			sp.User = "ducctest"
			sp.LogDir = c.logDir
			st, err := m.Start(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			end := e.x.wait(t, c.id, 10*time.Second)
			for _, s := range []Status{st, end} {
				if s.State != LaunchFailed || !strings.HasPrefix(s.Reason, c.want) {
					t.Errorf("status %s %q, want LaunchFailed %q...", s.State, s.Reason, c.want)
				}
			}
			if !strings.Contains(end.Reason, "as ducctest: permission denied") {
				t.Errorf("reason %q does not say as whom and why", end.Reason)
			}
			if strings.HasPrefix(c.want, "cannot create log directory") && !strings.HasSuffix(end.Reason, "; give the work a log directory ducctest may create (the default, ~/ducc/logs, needs a home ducctest may write)") {
				t.Errorf("reason %q does not say what to do", end.Reason)
			}
			if names := entries(t, c.untouched); len(names) != 0 {
				t.Errorf("created in %s: %v", c.untouched, names)
			}
		})
	}
}

// TestAppendLog: the agent appends to a process's log only through a file
// opened as the user, never through a symlink or a link the user made.
func TestAppendLog(t *testing.T) {
	e := newEnv(t)
	uid, gid := ensureTestUser(t)
	m := e.manager(t)
	sp := shSpec("11.1", "echo from the worker")
	sp.WorkID = 11
	sp.User = "ducctest"
	sp.LogDir = filepath.Join(userHome(t, uid, gid), "logs", "11")
	if _, err := m.Start(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	end := e.x.wait(t, "11.1", 10*time.Second)
	if end.State != Exited || end.LogPath == "" {
		t.Fatalf("%+v", end)
	}

	f, err := m.AppendLog("11.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("from the agent\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, _ := os.ReadFile(end.LogPath); string(b) != "from the worker\nfrom the agent\n" {
		t.Fatalf("log %q", b)
	}

	secret, content := rootSecret(t)
	worldWritable := filepath.Join(rootDir(t, 0o755), "shared")
	if err := os.WriteFile(worldWritable, []byte(content), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(worldWritable, 0o666); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		target string
		swap   func(log, target string) error
	}{
		{"symlink to a root-only file", secret, os.Symlink},
		{"symlink to a world-writable file of root's", worldWritable, os.Symlink},
		{"hard link to a world-writable file of root's", worldWritable, os.Link},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.Remove(end.LogPath); err != nil {
				t.Fatal(err)
			}
			if err := c.swap(c.target, end.LogPath); err != nil {
				t.Fatal(err)
			}
			f, err := m.AppendLog("11.1")
			if err == nil {
				f.WriteString("from the agent\n")
				f.Close()
				t.Fatal("AppendLog opened the swapped log")
			}
			t.Logf("refused: %v", err)
			if b, _ := os.ReadFile(c.target); string(b) != content {
				t.Fatalf("%s now holds %q", c.target, b)
			}
		})
	}
	if _, err := m.AppendLog("nope"); !errors.Is(err, ErrUnknown) {
		t.Errorf("AppendLog(nope) = %v", err)
	}
}

func TestCheckUserFile(t *testing.T) {
	dir := t.TempDir()
	me := uint32(os.Getuid())
	regular := filepath.Join(dir, "regular")
	linked := filepath.Join(dir, "linked")
	fifo := filepath.Join(dir, "fifo")
	for _, p := range []string{regular, linked} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(linked, filepath.Join(dir, "other")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		uid  uint32
		want string // "" = accepted
	}{
		{regular, me, ""},
		{regular, me + 1, fmt.Sprintf("owned by uid %d, not by uid %d", me, me+1)},
		{linked, me, "has 2 links"},
		{fifo, me, "not a regular file"},
	}
	for _, c := range cases {
		f, err := os.OpenFile(c.path, os.O_RDWR|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = checkUserFile(f, c.uid)
		f.Close()
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
			t.Errorf("%s uid %d: %v, want %q", filepath.Base(c.path), c.uid, err, c.want)
		}
	}
}

// TestAsUser: file operations in asUser are checked as the user, and no
// thread keeps the user's identity afterwards.
func TestAsUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	uid, gid := ensureTestUser(t)
	cred := &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
	home := userHome(t, uid, gid)
	root := rootDir(t, 0o755)

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Go(func() {
			err := asUser(cred, func() error {
				if err := os.WriteFile(filepath.Join(root, fmt.Sprint(i)), nil, 0o644); !errors.Is(err, os.ErrPermission) {
					return fmt.Errorf("create in root's directory: %v, want permission denied", err)
				}
				return os.WriteFile(filepath.Join(home, fmt.Sprint(i)), nil, 0o644)
			})
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range 32 {
		fi, err := os.Stat(filepath.Join(home, fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid {
			t.Errorf("file %d owned by %d:%d", i, st.Uid, st.Gid)
		}
	}
	// Every thread of this process is root again (fsuid and fsgid are the
	// fourth fields of Uid: and Gid:).
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) == 5 && (f[0] == "Uid:" || f[0] == "Gid:") && f[4] != "0" {
				t.Errorf("%s: %s", p, line)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(root, "after"), nil, 0o644); err != nil {
		t.Errorf("root after asUser: %v", err)
	}
}
