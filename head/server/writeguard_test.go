package server

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// fillingStore is a Raft store on a disk that fills up: while full is set,
// log writes fail with ENOSPC. Small stable-store writes (the term and the
// vote) go through, as they mostly do on bbolt, which reuses its free
// pages, unless termFull is set too.
type fillingStore struct {
	raftStore
	full     atomic.Bool
	termFull atomic.Bool
}

func (s *fillingStore) SetUint64(k []byte, v uint64) error {
	if s.termFull.Load() {
		return s.enospc()
	}
	return s.raftStore.SetUint64(k, v)
}

func (s *fillingStore) Set(k, v []byte) error {
	if s.termFull.Load() {
		return s.enospc()
	}
	return s.raftStore.Set(k, v)
}

func (s *fillingStore) enospc() error {
	return &os.PathError{Op: "write", Path: "/data/raft/raft.db", Err: syscall.ENOSPC}
}

func (s *fillingStore) StoreLog(l *raft.Log) error {
	if s.full.Load() {
		return s.enospc()
	}
	return s.raftStore.StoreLog(l)
}

func (s *fillingStore) StoreLogs(ls []*raft.Log) error {
	if s.full.Load() {
		return s.enospc()
	}
	return s.raftStore.StoreLogs(ls)
}

func (s *fillingStore) DeleteRange(lo, hi uint64) error {
	if s.full.Load() {
		return s.enospc()
	}
	return s.raftStore.DeleteRange(lo, hi)
}

func TestWriteGuard(t *testing.T) {
	enospc := &os.PathError{Op: "write", Path: "/d/raft/raft.db", Err: syscall.ENOSPC}
	eio := &os.PathError{Op: "write", Path: "/d/raft/raft.db", Err: syscall.EIO}
	type write struct {
		append bool
		err    error
	}
	for _, tc := range []struct {
		name   string
		writes []write
		want   error  // the problem's cause, nil for none
		says   string // in its message
	}{
		{"no writes", nil, nil, ""},
		{"appends succeed", []write{{true, nil}, {false, nil}}, nil, ""},
		{"append fails", []write{{true, nil}, {true, enospc}}, syscall.ENOSPC, "no space left on device (since 10:00:00); it will try to become head again when space returns"},
		{"term write fails", []write{{false, eio}}, syscall.EIO, "input/output error (since 10:00:00); it will try to become head again when it can write there again"},
		{"a stable write does not end it", []write{{true, enospc}, {false, nil}}, syscall.ENOSPC, "no space left"},
		{"the last error is said", []write{{true, enospc}, {false, eio}}, syscall.EIO, "(since 10:00:00)"},
		{"an append ends it", []write{{true, enospc}, {false, nil}, {true, nil}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.Local)
			g := newWriteGuard(nil, "/d", slog.New(slog.DiscardHandler), func() time.Time { now = now.Add(time.Second); return now.Add(-time.Second) })
			for _, w := range tc.writes {
				if err := g.wrote(w.err, w.append); err != w.err {
					t.Fatalf("wrote returned %v, want %v", err, w.err)
				}
			}
			p := g.Problem()
			if tc.want == nil {
				if p != nil {
					t.Fatalf("problem %v, want none", p)
				}
				return
			}
			var we *WriteError
			if !errors.As(p, &we) || !errors.Is(p, tc.want) {
				t.Fatalf("problem %v, want a WriteError of %v", p, tc.want)
			}
			msg := p.Error()
			if !strings.HasPrefix(msg, "this node cannot write its data directory /d: ") || !strings.Contains(msg, tc.says) {
				t.Fatalf("problem says %q, want it to say %q", msg, tc.says)
			}
			if strings.Contains(msg, "raft.db") {
				t.Errorf("problem %q names the file, not the data directory", msg)
			}
		})
	}
}

// diskServer starts a lone head server whose Raft store fills up on
// demand; stop stops and closes it (at the end of the test at the latest).
func diskServer(t *testing.T) (s *Server, store *fillingStore, stop func()) {
	t.Helper()
	node := wiretest.NewNode(t, wiretest.Key(t))
	s, err := New(Config{
		Host: node.Host, Heartbeats: node.Heartbeats, Leaders: node.Leaders,
		DataDir: t.TempDir(), BootstrapExpect: 1, Elect: 100 * time.Millisecond, Heartbeat: 100 * time.Millisecond,
		Node: "n1", Version: "test", Scheduler: rm.DefaultConfig(), NodeTimeout: time.Minute,
		LocalDesired: func(wire.DesiredState) {},
		Logger:       wiretest.Logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Raft reaches the store through the guard; fill the disk under it
	// (swapped before Run: Raft is idle until then).
	store = &fillingStore{raftStore: s.cand.guard.raftStore}
	s.cand.guard.raftStore = store
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	t.Cleanup(stop)
	return s, store, stop
}

// TestServerDiskFull: a head whose log (and then also its term) cannot be
// written steps down and says why; when it can write again it is head
// again, every time; and it shuts down cleanly while it waits.
func TestServerDiskFull(t *testing.T) {
	for _, tc := range []struct {
		name string
		term bool // the term cannot be saved either
	}{
		{"log", false},
		{"log and term", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, store, _ := diskServer(t)
			for cycle := 1; cycle <= 3; cycle++ {
				wiretest.Eventually(t, "leadership", func() bool { return s.Leading() && s.WriteProblem() == nil })
				store.full.Store(true)
				store.termFull.Store(tc.term)
				// Any write will do: a barrier appends an entry.
				if err := s.cand.Raft().Barrier(5 * time.Second).Error(); err == nil {
					t.Fatalf("cycle %d: a barrier succeeded on a full disk", cycle)
				}
				wiretest.Eventually(t, "the step-down", func() bool { return !s.Leading() && s.WriteProblem() != nil })
				if tc.term {
					// The next election waits for its term to be saved.
					wiretest.Eventually(t, "a candidate", func() bool { return s.cand.Raft().State() == raft.Candidate })
				}
				p := s.WriteProblem()
				if !NoSpace(p) || !strings.Contains(p.Error(), "no space left on device") {
					t.Fatalf("cycle %d: problem %v", cycle, p)
				}
				store.full.Store(false)
				store.termFull.Store(false)
			}
			wiretest.Eventually(t, "leadership", func() bool { return s.Leading() && s.WriteProblem() == nil })
		})
	}
	t.Run("shutdown while the term waits", func(t *testing.T) {
		s, store, stop := diskServer(t)
		wiretest.Eventually(t, "leadership", s.Leading)
		store.full.Store(true)
		store.termFull.Store(true)
		_ = s.cand.Raft().Barrier(5 * time.Second).Error()
		wiretest.Eventually(t, "a candidate", func() bool { return s.cand.Raft().State() == raft.Candidate })
		stop() // returns, and Raft does not panic
	})
}

// TestAwaitHeadSaysStuck: a head that does not stop is said in the log
// until it stops.
func TestAwaitHeadSaysStuck(t *testing.T) {
	var logb strings.Builder
	var mu sync.Mutex
	c := &candidate{log: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logb}, nil))}
	done := make(chan struct{})
	returned := make(chan struct{})
	go func() { defer close(returned); c.awaitHead(done, time.Millisecond) }()
	wiretest.Eventually(t, "a complaint", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(logb.String(), "has not stopped") >= 2
	})
	close(done)
	<-returned
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
