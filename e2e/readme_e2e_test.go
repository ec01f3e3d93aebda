package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeMarker precedes each shell block of README.md that a reader is
// meant to type in order on a dev cluster; TestREADME runs those blocks.
const readmeMarker = "<!-- README test -->"

// readmeBlocks returns the command lines of the marked ```sh blocks of a
// Markdown file, continuation lines (a trailing backslash) joined.
func readmeBlocks(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	marked, in := false, false
	cont := ""
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.TrimSpace(l) == readmeMarker:
			marked = true
		case marked && !in && strings.HasPrefix(l, "```"):
			in = true
		case in && strings.HasPrefix(l, "```"):
			in, marked = false, false
		case in:
			if strings.HasSuffix(l, "\\") {
				cont += strings.TrimSuffix(l, "\\") + " "
				continue
			}
			if line := strings.TrimSpace(cont + l); line != "" && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
			cont = ""
		case marked && strings.TrimSpace(l) != "":
			t.Fatalf("%s: %q follows %q; a ```sh block must", path, l, readmeMarker)
		}
	}
	return lines
}

// readmeFiles are the READMEs TestREADME follows, in this order (the
// first one puts bin/ on the PATH). The examples that need minutes
// (slow-model) or run forever (services' load loop) are not marked.
var readmeFiles = []string{
	"README.md",
	"examples/exec/README.md",
	"examples/wordcount/README.md",
	"examples/failing-item/README.md",
}

// TestREADME follows README.md, then the examples' READMEs, as a newcomer
// would: a fresh home directory, the repository's bin/ducc and examples/,
// `ducc agent --dev` started as `make dev` starts it (no flags: the CLI
// finds its socket by itself), then every line of the marked blocks typed
// into one shell, in order. Each line must succeed (exit 0). The agent is
// stopped at the end and must log no ERROR line.
func TestREADME(t *testing.T) {
	if testing.Short() {
		t.Skip("README test skipped in -short mode")
	}
	var lines []string
	for _, f := range readmeFiles {
		l := readmeBlocks(t, filepath.Join("..", f))
		if len(l) < 3 {
			t.Fatalf("%s has %d marked command lines; its %q markers are missing", f, len(l), readmeMarker)
		}
		lines = append(lines, l...)
	}

	// The repository as the README's reader has it after make build.
	repo := scratchDir(t)
	if err := os.Mkdir(filepath.Join(repo, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ducc", "duccd", "ducc-shim"} {
		if err := os.Symlink(filepath.Join(filepath.Dir(duccBin), name), filepath.Join(repo, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	examples, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(repo, "examples")); err != nil {
		t.Fatal(err)
	}
	home := scratchDir(t)
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "HOME" || k == "XDG_DATA_HOME" || k == "DUCC_SOCKET" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home)
	data := filepath.Join(home, ".local", "share", "ducc")
	sock := filepath.Join(data, "ducc.sock")
	if _, err := os.Stat("/run/ducc/ducc.sock"); err == nil {
		// A packaged agent runs here; the README's reader would reach
		// it. Point the CLI at the dev cluster instead.
		env = append(env, "DUCC_SOCKET="+sock)
	}

	c := &cluster{dir: repo, agentProc: &agentProc{
		t:       t,
		name:    "readme",
		argv:    []string{filepath.Join(repo, "bin", "ducc"), "agent", "--dev"},
		env:     env,
		dataDir: data,
		sock:    sock,
		logPath: filepath.Join(repo, "agent.log"),
	}}
	c.start()
	t.Cleanup(func() {
		c.stop()
		killLeftovers(data)
	})

	// One shell, the lines in order; after each, its exit status goes to
	// fd 3 so that the output stays the reader's. The shell reads them
	// from a file, not its standard input: a reader types them into a
	// terminal, and commands that look at their standard input (ducc
	// submit SPEC refuses data there when the spec gives its items) must
	// not find the rest of the script in it.
	var script strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&script, "%s\necho \"%d $?\" >&3\n", l, i)
	}
	scriptPath := filepath.Join(scratchDir(t), "readme.sh")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	status, err := os.Create(filepath.Join(repo, "status"))
	if err != nil {
		t.Fatal(err)
	}
	defer status.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "--norc", "--noprofile", scriptPath)
	sh.Dir, sh.Env = repo, env
	sh.ExtraFiles = []*os.File{status}
	out, err := sh.CombinedOutput()
	t.Logf("the README's commands printed:\n%s", out)
	if err != nil {
		t.Errorf("the shell running the README's commands: %v", err)
	}

	rcs := map[int]int{}
	f, err := os.Open(status.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var i, rc int
		if _, err := fmt.Sscan(sc.Text(), &i, &rc); err == nil {
			rcs[i] = rc
		}
	}
	for i, l := range lines {
		rc, ok := rcs[i]
		switch {
		case !ok:
			t.Errorf("README line %q did not run to its end", l)
		case rc != 0:
			t.Errorf("README line %q exited %d", l, rc)
		}
	}

	c.stop()
	if log := c.agentLog(); strings.Contains(log, "level=ERROR") {
		t.Errorf("the agent logged errors (a graceful stop must not):\n%s", grepLines(log, "level=ERROR"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestDemo runs make demo's script with the test's binary: it must end
// with exit 0, log no agent error, and leave nothing running from its
// directory (no shim, no exec-worker, no agent), found by command line
// as pgrep -f finds them.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("demo test skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../scripts/demo.sh")
	cmd.Env = append(os.Environ(), "DUCC_BIN="+duccBin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "demo: ") {
		t.Errorf("the demo had to kill leftovers or saw agent errors:\n%s", out)
	}
	_, after, ok := strings.Cut(string(out), "agent log: ")
	if !ok {
		t.Fatalf("the demo does not name its agent log:\n%s", out)
	}
	dir := filepath.Dir(strings.Fields(after)[0])
	if !strings.HasPrefix(dir, "/tmp/ducc-demo.") {
		t.Fatalf("demo dir %q", dir)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the demo left %s", dir)
	}
	// Shims name the dir on their command line; the demo's exec job
	// runs its process as `ducc-shim exec-worker -- sh -c '...'` with this
	// command, which nothing else runs.
	const demoJob = "DUCC_WORK_ITEM * DUCC_WORK_ITEM"
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		b, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		cmdline := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmdline, dir) || strings.Contains(cmdline, demoJob) {
			t.Errorf("still running after the demo: %s", cmdline)
		}
	}
}
