package agent

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/head"
	"github.com/ducc-project/ducc/wire"
)

// followLeader tracks the head's announcements.
func (a *Agent) followLeader(ctx context.Context) {
	sub, err := a.leadT.Subscribe()
	if err != nil {
		a.log.Error("cannot subscribe to leader announcements", "err", err)
		return
	}
	defer sub.Cancel()
	var term uint64
	for {
		ann, _, err := sub.Next(ctx)
		if err != nil {
			return
		}
		p, err := peer.Decode(ann.PeerID)
		if err != nil || ann.Term < term {
			continue
		}
		term = ann.Term
		a.learnAddrs(p, ann.Addrs)
		a.mu.Lock()
		changed := a.leader != p
		a.leader = p
		if changed {
			close(a.newHead) // abandons calls in flight to the old head
			a.newHead = make(chan struct{})
		}
		a.mu.Unlock()
		if changed {
			a.log.Info("following head", "head", ann.Node, "peer", ann.PeerID, "term", ann.Term)
		}
	}
}

// announceLoop announces this agent as head while it is the leader: at
// once when it becomes head, then every heartbeat period.
func (a *Agent) announceLoop(ctx context.Context) {
	if a.cands == nil {
		return
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	var last time.Time
	var was *head.Head
	for {
		h := a.cands.Head()
		if h != nil && (h != was || time.Since(last) >= a.cfg.Heartbeat.D()) {
			last = time.Now()
			ann := wire.LeaderAnnounce{PeerID: a.host.ID().String(), Node: a.cfg.Node,
				Term: a.cands.Raft().CurrentTerm(), Time: time.Now().UnixMilli()}
			for _, addr := range a.host.Addrs() {
				ann.Addrs = append(ann.Addrs, addr.String())
			}
			if err := a.leadT.Publish(ctx, ann); err != nil && ctx.Err() == nil {
				a.log.Warn("cannot announce head", "err", err)
			}
		}
		was = h
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
