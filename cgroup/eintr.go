package cgroup

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ignoringEINTR calls fn until it returns something other than EINTR.
// The kernel returns EINTR from cgroup files for a signal that merely
// arrived meanwhile (a write to memory.limit_in_bytes gives up at once
// when a signal is pending, and the Go runtime signals its threads to
// preempt them), so every call on cgroupfs goes through it, as package
// os does for its own calls.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func mkdir(p string) error {
	return ignoringEINTR(func() error { return unix.Mkdir(p, 0o755) })
}

func rmdir(p string) error {
	return ignoringEINTR(func() error { return unix.Rmdir(p) })
}
