package server

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/tick"
	"github.com/ducc-project/ducc/wire"
)

// Snapshot policy: a member takes a snapshot once snapshotEntries log
// entries or snapshotBytes bytes of them were applied since its last one,
// whichever comes first, checked every snapshotCheck; Raft then deletes
// the log up to the snapshot but for trailingLogs entries, which a
// follower a little behind can still fetch instead of the whole snapshot.
// A snapshot writes the whole state, so it also waits until the log since
// the last one holds half as many bytes as that snapshot: writing
// snapshots costs at most about twice the log's own bytes however large
// the history grows. So the live log stays under about the larger of
// snapshotBytes and half the snapshot, plus trailingLogs entries; raft.db
// (bbolt reuses freed pages; the file never shrinks by itself, see
// compactRaftDB) stays about that large whatever the history, and a
// restart replays at most that much after the snapshot.
const (
	snapshotEntries = 4096
	snapshotBytes   = 16 << 20
	trailingLogs    = 1024
	snapshotCheck   = time.Second
)

// snapshotPolicy is the snapshot policy's thresholds; zero fields take
// the defaults above (tests set smaller ones).
type snapshotPolicy struct {
	Entries, Bytes, Trailing uint64
}

func (p snapshotPolicy) orDefault() snapshotPolicy {
	if p.Entries == 0 {
		p.Entries = snapshotEntries
	}
	if p.Bytes == 0 {
		p.Bytes = snapshotBytes
	}
	if p.Trailing == 0 {
		p.Trailing = trailingLogs
	}
	return p
}

// due reports whether entries or bytes applied since the last snapshot,
// which was lastSize bytes, call for a new one.
func (p snapshotPolicy) due(entries, bytes, lastSize uint64) bool {
	return (entries >= p.Entries || bytes >= p.Bytes) && bytes >= lastSize/2
}

// raftFSM is the state as Raft sees it: it counts what was applied since
// the last snapshot (the policy's input) and times restores.
type raftFSM struct {
	*state.FSM
	log *slog.Logger

	entries atomic.Uint64 // command entries applied by this process
	bytes   atomic.Uint64 // their bytes

	mu        sync.Mutex
	snapAt    [2]uint64 // entries and bytes at the last snapshot
	snapIndex uint64    // Raft index of the last snapshot taken or restored
	snapSize  int64     // its size in bytes
	restore   *restoreStats
}

// restoreStats is the last snapshot this member restored.
type restoreStats struct {
	Index    uint64
	Bytes    int64
	Work     int
	Items    int
	Duration time.Duration
	At       time.Time
}

func newRaftFSM(log *slog.Logger) *raftFSM {
	return &raftFSM{FSM: state.New(), log: log}
}

// Apply implements raft.FSM.
func (f *raftFSM) Apply(l *raft.Log) any {
	f.entries.Add(1)
	f.bytes.Add(uint64(len(l.Data)))
	return f.FSM.Apply(l)
}

// sinceSnapshot returns the entries and bytes applied since the last
// snapshot, and that snapshot's size.
func (f *raftFSM) sinceSnapshot() (entries, bytes, lastSize uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.entries.Load() - f.snapAt[0], f.bytes.Load() - f.snapAt[1], uint64(f.snapSize)
}

// Snapshot implements raft.FSM. Raft calls it between applies, so the
// counters match the state; they are reset once the snapshot is written.
func (f *raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	at := [2]uint64{f.entries.Load(), f.bytes.Load()}
	var index uint64
	f.FSM.View(func(v *state.View) { index = v.Index() })
	s, err := f.FSM.Snapshot()
	if err != nil {
		return nil, err
	}
	return &countedSnapshot{FSMSnapshot: s, fsm: f, at: at, index: index}, nil
}

// Restore implements raft.FSM: at start from the newest snapshot on disk,
// later when the leader sends one to a follower far behind.
func (f *raftFSM) Restore(rc io.ReadCloser) error {
	start := time.Now()
	cr := &countingReader{r: rc}
	if err := f.FSM.Restore(struct {
		io.Reader
		io.Closer
	}{cr, rc}); err != nil {
		return err
	}
	st := restoreStats{Bytes: cr.n, Duration: time.Since(start), At: time.Now()}
	f.FSM.View(func(v *state.View) {
		st.Index = v.Index()
		for _, w := range v.All() {
			st.Work++
			if w.Job != nil {
				st.Items += w.Job.Total()
			}
		}
	})
	f.mu.Lock()
	f.snapAt = [2]uint64{f.entries.Load(), f.bytes.Load()}
	f.snapIndex, f.snapSize, f.restore = st.Index, st.Bytes, &st
	f.mu.Unlock()
	f.log.Info("restored snapshot", "index", st.Index, "bytes", st.Bytes, "work", st.Work, "items", st.Items,
		"duration", st.Duration.Round(time.Millisecond))
	return nil
}

// info describes the snapshots for `ducc status`.
func (f *raftFSM) info() wire.SnapshotInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := wire.SnapshotInfo{Index: f.snapIndex, Size: f.snapSize}
	in.SinceEntries, in.SinceBytes = f.entries.Load()-f.snapAt[0], f.bytes.Load()-f.snapAt[1]
	if r := f.restore; r != nil {
		in.RestoredIndex, in.RestoredAt, in.RestoreMS = r.Index, r.At.UnixMilli(), r.Duration.Milliseconds()
	}
	return in
}

// countedSnapshot resets the policy's counters once it is written.
type countedSnapshot struct {
	raft.FSMSnapshot
	fsm   *raftFSM
	at    [2]uint64
	index uint64
}

func (s *countedSnapshot) Persist(sink raft.SnapshotSink) error {
	cs := &countingSink{SnapshotSink: sink}
	if err := s.FSMSnapshot.Persist(cs); err != nil {
		return err
	}
	f := s.fsm
	f.mu.Lock()
	f.snapAt, f.snapIndex, f.snapSize = s.at, s.index, cs.n
	f.mu.Unlock()
	return nil
}

type countingSink struct {
	raft.SnapshotSink
	n int64
}

func (s *countingSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	s.n += int64(n)
	return n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// snapshotter takes a snapshot whenever the policy asks for one, until
// ctx ends. Raft's own check (SnapshotThreshold every SnapshotInterval)
// is only a backstop.
func (c *candidate) snapshotter(ctx context.Context) {
	t := time.NewTimer(tick.Until(time.Now(), snapshotCheck))
	defer t.Stop()
	skip := 0 // checks left out after a failure (a full disk: retry, but not every second)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(tick.Until(time.Now(), snapshotCheck))
		}
		if skip > 0 {
			skip--
			continue
		}
		entries, bytes, lastSize := c.fsm.sinceSnapshot()
		if !c.cfg.Snapshots.due(entries, bytes, lastSize) {
			continue
		}
		start := time.Now()
		if err := c.raft.Snapshot().Error(); err != nil {
			c.log.Warn("cannot take a raft snapshot; retrying in 30 s", "entries", entries, "bytes", bytes, "err", err)
			skip = 30
			continue
		}
		in := c.fsm.info()
		first, _ := c.store.FirstIndex()
		c.log.Info("took raft snapshot", "index", in.Index, "bytes", in.Size, "entries_since", entries,
			"log_bytes_since", bytes, "log_first_index", first, "duration", time.Since(start).Round(time.Millisecond))
	}
}

// finalEntries: a member that stops with at least this many entries
// applied since its last snapshot takes one more, so that its next start
// replays next to nothing (a crash still replays up to the policy's
// threshold).
const finalEntries = 256

// finalSnapshot takes a snapshot before a clean stop when finalEntries or
// more were applied since the last one.
func (c *candidate) finalSnapshot() {
	entries, bytes, _ := c.fsm.sinceSnapshot()
	if entries < finalEntries {
		return
	}
	start := time.Now()
	if err := c.raft.Snapshot().Error(); err != nil {
		c.log.Warn("cannot take a raft snapshot before stopping; the next start replays more log", "entries", entries, "err", err)
		return
	}
	c.log.Info("took raft snapshot before stopping", "index", c.fsm.info().Index, "entries_since", entries,
		"log_bytes_since", bytes, "duration", time.Since(start).Round(time.Millisecond))
}

// reportReplay logs how long the start took once the log entries after
// the restored snapshot, up to last (the log's last index at start), are
// applied; a member applies them once it knows they are committed.
func (c *candidate) reportReplay(ctx context.Context, started time.Time, last uint64) {
	if last == 0 {
		return // no log yet: a new member
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for c.raft.AppliedIndex() < last {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	var snap uint64
	if r := c.fsm.info(); r.RestoredIndex != 0 {
		snap = r.RestoredIndex
	}
	c.log.Info("replayed raft log", "snapshot_index", snap, "entries", last-min(last, snap),
		"since_start", time.Since(started).Round(time.Millisecond))
}
