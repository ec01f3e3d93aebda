package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDeb builds the packages (make package), checks the .deb with
// lintian (errors and warnings fail, beyond packaging/lintian-overrides),
// installs it with dpkg, runs the installed ducc, checks what the package
// put in place (man pages that man finds, shell completion that completes
// a job id from a running agent) and that nothing was started without a
// cluster key, then removes it. Root only; it refuses to touch a machine
// where ducc is already installed.
func TestPackageDeb(t *testing.T) {
	if testing.Short() {
		t.Skip("package test skipped in -short mode")
	}
	if !isRoot() {
		t.Skip("package test skipped: dpkg -i needs root")
	}
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("package test skipped: dpkg not installed")
	}
	if exec.Command("dpkg", "-s", "ducc").Run() == nil {
		t.Skip("package test skipped: a ducc package is already installed here; not touching it")
	}
	for _, f := range []string{"/usr/bin/ducc", "/etc/ducc/cluster.key", "/var/lib/ducc/cluster.key"} {
		if _, err := os.Stat(f); err == nil {
			t.Skipf("package test skipped: %s exists; not touching this machine", f)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	// Makefile.ops alone: GO and VERSION come from the main Makefile.
	mk := exec.Command("make", "-f", "Makefile.ops", "package", "DIST="+dist, "GO=go", "VERSION=e2e-test")
	mk.Dir = root
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make package: %v\n%s", err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(dist, "*.deb"))
	rpms, _ := filepath.Glob(filepath.Join(dist, "*.rpm"))
	if len(debs) != 1 || len(rpms) != 1 {
		t.Fatalf("make package made %v and %v, want one .deb and one .rpm", debs, rpms)
	}

	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if _, err := exec.LookPath("lintian"); err == nil {
		// The overrides ship in the package, so lintian reads them.
		out, err := exec.Command("lintian", "--fail-on", "error,warning", "--tag-display-limit", "0", debs[0]).CombinedOutput()
		if err != nil {
			t.Errorf("lintian %s: %v\n%s", debs[0], err, out)
		}
	} else {
		t.Log("lintian not installed (apt-get install lintian); the .deb is not linted")
	}
	t.Cleanup(func() { _ = exec.Command("dpkg", "--purge", "ducc").Run() })
	install := run("dpkg", "-i", debs[0])
	if !strings.Contains(install, "NOT started: there is no cluster key") {
		t.Errorf("postinstall must say the agent is not started without a key:\n%s", install)
	}
	if v := run("/usr/bin/ducc", "version"); !strings.Contains(v, "e2e-test") {
		t.Errorf("installed ducc version: %q", v)
	}
	for _, f := range []string{"/etc/ducc/ducc.yaml", "/usr/lib/systemd/system/ducc-agent.service", "/var/lib/ducc", "/usr/share/doc/ducc/operations.md", "/usr/share/ducc/ducc-uima.jar"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the package did not install %s: %v", f, err)
		}
	}
	// The daemon and the process shim the agent runs from its directory
	// (ARCHITECTURE.md, "Executables").
	for _, f := range []string{"/usr/bin/duccd", "/usr/bin/ducc-shim"} {
		if fi, err := os.Stat(f); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("the package did not install an executable %s: %v", f, err)
		}
	}
	if v := run("/usr/bin/duccd", "version"); !strings.Contains(v, "e2e-test") {
		t.Errorf("installed duccd version: %q", v)
	}
	// ducc runs the installed duccd for what needs the daemon's code.
	if out, _ := exec.Command("/usr/bin/ducc", "id", "--data-dir", t.TempDir()).CombinedOutput(); !strings.Contains(string(out), "no identity at") {
		t.Errorf("ducc id --data-dir did not run duccd: %s", out)
	}
	// The Grafana dashboard of the metrics (docs/operations.md).
	if _, err := os.Stat("/usr/share/ducc/grafana/ducc-dashboard.json"); err != nil {
		t.Errorf("the package did not install the Grafana dashboard: %v", err)
	}
	// DUCC's command names are links to ducc that run its commands.
	for _, name := range []string{"ducc_submit", "ducc_cancel", "ducc_reserve", "ducc_unreserve", "ducc_process_submit", "ducc_process_cancel", "ducc_services"} {
		if dst, err := os.Readlink("/usr/bin/" + name); err != nil || dst != "ducc" {
			t.Errorf("/usr/bin/%s is not a link to ducc: %q, %v", name, dst, err)
		}
	}
	if help := run("/usr/bin/ducc_cancel", "--help"); !strings.Contains(strings.ToLower(help), "cancel work") {
		t.Errorf("ducc_cancel --help does not run ducc cancel:\n%s", help)
	}
	checkManPages(t)
	checkBashCompletion(t)
	for _, f := range []string{"/usr/share/zsh/vendor-completions/_ducc", "/usr/share/fish/vendor_completions.d/ducc.fish"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the package did not install %s: %v", f, err)
		}
	}
	if conf := run("dpkg-query", "-W", "-f=${Conffiles}", "ducc"); !strings.Contains(conf, "/etc/ducc/ducc.yaml") {
		t.Errorf("/etc/ducc/ducc.yaml is not a conffile: %q", conf)
	}
	if _, err := exec.LookPath("systemctl"); err == nil {
		if out, _ := exec.Command("systemctl", "is-active", "ducc-agent.service").Output(); strings.TrimSpace(string(out)) == "active" {
			t.Errorf("the agent was started without a cluster key")
		}
	}
	if _, err := exec.LookPath("rpm"); err == nil {
		info := run("rpm", "-qip", rpms[0])
		for _, want := range []string{"Name        : ducc", "License     : Apache-2.0"} {
			if !strings.Contains(info, want) {
				t.Errorf("rpm -qip lacks %q:\n%s", want, info)
			}
		}
		files := run("rpm", "-qlp", rpms[0])
		for _, f := range []string{"/usr/bin/ducc\n", "/usr/bin/duccd\n", "/usr/bin/ducc-shim\n"} {
			if !strings.Contains(files, f) {
				t.Errorf("rpm lacks %s:\n%s", strings.TrimSpace(f), files)
			}
		}
	}
	run("dpkg", "-r", "ducc")
	if _, err := os.Stat("/usr/bin/ducc"); err == nil {
		t.Errorf("dpkg -r left /usr/bin/ducc")
	}
}

// checkManPages: `man ducc-submit` and DUCC's `man ducc_submit` show the
// installed page of ducc submit.
func checkManPages(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/share/man/man1/ducc-submit.1.gz"); err != nil {
		t.Errorf("the package did not install the man page of ducc submit: %v", err)
		return
	}
	if _, err := exec.LookPath("man"); err != nil {
		t.Log("man not installed (apt-get install man-db); the pages are not read")
		return
	}
	for _, page := range []string{"ducc-submit", "ducc_submit", "ducc"} {
		cmd := exec.Command("man", page)
		cmd.Env = append(os.Environ(), "MANPAGER=cat", "PAGER=cat", "MANWIDTH=80")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("man %s: %v\n%s", page, err, out)
			continue
		}
		want := "ducc-submit - submit a job of work items"
		if page == "ducc" {
			want = "ducc - ducc runs batch analytics"
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("man %s lacks %q:\n%s", page, want, out)
		}
	}
}

// checkBashCompletion sources the installed bash completion the way
// bash does on TAB after `ducc show ` (through bash-completion) and checks that it offers the id of
// a job running on a dev cluster (the installed ducc asks the agent).
func checkBashCompletion(t *testing.T) {
	t.Helper()
	const framework = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(framework); err != nil {
		t.Logf("bash-completion not installed (apt-get install bash-completion); completion not tried: %v", err)
		return
	}
	c := startCluster(t)
	id, errOut, code := c.ducc("run", "--detach", "--log-dir", c.dir, "--", "sleep", "60")
	if code != 0 {
		t.Fatalf("ducc run --detach: exit %d: %s", code, errOut)
	}
	id = strings.TrimSpace(id)
	// What bash does on TAB: bash-completion loads the script for the
	// command by its name, then runs the function it registered.
	const script = `source /usr/share/bash-completion/bash_completion
__load_completion ducc || exit 1
fn=$(complete -p ducc | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
COMP_LINE="ducc show "; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(ducc show ""); COMP_CWORD=2
"$fn" ducc "" show 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", script)
	cmd.Env = append(os.Environ(), "DUCC_SOCKET="+c.sock, "PATH=/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion: %v\n%s", err, out)
	}
	found := false
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == id {
			found = true
		}
	}
	if !found {
		t.Errorf("bash completion of 'ducc show ' does not offer job %s:\n%s", id, out)
	}
	if _, _, code := c.ducc("cancel", id); code != 0 {
		t.Errorf("ducc cancel %s: exit %d", id, code)
	}
}
