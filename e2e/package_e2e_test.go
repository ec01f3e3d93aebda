package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDeb builds the packages (make package), installs the .deb with
// dpkg, runs the installed ducc, checks what the package put in place and
// that nothing was started without a cluster key, then removes it. Root
// only; it refuses to touch a machine where ducc is already installed.
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
	t.Cleanup(func() { _ = exec.Command("dpkg", "--purge", "ducc").Run() })
	install := run("dpkg", "-i", debs[0])
	if !strings.Contains(install, "NOT started: there is no cluster key") {
		t.Errorf("postinstall must say the agent is not started without a key:\n%s", install)
	}
	if v := run("/usr/bin/ducc", "version"); !strings.Contains(v, "e2e-test") {
		t.Errorf("installed ducc version: %q", v)
	}
	for _, f := range []string{"/etc/ducc/ducc.yaml", "/usr/lib/systemd/system/ducc-agent.service", "/var/lib/ducc", "/usr/share/doc/ducc/operations.md"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the package did not install %s: %v", f, err)
		}
	}
	// The process shim the agent runs from ducc's directory (ARCHITECTURE.md).
	if fi, err := os.Stat("/usr/bin/ducc-shim"); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("the package did not install an executable /usr/bin/ducc-shim: %v", err)
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
	if help := run("/usr/bin/ducc_cancel", "--help"); !strings.Contains(help, "cancel work") {
		t.Errorf("ducc_cancel --help does not run ducc cancel:\n%s", help)
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
		if files := run("rpm", "-qlp", rpms[0]); !strings.Contains(files, "/usr/bin/ducc") {
			t.Errorf("rpm lacks /usr/bin/ducc:\n%s", files)
		}
	}
	run("dpkg", "-r", "ducc")
	if _, err := os.Stat("/usr/bin/ducc"); err == nil {
		t.Errorf("dpkg -r left /usr/bin/ducc")
	}
}
