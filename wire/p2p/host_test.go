package p2p

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"

	"github.com/ducc-project/ducc/wire"
)

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testKey(t testing.TB) pnet.PSK {
	t.Helper()
	psk, err := wire.GenerateClusterKey()
	if err != nil {
		t.Fatal(err)
	}
	return psk
}

func newTestHost(t testing.TB, psk pnet.PSK) host.Host {
	t.Helper()
	h, err := NewHost(context.Background(), HostConfig{
		ClusterKey:  psk,
		ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"},
		Logger:      testLogger(t),
		DialTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func connect(t testing.TB, a, b host.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		t.Fatal(ExplainDialError(err))
	}
}

func TestHostConnectSameKey(t *testing.T) {
	psk := testKey(t)
	a, b := newTestHost(t, psk), newTestHost(t, psk)
	connect(t, a, b)
	for _, addr := range a.Addrs() {
		if !strings.HasPrefix(addr.String(), "/ip4/127.0.0.1/tcp/") {
			t.Errorf("unexpected listen address %s", addr)
		}
	}
}

func TestHostNeedsClusterKey(t *testing.T) {
	_, err := NewHost(context.Background(), HostConfig{ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}})
	if err == nil || !strings.Contains(err.Error(), "cluster key") {
		t.Fatalf("want a cluster key error, got %v", err)
	}
}

func TestHostKeyMismatch(t *testing.T) {
	a, b := newTestHost(t, testKey(t)), newTestHost(t, testKey(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()})
	if err == nil {
		t.Fatal("connected with different cluster keys")
	}
	t.Logf("raw error: %v", err)
	explained := ExplainDialError(err)
	if !errors.Is(explained, ErrClusterKeyMismatch) || !strings.HasPrefix(explained.Error(), "cannot join cluster: cluster key mismatch? (") {
		t.Fatalf("not explained as a key mismatch: %v", explained)
	}
}

func TestExplainDialErrorLeavesOthers(t *testing.T) {
	if ExplainDialError(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	e := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	if got := ExplainDialError(e); got != e {
		t.Fatalf("connection refused was rewritten: %v", got)
	}
}
