package p2p

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/libp2p/go-libp2p/core/host"
)

type testFSM struct {
	mu      sync.Mutex
	entries [][]byte
}

func (f *testFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, bytes.Clone(l.Data))
	return len(f.entries)
}
func (f *testFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, fmt.Errorf("not supported") }
func (f *testFSM) Restore(io.ReadCloser) error         { return fmt.Errorf("not supported") }
func (f *testFSM) has(data []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.entries {
		if bytes.Equal(e, data) {
			return true
		}
	}
	return false
}

func TestRaftOverLibp2p(t *testing.T) {
	psk := testKey(t)
	const n = 3
	hosts := make([]host.Host, n)
	for i := range hosts {
		hosts[i] = newTestHost(t, psk)
	}
	for i := range hosts {
		for j := range hosts {
			if i != j {
				hosts[i].Peerstore().AddAddrs(hosts[j].ID(), hosts[j].Addrs(), time.Hour)
			}
		}
	}
	var servers []raft.Server
	for _, h := range hosts {
		servers = append(servers, raft.Server{ID: raft.ServerID(h.ID().String()), Address: raft.ServerAddress(h.ID().String())})
	}
	nodes := make([]*raft.Raft, n)
	fsms := make([]*testFSM, n)
	for i, h := range hosts {
		trans, err := NewRaftTransport(h, testLogger(t), 3, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(trans.LocalAddr()); got != h.ID().String() {
			t.Fatalf("local addr %q", got)
		}
		cfg := raft.DefaultConfig()
		cfg.LocalID = raft.ServerID(h.ID().String())
		cfg.HeartbeatTimeout = 300 * time.Millisecond
		cfg.ElectionTimeout = 300 * time.Millisecond
		cfg.LeaderLeaseTimeout = 200 * time.Millisecond
		cfg.CommitTimeout = 10 * time.Millisecond
		cfg.Logger = NewHCLogger(testLogger(t), "raft")
		store := raft.NewInmemStore()
		fsms[i] = &testFSM{}
		r, err := raft.NewRaft(cfg, fsms[i], store, store, raft.NewInmemSnapshotStore(), trans)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = r
		t.Cleanup(func() {
			_ = r.Shutdown().Error()
			_ = trans.Close()
		})
	}
	if err := nodes[0].BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var leader *raft.Raft
	for leader == nil {
		for _, r := range nodes {
			if r.State() == raft.Leader {
				leader = r
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no leader elected")
		case <-time.After(20 * time.Millisecond):
		}
	}
	data := []byte("submit job 1")
	if err := leader.Apply(data, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	for i, f := range fsms {
		for !f.has(data) {
			select {
			case <-ctx.Done():
				t.Fatalf("node %d never applied the entry", i)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

func TestRaftStreamLayerClose(t *testing.T) {
	psk := testKey(t)
	a, b := newTestHost(t, psk), newTestHost(t, psk)
	b.Peerstore().AddAddrs(a.ID(), a.Addrs(), time.Hour)
	la := NewRaftStreamLayer(a)
	if la.Addr().String() != a.ID().String() {
		t.Fatalf("addr %s", la.Addr())
	}
	lb := NewRaftStreamLayer(b)
	defer lb.Close()
	accepted := make(chan error, 1)
	go func() {
		c, err := la.Accept()
		if err == nil {
			buf := make([]byte, 5)
			_, err = io.ReadFull(c, buf)
			if err == nil && string(buf) != "hello" {
				err = fmt.Errorf("read %q", buf)
			}
			c.Close()
		}
		accepted <- err
	}()
	c, err := lb.Dial(raft.ServerAddress(a.ID().String()), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if c.RemoteAddr().String() != a.ID().String() {
		t.Fatalf("remote addr %s", c.RemoteAddr())
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	c.Close()
	la.Close()
	if _, err := la.Accept(); err == nil {
		t.Fatal("Accept after Close succeeded")
	}
	// A Dial to a closed layer may still succeed (libp2p negotiates the
	// protocol lazily when identify said the peer supports it); the first
	// read then fails.
	if c, err := lb.Dial(raft.ServerAddress(a.ID().String()), time.Second); err == nil {
		_, _ = c.Write([]byte("x"))
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("read from a closed layer succeeded")
		}
		c.Close()
	}
	if _, err := lb.Dial("not-a-peer-id", time.Second); err == nil {
		t.Fatal("Dial to a bad address succeeded")
	}
}

func TestHCLogger(t *testing.T) {
	var buf bytes.Buffer
	l := NewHCLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), "raft")
	l.Named("net").With("peer", "p1").Warn("slow", "ms", 12)
	l.Trace("hidden")
	if !l.IsDebug() || l.IsTrace() {
		t.Fatal("levels not mapped from the slog handler")
	}
	out := buf.String()
	if !strings.Contains(out, "level=WARN msg=slow") || !strings.Contains(out, "sub=raft.net") || !strings.Contains(out, "peer=p1") || !strings.Contains(out, "ms=12") || strings.Contains(out, "hidden") || strings.Count(out, "sub=") != 1 {
		t.Fatalf("unexpected log output %q", out)
	}
}

// TestHCLoggerFormats: the values hclog formats itself are formatted, not
// printed as their structure (Raft's "initial configuration" line showed
// a literal %+v).
func TestHCLoggerFormats(t *testing.T) {
	tests := []struct {
		name string
		val  any
		want string
	}{
		{"Fmt", hclog.Fmt("%+v", []struct{ ID string }{{"a"}}), `v=[{ID:a}]`},
		{"Fmt percent", hclog.Fmt("%0.2f%%", 12.5), `v=12.50%`},
		{"Hex", hclog.Hex(255), "v=0xff"},
		{"Quote", hclog.Quote("a b"), `v="\"a b\""`},
		{"plain", 7, "v=7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := NewHCLogger(slog.New(slog.NewTextHandler(&buf, nil)), "raft")
			l.Info("initial configuration", "v", tc.val, "after", 1)
			out := buf.String()
			if !strings.Contains(out, tc.want+" after=1") || strings.Contains(out, "%+v") {
				t.Errorf("log line %q, want %q in it", out, tc.want)
			}
		})
	}
}

// TestHCLoggerExpectedWarnings: Raft's warnings that say nothing is wrong
// (pre-vote off with this transport, the first election of a member that
// never had a leader) are logged as information; the others stay warnings.
func TestHCLoggerExpectedWarnings(t *testing.T) {
	tests := []struct {
		msg   string
		args  []any
		level string
	}{
		{"pre-vote is disabled because it is not supported by the Transport", nil, "INFO"},
		{"heartbeat timeout reached, starting election", []any{"last-leader-addr", raft.ServerAddress(""), "last-leader-id", raft.ServerID("")}, "INFO"},
		{"heartbeat timeout reached, starting election", []any{"last-leader-addr", raft.ServerAddress("12D3KooW"), "last-leader-id", raft.ServerID("n1")}, "WARN"},
		{"failed to contact quorum of nodes, stepping down", nil, "WARN"},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		l := NewHCLogger(slog.New(slog.NewTextHandler(&buf, nil)), "raft")
		l.Warn(tc.msg, tc.args...)
		if !strings.Contains(buf.String(), "level="+tc.level) {
			t.Errorf("%q %v logged as %q, want level %s", tc.msg, tc.args, buf.String(), tc.level)
		}
	}
}
