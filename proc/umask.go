package proc

import (
	"sync"
	"syscall"
)

// The umask is one per process (all of its threads share it), and a child
// can only be given one by its parent's at the fork: Go's ForkExec has no
// field for it. A shim server launches many processes at once, each with
// its own umask (the submitter's), so it never leaves another umask set
// while it creates files: the process umask stays baseUmask, every file a
// launch creates gets its exact mode from the launch's own umask
// explicitly (createLog, mkdirAsUser, openPipes), and only the fork sets
// the child's umask, alone (umaskLock).

// baseUmask is the umask of a shim or shim server outside its forks. It
// clears no bit of any mode the shim creates (0755, 0644, 0600 at most),
// so those modes come out exactly as asked.
const baseUmask = 0o022

// umaskLock keeps a shim server's file creations out of its forks: a fork
// sets the process umask to the child's for its duration (the lock, held
// alone), creations hold it shared and see baseUmask. A nil *umaskLock (a
// per-process shim, one launch in the process) locks nothing.
type umaskLock struct{ mu sync.RWMutex }

// create runs fn, which creates files with explicit modes, while no fork
// has another umask set.
func (l *umaskLock) create(fn func() error) error {
	if l != nil {
		l.mu.RLock()
		defer l.mu.RUnlock()
	}
	return fn()
}

// fork runs fn (the fork) with the process umask set to umask, then sets
// it back.
func (l *umaskLock) fork(umask int, fn func()) {
	if l != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
	}
	old := syscall.Umask(umask)
	defer syscall.Umask(old)
	fn()
}
