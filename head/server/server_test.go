package server

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// testServer is a head server on a loopback node, serving RPCs.
type testServer struct {
	*Server
	node       *wiretest.Node
	heartbeats atomic.Int64 // folded in, counted by the hook
	pushes     atomic.Int64
	local      chan wire.DesiredState
	stop       func() // stops and closes the server (once; at the end of the test at the latest)
}

// startServer starts a head server named name; change may adjust its
// config. The server stops when the test ends.
func startServer(t *testing.T, psk pnet.PSK, name string, change func(*Config)) *testServer {
	t.Helper()
	ts := &testServer{node: wiretest.NewNode(t, psk), local: make(chan wire.DesiredState, 16)}
	cfg := Config{
		Host: ts.node.Host, Heartbeats: ts.node.Heartbeats, Leaders: ts.node.Leaders,
		DataDir: t.TempDir(), BootstrapExpect: 1, Elect: 100 * time.Millisecond, Heartbeat: 100 * time.Millisecond,
		Node: name, Version: "test", Scheduler: rm.DefaultConfig(), NodeTimeout: time.Minute,
		LocalDesired: func(ds wire.DesiredState) { ts.local <- ds },
		WebTokenKey:  wire.WebTokenKey(psk),
		Hooks: Hooks{
			Heartbeat: func(wire.Heartbeat, time.Time, time.Duration) { ts.heartbeats.Add(1) },
			Pushed:    func(string, error) { ts.pushes.Add(1) },
		},
		Logger: wiretest.Logger(t),
	}
	if change != nil {
		change(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = s
	p2p.Serve(ts.node.Host, s.Handle, p2p.WithServeLogger(cfg.Logger))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	ts.stop = sync.OnceFunc(func() {
		cancel()
		<-done
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) waitLeading(t *testing.T) {
	t.Helper()
	wiretest.Eventually(t, "the election", ts.Leading)
}

// fakeAgent is a node that publishes heartbeats, follows announcements
// and records the desired states the head pushes to it.
type fakeAgent struct {
	node *wiretest.Node
	name string

	mu      sync.Mutex
	desired []wire.DesiredState
	anns    []wire.LeaderAnnounce
}

func newFakeAgent(t *testing.T, psk pnet.PSK, name string, head *testServer) *fakeAgent {
	t.Helper()
	f := &fakeAgent{node: wiretest.NewNode(t, psk), name: name}
	p2p.Serve(f.node.Host, func(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
		if req.Method != wire.MethodDesired {
			return nil, wire.Errorf(wire.CodeUsage, "fake agent: %s", req.Method)
		}
		var ds wire.DesiredState
		if err := req.DecodeBody(&ds); err != nil {
			return nil, err
		}
		f.mu.Lock()
		f.desired = append(f.desired, ds)
		f.mu.Unlock()
		return wire.Empty{}, nil
	})
	sub, err := f.node.Leaders.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ann, _, err := sub.Next(ctx)
			if err != nil {
				return
			}
			f.mu.Lock()
			f.anns = append(f.anns, ann)
			f.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); sub.Cancel(); <-done })
	wiretest.Connect(t, f.node, head.node)
	return f
}

// beat publishes one heartbeat of a node with 8 GiB schedulable.
func (f *fakeAgent) beat(t *testing.T, seq uint64) {
	t.Helper()
	hb := wire.Heartbeat{
		Node: f.name, PeerID: f.node.Host.ID().String(), Addrs: f.node.Addrs(), Seq: seq, Time: time.Now().UnixMilli(),
		MemTotal: 8 << 30, MemSchedulable: 8 << 30, CPUs: 2,
	}
	if err := f.node.Heartbeats.Publish(context.Background(), hb); err != nil {
		t.Fatal(err)
	}
}

// beatUntil publishes heartbeats until cond holds.
func (f *fakeAgent) beatUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	var seq uint64
	last := time.Time{}
	wiretest.Eventually(t, what, func() bool {
		if time.Since(last) > 100*time.Millisecond {
			seq++
			f.beat(t, seq)
			last = time.Now()
		}
		return cond()
	})
}

func (f *fakeAgent) announcements() []wire.LeaderAnnounce {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wire.LeaderAnnounce(nil), f.anns...)
}

// desiredProcs returns the process ids of the last desired state pushed.
func (f *fakeAgent) desiredProcs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.desired) == 0 {
		return nil
	}
	var ids []string
	for _, p := range f.desired[len(f.desired)-1].Procs {
		ids = append(ids, p.ID)
	}
	return ids
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestElectionAndAnnouncement(t *testing.T) {
	psk := wiretest.Key(t)
	s := startServer(t, psk, "head1", nil)
	s.waitLeading(t)
	if got := s.RaftState(); got != "Leader" {
		t.Errorf("raft state %q", got)
	}
	if s.Head() == nil {
		t.Error("a leading server has no head")
	}
	f := newFakeAgent(t, psk, "n1", s)
	wiretest.Eventually(t, "a leader announcement", func() bool { return len(f.announcements()) > 0 })
	ann := f.announcements()[0]
	if ann.PeerID != s.node.Host.ID().String() || ann.Node != "head1" || ann.Term == 0 || len(ann.Addrs) == 0 {
		t.Errorf("announcement %+v", ann)
	}
}

func TestHeartbeatIntakeAndPush(t *testing.T) {
	psk := wiretest.Key(t)
	s := startServer(t, psk, "head1", nil)
	s.waitLeading(t)
	f := newFakeAgent(t, psk, "n1", s)
	ctx := ctxFor(t)
	var st wire.StatusInfo
	f.beatUntil(t, "the node to be up", func() bool {
		return s.Call(ctx, wire.MethodStatus, wire.Caller{}, wire.Empty{}, &st) == nil && st.NodesUp == 1
	})
	if s.heartbeats.Load() == 0 {
		t.Error("the heartbeat hook never ran")
	}
	if st.Head != "head1" || st.HeadPeer != s.node.Host.ID().String() || st.RaftState != "Leader" {
		t.Errorf("status %+v", st)
	}
	// The head learned the agent's address from its heartbeat and
	// pushes it the process of a managed reservation.
	var rep wire.SubmitReply
	caller := wire.Caller{User: "alice", UID: 1000, GID: 1000, Node: "n1"}
	if err := s.Call(ctx, wire.MethodRun, caller, wire.RunRequest{Path: "/bin/true", Memory: 1 << 30}, &rep); err != nil {
		t.Fatal(err)
	}
	f.beatUntil(t, "the desired state with the process", func() bool {
		for _, id := range f.desiredProcs() {
			if strings.HasPrefix(id, "1.") {
				return true
			}
		}
		return false
	})
	if s.pushes.Load() == 0 {
		t.Error("the push hook never ran")
	}
}

func TestRoutingOverTheWire(t *testing.T) {
	psk := wiretest.Key(t)
	s := startServer(t, psk, "head1", nil)
	s.waitLeading(t)
	f := newFakeAgent(t, psk, "n1", s)
	ctx := ctxFor(t)
	call := func(method string, req, resp any) error {
		return p2p.Call(ctx, f.node.Host, s.node.Host.ID(), method, wire.Caller{User: "alice", UID: 1000}, req, resp)
	}
	var st wire.StatusInfo
	if err := call(wire.MethodStatus, wire.Empty{}, &st); err != nil || st.Head != "head1" {
		t.Fatalf("status: %v %+v", err, st)
	}
	var cl wire.ClassList
	if err := call(wire.MethodClasses, wire.Empty{}, &cl); err != nil || len(cl.Classes) == 0 {
		t.Fatalf("classes: %v %+v", err, cl)
	}
	tests := []struct {
		name, method string
		req          any
		code         int
	}{
		{"unknown method", "no.such", wire.Empty{}, wire.CodeUsage},
		{"a method of the agents", wire.MethodDesired, wire.DesiredState{}, wire.CodeUsage},
		{"malformed body", wire.MethodShow, "not a struct", wire.CodeUsage},
		{"no such work", wire.MethodShow, wire.IDRequest{ID: 99}, wire.CodeUsage},
		{"report", wire.MethodReport, wire.Report{Node: "n1"}, wire.CodeOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := call(tc.method, tc.req, nil)
			if wire.ErrorCode(err) != tc.code {
				t.Errorf("code %d (%v), want %d", wire.ErrorCode(err), err, tc.code)
			}
		})
	}
}

func TestNotHead(t *testing.T) {
	psk := wiretest.Key(t)
	// Two are expected and no other is about: the server waits.
	s := startServer(t, psk, "head1", func(c *Config) { c.BootstrapExpect = 2 })
	if got := s.RaftState(); got != wire.RaftWaiting {
		t.Errorf("raft state %q", got)
	}
	if s.Leading() || s.Head() != nil {
		t.Error("a waiting server leads")
	}
	err := s.Call(ctxFor(t), wire.MethodStatus, wire.Caller{}, wire.Empty{}, &wire.StatusInfo{})
	if !wire.IsNotHead(err) || wire.ErrorCode(err) != wire.CodeUnreachable || !strings.Contains(err.Error(), "head1") {
		t.Errorf("call to a server that does not lead: %v", err)
	}
	if _, err := s.Handle(ctxFor(t), s.node.Host.ID(), &wire.Request{Method: wire.MethodRaftJoin}); !wire.IsNotHead(err) {
		t.Errorf("raft join to a server that does not lead: %v", err)
	}
	if err := s.PushDesired(ctxFor(t), "head1", "", wire.DesiredState{Node: "head1", Version: 3}); err != nil {
		t.Fatal(err)
	}
	if ds := <-s.local; ds.Version != 3 {
		t.Errorf("local desired %+v", ds)
	}
	if err := s.PushDesired(ctxFor(t), "n9", "not a peer id", wire.DesiredState{}); err == nil || s.pushes.Load() != 1 {
		t.Errorf("push to a bad peer id: %v (pushes %d)", err, s.pushes.Load())
	}
}

func TestJoinThroughTheLeader(t *testing.T) {
	psk := wiretest.Key(t)
	a := startServer(t, psk, "head1", func(c *Config) { c.Elect = groupElect })
	a.waitLeading(t)
	leader := a.node.Host.ID()
	b := startServer(t, psk, "head2", func(c *Config) {
		c.BootstrapExpect = 3 // never bootstraps on its own
		c.FollowedLeader = func() peer.ID { return leader }
		c.Elect = groupElect
	})
	wiretest.Connect(t, b.node, a.node)
	wiretest.Eventually(t, "the second server to follow", func() bool { return b.RaftState() == "Follower" })
	var st wire.StatusInfo
	if err := a.Call(ctxFor(t), wire.MethodStatus, wire.Caller{}, wire.Empty{}, &st); err != nil || len(st.Peers) != 2 {
		t.Errorf("status after the join: %v %+v", err, st)
	}
	if !wire.IsNotHead(b.Call(ctxFor(t), wire.MethodStatus, wire.Caller{}, wire.Empty{}, nil)) {
		t.Error("a follower answered as head")
	}
}

func TestBootstrapTwo(t *testing.T) {
	psk := wiretest.Key(t)
	two := func(c *Config) { c.BootstrapExpect = 2; c.Elect = groupElect }
	a, b := startServer(t, psk, "head1", two), startServer(t, psk, "head2", two)
	wiretest.Connect(t, a.node, b.node)
	// Each publishes a head-eligible heartbeat, as its agent would.
	beat := func(s *testServer) {
		hb := wire.Heartbeat{Node: s.cfg.Node, PeerID: s.node.Host.ID().String(), Addrs: s.node.Addrs(),
			Time: time.Now().UnixMilli(), HeadEligible: true, Raft: s.RaftState()}
		if err := s.node.Heartbeats.Publish(context.Background(), hb); err != nil {
			t.Fatal(err)
		}
	}
	wiretest.Eventually(t, "one of the two to lead", func() bool {
		beat(a)
		beat(b)
		time.Sleep(50 * time.Millisecond)
		return a.Leading() != b.Leading() && a.RaftState() != wire.RaftWaiting && b.RaftState() != wire.RaftWaiting
	})
}

func TestFormerGroup(t *testing.T) {
	psk := wiretest.Key(t)
	// The clock is the server's own (set before it starts: its loops read it).
	clock := &testClock{t: time.Unix(1000, 0)}
	s := startServer(t, psk, "head1", func(c *Config) { c.BootstrapExpect = 3; c.Now = clock.Now })
	f := s.former
	self := s.node.Host.ID()
	others := []peer.ID{wiretest.NewNode(t, psk).Host.ID(), wiretest.NewNode(t, psk).Host.ID(), wiretest.NewNode(t, psk).Host.ID()}
	if _, ok := f.group(); ok {
		t.Fatal("a group of one of three")
	}
	f.saw(others[0], wire.Heartbeat{HeadEligible: true, Raft: wire.RaftWaiting})
	f.saw(others[1], wire.Heartbeat{HeadEligible: false})                  // not eligible
	f.saw(others[2], wire.Heartbeat{HeadEligible: true, Raft: "Follower"}) // already in a group
	if g, ok := f.group(); ok || len(g) != 2 {
		t.Fatalf("group %v %v", g, ok)
	}
	f.saw(others[1], wire.Heartbeat{HeadEligible: true, Raft: wire.RaftWaiting})
	g, ok := f.group()
	if !ok || len(g) != 3 {
		t.Fatalf("group %v %v", g, ok)
	}
	for _, p := range []peer.ID{self, others[0], others[1]} {
		found := false
		for _, id := range g {
			found = found || id == p.String()
		}
		if !found {
			t.Errorf("%s missing from %v", p, g)
		}
	}
	// Peers not seen for a few heartbeats no longer count.
	clock.Add(time.Minute)
	if _, ok := f.group(); ok {
		t.Error("stale peers counted")
	}
}

func TestNewNeedsTopics(t *testing.T) {
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "topics") {
		t.Errorf("New without a host: %v", err)
	}
}

// TestEveryHeadMethodIsRouted calls every head method of the wire table
// with an empty request: each must reach the head (which may refuse the
// empty request as bad input) and answer with the table's reply type.
func TestEveryHeadMethodIsRouted(t *testing.T) {
	s := startServer(t, wiretest.Key(t), "head1", nil)
	s.waitLeading(t)
	ctx := ctxFor(t)
	nobody := wire.Caller{User: "nobody", UID: 65534, GID: 65534}
	for _, m := range wire.Methods() {
		if !m.ToHead() || m.Name == wire.MethodRaftJoin {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			err := s.Call(ctx, m.Name, nobody, m.NewRequest(), m.NewReply())
			if code := wire.ErrorCode(err); code != wire.CodeOK && code != wire.CodeUsage {
				t.Errorf("code %d: %v", code, err)
			}
			if err != nil && strings.Contains(err.Error(), "not a method of the head") {
				t.Errorf("not routed: %v", err)
			}
		})
	}
}
