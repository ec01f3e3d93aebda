package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// TestAgentServesLogsToWhomTheHeadAllows asks an agent for a log over
// the agent-to-agent stream, as another agent would for a caller: the
// serving agent asks the head about the forwarded caller, and serves only
// the owner's regular file.
func TestAgentServesLogsToWhomTheHeadAllows(t *testing.T) {
	psk := wiretest.Key(t)
	fh := newFakeHead(t, psk, "fake-head", 1)
	uid, gid, me := uint32(os.Getuid()), uint32(os.Getgid()), currentUser(t)
	var mu sync.Mutex
	var asked []string // the callers the head was asked about
	fh.handle(wire.MethodLogAccess, func(_ context.Context, req *wire.Request) (any, error) {
		var r wire.IDRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		mu.Lock()
		asked = append(asked, req.Caller.User)
		mu.Unlock()
		if req.Caller.User != "alice" {
			return nil, wire.Errorf(wire.CodeUsage, "the logs of work %d are private to alice", r.ID)
		}
		// The work runs as the test's user; the head lets alice read it.
		return wire.LogAccess{Work: wire.WorkInfo{ID: r.ID, User: me}, UID: uid, GID: gid}, nil
	})
	a := startAgent(t, workerConfig(t, psk, fh))
	self := a.peerID(t)
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 1, Procs: []wire.ProcSpec{{
		ID: "1.1", WorkID: 1, Kind: "POP", User: me, UID: uid, GID: gid,
		Path: "/bin/sh", Args: []string{"-c", "echo hello-remote"}, LogDir: logDir(t), MemoryLimit: 256 << 20,
	}}})
	fh.waitFor("the exit of 1.1", func() bool {
		r, ok := fh.lastReport("1.1")
		return ok && r.State == wire.ProcExited
	})
	fh.mu.Lock()
	r, _ := fh.lastReport("1.1")
	fh.mu.Unlock()

	ask := func(c wire.Caller, path string) (data string, last wire.LogChunk) {
		t.Helper()
		return readLogStream(t, fh.node.Host, self, wire.LogRequest{ProcID: "1.1", Path: path, Caller: c})
	}
	if data, last := ask(wire.Caller{User: "alice", UID: 1001}, r.LogPath); data != "hello-remote\n" || !last.EOF || last.Err != "" {
		t.Errorf("alice: data %q, last %+v; want her log and EOF", data, last)
	}
	if data, last := ask(wire.Caller{User: "bob", UID: 1002}, r.LogPath); data != "" || last.Code != wire.CodeUsage || !strings.Contains(last.Err, "private to alice") {
		t.Errorf("bob: data %q, last %+v; want a refusal with code 2", data, last)
	}
	if data, last := ask(wire.Caller{User: "alice"}, "/etc/passwd"); data != "" || last.Code != wire.CodeUsage || !strings.Contains(last.Err, "not the log of process 1.1") {
		t.Errorf("another path: data %q, last %+v; want a refusal", data, last)
	}
	mu.Lock()
	if strings.Join(asked, ",") != "alice,bob" {
		t.Errorf("the head was asked about %v; want the forwarded callers alice, bob", asked)
	}
	mu.Unlock()

	if os.Geteuid() != 0 {
		return // a link the user controls needs another owner than the agent's
	}
	// The owner swaps the log for a link to root's file.
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(r.LogPath); err != nil {
		t.Fatal(err)
	}
	symlinkOwned(t, secret, r.LogPath, 23456)
	if data, last := ask(wire.Caller{User: "alice"}, r.LogPath); data != "" || last.Code != wire.CodeUsage || !strings.Contains(last.Err, "symbolic link the user controls") {
		t.Errorf("a link: data %q, last %+v; want a refusal", data, last)
	}
}

// readLogStream asks the agent for a log as another agent does and
// returns the data and the last chunk.
func readLogStream(t *testing.T, h host.Host, to peer.ID, req wire.LogRequest) (string, wire.LogChunk) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := h.NewStream(ctx, to, wire.ProtoLogs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := wire.WriteMsg(s, &req); err != nil {
		t.Fatal(err)
	}
	var data strings.Builder
	for {
		var ch wire.LogChunk
		if err := wire.ReadMsg(s, &ch, wire.MaxLogChunk+1024); err != nil {
			t.Fatalf("read log stream: %v", err)
		}
		data.Write(ch.Data)
		if ch.EOF || ch.Err != "" {
			return data.String(), ch
		}
	}
}
