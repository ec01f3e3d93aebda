package server

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// raftStore is what the Raft member keeps on disk: its log and its
// stable store (the term and vote), one bbolt file.
type raftStore interface {
	raft.LogStore
	raft.StableStore
}

// writeGuard wraps the Raft member's store and remembers why its writes
// fail, so that a member that cannot write its data directory (a full
// disk, most often) can say so instead of looking like a cluster that has
// not elected a head yet.
//
// Raft copes with the failure itself: a leader that cannot append to its
// log steps down, and a lone member then campaigns again every election
// timeout, winning and stepping down until an append succeeds. The guard
// watches: the first failed write starts a problem, the next log append
// that succeeds ends it (a small stable-store write that succeeds proves
// nothing about room for log entries). It steps in for one write only,
// the current term, which Raft cannot do without (SetUint64).
type writeGuard struct {
	raftStore
	dir string // the data directory, for the message
	log *slog.Logger
	now func() time.Time

	closed    chan struct{} // the member shuts down (close)
	closeOnce sync.Once

	mu      sync.Mutex
	problem *WriteError
}

// WriteError says that this node cannot write its Raft log.
type WriteError struct {
	// Dir is the data directory holding the log.
	Dir string
	// Since is when the writes started failing.
	Since time.Time
	// Err is the last write's error.
	Err error
}

func (e *WriteError) Error() string {
	cause := e.Err.Error()
	var errno syscall.Errno
	if errors.As(e.Err, &errno) {
		cause = errno.Error() // the path is the data directory's own file
	}
	then := "when it can write there again"
	if NoSpace(e.Err) {
		then = "when space returns"
	}
	return fmt.Sprintf("this node cannot write its data directory %s: %s (since %s); it will try to become head again %s",
		e.Dir, cause, e.Since.Format(time.TimeOnly), then)
}

func (e *WriteError) Unwrap() error { return e.Err }

// NoSpace reports whether err is a full filesystem or an exhausted quota.
func NoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

func newWriteGuard(s raftStore, dir string, log *slog.Logger, now func() time.Time) *writeGuard {
	if now == nil {
		now = time.Now
	}
	return &writeGuard{raftStore: s, dir: dir, log: log, now: now, closed: make(chan struct{})}
}

// Problem returns why this member cannot write its Raft log, or nil when
// its last log append succeeded.
func (g *writeGuard) Problem() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.problem == nil {
		return nil
	}
	p := *g.problem
	return &p
}

// wrote records the outcome of a write; appended says it was a log
// append, whose success ends a problem.
func (g *writeGuard) wrote(err error, appended bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err != nil && g.problem == nil:
		g.problem = &WriteError{Dir: g.dir, Since: g.now(), Err: err}
		g.log.Error("cannot write the Raft log; this node is not head until it can write its data directory again",
			"data_dir", g.dir, "err", err)
	case err != nil:
		g.problem.Err = err
	case appended && g.problem != nil:
		g.log.Info("the Raft log is writable again; this node may become head again",
			"data_dir", g.dir, "after", g.now().Sub(g.problem.Since).Round(time.Millisecond))
		g.problem = nil
	}
	return err
}

// StoreLog appends one entry to the log.
func (g *writeGuard) StoreLog(l *raft.Log) error { return g.wrote(g.raftStore.StoreLog(l), true) }

// StoreLogs appends entries to the log.
func (g *writeGuard) StoreLogs(ls []*raft.Log) error { return g.wrote(g.raftStore.StoreLogs(ls), true) }

// DeleteRange removes entries from the log.
func (g *writeGuard) DeleteRange(lo, hi uint64) error {
	return g.wrote(g.raftStore.DeleteRange(lo, hi), false)
}

// Set stores a key of the stable store.
func (g *writeGuard) Set(k, v []byte) error { return g.wrote(g.raftStore.Set(k, v), false) }

// keyCurrentTerm is the stable-store key of Raft's current term (Raft's
// own name for it, which it does not export).
var keyCurrentTerm = []byte("CurrentTerm")

// termRetry is how often a term that could not be saved is tried again.
const termRetry = 250 * time.Millisecond

// SetUint64 stores a number of the stable store (the current term, the
// term of the last vote).
//
// Raft panics when it cannot save its current term, which would take the
// whole agent down with a page of goroutine dumps for a full disk. So a
// term that cannot be saved is tried again until it is (the member stands
// still meanwhile: it neither votes nor leads), or until the member shuts
// down: then the write is given up and reported as done, so that Raft
// shuts down instead of panicking. Nothing depends on that term any more:
// Raft counts no vote it could not save, and the restarted member starts
// from the term it last saved.
func (g *writeGuard) SetUint64(k []byte, v uint64) error {
	err := g.wrote(g.raftStore.SetUint64(k, v), false)
	if err == nil || !bytes.Equal(k, keyCurrentTerm) {
		return err
	}
	t := time.NewTicker(termRetry)
	defer t.Stop()
	for {
		select {
		case <-g.closed:
			g.log.Warn("shutting down without saving Raft's current term (the data directory cannot be written); the member restarts from the term it saved last",
				"term", v, "err", err)
			return nil
		case <-t.C:
		}
		if err = g.wrote(g.raftStore.SetUint64(k, v), false); err == nil {
			return nil
		}
	}
}

// close gives up a term write that waits for room: call it before Raft's
// Shutdown, which waits for the goroutine that writes.
func (g *writeGuard) close() { g.closeOnce.Do(func() { close(g.closed) }) }

// WriteProblem returns why this node cannot write its Raft log (a
// *WriteError), or nil when it can. A member with such a problem is not
// head: it takes leadership again once a log append succeeds.
func (s *Server) WriteProblem() error { return s.cand.guard.Problem() }
