package cgroup

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// onOwnThread runs fn on a goroutine locked to an OS thread that is not the
// process's main thread, and waits for it. When fn returns reuse false the
// goroutine exits still locked, and the Go runtime ends the thread: a
// thread left in a state fn could not undo runs nothing else.
//
// The main thread is avoided because a goroutine that exits locked to it
// does not end it (the runtime parks it for good), and because the v1
// memory controller charges the process's memory to the group of the
// process's mm owner, normally the main thread.
func onOwnThread(fn func() (reuse bool)) {
	done := make(chan struct{})
	go func() { // ends with fn; onOwnThread waits for it
		defer close(done)
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Hold the main thread while another goroutine runs fn: it
			// cannot be scheduled here then.
			onOwnThread(fn)
			runtime.UnlockOSThread()
			return
		}
		if fn() {
			runtime.UnlockOSThread()
		}
	}()
	<-done
}
