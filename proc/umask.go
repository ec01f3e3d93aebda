package proc

import (
	"sync"
	"syscall"
)

// The umask is one per process (all of its threads share it), and a child
// can only be given one by its parent's at the fork: Go's ForkExec has no
// field for it. A shim server launches many processes at once, each with
// its own umask (the submitter's), so it never leaves a launch's umask
// set while another creates files: every file a launch creates gets its
// exact mode from the launch's own umask explicitly (createLog,
// mkdirAsUser, openPipes) under baseUmask, and only the fork sets the
// child's umask (umaskLock).

// baseUmask is the umask under which a shim or shim server creates its
// files. It clears no bit of any mode the shim creates (0755, 0644, 0600
// at most), so those modes come out exactly as asked.
const baseUmask = 0o022

// umaskLock holds the process umask at one value for as long as anyone
// needs it: a fork holds it at the child's umask, a file creation at
// baseUmask. Holders of the same value share it (forks of processes with
// the default umask, 022, run at once with each other and with file
// creations); one that needs another value waits, in order of arrival,
// until the current holders are done, and while anyone waits newcomers
// queue behind (no starvation). A nil *umaskLock (a per-process shim, one
// launch in the process) locks nothing.
type umaskLock struct {
	mu      sync.Mutex
	known   bool           // current is the process umask (once set here)
	current int            // the process umask, while known
	holders int            // of current
	queue   []*umaskWaiter // waiting, oldest first
}

// umaskWaiter is a goroutine waiting in umaskLock.acquire for umask u;
// ready is closed once it holds it.
type umaskWaiter struct {
	u     int
	ready chan struct{}
}

// acquire sets the process umask to u, or waits until it may, and holds
// it there until release.
func (l *umaskLock) acquire(u int) {
	l.mu.Lock()
	if len(l.queue) == 0 && (l.holders == 0 || l.current == u) {
		l.set(u)
		l.holders++
		l.mu.Unlock()
		return
	}
	w := &umaskWaiter{u: u, ready: make(chan struct{})}
	l.queue = append(l.queue, w)
	l.mu.Unlock()
	<-w.ready // release made it a holder
}

// release ends a hold of acquire. The last holder hands the umask to the
// oldest waiter and to every waiter for the same value, or, when none
// waits, sets baseUmask back.
func (l *umaskLock) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holders--
	if l.holders > 0 {
		return
	}
	if len(l.queue) == 0 {
		l.set(baseUmask)
		return
	}
	u := l.queue[0].u
	l.set(u)
	left := l.queue[:0]
	for _, w := range l.queue {
		if w.u == u {
			l.holders++
			close(w.ready)
		} else {
			left = append(left, w)
		}
	}
	clear(l.queue[len(left):])
	l.queue = left
}

// set makes u the process umask; l.mu held, no holder.
func (l *umaskLock) set(u int) {
	if !l.known || l.current != u {
		syscall.Umask(u)
		l.known, l.current = true, u
	}
}

// create runs fn, which creates files with explicit modes, under
// baseUmask.
func (l *umaskLock) create(fn func() error) error {
	if l != nil {
		l.acquire(baseUmask)
		defer l.release()
	}
	return fn()
}

// fork runs fn (the fork) with the process umask set to umask.
func (l *umaskLock) fork(umask int, fn func()) {
	if l == nil {
		old := syscall.Umask(umask)
		defer syscall.Umask(old)
		fn()
		return
	}
	l.acquire(umask)
	defer l.release()
	fn()
}
