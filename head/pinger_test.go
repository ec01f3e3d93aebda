package head

import (
	"context"
	"testing"

	"github.com/ducc-project/ducc/head/orch"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/head/state/statetest"
	"github.com/ducc-project/ducc/wire"
)

type fakePingers struct{ node, peer string }

func (f *fakePingers) RunPinger(_ context.Context, node, peer string, req wire.PingRunRequest) (wire.PingRunReply, error) {
	f.node, f.peer = node, peer
	return wire.PingRunReply{Answer: wire.PingAnswer{Alive: true, Info: req.Path}}, nil
}

// TestRunPinger: the Service Manager's custom pings go to the chosen node's
// agent, or to this head's own node when no node is chosen or the chosen
// one is unknown.
func TestRunPinger(t *testing.T) {
	fsm := state.New()
	fp := &fakePingers{}
	h := &Head{cfg: Config{Node: "head", Peer: "P0", Pingers: fp}}
	h.orch = orch.New(orch.Config{FSM: fsm, Apply: &statetest.Applier{FSM: fsm}})
	h.orch.Heartbeat(context.Background(), wire.Heartbeat{Node: "n2", Seq: 1}, "P2")
	tests := []struct{ node, wantNode, wantPeer string }{
		{"n2", "n2", "P2"},
		{"", "head", "P0"},
		{"n9", "head", "P0"},
	}
	for _, tc := range tests {
		r, err := h.runPinger(context.Background(), tc.node, wire.PingRunRequest{Path: "/p"})
		if err != nil || r.Answer.Info != "/p" || fp.node != tc.wantNode || fp.peer != tc.wantPeer {
			t.Errorf("node %q: ran on %q (%q): %+v %v, want %q (%q)", tc.node, fp.node, fp.peer, r, err, tc.wantNode, tc.wantPeer)
		}
	}
	h.cfg.Pingers = nil
	if _, err := h.runPinger(context.Background(), "n2", wire.PingRunRequest{}); err == nil {
		t.Error("a head without pingers ran one")
	}
}
