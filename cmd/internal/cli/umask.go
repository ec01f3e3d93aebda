package cli

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/ducc-project/ducc/spec"
)

// callerUmask is this process's umask as four octal digits ("0022"), sent
// with run, submit and services register so that the work's files are
// created as the caller's would be (the umask key; docs/decisions.md).
// It reads /proc/self/status (Linux 4.7 and later) and falls back to
// setting and restoring the umask.
func callerUmask() string {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Umask:"); ok {
				if u, err := spec.CheckUmask(v); err == nil {
					return u
				}
			}
		}
	}
	old := syscall.Umask(0o022)
	syscall.Umask(old)
	return fmt.Sprintf("%04o", old)
}
