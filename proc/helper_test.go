package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestFindHelper(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]os.FileMode // in the directory of exe; a mode of 0 is a directory
		exe   string
		want  string
	}{
		{"helper next to ducc", map[string]os.FileMode{"ducc": 0o755, HelperName: 0o755}, "ducc", HelperName},
		{"ducc alone", map[string]os.FileMode{"ducc": 0o755}, "ducc", "ducc"},
		{"helper not executable", map[string]os.FileMode{"ducc": 0o755, HelperName: 0o644}, "ducc", "ducc"},
		{"helper is a directory", map[string]os.FileMode{"ducc": 0o755, HelperName: 0}, "ducc", "ducc"},
		{"the helper itself", map[string]os.FileMode{HelperName: 0o755}, HelperName, HelperName},
		{"a test binary", map[string]os.FileMode{"agent.test": 0o755}, "agent.test", "agent.test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, mode := range tt.files {
				p := filepath.Join(dir, name)
				var err error
				if mode == 0 {
					err = os.Mkdir(p, 0o755)
				} else {
					err = os.WriteFile(p, []byte("#!/bin/sh\n"), mode)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if got, want := findHelper(filepath.Join(dir, tt.exe)), filepath.Join(dir, tt.want); got != want {
				t.Errorf("findHelper = %s, want %s", got, want)
			}
		})
	}
}

func TestHelperCommand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		f   func() ([]string, error)
		sub string
	}{{ShimCommand, "shim"}, {ExecWorkerCommand, "exec-worker"}} {
		got, err := tt.f()
		if err != nil {
			t.Fatal(err)
		}
		// The test binary has no helper beside it: it runs its own subcommand.
		if len(got) != 2 || got[0] != exe || got[1] != tt.sub {
			t.Errorf("command = %q, want [%s %s]", got, exe, tt.sub)
		}
	}
}

func TestMainUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"bogus"}, {"--help"}} {
		if code := Main(args); code != 2 {
			t.Errorf("Main(%q) = %d, want 2 (usage)", args, code)
		}
	}
}

// TestForgetAgain: the head repeats its acknowledgements; a repeated
// Forget is a no-op that touches nothing, and a process started again
// under a forgotten id is forgotten again for real.
func TestForgetAgain(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	const id = "21.1"
	dir := filepath.Join(e.dataDir, "procs", id)
	for round := range 2 {
		if _, err := m.Start(context.Background(), shSpec(id, "true")); err != nil {
			t.Fatal(err)
		}
		e.x.wait(t, id, 10*time.Second)
		if err := m.Forget(id); err != nil {
			t.Fatalf("round %d: Forget: %v", round, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: the process directory is still there: %v", round, err)
		}
		// A directory that appears under the id now is not the forgotten
		// process's: the repeated Forget leaves it alone.
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := m.Forget(id); err != nil {
			t.Fatalf("round %d: repeated Forget: %v", round, err)
		}
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("round %d: the repeated Forget touched the disk: %v", round, err)
		}
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRememberForgottenBounded(t *testing.T) {
	m := &Manager{}
	for i := range forgetMemory + 10 {
		m.rememberForgotten(strconv.Itoa(i))
	}
	m.rememberForgotten("100") // again: no duplicate, nothing dropped
	if len(m.forgotten) != forgetMemory || len(m.forgottenOrder) != forgetMemory {
		t.Fatalf("remembers %d ids (%d in order), want %d", len(m.forgotten), len(m.forgottenOrder), forgetMemory)
	}
	for _, tt := range []struct {
		id   string
		want bool
	}{{"0", false}, {"9", false}, {"10", true}, {strconv.Itoa(forgetMemory + 9), true}} {
		if _, got := m.forgotten[tt.id]; got != tt.want {
			t.Errorf("remembers %s: %v, want %v", tt.id, got, tt.want)
		}
	}
}

func TestRemoveProcDir(t *testing.T) {
	tests := []struct {
		name  string
		files []string
	}{
		{"ended process", []string{specFile, childFile, statusFile}},
		{"never started", []string{specFile}},
		{"empty", nil},
		{"more than the known files", []string{specFile, childFile, shimLog, "." + statusFile + ".tmp"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "1.1")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("{}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := removeProcDir(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the directory is still there: %v", err)
			}
			if err := removeProcDir(dir); err != nil {
				t.Fatalf("removing it again: %v", err)
			}
		})
	}
}

// TestForgetKillsWhatEnteredTheGroup: a process that entered an ended
// process's group after the shim cleaned it (the first Delete fails)
// is killed, and the group and the directory still go.
func TestForgetKillsWhatEnteredTheGroup(t *testing.T) {
	e := newEnv(t)
	if !e.cg.Enabled() {
		t.Skip("needs cgroups")
	}
	m := e.manager(t)
	const id = "22.1"
	if _, err := m.Start(context.Background(), shSpec(id, "true")); err != nil {
		t.Fatal(err)
	}
	e.x.wait(t, id, 10*time.Second)
	g, err := e.cg.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "100")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sleeper.Wait() }()
	t.Cleanup(func() { _ = sleeper.Process.Kill() })
	if err := g.AddProc(sleeper.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := m.Forget(id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the sleeper ended by itself")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the process in the group was not killed")
	}
	if _, err := e.cg.Load(id); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cgroup not removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "procs", id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dir not removed: %v", err)
	}
}
