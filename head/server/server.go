package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/head"
	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/tick"
	"github.com/ducc-project/ducc/web"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// Config configures a head server.
type Config struct {
	// Host is this node's libp2p host; Heartbeats and Leaders are its
	// topics (joined once per host, so the caller shares them).
	Host       host.Host
	Heartbeats *p2p.Topic[wire.Heartbeat]
	Leaders    *p2p.Topic[wire.LeaderAnnounce]

	// DataDir holds the Raft log (DataDir/raft).
	DataDir string
	// BootstrapExpect is how many head-eligible agents form the first
	// Raft group (1: this one alone, at once).
	BootstrapExpect int
	// BootstrapNew starts a new, empty cluster on purpose when the Raft
	// state in DataDir is corrupt or missing (`ducc agent
	// --bootstrap-new`): the old state is moved aside. Without it such a
	// state is a *RaftStateError and the server does not start.
	BootstrapNew bool
	// Elect is the Raft heartbeat and election timeout (500 ms if zero).
	Elect time.Duration
	// Heartbeat is the agents' heartbeat period: the server announces
	// itself this often while it leads, and counts an eligible agent as
	// present for a few periods after its last heartbeat (1 s if zero).
	Heartbeat time.Duration

	// Node is this node's name and Version the build's.
	Node    string
	Version string
	// Scheduler is the scheduler configuration of the config file (a
	// configuration applied with `ducc admin reconfigure` wins over it).
	Scheduler      *rm.Config
	Administrators []string
	// NodeTimeout is how long a node may miss heartbeats before it is
	// declared down, at the Heartbeat interval; it grows in proportion
	// when the head stretches the interval.
	NodeTimeout time.Duration
	// FailoverGrace is the time every node has, from the start of a
	// term, to send the new head its first heartbeat before anything is
	// declared down (NodeTimeout if zero or shorter).
	FailoverGrace time.Duration
	// DeadServerCleanup is how long a member of the head group may stay
	// unreachable before the head removes it, once enough other members
	// stand in for it (see cleanupDeadServers; 5 minutes if zero).
	DeadServerCleanup time.Duration
	// MaxHeartbeatsPerSecond bounds the head's heartbeat intake: with more
	// nodes than that per Heartbeat, the head announces a longer interval
	// (nodes / MaxHeartbeatsPerSecond) and agents follow it. Zero: never.
	MaxHeartbeatsPerSecond int
	// Retention says how long finished work, results and accounting
	// records are kept (head defaults for the times left zero).
	Retention Retention
	// ServiceMonitors is the folder of registered pingers (head.Config).
	ServiceMonitors string
	// DefaultBrokerURL is the cluster's UIMA-AS broker
	// (head.default_broker_url; head.Config).
	DefaultBrokerURL string
	// Metrics are the head's metrics (nil-safe).
	Metrics *web.HeadMetrics
	// Pingers runs custom service pingers on agents (the agent this
	// server runs in); nil in a simulation, where custom pings fail.
	Pingers head.PingRunner
	// FollowedLeader returns the head this node follows (from the leader
	// announcements), or "". A new member asks it to be added to the Raft
	// group. Nil means no leader is followed: the group only bootstraps.
	FollowedLeader func() peer.ID
	// LocalDesired takes the desired state of this server's own node
	// (Node). Nil when this node runs no work.
	LocalDesired func(wire.DesiredState)
	// WebTokenKey signs the dashboard tokens the head mints
	// (wire.MethodWebToken, wire.WebTokenKey); nil: the head mints none.
	WebTokenKey []byte
	// WebTokenValidity is how long a dashboard token is valid by default
	// and at most (web.token_validity; DefaultWebTokenValidity if zero).
	WebTokenValidity time.Duration
	// DevLogs marks a dev cluster's head (head.Config.DevLogs).
	DevLogs bool
	// Hooks observe the server (for measurements); nil hooks are skipped.
	Hooks  Hooks
	Logger *slog.Logger
	// Now is the clock that decides which members of the head group are
	// unreachable (time.Now if nil).
	Now func() time.Time
	// snapshots is the Raft snapshot policy; zero takes the defaults
	// (snapshots.go), tests set smaller thresholds.
	snapshots snapshotPolicy
}

// Retention is head.Retention, for the agent, which does not import head.
type Retention = head.Retention

// Hooks observe a server. They run on the server's goroutines and must
// return quickly.
type Hooks struct {
	// Heartbeat runs after the head folded in a heartbeat that arrived at
	// received and took took to fold in.
	Heartbeat func(hb wire.Heartbeat, received time.Time, took time.Duration)
	// Pushed runs after every desired-state push to another node.
	Pushed func(node string, err error)
}

// Server is the head side of a head-eligible node: a Raft member that runs
// a head.Head while it leads, with everything around it.
type Server struct {
	cfg    Config
	log    *slog.Logger
	cand   *candidate
	former *former
}

// New opens the Raft log and prepares the server; Run starts it.
func New(cfg Config) (*Server, error) {
	if cfg.Host == nil || cfg.Heartbeats == nil || cfg.Leaders == nil {
		return nil, errors.New("head server: a host and its heartbeat and leader topics are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.BootstrapExpect < 1 {
		cfg.BootstrapExpect = 1
	}
	if cfg.FollowedLeader == nil {
		cfg.FollowedLeader = func() peer.ID { return "" }
	}
	if cfg.DeadServerCleanup <= 0 {
		cfg.DeadServerCleanup = 5 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WebTokenValidity <= 0 {
		cfg.WebTokenValidity = DefaultWebTokenValidity
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "head-server")}
	hc := head.Config{
		Node: cfg.Node, Peer: cfg.Host.ID().String(), Version: cfg.Version, Push: s, Pingers: cfg.Pingers,
		Scheduler: cfg.Scheduler, Administrators: cfg.Administrators, NodeTimeout: cfg.NodeTimeout,
		Heartbeat: cfg.Heartbeat, MaxHeartbeatsPerSecond: cfg.MaxHeartbeatsPerSecond,
		Metrics: cfg.Metrics, Logger: cfg.Logger, FailoverGrace: cfg.FailoverGrace, Voters: s.voters,
		Retention: cfg.Retention, ServiceMonitors: cfg.ServiceMonitors, DefaultBrokerURL: cfg.DefaultBrokerURL, DevLogs: cfg.DevLogs,
		Snapshots: func() wire.SnapshotInfo { return s.cand.fsm.info() },
	}
	cand, err := newCandidate(candidateConfig{
		DataDir: cfg.DataDir, Host: cfg.Host, BootstrapExpect: cfg.BootstrapExpect, BootstrapNew: cfg.BootstrapNew,
		Logger: cfg.Logger, Elect: cfg.Elect, HeadConfig: hc, Snapshots: cfg.snapshots,
	})
	if rse := (*RaftStateError)(nil); errors.As(err, &rse) {
		return nil, rse // says all there is to say
	}
	if err != nil {
		return nil, fmt.Errorf("head server: %w", err)
	}
	s.cand = cand
	s.former = newFormer(s)
	return s, nil
}

// Run runs the Raft member (and the head while it leads), forms or joins
// the Raft group, takes heartbeats in and announces leadership, until ctx
// ends. Close it afterwards.
func (s *Server) Run(ctx context.Context) {
	loops := []func(context.Context){s.cand.Run, s.former.run, s.announce, s.autopilot}
	if sub, err := s.cfg.Heartbeats.Subscribe(); err != nil {
		s.log.Error("cannot subscribe to heartbeats; the head will see no node", "err", err)
	} else {
		loops = append(loops, func(ctx context.Context) { s.takeHeartbeats(ctx, sub) })
	}
	var wg sync.WaitGroup
	for _, f := range loops {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	wg.Wait()
}

// Close shuts Raft down and closes the log; the context of Run must have
// ended (Run may still be winding down).
func (s *Server) Close() error { return s.cand.Close() }

// Head returns the head of the current term, or nil when this server does
// not lead.
func (s *Server) Head() *head.Head { return s.cand.Head() }

// Leading reports whether this server runs the head now.
func (s *Server) Leading() bool { return s.cand.Head() != nil }

// RaftState is this member's Raft standing as heartbeats carry it:
// wire.RaftWaiting before it belongs to a group, else Leader, Follower,
// Candidate or Shutdown.
func (s *Server) RaftState() string {
	if !s.cand.Member() {
		return wire.RaftWaiting
	}
	return s.cand.Raft().State().String()
}

// Handle answers one RPC addressed to the head; it is a wire.Handler. A
// server that does not lead answers wire.NotHead.
func (s *Server) Handle(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
	m, ok := wire.LookupMethod(req.Method)
	if !ok || !m.ToHead() {
		return nil, wire.Errorf(wire.CodeUsage, "unknown method %q", req.Method)
	}
	h := s.cand.Head()
	if h == nil {
		return nil, wire.NotHead(s.cfg.Node)
	}
	if m.Name == wire.MethodRaftJoin {
		if err := s.cand.AddVoter(from.String()); err != nil {
			return nil, err
		}
		s.cleanupDeadServers() // the newcomer may stand in for a dead member
		return wire.Empty{}, nil
	}
	body := m.NewRequest()
	if err := req.DecodeBody(body); err != nil {
		return nil, err
	}
	if m.Name == wire.MethodRemoveServer {
		return s.removeServer(h, req.Caller, body.(*wire.RemoveServerRequest).Server)
	}
	if m.Name == wire.MethodWebToken {
		return s.webToken(req.Caller, *body.(*wire.WebTokenRequest))
	}
	return Dispatch(ctx, h, m.Name, req.Caller, body)
}

// Call runs a head method in process, encoding the request and the reply
// as the wire would, so that it behaves as a call from another node.
func (s *Server) Call(ctx context.Context, method string, c wire.Caller, req, resp any) error {
	return p2p.CallLocal(ctx, s.Handle, s.cfg.Host.ID(), method, c, req, resp, p2p.WithServeLogger(s.cfg.Logger))
}

// PushDesired sends a node its desired state: over the wire, or to
// Config.LocalDesired for this server's own node. It implements
// orch.Pusher.
func (s *Server) PushDesired(ctx context.Context, node, peerID string, ds wire.DesiredState) error {
	if node == s.cfg.Node {
		if s.cfg.LocalDesired == nil {
			return fmt.Errorf("node %s runs no work", node)
		}
		s.cfg.LocalDesired(ds)
		return nil
	}
	err := s.push(ctx, node, peerID, ds)
	if s.cfg.Hooks.Pushed != nil {
		s.cfg.Hooks.Pushed(node, err)
	}
	return err
}

func (s *Server) push(ctx context.Context, node, peerID string, ds wire.DesiredState) error {
	p, err := peer.Decode(peerID)
	if err != nil {
		return fmt.Errorf("node %s has bad peer id %q: %w", node, peerID, err)
	}
	return p2p.Call(ctx, s.cfg.Host, p, wire.MethodDesired, wire.Caller{Node: s.cfg.Node}, ds, &wire.Empty{})
}

// takeHeartbeats feeds heartbeats to the head while this server leads,
// learns the senders' addresses (to push to them) and tells the former
// which head-eligible agents are about.
//
// Only head-eligible agents run a server and so subscribe: a worker never
// needs the others' heartbeats, and with thousands of nodes receiving them
// all would cost every agent (measured with ducc sim, docs/performance.md).
func (s *Server) takeHeartbeats(ctx context.Context, sub *p2p.Subscription[wire.Heartbeat]) {
	defer sub.Cancel()
	for {
		hb, from, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				s.log.Warn("heartbeat subscription ended", "err", err)
			}
			return
		}
		// Heartbeats are unsigned: the peer id is the sender's claim, as
		// the node name always was. The peer that delivered it is a
		// cluster member, but not necessarily the sender (another head
		// candidate may have forwarded it), so the claim is not checked
		// against it (docs/decisions.md, "Unsigned gossip").
		sender, err := peer.Decode(hb.PeerID)
		if err != nil {
			s.log.Warn("ignoring a heartbeat with a bad peer id", "node", hb.Node, "peer", hb.PeerID, "from", from, "err", err)
			continue
		}
		p2p.LearnAddrs(s.cfg.Host, sender, hb.Addrs)
		s.former.saw(sender, hb)
		if h := s.cand.Head(); h != nil {
			t0 := time.Now()
			h.Heartbeat(ctx, hb, hb.PeerID)
			if s.cfg.Hooks.Heartbeat != nil {
				s.cfg.Hooks.Heartbeat(hb, t0, time.Since(t0))
			}
		}
	}
}

// announce announces this server as head while it leads: at once when it
// becomes head, then every heartbeat period, with the heartbeat interval
// agents should use. It sleeps while this server does not lead.
func (s *Server) announce(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		h, changed := s.cand.HeadAndChange()
		var due <-chan time.Time
		if h != nil {
			ann := wire.LeaderAnnounce{PeerID: s.cfg.Host.ID().String(), Node: s.cfg.Node,
				Term: s.cand.Raft().CurrentTerm(), Time: time.Now().UnixMilli(),
				HeartbeatMS: h.HeartbeatInterval().Milliseconds()}
			for _, addr := range s.cfg.Host.Addrs() {
				ann.Addrs = append(ann.Addrs, addr.String())
			}
			if err := s.cfg.Leaders.Publish(ctx, ann); err != nil && ctx.Err() == nil {
				s.log.Warn("cannot announce head", "err", err)
			}
			t.Reset(tick.Until(time.Now(), s.cfg.Heartbeat))
			due = t.C
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-due:
		}
	}
}
