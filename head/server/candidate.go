package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/libp2p/go-libp2p/core/host"

	"github.com/ducc-project/ducc/head"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/tick"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// candidateConfig configures a head-eligible agent's Raft member.
type candidateConfig struct {
	DataDir         string
	Host            host.Host
	BootstrapExpect int
	Logger          *slog.Logger
	// Elect is the Raft heartbeat/election timeout (500 ms by default).
	Elect time.Duration
	// HeadConfig is the template for the head started on leadership.
	HeadConfig head.Config
	// BootstrapNew moves an unusable Raft state aside and starts as a
	// new member (openRaftStore).
	BootstrapNew bool
	// Snapshots is the snapshot policy (zero: the defaults).
	Snapshots snapshotPolicy
}

// candidate is a Raft member that runs a Head while it is the leader.
type candidate struct {
	cfg   candidateConfig
	log   *slog.Logger
	raft  *raft.Raft
	fsm   *raftFSM
	store *raftboltdb.BoltStore
	guard *writeGuard // the store as Raft sees it: says why writes fail
	trans *raft.NetworkTransport

	member atomic.Bool
	commit *committer
	// started is when newCandidate began and lastAtStart the log's last
	// index then: the replay of the log after the snapshot is reported
	// (reportReplay).
	started     time.Time
	lastAtStart uint64

	mu   sync.Mutex
	head *head.Head
	// headChanged is closed, and replaced, when head changes (setHead).
	headChanged chan struct{}
}

// newCandidate opens the Raft log in DataDir/raft and bootstraps a lone
// head's Raft group; a group of several forms later (Bootstrap, AddVoter).
func newCandidate(cfg candidateConfig) (*candidate, error) {
	started := time.Now()
	cfg.Snapshots = cfg.Snapshots.orDefault()
	log := cfg.Logger.With("component", "raft")
	dir := filepath.Join(cfg.DataDir, raftDirName)
	store, err := openRaftStore(cfg.DataDir, cfg.BootstrapNew, log)
	if err != nil {
		return nil, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, p2p.NewHCLogger(cfg.Logger, "raft"))
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("open raft snapshots: %w", err)
	}
	trans, err := p2p.NewRaftTransport(cfg.Host, cfg.Logger, 3, 10*time.Second)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("raft transport: %w", err)
	}
	elect := cfg.Elect
	if elect == 0 {
		elect = 500 * time.Millisecond
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.Host.ID().String())
	rc.HeartbeatTimeout = elect
	rc.ElectionTimeout = elect
	// The leader checks its lease this often: 2 wake-ups a second, idle
	// (elect/2 was 4); Raft wants it no longer than HeartbeatTimeout.
	rc.LeaderLeaseTimeout = elect
	// Raft's default: how soon an idle follower learns the commit index
	// (5 ms sent each follower ~130 empty AppendEntries a second, idle).
	rc.CommitTimeout = 50 * time.Millisecond
	// The snapshotter (snapshots.go) applies the snapshot policy every
	// second; Raft's own check, on entries only, is a backstop far behind.
	rc.SnapshotThreshold = 16 * cfg.Snapshots.Entries
	rc.SnapshotInterval = 2 * time.Minute
	rc.TrailingLogs = cfg.Snapshots.Trailing
	rc.Logger = p2p.NewHCLogger(cfg.Logger, "raft")
	fsm := newRaftFSM(log)
	guard := newWriteGuard(store, cfg.DataDir, log, nil)
	has, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("inspect raft state: %w", err)
	}
	// A lone head bootstraps at once; a group of bootstrap_expect waits
	// for its members to find each other (Bootstrap), and an agent that
	// comes later is added as a voter by the leader (AddVoter).
	if !has && cfg.BootstrapExpect <= 1 {
		conf := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: raft.ServerAddress(rc.LocalID)}}}
		if err := raft.BootstrapCluster(rc, guard, guard, snaps, trans, conf); err != nil {
			store.Close()
			return nil, fmt.Errorf("bootstrap raft: %w", err)
		}
	}
	last, err := store.LastIndex()
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("read raft log: %w", err)
	}
	r, err := raft.NewRaft(rc, fsm, guard, guard, snaps, trans)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	c := &candidate{cfg: cfg, log: log, raft: r, fsm: fsm, store: store, guard: guard, trans: trans, started: started, lastAtStart: last}
	c.commit = newCommitter(func(data []byte, timeout time.Duration) raft.ApplyFuture { return r.Apply(data, timeout) }, log)
	c.commit.observe = cfg.HeadConfig.Metrics.ObserveCommit
	if has || cfg.BootstrapExpect <= 1 {
		c.setMember()
	}
	return c, nil
}

// Member reports whether this candidate belongs to a Raft group: it had
// Raft state on disk, bootstrapped one, or sees itself in the group's
// configuration (after a leader added it).
func (c *candidate) Member() bool {
	if c.member.Load() {
		return true
	}
	f := c.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(c.cfg.Host.ID().String()) {
			c.setMember()
			return true
		}
	}
	return false
}

// Bootstrap forms the first Raft group from the given head-eligible peers
// (this one among them). Every member bootstraps with the same list, so
// they agree; a member that already has state refuses.
func (c *candidate) Bootstrap(peers []string) error {
	conf := raft.Configuration{}
	for _, p := range peers {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(p), Address: raft.ServerAddress(p)})
	}
	if err := c.raft.BootstrapCluster(conf).Error(); err != nil {
		return fmt.Errorf("bootstrap raft with %d members: %w", len(peers), err)
	}
	c.setMember()
	c.log.Info("bootstrapped the head group", "members", peers)
	return nil
}

// AddVoter adds a head-eligible peer to the Raft group; it must be called
// on the leader. Adding a member twice is harmless.
func (c *candidate) AddVoter(peerID string) error {
	if c.raft.State() != raft.Leader {
		return wire.Errorf(wire.CodeUnreachable, "this node is no longer the head; retry")
	}
	f := c.raft.AddVoter(raft.ServerID(peerID), raft.ServerAddress(peerID), 0, 10*time.Second)
	if err := f.Error(); err != nil {
		return fmt.Errorf("add %s to the head group: %w", peerID, err)
	}
	c.log.Info("added a head-eligible agent to the head group", "peer", peerID)
	return nil
}

// RemoveServer removes a member from the Raft group; it must be called on
// the leader.
func (c *candidate) RemoveServer(peerID string) error {
	if c.raft.State() != raft.Leader {
		return wire.Errorf(wire.CodeUnreachable, "this node is no longer the head; retry")
	}
	if err := c.raft.RemoveServer(raft.ServerID(peerID), 0, 10*time.Second).Error(); err != nil {
		return fmt.Errorf("remove %s from the head group: %w", peerID, err)
	}
	c.log.Info("removed a member from the head group", "peer", peerID)
	return nil
}

// FSM returns the replicated state.
func (c *candidate) FSM() *state.FSM { return c.fsm.FSM }

// Raft returns the Raft member.
func (c *candidate) Raft() *raft.Raft { return c.raft }

// Head returns the running head, or nil when this member is not the leader.
func (c *candidate) Head() *head.Head {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.head
}

// HeadAndChange returns the running head (nil when this member is not the
// leader) and a channel closed when that changes.
func (c *candidate) HeadAndChange() (*head.Head, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.headChanged == nil {
		c.headChanged = make(chan struct{})
	}
	return c.head, c.headChanged
}

// setHead sets the running head and wakes those waiting for a change.
func (c *candidate) setHead(h *head.Head) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.head = h
	if c.headChanged != nil {
		close(c.headChanged)
		c.headChanged = nil
	}
}

// Run starts and stops the head as leadership comes and goes, until ctx
// ends.
func (c *candidate) Run(ctx context.Context) {
	// The group commit outlives the head (stop, deferred below, ends the
	// head first): it answers the head's last applies.
	commitCtx, stopCommit := context.WithCancel(context.Background())
	committing := make(chan struct{})
	go func() { defer close(committing); c.commit.run(commitCtx) }()
	defer func() { stopCommit(); <-committing }()
	snapCtx, stopSnap := context.WithCancel(ctx)
	var snapping sync.WaitGroup
	snapping.Add(2)
	go func() { defer snapping.Done(); c.snapshotter(snapCtx) }()
	go func() { defer snapping.Done(); c.reportReplay(snapCtx, c.started, c.lastAtStart) }()
	defer func() { stopSnap(); snapping.Wait() }()
	var (
		cancel context.CancelFunc
		done   chan struct{}
	)
	stop := func() {
		if cancel == nil {
			return
		}
		// Stop answering as head at once; the head's goroutines may take
		// a while to wind down (pushes to unreachable nodes).
		c.setHead(nil)
		cancel()
		c.awaitHead(done, headStopWarn)
		cancel = nil
	}
	defer stop()
	obs := make(chan raft.Observation, 16)
	observer := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	c.raft.RegisterObserver(observer)
	defer c.raft.DeregisterObserver(observer)
	check := time.NewTimer(tick.Until(time.Now(), time.Second))
	defer check.Stop()
	var leaderID raft.ServerID
	for {
		c.cfg.HeadConfig.Metrics.SetRaftState(c.raft.State().String())
		if _, id := c.raft.LeaderWithID(); id != "" && id != leaderID {
			leaderID = id
			c.cfg.HeadConfig.Metrics.LeaderChanged()
		}
		leader := c.raft.State() == raft.Leader
		switch {
		case leader && cancel == nil:
			if err := c.raft.Barrier(10 * time.Second).Error(); err != nil {
				c.log.Warn("leader barrier failed", "err", err)
				break
			}
			hctx, hcancel := context.WithCancel(ctx)
			cfg := c.cfg.HeadConfig
			cfg.FSM, cfg.Apply, cfg.Raft = c.fsm.FSM, c, c.raft
			h := head.New(cfg)
			cancel, done = hcancel, make(chan struct{})
			c.setHead(h)
			go func(d chan struct{}) {
				defer close(d)
				h.Run(hctx)
			}(done)
			c.log.Info("became head", "term", c.raft.CurrentTerm())
		case !leader && cancel != nil:
			c.log.Info("lost leadership")
			stop()
		}
		select {
		case <-ctx.Done():
			return
		case <-obs:
		case <-check.C:
			check.Reset(tick.Until(time.Now(), time.Second))
		}
	}
}

// Apply commits commands through Raft; it must be called on the leader.
// Commands of concurrent callers share log entries (committer); each
// caller returns once the entry holding its commands is applied.
func (c *candidate) Apply(ctx context.Context, cmds ...state.Command) ([]state.Result, error) {
	start := time.Now()
	res, err := c.commit.Apply(ctx, cmds...)
	c.cfg.HeadConfig.Metrics.ObserveApply(time.Since(start))
	return res, err
}

// ApplyLater commits commands that need not be durable at once with the
// next entry (state.LaterApplier).
func (c *candidate) ApplyLater(cmds []state.Command, within time.Duration, then func([]state.Result, error)) {
	c.commit.ApplyLater(cmds, within, then)
}

// Close takes a last snapshot when much log was applied since the one
// before (finalSnapshot), then shuts Raft down and closes the log.
func (c *candidate) Close() error {
	c.finalSnapshot()
	c.guard.close()
	err := c.raft.Shutdown().Error()
	c.trans.Close()
	if cerr := c.store.Close(); err == nil {
		err = cerr
	}
	return err
}
