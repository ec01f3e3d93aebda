package agent

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
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

// TestLeaderTrackerKnows: the node is known to the head it follows once
// that head pushed it a desired state, also when the push came before the
// agent followed the head's announcement; a push from another peer, or
// one from an earlier head, does not count; every change closes the
// channel.
func TestLeaderTrackerKnows(t *testing.T) {
	steps := []struct {
		name  string
		do    func(l *leaderTracker)
		known bool
	}{
		{"fresh", func(*leaderTracker) {}, false},
		{"push before the announcement", func(l *leaderTracker) { l.pushedBy("peerA") }, false},
		{"follows the head that pushed", func(l *leaderTracker) { l.set("peerA") }, true},
		{"a push from another peer", func(l *leaderTracker) { l.pushedBy("peerB") }, false},
		{"the followed head again", func(l *leaderTracker) { l.pushedBy("peerA") }, true},
		{"a new head", func(l *leaderTracker) { l.set("peerC") }, false},
		{"the old head, late", func(l *leaderTracker) { l.pushedBy("peerA") }, false},
		{"the new head", func(l *leaderTracker) { l.pushedBy("peerC") }, true},
		{"back to the old head, which never pushed in its new term", func(l *leaderTracker) { l.set("peerA") }, false},
	}
	l := newLeaderTracker()
	for _, s := range steps {
		_, ch := l.knows()
		s.do(l)
		known, _ := l.knows()
		if known != s.known {
			t.Errorf("%s: knows = %v, want %v", s.name, known, s.known)
		}
		if s.name == "fresh" {
			continue
		}
		select {
		case <-ch:
		default:
			t.Errorf("%s: the change did not close the channel", s.name)
		}
	}
}

// TestOthersNotice: 'ducc logs N' of a work with several processes says
// which process's log it shows and how to see the others; with one
// process, or a process asked for, it says nothing.
func TestOthersNotice(t *testing.T) {
	two := wire.WorkInfo{ID: 5, Procs: []wire.ProcInfo{{ID: "5.1", Node: "n1"}, {ID: "5.2", Node: "n2"}}}
	one := wire.WorkInfo{ID: 6, Procs: []wire.ProcInfo{{ID: "6.1", Node: "n1"}}}
	tests := []struct {
		name   string
		info   wire.WorkInfo
		procID string
		want   string
	}{
		{"two processes", two, "", "showing the log of process 5.1 of work 5 (on n1); its other processes: 5.2 ('ducc logs 5 --process ID' shows one)"},
		{"one asked for", two, "5.2", ""},
		{"one process", one, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := othersNotice(tc.info, pickProc(tc.info, tc.procID), tc.procID); got != tc.want {
				t.Errorf("notice %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAttachedOutputLeavesOutTheCapLine: an attached 'ducc run' prints the
// process's output as its own stdout, without the line the shim appends
// to the log when the memory cap struck ('ducc run' says it on stderr);
// a line of the process's own that only looks like it, followed by more
// output, is kept, and a detached log keeps everything.
func TestAttachedOutputLeavesOutTheCapLine(t *testing.T) {
	const capLine = "ducc: process 1.1 exited normally; memory cap hit: 1 process killed by the OOM killer (cap 512 MiB)\n"
	tests := []struct {
		name     string
		attached bool
		chunks   []string
		want     string
	}{
		{"attached", true, []string{"Killed\nsurv", "ived\n", "ducc: pro", capLine[len("ducc: pro"):]}, "Killed\nsurvived\n"},
		{"attached, in one chunk", true, []string{"survived\n" + capLine}, "survived\n"},
		{"attached, look-alike then more", true, []string{"ducc: process says hi\n", "bye\n"}, "ducc: process says hi\nbye\n"},
		{"attached, partial last line", true, []string{"ducc: proc"}, "ducc: proc"},
		{"detached", false, []string{"survived\n", capLine}, "survived\n" + capLine},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			ev := newEventWriter(rec)
			ev.attached = tc.attached
			for _, c := range tc.chunks {
				if err := ev.send(wire.AttachEvent{Output: []byte(c)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := ev.send(wire.AttachEvent{Work: &wire.WorkInfo{ID: 1}}); err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			dec := json.NewDecoder(rec.Body)
			for {
				var e wire.AttachEvent
				if err := dec.Decode(&e); err != nil {
					break
				}
				got.Write(e.Output)
			}
			if got.String() != tc.want {
				t.Errorf("output %q, want %q", got.String(), tc.want)
			}
		})
	}
}
