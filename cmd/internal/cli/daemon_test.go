package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindDaemon(t *testing.T) {
	next, onPath, empty := t.TempDir(), t.TempDir(), t.TempDir()
	self := filepath.Join(next, "ducc")
	write := func(path string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(onPath, DaemonName), 0o755)

	// None next to ducc, none on PATH.
	t.Setenv("PATH", empty)
	if p, err := findDaemon(self); err == nil {
		t.Errorf("found %s where there is none", p)
	}
	// On PATH only.
	t.Setenv("PATH", empty+string(os.PathListSeparator)+onPath)
	if p, err := findDaemon(self); err != nil || p != filepath.Join(onPath, DaemonName) {
		t.Errorf("on PATH: %q, %v", p, err)
	}
	// A file next to ducc that is not executable is not it.
	write(filepath.Join(next, DaemonName), 0o644)
	if p, err := findDaemon(self); err != nil || p != filepath.Join(onPath, DaemonName) {
		t.Errorf("with a non-executable next to ducc: %q, %v", p, err)
	}
	// Next to ducc comes first.
	if err := os.Chmod(filepath.Join(next, DaemonName), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := findDaemon(self); err != nil || p != filepath.Join(next, DaemonName) {
		t.Errorf("next to ducc: %q, %v", p, err)
	}
}

// Without a Daemon and without duccd, a command that needs it says what
// is missing and how to get it, and exits with the failure code.
func TestDaemonCommandWithoutDuccd(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, args := range [][]string{
		{"agent", "--dev"},
		{"sim", "--nodes", "1"},
		{"id", "--data-dir", t.TempDir()},
	} {
		root := newRootArgs("dev", nil, args)
		root.SetArgs(args)
		err := root.Execute()
		ee, ok := err.(*exitError)
		if !ok || ee.code != exitFailed {
			t.Errorf("%v: %v (%T)", args, err, err)
			continue
		}
		for _, want := range []string{DaemonName, "make build", "package"} {
			if !strings.Contains(ee.msg, want) {
				t.Errorf("%v: %q does not say %q", args, ee.msg, want)
			}
		}
	}
}
