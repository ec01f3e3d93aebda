package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// execute runs root with args and returns what it printed (stdout and
// stderr together) and its error's text.
func execute(root *cobra.Command, args []string) (out, errText string) {
	var buf bytes.Buffer
	root.SetOut(&buf)
	root.SetErr(&buf)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		errText = err.Error()
	}
	return buf.String(), errText
}

// userCommands are root's commands other than the ones cobra adds when
// it executes (help, completion).
func userCommands(root *cobra.Command) []string {
	var names []string
	for _, c := range root.Commands() {
		names = append(names, c.Name())
	}
	return names
}

// For every command of the whole tree, by its name and by each alias, and
// for every subcommand, the root built for its command line holds only
// that command (unless it needs the whole tree) and prints the same help.
// A command added to the tree but not to commands fails here.
func TestLazyTreeHelp(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // shim and exec-worker would run duccd
	full := newRoot("dev", nil)
	var lines [][]string
	for _, top := range full.Commands() {
		whole := false
		for _, c := range commands {
			if c.names[0] == top.Name() {
				whole = c.whole
			}
		}
		for _, name := range append([]string{top.Name()}, top.Aliases...) {
			args := []string{name}
			lazy := newRootArgs("dev", nil, args)
			got := userCommands(lazy)
			switch {
			case whole && len(got) != len(full.Commands()):
				t.Errorf("%s needs the whole tree, got %q", name, got)
			case !whole && (len(got) != 1 || got[0] != top.Name()):
				t.Errorf("the root for %q holds %q, want only %s (is it in commands, with its aliases?)", name, got, top.Name())
			}
			walk(top, func(c *cobra.Command) {
				path := strings.Fields(strings.TrimPrefix(c.CommandPath(), "ducc "+top.Name()))
				lines = append(lines, append(append([]string{name}, path...), "--help"))
			})
		}
	}
	for name := range duccPrograms {
		lines = append(lines, duccArgs(name, []string{"--help"}))
	}
	lines = append(lines,
		[]string{"--json", "jobs", "--help"},
		[]string{"--socket", "/nowhere", "run", "--help"},
		[]string{"--socket=/nowhere", "--debug", "submit", "--help"},
		[]string{"--as", "nobody", "services", "start", "--help"},
		[]string{"version", "--help"},
	)
	if len(lines) < 30 {
		t.Fatalf("only %d command lines: %q", len(lines), lines)
	}
	for _, args := range lines {
		wantOut, wantErr := execute(newRoot("dev", nil), args)
		gotOut, gotErr := execute(newRootArgs("dev", nil, args), args)
		if gotOut != wantOut || gotErr != wantErr {
			t.Errorf("ducc %s: the lazy tree prints\n%s\n(error %q), the whole tree\n%s\n(error %q)",
				strings.Join(args, " "), gotOut, gotErr, wantOut, wantErr)
		}
		if !strings.Contains(wantOut, "Usage:") && wantErr == "" {
			t.Errorf("ducc %s printed no usage: %q", strings.Join(args, " "), wantOut)
		}
	}
}

// The lazy tree fails the same way as the whole one: usage errors, bad
// flags, unknown subcommands (which print their command's help).
func TestLazyTreeErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run"},
		{"version", "extra"},
		{"jobs", "--bogus"},
		{"--json", "jobs", "--bogus"},
		{"services", "bogus"},
		{"admin", "vary-of"},
		{"wait"},
		{"submit", "a", "b"},
	} {
		if commandFor(args) == nil {
			t.Errorf("ducc %s: no lazy tree", strings.Join(args, " "))
		}
		wantOut, wantErr := execute(newRoot("dev", nil), args)
		gotOut, gotErr := execute(newRootArgs("dev", nil, args), args)
		if wantErr == "" && wantOut == "" {
			t.Errorf("ducc %s: neither an error nor help", strings.Join(args, " "))
		}
		if gotOut != wantOut || gotErr != wantErr {
			t.Errorf("ducc %s: the lazy tree prints %q (error %q), the whole tree %q (error %q)",
				strings.Join(args, " "), gotOut, gotErr, wantOut, wantErr)
		}
	}
}

// What names no command, or needs them all, gets the whole tree; an
// unknown command still gets cobra's suggestion.
func TestCommandFor(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" = the whole tree
	}{
		{nil, ""},
		{[]string{"run", "--detach", "--", "true"}, "run"},
		{[]string{"version"}, "version"},
		{[]string{"--json", "version"}, "version"},
		{[]string{"--role_administrator", "jobs"}, "jobs"},
		{[]string{"--as", "bob", "jobs"}, "jobs"},
		{[]string{"--as=bob", "jobs"}, "jobs"},
		{[]string{"--as", "jobs"}, ""}, // cobra reads jobs as --as's value
		{[]string{"--socket"}, ""},
		{[]string{"--help"}, ""},
		{[]string{"-h", "run"}, ""},
		{[]string{"--version"}, ""},
		{[]string{"--bogus", "run"}, ""},
		{[]string{"--", "run"}, ""},
		{[]string{"help", "run"}, ""},
		{[]string{"completion", "bash"}, ""},
		{[]string{"__complete", "run", ""}, ""},
		{[]string{"__completeNoDesc", "cancel", ""}, ""},
		{[]string{"gen-man", "/tmp/x"}, ""},
		{[]string{"jbos"}, ""},
	} {
		got := ""
		if c := commandFor(tc.args); c != nil {
			got = c.names[0]
		}
		if got != tc.want {
			t.Errorf("commandFor(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
	out, err := execute(newRootArgs("dev", nil, []string{"jbos"}), []string{"jbos"})
	if !strings.Contains(err, `unknown command "jbos"`) || !strings.Contains(err, "Did you mean this?") || !strings.Contains(err, "jobs") {
		t.Errorf("ducc jbos: error %q (printed %q), want the suggestion of jobs", err, out)
	}
}

// BenchmarkNewRoot is what building the root costs a call of ducc.
func BenchmarkNewRoot(b *testing.B) {
	for _, args := range [][]string{nil, {"version"}, {"run", "--detach", "--", "true"}, {"submit"}} {
		b.Run(strings.Join(append([]string{"ducc"}, args...), " "), func(b *testing.B) {
			for b.Loop() {
				newRootArgs("dev", nil, args)
			}
		})
	}
}
