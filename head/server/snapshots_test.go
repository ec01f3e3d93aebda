package server

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/head/state/statetest"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// runServerIn starts a lone head server on node with its data in dir and
// returns a function that stops and closes it.
func runServerIn(t *testing.T, node *wiretest.Node, dir string, policy snapshotPolicy) (*Server, func()) {
	t.Helper()
	s, err := New(Config{
		Host: node.Host, Heartbeats: node.Heartbeats, Leaders: node.Leaders,
		DataDir: dir, BootstrapExpect: 1, Elect: 100 * time.Millisecond, Heartbeat: 100 * time.Millisecond,
		Node: "n1", Version: "test", Scheduler: rm.DefaultConfig(), NodeTimeout: time.Minute,
		Logger: wiretest.Logger(t), snapshots: policy,
		// The history's times are from 1970: keep it from being purged.
		Retention: Retention{Work: 1e6 * time.Hour, Results: 1e6 * time.Hour, History: 1e6 * time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	t.Cleanup(stop)
	return s, stop
}

// dump is what a restart must keep of the state.
type dump struct {
	Work   []*state.Work
	NextID uint64
	Items  [][]state.Item
}

func dumpState(f *state.FSM) dump {
	var d dump
	f.View(func(v *state.View) {
		d.NextID = v.NextID()
		for _, w := range v.All() {
			d.Work = append(d.Work, w.Copy())
			if w.Job != nil {
				d.Items = append(d.Items, append([]state.Item(nil), w.Job.Items...))
			}
		}
	})
	return d
}

// TestSnapshotCompactAndRestore applies a job history longer than the
// snapshot policy's threshold through a real Raft log in bbolt, and checks
// that a snapshot was taken, that the log was compacted behind it, and that
// a restart restores the snapshot (replaying only the entries after it)
// to the same state.
func TestSnapshotCompactAndRestore(t *testing.T) {
	policy := snapshotPolicy{Entries: 200, Bytes: 1 << 30, Trailing: 20}
	node := wiretest.NewNode(t, wiretest.Key(t))
	dir := t.TempDir()
	s, stop := runServerIn(t, node, dir, policy)
	wiretest.Eventually(t, "the election", s.Leading)
	ctx := ctxFor(t)
	// 376 entries: a snapshot after the first 250, then fewer entries than
	// the threshold (and than finalEntries, so that the stop takes no
	// snapshot), which a restart replays after the snapshot.
	history := statetest.JobHistory(4, 3000)
	apply := func(entries [][]state.Command) {
		for i, cmds := range entries {
			if _, err := s.cand.Apply(ctx, cmds...); err != nil {
				t.Fatalf("apply entry %d: %v", i, err)
			}
		}
	}
	apply(history[:250])
	// Raft deletes the log behind a snapshot right after writing it.
	var first, snapIndex uint64
	wiretest.Eventually(t, "a snapshot and the log compacted behind it", func() bool {
		f, err := s.cand.store.FirstIndex()
		first, snapIndex = f, s.cand.fsm.info().Index
		return err == nil && snapIndex > 0 && first > 1
	})
	if first > snapIndex+1 {
		t.Errorf("log starts at %d after a snapshot at %d", first, snapIndex)
	}
	apply(history[250:])
	want := dumpState(s.cand.FSM())
	if len(want.Work) != 4 || len(want.Items[3]) != 3000 {
		t.Fatalf("history applied wrong: %d works", len(want.Work))
	}
	stop()

	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(dir, "raft"), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		t.Fatalf("no snapshot on disk: %v", err)
	}
	latest := list[0].Index

	s, _ = runServerIn(t, node, dir, policy)
	in := s.cand.fsm.info()
	if in.RestoredIndex != latest || in.RestoredAt == 0 {
		t.Errorf("restored index %d, want the snapshot's %d", in.RestoredIndex, latest)
	}
	if s.cand.lastAtStart <= latest {
		t.Errorf("nothing to replay after the snapshot at %d (log ends at %d)", latest, s.cand.lastAtStart)
	}
	wiretest.Eventually(t, "the election after the restart", s.Leading)
	wiretest.Eventually(t, "the replay of the log after the snapshot", func() bool {
		return s.cand.raft.AppliedIndex() >= s.cand.lastAtStart
	})
	if got := dumpState(s.cand.FSM()); !reflect.DeepEqual(got, want) {
		t.Errorf("state after the restart differs: %d works, next id %d; want %d, %d", len(got.Work), got.NextID, len(want.Work), want.NextID)
	}
}

func TestSnapshotPolicy(t *testing.T) {
	p := snapshotPolicy{}.orDefault()
	tests := []struct {
		entries, bytes, lastSize uint64
		want                     bool
	}{
		{0, 0, 0, false},
		{snapshotEntries - 1, snapshotBytes - 1, 0, false},
		{snapshotEntries, 0, 0, true},
		{1, snapshotBytes, 0, true},
		{snapshotEntries, 10 << 20, 16 << 20, true},
		{snapshotEntries, 10 << 20, 30 << 20, false}, // the snapshot costs more than the log since
		{snapshotEntries * 10, snapshotBytes, 32 << 20, true},
		{snapshotEntries * 10, snapshotBytes, 40 << 20, false},
	}
	for _, tc := range tests {
		if got := p.due(tc.entries, tc.bytes, tc.lastSize); got != tc.want {
			t.Errorf("due(%d entries, %d bytes, last %d) = %v, want %v", tc.entries, tc.bytes, tc.lastSize, got, tc.want)
		}
	}
}

// TestSnapshotSentToNewMember: a member that joins after the log was
// compacted gets the leader's snapshot (Raft's InstallSnapshot) and
// restores it to the leader's state.
func TestSnapshotSentToNewMember(t *testing.T) {
	policy := snapshotPolicy{Entries: 100, Bytes: 1 << 30, Trailing: 10}
	psk := wiretest.Key(t)
	a := startServer(t, psk, "head1", func(c *Config) { c.snapshots = policy })
	a.waitLeading(t)
	ctx := ctxFor(t)
	for i, cmds := range statetest.JobHistory(2, 2000) {
		if _, err := a.cand.Apply(ctx, cmds...); err != nil {
			t.Fatalf("apply entry %d: %v", i, err)
		}
	}
	wiretest.Eventually(t, "a snapshot and a compacted log", func() bool {
		first, err := a.cand.store.FirstIndex()
		return err == nil && first > 1 && a.cand.fsm.info().Index > 0
	})
	want := dumpState(a.cand.FSM())
	leader := a.node.Host.ID()
	b := startServer(t, psk, "head2", func(c *Config) {
		c.BootstrapExpect = 3 // never bootstraps on its own
		c.FollowedLeader = func() peer.ID { return leader }
		c.snapshots = policy
	})
	wiretest.Connect(t, b.node, a.node)
	wiretest.Eventually(t, "the new member to restore the leader's snapshot", func() bool {
		return b.cand.fsm.info().RestoredIndex > 0 && b.cand.raft.AppliedIndex() >= a.cand.raft.AppliedIndex()
	})
	if got := dumpState(b.cand.FSM()); !reflect.DeepEqual(got, want) {
		t.Errorf("the new member's state differs: %d works, next id %d; want %d, %d", len(got.Work), got.NextID, len(want.Work), want.NextID)
	}
}

// TestFinalSnapshot: a member that stops after finalEntries or more
// entries since its last snapshot takes one, and its next start has
// nothing to replay.
func TestFinalSnapshot(t *testing.T) {
	policy := snapshotPolicy{Entries: 1 << 20, Bytes: 1 << 30, Trailing: 20} // no scheduled snapshot
	node := wiretest.NewNode(t, wiretest.Key(t))
	dir := t.TempDir()
	s, stop := runServerIn(t, node, dir, policy)
	wiretest.Eventually(t, "the election", s.Leading)
	ctx := ctxFor(t)
	history := statetest.JobHistory(3, 3000)
	if len(history) < finalEntries {
		t.Fatalf("%d entries: too few for a final snapshot", len(history))
	}
	for i, cmds := range history {
		if _, err := s.cand.Apply(ctx, cmds...); err != nil {
			t.Fatalf("apply entry %d: %v", i, err)
		}
	}
	if in := s.cand.fsm.info(); in.Index != 0 {
		t.Fatalf("a scheduled snapshot at %d", in.Index)
	}
	want := dumpState(s.cand.FSM())
	stop()
	s, _ = runServerIn(t, node, dir, policy)
	if in := s.cand.fsm.info(); in.RestoredIndex == 0 || in.RestoredIndex+1 < s.cand.lastAtStart {
		t.Errorf("restored index %d, log ends at %d: the stop took no snapshot of it", in.RestoredIndex, s.cand.lastAtStart)
	}
	if got := dumpState(s.cand.FSM()); !reflect.DeepEqual(got, want) {
		t.Errorf("state after the restart differs: %d works, next id %d; want %d, %d", len(got.Work), got.NextID, len(want.Work), want.NextID)
	}
}
