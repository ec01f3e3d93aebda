package head_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head"
	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/server"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/head/state/statetest"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/web"
	"github.com/ducc-project/ducc/wire"
)

// Callers of the tests: two users, root, and a cluster administrator.
var (
	alice = wire.Caller{UID: 1001, GID: 1001, User: "alice", Home: "/home/alice"}
	bob   = wire.Caller{UID: 1002, GID: 1002, User: "bob"}
	root  = wire.Caller{UID: 0, GID: 0, User: "root"}
	carol = wire.Caller{UID: 1003, GID: 1003, User: "carol"} // in Administrators
)

const gib = int64(1) << 30

// testScheduler is a small scheduler section: the shipped families plus
// a class with a submit ACL and one with per-user limits.
const testScheduler = `
scheduler:
  classes:
    - name: normal
      policy: FAIR_SHARE
      priority: 10
      default: true
    - name: fixed
      policy: FIXED_SHARE
      priority: 5
      default: true
    - name: reserve
      policy: RESERVE
      priority: 1
      default: true
    - name: private
      policy: FIXED_SHARE
      priority: 5
      submit_acl: "bob"
    - name: capped
      policy: FIXED_SHARE
      priority: 5
      limits:
        - user: "*"
          max_jobs: 1
    - name: small
      policy: FIXED_SHARE
      priority: 5
      limits:
        - user: "*"
          max_memory: 6G
`

// clock is the head's injected clock; tests move it by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// pusher records the desired states the head pushes, per node.
type pusher struct {
	mu  sync.Mutex
	got map[string][]wire.DesiredState
}

func (p *pusher) PushDesired(_ context.Context, node, _ string, ds wire.DesiredState) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got[node] = append(p.got[node], ds)
	return nil
}

// last returns the newest desired state pushed to node.
func (p *pusher) last(node string) (wire.DesiredState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.got[node]
	if len(l) == 0 {
		return wire.DesiredState{}, false
	}
	return l[len(l)-1], true
}

// fixture is a head on a real FSM applied in memory, with a recording
// pusher and an injected clock; its loop runs until the test ends.
type fixture struct {
	fsm   *state.FSM
	app   *statetest.Applier
	push  *pusher
	clock *clock
	h     *head.Head
	// ctx lives as long as the head: an agent's own context, as opposed
	// to the context of one RPC.
	ctx context.Context
}

// options shape a fixture.
type options struct {
	scheduler string // YAML; "" is the shipped rm.DefaultConfig
	// seed runs before the head starts, to give it durable state.
	seed func(t *testing.T, app *statetest.Applier)
	// retention of finished work (the head's defaults if zero).
	retention head.Retention
	// metrics are the head's metrics (nil: none).
	metrics *web.HeadMetrics
	// release is the head's ReleaseMemory (nil: one that does nothing).
	release func()
	// pingers are the head's PingerPaths (nil: none registered, unless
	// monitors names the registered pingers' folder).
	pingers  *spec.PingerPaths
	monitors string
	// broker is the head's DefaultBrokerURL (UIMA-AS services).
	broker string
	// dev makes the head a dev cluster's (head.Config.DevLogs).
	dev bool
	// fsm is the state the head starts on (nil: a new one), e.g. one
	// restored from another head's snapshot.
	fsm *state.FSM
}

func newFixture(t *testing.T, o options) *fixture {
	t.Helper()
	if o.fsm == nil {
		o.fsm = state.New()
	}
	f := &fixture{
		fsm:   o.fsm,
		push:  &pusher{got: map[string][]wire.DesiredState{}},
		clock: &clock{t: time.Unix(1_800_000_000, 0)},
	}
	f.app = &statetest.Applier{FSM: f.fsm}
	if o.seed != nil {
		o.seed(t, f.app)
	}
	sc := rm.DefaultConfig()
	if o.scheduler != "" {
		var err error
		if sc, err = rm.ParseConfig([]byte(o.scheduler)); err != nil {
			t.Fatalf("test scheduler config: %v", err)
		}
	}
	if o.release == nil {
		o.release = func() {}
	}
	if o.pingers == nil && o.monitors == "" {
		o.pingers = &spec.PingerPaths{Host: "/ducc-pinger.jar", Monitors: t.TempDir()}
	}
	f.h = head.New(head.Config{
		FSM: f.fsm, Apply: f.app, Node: "head-node", Peer: "head-peer", Version: "test",
		Push: f.push, Scheduler: sc, Administrators: []string{"carol"},
		NodeTimeout: 10 * time.Second, Now: f.clock.Now, Retention: o.retention, Metrics: o.metrics, ReleaseMemory: o.release, DefaultBrokerURL: o.broker, DevLogs: o.dev,
		PingerPaths: o.pingers, ServiceMonitors: o.monitors, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ctx, cancel := context.WithCancel(context.Background())
	f.ctx = ctx
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.h.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return f
}

// rawBody is a request body sent as is, undecoded.
type rawBody []byte

// call runs one head RPC the way the wire would: the request encoded, the
// reply decoded into resp, and the handler's context ended when the call
// is answered. Every RPC of these tests goes through it.
func call(t *testing.T, h *head.Head, method string, c wire.Caller, req, resp any) error {
	t.Helper()
	var body []byte
	switch r := req.(type) {
	case nil:
	case rawBody:
		body = r
	default:
		var err error
		if body, err = wire.Marshal(req); err != nil {
			t.Fatalf("encode %s request: %v", method, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// As head/server's Handle does: the method table gives the request
	// type, the body is decoded into it, and Dispatch routes it.
	m, ok := wire.LookupMethod(method)
	if !ok || !m.ToHead() {
		return wire.Errorf(wire.CodeUsage, "unknown method %q", method)
	}
	r := m.NewRequest()
	if err := (&wire.Request{Method: method, Caller: c, Body: body}).DecodeBody(r); err != nil {
		return err
	}
	out, err := server.Dispatch(ctx, h, method, c, r)
	if err != nil {
		return err
	}
	if resp == nil {
		return nil
	}
	b, err := wire.Marshal(out)
	if err != nil {
		t.Fatalf("encode %s reply: %v", method, err)
	}
	if err := wire.Unmarshal(b, resp); err != nil {
		t.Fatalf("decode %s reply: %v", method, err)
	}
	return nil
}

// heartbeat folds one agent heartbeat into the head.
func (f *fixture) heartbeat(hb wire.Heartbeat) {
	f.h.Heartbeat(f.ctx, hb, "peer-"+hb.Node)
}

// node sends the first heartbeat of an up node with mem of schedulable
// memory.
func (f *fixture) node(name string, mem int64) {
	f.heartbeat(wire.Heartbeat{Node: name, Seq: 1, Time: f.clock.Now().UnixMilli(), MemTotal: mem + gib,
		MemSchedulable: mem, CPUs: 4})
}

// mustCall is call that fails the test on an error.
func (f *fixture) mustCall(t *testing.T, method string, c wire.Caller, req, resp any) {
	t.Helper()
	if err := call(t, f.h, method, c, req, resp); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// show returns a piece of work as users see it.
func (f *fixture) show(t *testing.T, id uint64) wire.WorkInfo {
	t.Helper()
	var info wire.WorkInfo
	f.mustCall(t, wire.MethodShow, alice, wire.IDRequest{ID: id}, &info)
	return info
}

// work returns a copy of a piece of work from the durable state.
func (f *fixture) work(id uint64) *state.Work {
	var w *state.Work
	f.fsm.View(func(v *state.View) {
		if x := v.Work(id); x != nil {
			w = x.Copy()
		}
	})
	return w
}

// eventually waits, with a generous deadline, until cond holds. The head
// schedules in its own goroutine, so outcomes of a cycle are awaited, not
// timed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitProc waits until the work has a process and returns the newest.
func (f *fixture) waitProc(t *testing.T, id uint64) *state.Proc {
	t.Helper()
	var p *state.Proc
	eventually(t, fmt.Sprintf("work %d gets a process", id), func() bool {
		if w := f.work(id); w != nil && len(w.Procs) > 0 {
			p = w.Procs[len(w.Procs)-1]
			return true
		}
		return false
	})
	return p
}

// report sends an agent's process report through the RPC.
func (f *fixture) report(t *testing.T, node string, procs ...wire.ProcStatus) {
	t.Helper()
	f.mustCall(t, wire.MethodReport, root, wire.Report{Node: node, Procs: procs}, nil)
}

// wantErr checks an RPC error's code and that its message contains every
// part.
func wantErr(t *testing.T, err error, code int, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want code %d with %q", code, parts)
	}
	if got := wire.ErrorCode(err); got != code {
		t.Errorf("error %q has code %d, want %d", err, got, code)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}
