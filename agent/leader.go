package agent

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
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
		p2p.LearnAddrs(a.host, p, ann.Addrs)
		a.leader.announced(ann.Term, time.Duration(ann.HeartbeatMS)*time.Millisecond)
		if a.leader.set(p) { // abandons calls in flight to the old head
			a.log.Info("following head", "head", ann.Node, "peer", ann.PeerID, "term", ann.Term)
		}
	}
}

// writeProblem says why there is no head when the reason is this node's
// own: its head server cannot write the data directory (a full disk), so
// it stepped down and will not lead until it can write again. The error
// is errNoHead's kind, so callers wait for a head as they do for it.
func (a *Agent) writeProblem() error {
	if a.server == nil {
		return nil
	}
	if err := a.server.WriteProblem(); err != nil {
		return &wire.CodedError{Code: wire.CodeUnreachable, Msg: "no head: " + err.Error(), Err: errNoHead}
	}
	return nil
}
