package wire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

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
