// Package wiretest helps tests build libp2p nodes on loopback: a host on
// a fresh port with the cluster key, its gossipsub router and the
// heartbeat and leader topics, as an agent has them.
package wiretest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// Node is a libp2p host with its pubsub router and topics.
type Node struct {
	Host       host.Host
	PubSub     *pubsub.PubSub
	Heartbeats *p2p.Topic[wire.Heartbeat]
	Leaders    *p2p.Topic[wire.LeaderAnnounce]
}

// Key returns a new cluster key.
func Key(t testing.TB) pnet.PSK {
	t.Helper()
	psk, err := wire.GenerateClusterKey()
	if err != nil {
		t.Fatal(err)
	}
	return psk
}

// Logger logs to the test's log with -v, else nowhere. Lines logged once
// the test's cleanup has begun (goroutines winding down) are dropped.
func Logger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// NewNode starts a node on 127.0.0.1 with cluster key psk; it is closed
// when the test ends.
func NewNode(t testing.TB, psk pnet.PSK) *Node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := Logger(t)
	h, err := p2p.NewHost(ctx, p2p.HostConfig{
		ClusterKey: psk, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, Logger: log, DialTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	n := &Node{Host: h}
	if n.PubSub, err = p2p.NewPubSub(ctx, h, log); err != nil {
		t.Fatal(err)
	}
	if n.Heartbeats, err = p2p.JoinHeartbeatTopic(n.PubSub, log); err != nil {
		t.Fatal(err)
	}
	if n.Leaders, err = p2p.JoinLeaderTopic(n.PubSub, log); err != nil {
		t.Fatal(err)
	}
	return n
}

// Connect connects a to b.
func Connect(t testing.TB, a, b *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Host.Connect(ctx, peer.AddrInfo{ID: b.Host.ID(), Addrs: b.Host.Addrs()}); err != nil {
		t.Fatal(p2p.ExplainDialError(err))
	}
}

// Addrs returns the node's listen addresses as strings, as heartbeats
// and announcements carry them.
func (n *Node) Addrs() []string {
	var out []string
	for _, a := range n.Host.Addrs() {
		out = append(out, a.String())
	}
	return out
}

// Eventually polls cond until it holds, and fails the test if it does not
// within a generous deadline (a test of what happens, not of how fast).
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
