package proc

import (
	"os"
	"path/filepath"
	"testing"
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
