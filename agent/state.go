package agent

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/wire"
)

// The agent's mutable state is split by owner, each piece with its own
// lock: the head it follows (leaderTracker), what its heartbeats tell the
// head (ledger), and the processes being started or stopped (busySet).
// The job processes being fed and the driver processes being pumped are
// the job streams' (package feed).

// leaderTracker is the head this agent follows, from the leader
// announcements.
type leaderTracker struct {
	mu       sync.Mutex
	leader   peer.ID
	changed  chan struct{} // closed (and replaced) when the leader changes
	term     uint64        // term of the last announcement followed
	interval time.Duration // heartbeat interval the head asks for (0: none)
	pushed   string        // the head (headKey) that last pushed this node a desired state
	// pusher is the peer that last pushed this node a desired state,
	// kept while the agent follows that peer (or no one); known is closed
	// (and replaced) whenever pusher or the leader changes (knows).
	pusher peer.ID
	known  chan struct{}
}

// announced records the term and the heartbeat interval of the followed
// head's announcement.
func (l *leaderTracker) announced(term uint64, interval time.Duration) {
	l.mu.Lock()
	l.term, l.interval = term, interval
	l.mu.Unlock()
}

// heartbeatInterval returns the heartbeat interval the followed head
// announced (0: none).
func (l *leaderTracker) heartbeatInterval() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.interval
}

// head names the followed head and its term (a head elected again has a
// new term, and a fresh view of the nodes), and reports whether that head
// has pushed this node a desired state (so it holds a full heartbeat of
// it: wire.HeartbeatShaper).
func (l *leaderTracker) head() (name string, pushed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.key()
	return k, k != "" && l.pushed == k
}

// pushedBy records a desired state pushed by peer p: when p is the
// followed head, it holds a full heartbeat of this node.
func (l *leaderTracker) pushedBy(p peer.ID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p == "" {
		return
	}
	if p == l.leader {
		l.pushed = l.key()
	}
	if l.pusher != p {
		l.pusher = p
		l.notify()
	}
}

// knows reports whether the followed head knows this node: it pushed the
// node a desired state, which a head does only once it has folded in a
// full heartbeat of the node (its memory, its processes and the leftovers
// of an earlier cluster). A push that arrives before the head's
// announcement counts once the agent follows that head. The channel is
// closed at the next change of the answer's inputs (a push from another
// peer, a new leader).
func (l *leaderTracker) knows() (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader != "" && l.pusher == l.leader, l.known
}

// notify closes and replaces the channel of knows; l.mu is held.
func (l *leaderTracker) notify() {
	close(l.known)
	l.known = make(chan struct{})
}

// key names the followed head and its term; l.mu is held.
func (l *leaderTracker) key() string {
	if l.leader == "" {
		return ""
	}
	return fmt.Sprintf("%s/%d", l.leader, l.term)
}

func newLeaderTracker() *leaderTracker {
	return &leaderTracker{changed: make(chan struct{}), known: make(chan struct{})}
}

// get returns the leader ("" for none) and a channel that is closed when
// it changes.
func (l *leaderTracker) get() (peer.ID, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader, l.changed
}

// set follows p and reports whether that is a change; a change closes the
// channel of get, which abandons calls in flight to the old head.
func (l *leaderTracker) set(p peer.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leader == p {
		return false
	}
	l.leader = p
	close(l.changed)
	l.changed = make(chan struct{})
	if l.pusher != p {
		l.pusher = "" // pushed by an earlier head: the new one may not know this node yet
	}
	l.notify()
	return true
}

// ledger is what every heartbeat tells the head besides the node's
// inventory: a sequence number, the version of the desired state applied
// and the ended processes the head has not acknowledged yet.
type ledger struct {
	mu      sync.Mutex
	seq     uint64
	applied uint64
	unacked map[string]wire.ProcStatus
	// inc is the cluster incarnation of the desired state applied: the
	// versions of another incarnation's head start anew.
	inc string
}

func newLedger() *ledger { return &ledger{unacked: map[string]wire.ProcStatus{}} }

// ended records an ended process until the head acknowledges it.
func (l *ledger) ended(ps wire.ProcStatus) {
	l.mu.Lock()
	l.unacked[ps.ID] = ps
	l.mu.Unlock()
}

// reported tells whether the end of process id was reported and is not
// yet acknowledged.
func (l *ledger) reported(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.unacked[id]
	return ok
}

// apply records that the desired state ds is applied and forgets what it
// acknowledges. It returns false, changing nothing, when ds is not newer
// than the state applied. A desired state of another cluster incarnation
// than the one applied is newer whatever its version, and the ended
// processes not acknowledged are dropped: the new incarnation's head
// knows nothing of them (a report could end its process of the same id).
func (l *ledger) apply(ds wire.DesiredState) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ds.Incarnation != "" && ds.Incarnation != l.inc {
		if l.inc != "" {
			l.applied = 0
			clear(l.unacked)
		}
		l.inc = ds.Incarnation
	}
	if ds.Version <= l.applied {
		return false
	}
	l.applied = ds.Version
	for _, id := range ds.Ack {
		delete(l.unacked, id)
	}
	return true
}

// next numbers a new heartbeat and returns the version applied and the
// unacknowledged processes (in id order).
func (l *ledger) next() (seq, applied uint64, unacked []wire.ProcStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	for _, id := range slices.Sorted(maps.Keys(l.unacked)) {
		unacked = append(unacked, l.unacked[id])
	}
	return l.seq, l.applied, unacked
}

// busySet holds the ids of processes with an operation (a start, a stop)
// under way, so that a second one waits for the next desired state.
type busySet struct {
	mu  sync.Mutex
	ids map[string]bool
}

func newBusySet() *busySet { return &busySet{ids: map[string]bool{}} }

// begin marks id busy; false means it already was.
func (b *busySet) begin(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ids[id] {
		return false
	}
	b.ids[id] = true
	return true
}

// end marks id free.
func (b *busySet) end(id string) {
	b.mu.Lock()
	delete(b.ids, id)
	b.mu.Unlock()
}
