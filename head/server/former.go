package server

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// eligiblePeer is a head-eligible agent seen in a heartbeat.
type eligiblePeer struct {
	waiting bool
	seen    time.Time
	node    string // its node name
	raft    string // its Raft state, as its heartbeat carries it
}

// former forms or joins the head group for a member without Raft state:
// it bootstraps when bootstrap_expect eligible agents, none in a group
// yet, see each other, and otherwise asks the leader to add it.
type former struct {
	s   *Server
	now func() time.Time

	mu    sync.Mutex
	peers map[peer.ID]eligiblePeer
	// known is when this server first saw each member in the head
	// group's configuration (Server.members).
	known map[peer.ID]time.Time
}

func newFormer(s *Server) *former {
	return &former{s: s, now: s.cfg.Now, peers: map[peer.ID]eligiblePeer{}, known: map[peer.ID]time.Time{}}
}

// saw records a heartbeat of a head-eligible agent.
func (f *former) saw(from peer.ID, hb wire.Heartbeat) {
	if !hb.HeadEligible {
		return
	}
	f.mu.Lock()
	f.peers[from] = eligiblePeer{waiting: hb.Raft == wire.RaftWaiting, seen: f.now(), node: hb.Node, raft: hb.Raft}
	f.mu.Unlock()
}

// run returns once this server is a member of the head group.
func (f *former) run(ctx context.Context) {
	c, cfg, log := f.s.cand, &f.s.cfg, f.s.log
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	logged := time.Time{}
	for !c.Member() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		self := cfg.Host.ID()
		if leader := cfg.FollowedLeader(); leader != "" && leader != self {
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			err := p2p.Call(cctx, cfg.Host, leader, wire.MethodRaftJoin, wire.Caller{Node: cfg.Node}, wire.Empty{}, &wire.Empty{})
			cancel()
			if err != nil {
				log.Warn("asking the head to add this agent to the head group failed; retrying", "head", leader, "err", err)
				continue
			}
			log.Info("the head added this agent to the head group", "head", leader)
			continue // Member() turns true once the leader's configuration arrives
		}
		group, ok := f.group()
		if !ok {
			if time.Since(logged) > 10*time.Second {
				log.Info("waiting for head-eligible agents to bootstrap the head group",
					"seen", len(group), "bootstrap_expect", cfg.BootstrapExpect)
				logged = time.Now()
			}
			continue
		}
		if !slices.Contains(group, self.String()) {
			continue // the group forms without us; we join through its leader
		}
		if err := c.Bootstrap(group); err != nil {
			log.Error("cannot bootstrap the head group", "err", err)
		}
	}
}

// group returns the first Raft group: the bootstrap_expect smallest peer
// ids among the waiting eligible agents seen recently (this one included),
// and whether there are enough of them.
func (f *former) group() ([]string, bool) {
	cfg := &f.s.cfg
	fresh := 3*cfg.Heartbeat + time.Second
	self := cfg.Host.ID()
	ids := []string{self.String()}
	now := f.now()
	f.mu.Lock()
	for p, e := range f.peers {
		if e.waiting && now.Sub(e.seen) < fresh && p != self {
			ids = append(ids, p.String())
		}
	}
	f.mu.Unlock()
	slices.Sort(ids)
	if len(ids) < cfg.BootstrapExpect {
		return ids, false
	}
	return ids[:cfg.BootstrapExpect], true
}
