package head

import (
	"context"
	"errors"

	"github.com/ducc-project/ducc/wire"
)

// PingRunner runs a custom service pinger on a node's agent (peer is the
// node's libp2p id); the agent starts it through proc. The agent
// implements it, as it implements orch.Pusher.
type PingRunner interface {
	RunPinger(ctx context.Context, node, peer string, req wire.PingRunRequest) (wire.PingRunReply, error)
}

// runPinger is the Service Manager's sm.PingRunner: it runs the pinger on
// node, or on this head's own node when node is "" or unknown to the
// orchestrator.
func (h *Head) runPinger(ctx context.Context, node string, req wire.PingRunRequest) (wire.PingRunReply, error) {
	if h.cfg.Pingers == nil {
		return wire.PingRunReply{}, errors.New("this head has no agent to run custom pingers")
	}
	peer, ok := h.orch.Peer(node)
	if node == "" || !ok {
		node, peer = h.cfg.Node, h.cfg.Peer
	}
	return h.cfg.Pingers.RunPinger(ctx, node, peer, req)
}
