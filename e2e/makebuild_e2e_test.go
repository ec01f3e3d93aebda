package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeBuildBuildsUIMAJar: `make build` builds dist/ducc-uima.jar,
// which UIMA jobs run, where a JDK and Debian's UIMA are (it built only
// the executables, and UIMA jobs from a source tree then ended with a
// Java stack trace), and says what it did not build where they are not.
// The executables go to a temporary folder, not bin/.
func TestMakeBuildBuildsUIMAJar(t *testing.T) {
	for _, tool := range []string{"make", "javac", "jar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	if _, err := os.Stat("/usr/share/java/uimaj-core.jar"); err != nil {
		t.Skip("needs Debian's UIMA (libuima-core-java)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	vars := []string{"BIN=" + filepath.Join(tmp, "ducc"), "DAEMON_BIN=" + filepath.Join(tmp, "duccd"), "SHIM_BIN=" + filepath.Join(tmp, "ducc-shim")}
	mk := func(args ...string) (string, error) {
		out, err := exec.Command("make", append(append([]string{"-s", "-C", root}, args...), vars...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := mk("build"); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(tmp, "duccd")); err != nil {
		t.Fatalf("make build built no duccd: %v", err)
	}
	// The jar is there and up to date with java/src (make -q: exit 0).
	if out, err := mk("-q", "dist/ducc-uima.jar"); err != nil {
		t.Errorf("after make build, dist/ducc-uima.jar is missing or older than its sources (make -q: %v)\n%s", err, out)
	}
	// Without a JDK it says so, and what to do.
	out, err := mk("build", "JAVAC=/nonexistent/javac")
	if err != nil || !strings.Contains(out, "dist/ducc-uima.jar not built") || !strings.Contains(out, "make java") {
		t.Errorf("make build without javac: %v\n%s", err, out)
	}
}
