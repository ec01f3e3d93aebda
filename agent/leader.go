package agent

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

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
		wire.LearnAddrs(a.host, p, ann.Addrs)
		a.leader.announced(ann.Term, time.Duration(ann.HeartbeatMS)*time.Millisecond)
		if a.leader.set(p) { // abandons calls in flight to the old head
			a.log.Info("following head", "head", ann.Node, "peer", ann.PeerID, "term", ann.Term)
		}
	}
}
