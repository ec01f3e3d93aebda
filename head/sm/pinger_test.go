package sm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// fakeRunner records the custom pings it is asked for and answers with
// reply and err.
type fakeRunner struct {
	reply wire.PingRunReply
	err   error
	calls chan pingCall
}

type pingCall struct {
	node string
	req  wire.PingRunRequest
	ctx  context.Context
}

func (f *fakeRunner) run(ctx context.Context, node string, req wire.PingRunRequest) (wire.PingRunReply, error) {
	if f.calls != nil {
		f.calls <- pingCall{node: node, req: req, ctx: ctx}
	}
	return f.reply, f.err
}

func customPinger() Pinger {
	return Pinger{Service: 7, Endpoint: "CUSTOM:db", User: "alice", UID: 1000, GID: 1001, Groups: []uint32{5}, Home: "/home/alice",
		Exec: "/usr/bin/pinger", Args: []string{"-v"}, Env: []string{"A=1"}, Dir: "/work", Interval: time.Second, Timeout: 3 * time.Second, Umask: "0027"}
}

func TestPingCustom(t *testing.T) {
	no := false
	tests := []struct {
		name    string
		runner  *fakeRunner
		want    Ping
		wantErr string
	}{
		{name: "alive", runner: &fakeRunner{reply: wire.PingRunReply{Answer: wire.PingAnswer{Alive: true, Info: "3 clients"}}},
			want: Ping{Alive: true, Healthy: true, Info: "3 clients"}},
		{name: "alive-not-healthy", runner: &fakeRunner{reply: wire.PingRunReply{Answer: wire.PingAnswer{Alive: true, Healthy: &no}}},
			want: Ping{Alive: true}},
		{name: "pinger-failed", runner: &fakeRunner{reply: wire.PingRunReply{Error: "pinger /usr/bin/pinger did not answer within 3s"}},
			wantErr: "pinger /usr/bin/pinger did not answer within 3s"},
		{name: "agent-unreachable", runner: &fakeRunner{err: errors.New("running the pinger on node n2: unreachable")},
			wantErr: "pinger /usr/bin/pinger: running the pinger on node n2: unreachable"},
		{name: "no-runner", wantErr: "pinger /usr/bin/pinger: no agent runs custom pingers for this head"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{}
			if tc.runner != nil {
				tc.runner.calls = make(chan pingCall, 1)
				cfg.RunPinger = tc.runner.run
			}
			m := New(cfg)
			st := wire.PingState{Service: 7, Endpoint: "CUSTOM:db", Instances: []int{0}, Active: []int{0}}
			before := time.Now()
			got, err := m.ping(context.Background(), customPinger(), st, "n2")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Alive != tc.want.Alive || got.Healthy != tc.want.Healthy || got.Info != tc.want.Info || got.Answer == nil {
				t.Fatalf("ping %+v, want %+v", got, tc.want)
			}
			c := <-tc.runner.calls
			if c.node != "n2" || c.req.State.Service != 7 || !slices.Equal(c.req.State.Active, []int{0}) {
				t.Errorf("asked node %q with %+v", c.node, c.req)
			}
			// The deadline is set after before: at least the timeout plus
			// pingSlack past it (an order of instants, not a measured time).
			if d, ok := c.ctx.Deadline(); !ok || d.Before(before.Add(customPinger().Timeout+pingSlack)) {
				t.Errorf("the agent's call has no deadline beyond the pinger's timeout: %v %v", d, ok)
			}
		})
	}
}

func TestPingRequest(t *testing.T) {
	st := wire.PingState{Service: 7}
	req := PingRequest(customPinger(), st)
	want := wire.PingRunRequest{Service: 7, Path: "/usr/bin/pinger", Args: []string{"-v"}, User: "alice", UID: 1000, GID: 1001,
		Groups: []uint32{5}, Dir: "/work", State: st, TimeoutMS: 3000, MemoryLimit: PingerMemoryLimit, Umask: "0027",
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/alice", "USER=alice", "LOGNAME=alice",
			"DUCC_SERVICE_ID=7", "DUCC_SERVICE_ENDPOINT=CUSTOM:db", "A=1"}}
	b1, _ := wire.Marshal(req)
	b2, _ := wire.Marshal(want)
	if string(b1) != string(b2) {
		t.Fatalf("request\n%+v\nwant\n%+v", req, want)
	}
	p := customPinger()
	p.Home = ""
	if env := PingRequest(p, st).Env; env[1] != "HOME=/" {
		t.Errorf("no home gives %q", env[1])
	}
}

func TestPingNode(t *testing.T) {
	on := func(inst int, node, st string) func(*state.Work) {
		return func(w *state.Work) {
			proc(inst, st)(w)
			w.Procs[len(w.Procs)-1].Node = node
		}
	}
	tests := []struct {
		name string
		w    *state.Work
		want string
	}{
		{"no instance: the head's node", service(1, "CUSTOM:x"), ""},
		{"starting only", service(1, "CUSTOM:x", ids(0), on(0, "n1", "S")), ""},
		{"stopping only", service(1, "CUSTOM:x", ids(0), on(0, "n1", "X")), ""},
		{"one running", service(1, "CUSTOM:x", ids(0), on(0, "n3", "r")), "n3"},
		{"lowest running instance", service(1, "CUSTOM:x", ids(0, 1, 2), on(2, "n9", "R"), on(1, "n4", "R"), on(0, "n1", "S")), "n4"},
	}
	for _, tc := range tests {
		if got := pingNode(tc.w); got != tc.want {
			t.Errorf("%s: node %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPingLoopCustom: a started pinger asks the runner on the node the last
// decision picked and records the answer; a failing ping counts as missed.
func TestPingLoopCustom(t *testing.T) {
	runner := &fakeRunner{reply: wire.PingRunReply{Answer: wire.PingAnswer{Alive: true, Info: "up"}}, calls: make(chan pingCall)}
	triggered := make(chan struct{}, 16)
	m := New(Config{RunPinger: runner.run, Trigger: func() { triggered <- struct{}{} }})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); m.Wait() }()
	p := customPinger()
	p.Interval = time.Hour // one ping only
	m.mu.Lock()
	m.states = map[uint64]wire.PingState{7: {Service: 7, Active: []int{1}}}
	m.nodes = map[uint64]string{7: "n5"}
	m.mu.Unlock()
	m.reconcile(ctx, []Pinger{p})
	c := <-runner.calls
	if c.node != "n5" || !slices.Equal(c.req.State.Active, []int{1}) {
		t.Fatalf("ping ran on %q with %+v", c.node, c.req.State)
	}
	<-triggered
	got, ok := m.LastPing(7)
	if !ok || !got.Alive || got.Info != "up" || got.Missed != 0 {
		t.Fatalf("last ping %+v %v", got, ok)
	}

	// A new configuration restarts the pinger; a failure is a missed ping.
	runner.reply = wire.PingRunReply{Error: "pinger /usr/bin/pinger: exited with code 2: no route"}
	p.Args = []string{"-q"}
	m.reconcile(ctx, []Pinger{p})
	<-runner.calls
	<-triggered
	got, _ = m.LastPing(7)
	if got.Alive || got.Missed != 1 || !strings.Contains(got.Info, "no route") {
		t.Fatalf("last ping %+v", got)
	}
}
