package agent

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/wire"
)

func TestLeaderTracker(t *testing.T) {
	l := newLeaderTracker()
	p, ch := l.get()
	if p != "" {
		t.Fatalf("leader %q at start", p)
	}
	if !l.set(peer.ID("a")) {
		t.Error("a first leader is not a change")
	}
	select {
	case <-ch:
	default:
		t.Error("the change did not close the channel")
	}
	p, ch = l.get()
	if p != "a" || l.set("a") {
		t.Errorf("leader %q; setting it again changed it", p)
	}
	select {
	case <-ch:
		t.Error("the channel closed without a change")
	default:
	}
}

func TestLedger(t *testing.T) {
	l := newLedger()
	l.ended(wire.ProcStatus{ID: "2.1", State: wire.ProcExited})
	l.ended(wire.ProcStatus{ID: "1.1", State: wire.ProcExited})
	seq, applied, unacked := l.next()
	if seq != 1 || applied != 0 || len(unacked) != 2 || unacked[0].ID != "1.1" {
		t.Fatalf("next: %d %d %+v", seq, applied, unacked)
	}
	steps := []struct {
		ds      wire.DesiredState
		applied bool
		left    int
	}{
		{wire.DesiredState{Version: 2, Ack: []string{"1.1"}}, true, 1},
		{wire.DesiredState{Version: 2, Ack: []string{"2.1"}}, false, 1}, // not newer: ignored
		{wire.DesiredState{Version: 1, Ack: []string{"2.1"}}, false, 1},
		{wire.DesiredState{Version: 3, Ack: []string{"2.1", "9.9"}}, true, 0},
		{wire.DesiredState{Version: 1 << 30, Incarnation: "a"}, true, 0}, // the first incarnation named
		{wire.DesiredState{Version: 5, Incarnation: "a"}, false, 0},
		{wire.DesiredState{Version: 5, Incarnation: "b"}, true, 0}, // a new incarnation's versions start anew
	}
	for i, s := range steps {
		if got := l.apply(s.ds); got != s.applied {
			t.Errorf("step %d: apply = %v", i, got)
		}
		seq, applied, unacked := l.next()
		if seq != uint64(i+2) || len(unacked) != s.left || (s.applied && applied != s.ds.Version) {
			t.Errorf("step %d: next: %d %d %+v", i, seq, applied, unacked)
		}
	}
}

func TestBusySet(t *testing.T) {
	b := newBusySet()
	if !b.begin("1.1") || b.begin("1.1") {
		t.Error("begin twice")
	}
	b.end("1.1")
	if !b.begin("1.1") {
		t.Error("begin after end")
	}
}

// The heartbeat shaper sees a new head when the leader or its term
// changes, and whether that head pushed this node; the announced
// interval is kept.
func TestLeaderTrackerHead(t *testing.T) {
	l := newLeaderTracker()
	if h, pushed := l.head(); h != "" || pushed || l.heartbeatInterval() != 0 {
		t.Fatalf("fresh tracker: %q %v %v", h, pushed, l.heartbeatInterval())
	}
	l.announced(3, 2500*time.Millisecond)
	l.set("peerA")
	a3, pushed := l.head()
	if pushed {
		t.Error("pushed before any push")
	}
	l.pushedBy("peerB") // not the followed head
	if _, pushed := l.head(); pushed {
		t.Error("a push from another peer counts")
	}
	l.pushedBy("peerA")
	l.announced(3, 2500*time.Millisecond)
	if h, pushed := l.head(); h != a3 || !pushed || l.heartbeatInterval() != 2500*time.Millisecond {
		t.Errorf("same announcement: %q %v, %v", h, pushed, l.heartbeatInterval())
	}
	l.announced(4, 0)
	if h, pushed := l.head(); h == a3 || pushed || l.heartbeatInterval() != 0 {
		t.Errorf("new term: %q %v, %v", h, pushed, l.heartbeatInterval())
	}
}

// TestLedgerNewIncarnationDropsUnacked: ended processes of an earlier
// incarnation are not reported to the next one's head.
func TestLedgerNewIncarnationDropsUnacked(t *testing.T) {
	l := newLedger()
	l.apply(wire.DesiredState{Version: 9 << 20, Incarnation: "a"})
	l.ended(wire.ProcStatus{ID: "1.1", State: wire.ProcExited})
	if !l.apply(wire.DesiredState{Version: 1, Incarnation: "b"}) {
		t.Fatal("a new incarnation's first desired state was ignored")
	}
	if _, applied, unacked := l.next(); applied != 1 || len(unacked) != 0 {
		t.Errorf("after a new incarnation: applied %d, unacknowledged %+v", applied, unacked)
	}
}
