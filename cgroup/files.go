package cgroup

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"

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

// readKey reads "key value" lines (memory.oom_control, memory.events,
// memory.stat); a key that is not there reads as 0.
func readKey(path, key string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, nil
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v := strings.TrimSpace(string(b))
	if v == "max" { // v2 "no limit"
		return 1<<63 - 1, nil
	}
	return strconv.ParseUint(v, 10, 64)
}

// writeFile writes b to an existing control file in one write(2), as the
// kernel wants it (os.WriteFile would also try to create the file).
func writeFile(path string, b []byte) error {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if err := ignoringEINTR(func() error { _, err := unix.Write(fd, b); return err }); err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}
