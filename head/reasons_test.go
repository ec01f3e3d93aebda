package head_test

import (
	"strings"
	"testing"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// TestWaitingWorkSaysWhyInACode checks the reason code next to the prose,
// the memory cap with its quantum, and that a reason to wait is not given
// to work that runs.
func TestWaitingWorkSaysWhyInACode(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.node("n1", 4*gib)
	var list wire.NodeList
	f.mustCall(t, wire.MethodNodeAdmin, root, wire.NodeAdminRequest{Node: "n1", State: string(state.NodeVariedOff)}, &list)
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: 256 << 20})
	eventually(t, "the run waits: no node is up", func() bool { return f.show(t, id).ReasonCode == wire.ReasonNoNodes })
	info := f.show(t, id)
	if !strings.Contains(info.Reason, "is up to hold 1 GiB") || info.Held != "" {
		t.Errorf("reason %q held %q", info.Reason, info.Held)
	}
	if info.Memory != 256<<20 || info.MemoryCap != gib || info.Quantum != gib {
		t.Errorf("memory %d cap %d quantum %d; want 256 MiB capped at 1 GiB, the quantum", info.Memory, info.MemoryCap, info.Quantum)
	}
	f.mustCall(t, wire.MethodNodeAdmin, root, wire.NodeAdminRequest{Node: "n1"}, &list)
	p := f.waitProc(t, id)
	eventually(t, "the running run has no reason to wait", func() bool {
		info := f.show(t, id)
		return info.Reason == "" && info.ReasonCode == "" && len(info.Nodes) == 1 && info.Nodes[0] == p.Node
	})
}

func TestReasonCodesAreListed(t *testing.T) {
	seen := map[wire.ReasonCode]bool{}
	for _, c := range wire.ReasonCodes {
		if seen[c] || c == "" || strings.ContainsAny(string(c), " :") {
			t.Errorf("reason code %q: empty, repeated or not one word", c)
		}
		seen[c] = true
	}
}
