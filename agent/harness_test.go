package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// The agent's process manager starts processes through its own executable
// ("shim"), and exec-protocol job processes through "exec-worker": the
// test binary plays both.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "shim":
			os.Exit(proc.RunShim(os.Args[2:]))
		case "shim-server":
			os.Exit(proc.RunShimServer(os.Args[2:]))
		case "exec-worker":
			os.Exit(proc.RunExecWorker(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}

// fakeHead is a test control server for agents: a libp2p node that
// answers the head's RPC methods with handlers a test sets, records what
// agents send it, and announces itself as head.
type fakeHead struct {
	t    *testing.T
	node *wiretest.Node
	name string
	term uint64

	mu       sync.Mutex
	handlers map[string]func(ctx context.Context, req *wire.Request) (any, error)
	calls    []*wire.Request
	reports  []wire.ProcStatus
	beats    map[string]wire.Heartbeat // by node, deltas laid over the full one as the head does
	deltas   map[string]int            // delta heartbeats by node
	changed  chan struct{}             // closed (and replaced) on every record
}

// newFakeHead starts a fake head with the given cluster key; it answers
// status with its name and reports with Empty.
func newFakeHead(t *testing.T, psk []byte, name string, term uint64) *fakeHead {
	t.Helper()
	f := &fakeHead{t: t, node: wiretest.NewNode(t, psk), name: name, term: term,
		handlers: map[string]func(context.Context, *wire.Request) (any, error){}, beats: map[string]wire.Heartbeat{},
		deltas: map[string]int{}, changed: make(chan struct{})}
	f.handle(wire.MethodStatus, func(context.Context, *wire.Request) (any, error) {
		return wire.StatusInfo{Head: f.name, HeadPeer: f.node.Host.ID().String(), RaftState: "Leader", NodesUp: 1, NodesAll: 1}, nil
	})
	f.handle(wire.MethodReport, func(_ context.Context, req *wire.Request) (any, error) {
		var r wire.Report
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		f.mu.Lock()
		f.reports = append(f.reports, r.Procs...)
		f.mu.Unlock()
		return wire.Empty{}, nil
	})
	p2p.Serve(f.node.Host, f.serve)
	sub, err := f.node.Heartbeats.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			hb, _, err := sub.Next(ctx)
			if err != nil {
				return
			}
			// As the head does, learn the agent's addresses to push to it.
			if p, err := peer.Decode(hb.PeerID); err == nil {
				p2p.LearnAddrs(f.node.Host, p, hb.Addrs)
			}
			f.record(func() {
				if hb.Delta {
					f.deltas[hb.Node]++
				}
				f.beats[hb.Node] = hb.Over(f.beats[hb.Node])
			})
		}
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			f.announce(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); sub.Cancel(); wg.Wait() })
	return f
}

// announce publishes one leader announcement.
func (f *fakeHead) announce(ctx context.Context) {
	f.mu.Lock()
	ann := wire.LeaderAnnounce{PeerID: f.node.Host.ID().String(), Node: f.name, Addrs: f.node.Addrs(), Term: f.term, Time: time.Now().UnixMilli()}
	f.mu.Unlock()
	_ = f.node.Leaders.Publish(ctx, ann)
}

// handle sets the handler of a method.
func (f *fakeHead) handle(method string, h func(ctx context.Context, req *wire.Request) (any, error)) {
	f.mu.Lock()
	f.handlers[method] = h
	f.mu.Unlock()
}

func (f *fakeHead) serve(ctx context.Context, _ peer.ID, req *wire.Request) (any, error) {
	f.mu.Lock()
	h := f.handlers[req.Method]
	f.mu.Unlock()
	f.record(func() { f.calls = append(f.calls, req) })
	if h == nil {
		return nil, wire.Errorf(wire.CodeUsage, "fake head: no handler for %q", req.Method)
	}
	return h(ctx, req)
}

// record changes the recorded state under the lock and wakes waiters.
func (f *fakeHead) record(change func()) {
	f.mu.Lock()
	change()
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// waitFor waits until cond, called under the lock, holds.
func (f *fakeHead) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		f.mu.Lock()
		ok, ch := cond(), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			f.t.Fatalf("fake head: gave up waiting for %s", what)
		}
	}
}

// report returns the last report of a process, if any.
func (f *fakeHead) lastReport(id string) (wire.ProcStatus, bool) {
	for i := len(f.reports) - 1; i >= 0; i-- {
		if f.reports[i].ID == id {
			return f.reports[i], true
		}
	}
	return wire.ProcStatus{}, false
}

// push sends a node its desired state from this fake head, once the
// head has had a heartbeat of the node (with its addresses).
func (f *fakeHead) push(t *testing.T, to peer.ID, ds wire.DesiredState) {
	t.Helper()
	f.waitFor("a heartbeat of "+ds.Node, func() bool { _, ok := f.beats[ds.Node]; return ok })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p2p.Call(ctx, f.node.Host, to, wire.MethodDesired, wire.Caller{Node: f.name}, ds, &wire.Empty{}); err != nil {
		t.Fatalf("push desired state: %v", err)
	}
}

// addr is the fake head's address to join through.
func (f *fakeHead) addr() string {
	return f.node.Host.Addrs()[0].String() + "/p2p/" + f.node.Host.ID().String()
}

// testAgent is an agent running in the test, with a client of its socket.
type testAgent struct {
	*Agent
	client *http.Client
}

// workerConfig is the config of a worker agent named n1 that joins
// through the given fake heads, with the cluster key psk.
func workerConfig(t *testing.T, psk []byte, heads ...*fakeHead) *Config {
	t.Helper()
	dir, err := os.MkdirTemp("", "ducc-agent-test-") // short: the socket path must fit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := DevConfig(dir)
	cfg.Head, cfg.BootstrapExpect = false, 0
	cfg.Node, cfg.Cluster = "n1", "test"
	cfg.Heartbeat = units.Duration(100 * time.Millisecond)
	cfg.Memory = units.Size(4 << 30)
	for _, h := range heads {
		cfg.Join = append(cfg.Join, h.addr())
	}
	if psk != nil {
		if err := os.WriteFile(cfg.ClusterKeyFile, wire.FormatClusterKey(psk), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// startAgent runs an agent with cfg until the test ends.
func startAgent(t *testing.T, cfg *Config) *testAgent {
	t.Helper()
	return startAgentWith(t, cfg, nil)
}

// startAgentWith is startAgent with prep, if not nil, called between New
// and Run (to give the agent fakes).
func startAgentWith(t *testing.T, cfg *Config, prep func(*Agent)) *testAgent {
	t.Helper()
	a, err := New(cfg, "test", wiretest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if prep != nil {
		prep(a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent run: %v", err)
		}
		a.stopAll(t)
	})
	ta := &testAgent{Agent: a, client: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", cfg.Socket)
		},
	}}}
	// The socket file exists from bind(2) on, a moment before listen(2):
	// wait until a connection is accepted.
	wiretest.Eventually(t, "the agent's socket", func() bool {
		c, err := net.Dial("unix", cfg.Socket)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	return ta
}

// stopAll kills what the agent left running (agents never stop their
// processes on the way out) and removes its cgroups (an agent removes its
// root only when no process is left, and tests end with processes whose
// end the head never acknowledged).
func (a *Agent) stopAll(t *testing.T) {
	if a.procs == nil {
		return
	}
	for _, st := range a.procs.List() {
		if st.PID > 0 && !st.State.Ended() {
			if p, err := os.FindProcess(st.PID); err == nil {
				_ = p.Kill()
			}
		}
		if a.cg != nil {
			if g, err := a.cg.Load(st.ID); err == nil {
				_ = g.Kill()
				_ = g.Delete()
			}
		}
	}
	if a.cg != nil {
		// The kernel may refuse the root for a moment after its last
		// group went (v1 takes a group offline in the background).
		for range 20 {
			if a.cg.RemoveRoot() == nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// peerID waits for the agent's host and returns its peer id.
func (a *testAgent) peerID(t *testing.T) peer.ID {
	t.Helper()
	var info wire.IDInfo
	if code, err := a.api(http.MethodGet, "/v1/id", nil, &info); err != nil || code != http.StatusOK {
		t.Fatalf("id: %d %v", code, err)
	}
	p, err := peer.Decode(info.PeerID)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// api calls the local API and decodes the JSON answer into out (an
// APIError for failures); it returns the HTTP status.
func (a *testAgent) api(method, path string, body, out any) (int, error) {
	return a.apiAs(method, path, "", body, out)
}

func (a *testAgent) apiAs(method, path, as string, body, out any) (int, error) {
	var rd bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd.Reset(b)
	}
	req, err := http.NewRequest(method, "http://ducc"+path, &rd)
	if err != nil {
		return 0, err
	}
	if as != "" {
		req.Header.Set(wire.AsHeader, as)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := a.client.Do(req.WithContext(ctx))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out == nil {
		return resp.StatusCode, nil
	}
	if resp.StatusCode != http.StatusOK {
		var e wire.APIError
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			return resp.StatusCode, err
		}
		return resp.StatusCode, fmt.Errorf("code %d: %s", e.Code, e.Error)
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
}

// events calls a streaming endpoint and returns its NDJSON events.
func (a *testAgent) events(t *testing.T, method, path string, body any) []wire.AttachEvent {
	t.Helper()
	var rd bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd.Reset(b)
	}
	req, err := http.NewRequest(method, "http://ducc"+path, &rd)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := a.client.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []wire.AttachEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev wire.AttachEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
		out = append(out, ev)
	}
	return out
}

// output joins the output of events.
func output(evs []wire.AttachEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		b.Write(ev.Output)
	}
	return b.String()
}

// logDir returns a directory for process logs.
func logDir(t *testing.T) string {
	d := filepath.Join(t.TempDir(), "logs")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// currentUser is the name of the user running the test.
func currentUser(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}
