package proc

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// sigaction is the kernel's struct sigaction on Linux amd64 and arm64.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const sigIgn = 1 // SIG_IGN

// defaultIgnoredSignals sets every signal this process still ignores back
// to its default, so that the processes a shim starts do not inherit it:
// an ignored disposition survives exec, where a caught one reverts to the
// default. A shim inherits what its agent inherited (an agent started
// under nohup ignores SIGHUP; the Go runtime leaves an inherited SIG_IGN
// of SIGHUP, SIGINT and signal 32 in place), and a job's processes must
// start as under a fresh login. Call it after the shim's signal.Notify
// calls: the signals they catch are no longer ignored.
func defaultIgnoredSignals() error {
	for sig := uintptr(1); sig <= 64; sig++ {
		if sig == uintptr(unix.SIGKILL) || sig == uintptr(unix.SIGSTOP) {
			continue
		}
		var old sigaction
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
			continue // not a signal this kernel has
		}
		if old.handler != sigIgn {
			continue
		}
		var dfl sigaction // SIG_DFL, no flags, empty mask
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0); e != 0 {
			return e
		}
	}
	return nil
}
