package server

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// beat publishes a head-eligible heartbeat of the server, as its agent
// would.
func (ts *testServer) beat(t *testing.T) {
	t.Helper()
	hb := wire.Heartbeat{Node: ts.cfg.Node, PeerID: ts.node.Host.ID().String(), Addrs: ts.node.Addrs(),
		Time: time.Now().UnixMilli(), HeadEligible: true, Raft: ts.RaftState()}
	if err := ts.node.Heartbeats.Publish(context.Background(), hb); err != nil {
		t.Fatal(err)
	}
}

// status asks the server, which must lead, for the cluster's status.
func (ts *testServer) status(t *testing.T) wire.StatusInfo {
	t.Helper()
	var st wire.StatusInfo
	if err := ts.Call(ctxFor(t), wire.MethodStatus, wire.Caller{}, wire.Empty{}, &st); err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

// voterStates maps the node names of the head group's members to their
// states, as the leader ts sees them.
func (ts *testServer) voterStates(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, v := range ts.status(t).Voters {
		if !v.Voter {
			t.Errorf("member %+v does not vote", v)
		}
		m[v.Node] = v.State
	}
	return m
}

// beatUntilVoters publishes the heartbeats of the servers beating until
// the leader sees the head group's members in the given states.
func beatUntilVoters(t *testing.T, leader *testServer, want map[string]string, beating ...*testServer) {
	t.Helper()
	wiretest.Eventually(t, "the head group's members in the states wanted", func() bool {
		for _, s := range beating {
			s.beat(t)
		}
		time.Sleep(20 * time.Millisecond)
		got := leader.voterStates(t)
		if len(got) != len(want) {
			return false
		}
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	})
}

// groupElect is the election timeout of tests with several voters.
const groupElect = time.Second

// joinGroup starts a server that joins the group led by leader.
func joinGroup(t *testing.T, psk pnet.PSK, name string, leader *testServer, clock *testClock) *testServer {
	t.Helper()
	id := leader.node.Host.ID()
	s := startServer(t, psk, name, func(c *Config) {
		c.BootstrapExpect = 3 // never bootstraps on its own
		c.FollowedLeader = func() peer.ID { return id }
		c.Now = clock.Now
		c.Elect = groupElect
	})
	wiretest.Connect(t, s.node, leader.node)
	wiretest.Eventually(t, name+" to follow", func() bool { return s.RaftState() == "Follower" })
	return s
}

func TestRemoveServer(t *testing.T) {
	psk := wiretest.Key(t)
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	a := startServer(t, psk, "head1", func(c *Config) { c.Now = clock.Now; c.Administrators = []string{"ops"}; c.Elect = groupElect })
	a.waitLeading(t)
	b := joinGroup(t, psk, "head2", a, clock)
	c := joinGroup(t, psk, "head3", a, clock)
	beatUntilVoters(t, a, map[string]string{"head1": "Leader", "head2": "Follower", "head3": "Follower"}, b, c)

	// head3's machine dies; the head stops hearing from it.
	c.stop()
	clock.Add(2 * time.Minute) // past the node timeout (a minute)
	beatUntilVoters(t, a, map[string]string{"head1": "Leader", "head2": "Follower", "head3": wire.VoterUnreachable}, b)

	root := wire.Caller{User: "root"}
	tests := []struct {
		name   string
		caller wire.Caller
		server string
		want   string
	}{
		{"a user", wire.Caller{User: "alice", UID: 1000}, "head3", "only root or an administrator"},
		{"no name", root, "", "name the member to remove"},
		{"not a member", root, "head9", `"head9" is not a member of the head group`},
		{"the head itself", root, "head1", "head1 (" + a.node.Host.ID().String() + ") is the head; stop its agent"},
		{"a live member by name", wire.Caller{User: "ops", UID: 1001}, "head2", "is alive"},
		{"a live member by peer id", root, b.node.Host.ID().String(), "head2 (" + b.node.Host.ID().String() + ") is alive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Call(ctxFor(t), wire.MethodRemoveServer, tc.caller, wire.RemoveServerRequest{Server: tc.server}, &wire.RemoveServerReply{})
			if wire.ErrorCode(err) != wire.CodeUsage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("remove-server %q: %v; want a usage error with %q", tc.server, err, tc.want)
			}
		})
	}
	if got := len(a.status(t).Voters); got != 3 {
		t.Fatalf("%d members after refused removals, want 3", got)
	}

	var rep wire.RemoveServerReply
	if err := a.Call(ctxFor(t), wire.MethodRemoveServer, wire.Caller{User: "ops", UID: 1001}, wire.RemoveServerRequest{Server: "head3"}, &rep); err != nil {
		t.Fatalf("remove-server head3: %v", err)
	}
	if rep.Removed.Node != "head3" || rep.Removed.Peer != c.node.Host.ID().String() || len(rep.Voters) != 2 {
		t.Errorf("reply %+v", rep)
	}
	if got := a.voterStates(t); len(got) != 2 || got["head1"] != "Leader" || got["head2"] != "Follower" {
		t.Errorf("members after the removal: %v", got)
	}
	if st := a.status(t); len(st.Peers) != 2 {
		t.Errorf("raft peers after the removal: %v", st.Peers)
	}
}

func TestRemoveTheLastVoter(t *testing.T) {
	s := startServer(t, wiretest.Key(t), "solo", nil)
	s.waitLeading(t)
	err := s.Call(ctxFor(t), wire.MethodRemoveServer, wire.Caller{}, wire.RemoveServerRequest{Server: "solo"}, &wire.RemoveServerReply{})
	if wire.ErrorCode(err) != wire.CodeUsage || !strings.Contains(err.Error(), "is the last voter of the head group") {
		t.Errorf("removing the last voter: %v", err)
	}
}

// A member unreachable for longer than dead_server_cleanup is removed
// once another head-eligible agent has joined in its place, not before.
func TestDeadServerCleanup(t *testing.T) {
	psk := wiretest.Key(t)
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	// A group of voters on a busy machine needs a calmer election timeout than
	// the single servers of other tests, or leadership moves mid-test.
	three := func(c *Config) {
		c.BootstrapExpect = 3
		c.Now = clock.Now
		c.DeadServerCleanup = 2 * time.Minute
		c.Elect = groupElect
	}
	all := []*testServer{startServer(t, psk, "head1", three), startServer(t, psk, "head2", three), startServer(t, psk, "head3", three)}
	for i := range all {
		for _, o := range all[i+1:] {
			wiretest.Connect(t, all[i].node, o.node)
		}
	}
	var leader *testServer
	wiretest.Eventually(t, "the group of three to form", func() bool {
		for _, s := range all {
			s.beat(t)
		}
		time.Sleep(50 * time.Millisecond)
		leader = nil
		for _, s := range all {
			if s.RaftState() == wire.RaftWaiting {
				return false
			}
			if s.Leading() {
				leader = s
			}
		}
		return leader != nil
	})
	var alive []*testServer
	var victim *testServer
	for _, s := range all {
		if s == leader || victim != nil {
			alive = append(alive, s)
		} else {
			victim = s
		}
	}
	states := map[string]string{leader.cfg.Node: "Leader"}
	for _, s := range alive {
		if s != leader {
			states[s.cfg.Node] = "Follower"
		}
	}
	states[victim.cfg.Node] = "Follower"
	beatUntilVoters(t, leader, states, all...)

	victim.stop()
	clock.Add(3 * time.Minute)
	states[victim.cfg.Node] = wire.VoterUnreachable
	beatUntilVoters(t, leader, states, alive...)
	// Unreachable for longer than dead_server_cleanup, but nobody stands
	// in for it: it stays.
	leader.cleanupDeadServers()
	if got := leader.voterStates(t); len(got) != 3 {
		t.Fatalf("members without a replacement: %v", got)
	}

	d := joinGroup(t, psk, "head4", leader, clock)
	delete(states, victim.cfg.Node)
	states["head4"] = "Follower"
	beatUntilVoters(t, leader, states, append(alive, d)...)
	if st := leader.status(t); len(st.Peers) != 3 {
		t.Errorf("raft peers after the cleanup: %v", st.Peers)
	}
}
