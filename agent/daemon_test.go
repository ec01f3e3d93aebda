package agent

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// These tests run a real agent (host, socket, process manager, feeder)
// against a fake head, the way a daemon is tested against a test control
// server.

func TestAgentForwardsCLICalls(t *testing.T) {
	psk := wiretest.Key(t)
	fh := newFakeHead(t, psk, "fake-head", 1)
	fh.handle(wire.MethodShow, func(_ context.Context, req *wire.Request) (any, error) {
		var r wire.IDRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		if r.ID != 7 {
			return nil, wire.Errorf(wire.CodeUsage, "no work with id %d", r.ID)
		}
		return wire.WorkInfo{ID: 7, User: req.Caller.User, State: "Running"}, nil
	})
	a := startAgent(t, workerConfig(t, psk, fh))
	// The head shows it knows the node (a desired state after a full
	// heartbeat), as a real head does: until then the agent holds the
	// calls of its users for a while (awaitNodeKnown).
	fh.waitFor("a heartbeat of n1", func() bool { _, ok := fh.beats["n1"]; return ok })
	fh.push(t, a.peerID(t), wire.DesiredState{Node: "n1", Version: 1})

	var st wire.StatusInfo
	wiretest.Eventually(t, "status through the agent", func() bool {
		_, err := a.api(http.MethodPost, "/v1/status", struct{}{}, &st)
		return err == nil
	})
	if st.Head != "fake-head" || st.Agent != "n1" || st.Cluster != "test" {
		t.Errorf("status %+v", st)
	}
	var info wire.WorkInfo
	if code, err := a.api(http.MethodPost, "/v1/show", wire.IDRequest{ID: 7}, &info); err != nil || code != http.StatusOK || info.ID != 7 || info.User == "" {
		t.Errorf("show: %d %v %+v", code, err, info)
	}
	tests := []struct {
		name, path, as string
		body           any
		status         int
		errText        string
	}{
		{"head error keeps its code", "/v1/show", "", wire.IDRequest{ID: 8}, http.StatusBadRequest, "code 2: no work with id 8"},
		{"unknown method", "/v1/no.such", "", struct{}{}, http.StatusBadRequest, "unknown API method"},
		{"agent-only method", "/v1/" + wire.MethodReport, "", struct{}{}, http.StatusBadRequest, "unknown API method"},
		{"head-to-agent method", "/v1/" + wire.MethodDesired, "", struct{}{}, http.StatusBadRequest, "unknown API method"},
		{"bad body", "/v1/show", "", map[string]any{"idd": 1}, http.StatusBadRequest, "bad request body"},
		{"unknown --as user", "/v1/status", "no-such-user-here", struct{}{}, http.StatusBadRequest, "no such user"},
		{"head has no such handler", "/v1/classes", "", struct{}{}, http.StatusBadRequest, "no handler"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out any = &struct{}{}
			code, err := a.apiAs(http.MethodPost, tc.path, tc.as, tc.body, out)
			if code != tc.status || err == nil || !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("got %d %v, want %d with %q", code, err, tc.status, tc.errText)
			}
		})
	}

	var id wire.IDInfo
	if code, err := a.api(http.MethodGet, "/v1/id", nil, &id); err != nil || code != http.StatusOK {
		t.Fatal(code, err)
	}
	if id.Node != "n1" || id.Cluster != "test" || id.HeadEligible || id.Raft != "" || id.Head != fh.node.Host.ID().String() || len(id.Addrs) == 0 {
		t.Errorf("id %+v", id)
	}
}

func TestAgentHeartbeats(t *testing.T) {
	psk := wiretest.Key(t)
	fh := newFakeHead(t, psk, "fake-head", 1)
	a := startAgent(t, workerConfig(t, psk, fh))
	self := a.peerID(t)
	var hb wire.Heartbeat
	fh.waitFor("two heartbeats of n1", func() bool {
		hb = fh.beats["n1"]
		return hb.Seq >= 2
	})
	// Full heartbeats until the head has shown it holds one (it pushes a
	// desired state), then deltas.
	fh.mu.Lock()
	deltas := fh.deltas["n1"]
	fh.mu.Unlock()
	if deltas != 0 {
		t.Errorf("%d delta heartbeats before the head pushed", deltas)
	}
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 1})
	fh.waitFor("a delta heartbeat of n1", func() bool {
		hb = fh.beats["n1"]
		return fh.deltas["n1"] > 0
	})
	if hb.PeerID != self.String() || hb.MemSchedulable != 4<<30 || hb.MemTotal == 0 || hb.CPUs == 0 ||
		hb.HeadEligible || hb.Raft != "" || hb.Version != "test" || len(hb.Addrs) == 0 {
		t.Errorf("heartbeat %+v", hb)
	}
}

// An agent refuses a desired state for another node: it would stop this
// node's processes (heartbeats are unsigned, docs/decisions.md).
func TestAgentRefusesAnotherNodesDesiredState(t *testing.T) {
	psk := wiretest.Key(t)
	fh := newFakeHead(t, psk, "fake-head", 1)
	a := startAgent(t, workerConfig(t, psk, fh))
	self := a.peerID(t)
	fh.waitFor("a heartbeat of n1", func() bool { _, ok := fh.beats["n1"]; return ok })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := p2p.Call(ctx, fh.node.Host, self, wire.MethodDesired, wire.Caller{Node: fh.name},
		wire.DesiredState{Node: "n2", Version: 1}, &wire.Empty{})
	if wire.ErrorCode(err) != wire.CodeUsage {
		t.Fatalf("desired state for another node: %v, want a usage error", err)
	}
}

func TestAgentRunsWhatTheHeadWants(t *testing.T) {
	psk := wiretest.Key(t)
	fh := newFakeHead(t, psk, "fake-head", 1)
	a := startAgent(t, workerConfig(t, psk, fh))
	self := a.peerID(t)
	logs := logDir(t)
	me := currentUser(t)
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	spec := func(id, script string) wire.ProcSpec {
		return wire.ProcSpec{ID: id, WorkID: 1, Kind: "POP", User: me, UID: uid, GID: gid,
			Path: "/bin/sh", Args: []string{"-c", script}, LogDir: logs, MemoryLimit: 256 << 20}
	}
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 1, Procs: []wire.ProcSpec{
		spec("1.1", "echo hello; exit 3"),
		spec("1.2", "exec sleep 600"),
	}})
	fh.waitFor("the report of the exit of 1.1", func() bool {
		r, ok := fh.lastReport("1.1")
		return ok && r.State == wire.ProcExited
	})
	fh.mu.Lock()
	r, _ := fh.lastReport("1.1")
	fh.mu.Unlock()
	if r.ExitCode != 3 || r.Node != "n1" || r.WorkID != 1 || r.LogPath == "" {
		t.Errorf("report %+v", r)
	}
	if b, err := os.ReadFile(r.LogPath); err != nil || !strings.Contains(string(b), "hello") {
		t.Errorf("log %s: %q %v", r.LogPath, b, err)
	}
	fh.waitFor("1.2 running in a heartbeat, 1.1 unacknowledged", func() bool {
		got := map[string]string{}
		for _, p := range fh.beats["n1"].Procs {
			got[p.ID] = p.State
		}
		return got["1.2"] == wire.ProcRunning && got["1.1"] == wire.ProcExited && fh.beats["n1"].DesiredVersion == 1
	})

	// The head acknowledges 1.1 and no longer wants 1.2: the agent forgets
	// the one and stops the other.
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 2, Ack: []string{"1.1"}})
	fh.waitFor("1.2 stopped", func() bool {
		r, ok := fh.lastReport("1.2")
		return ok && r.Ended()
	})
	waitForgotten(fh, "n1", "1.1", 2)
	// An old desired state is ignored.
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 1, Procs: []wire.ProcSpec{spec("1.3", "exit 0")}})
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 3, Procs: []wire.ProcSpec{{ID: "1.4", WorkID: 1, Kind: "POP", User: me, Path: "/no/such/program", UID: uid, GID: gid, LogDir: logs}}})
	fh.waitFor("the launch failure of 1.4", func() bool {
		r, ok := fh.lastReport("1.4")
		return ok && r.State == wire.ProcLaunchFailed
	})
	fh.mu.Lock()
	_, ran := fh.lastReport("1.3")
	fh.mu.Unlock()
	if ran {
		t.Error("an outdated desired state was applied")
	}
	// A process the head placed and stopped before this node saw it start
	// (its work canceled just as it was placed) is reported ended, not
	// started, and only once.
	never := spec("1.5", "exec sleep 600")
	never.Stop, never.StopReason = true, "canceled by ann"
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 4, Procs: []wire.ProcSpec{never}})
	fh.waitFor("the end of 1.5", func() bool {
		r, ok := fh.lastReport("1.5")
		return ok && r.Ended()
	})
	fh.mu.Lock()
	r, _ = fh.lastReport("1.5")
	fh.mu.Unlock()
	if r.State != wire.ProcExited || r.PID != 0 || !strings.Contains(r.Reason, "stopped before it started: canceled by ann") {
		t.Errorf("1.5 reported %+v, want it ended before it started", r)
	}
}

func TestAgentFeedsAJobProcess(t *testing.T) {
	psk := wiretest.Key(t)
	fh := newFakeHead(t, psk, "fake-head", 1)
	items := []wire.WorkItem{{Index: 0, Item: "3"}, {Index: 1, Item: "4"}}
	var outcomes []wire.ItemOutcome
	handed := false
	fh.handle(wire.MethodExchange, func(_ context.Context, req *wire.Request) (any, error) {
		var r wire.ExchangeRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		fh.record(func() { outcomes = append(outcomes, r.Outcomes...) })
		if r.JobID != 2 || r.ProcID != "2.1" || r.Node != "n1" {
			return nil, wire.Errorf(wire.CodeUsage, "exchange %+v", r)
		}
		if !handed && r.Want > 0 {
			handed = true
			return wire.ExchangeReply{Items: items}, nil
		}
		if len(outcomes) == len(items) {
			return wire.ExchangeReply{Release: true}, nil
		}
		return wire.ExchangeReply{}, nil
	})
	a := startAgent(t, workerConfig(t, psk, fh))
	self := a.peerID(t)
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 1, Procs: []wire.ProcSpec{{
		ID: "2.1", WorkID: 2, Kind: "JP", User: currentUser(t), UID: uint32(os.Getuid()), GID: uint32(os.Getgid()),
		Path: "/bin/sh", Args: []string{"-c", `echo $((DUCC_WORK_ITEM * 2))`}, LogDir: logDir(t), MemoryLimit: 256 << 20,
		Protocol: wire.ProtocolExec, Pipelines: 2,
	}}})
	fh.waitFor("both outcomes", func() bool { return len(outcomes) == len(items) })
	fh.mu.Lock()
	defer fh.mu.Unlock()
	got := map[int]string{}
	for _, o := range outcomes {
		if o.Error != "" {
			t.Errorf("item %d failed: %s", o.Index, o.Error)
		}
		got[o.Index] = strings.TrimSpace(o.Result)
	}
	if !strings.Contains(got[0], "6") || !strings.Contains(got[1], "8") {
		t.Errorf("results %v", got)
	}
}

func TestAgentFollowsANewHead(t *testing.T) {
	psk := wiretest.Key(t)
	old := newFakeHead(t, psk, "old-head", 1)
	block := make(chan struct{})
	defer close(block)
	started := make(chan string, 4)
	// The old head takes calls but never answers them.
	for _, m := range []string{wire.MethodCancel, wire.MethodWait} {
		old.handle(m, func(ctx context.Context, req *wire.Request) (any, error) {
			started <- req.Method
			select {
			case <-ctx.Done():
			case <-block:
			}
			return nil, ctx.Err()
		})
	}
	a := startAgent(t, workerConfig(t, psk, old))
	old.waitFor("a heartbeat of n1", func() bool { _, ok := old.beats["n1"]; return ok })
	old.push(t, a.peerID(t), wire.DesiredState{Node: "n1", Version: 1}) // it knows the node
	wiretest.Eventually(t, "the agent to follow the old head", func() bool {
		var id wire.IDInfo
		_, err := a.api(http.MethodGet, "/v1/id", nil, &id)
		return err == nil && id.Head == old.node.Host.ID().String()
	})

	type result struct {
		code int
		err  error
		info wire.WorkInfo
	}
	call := func(path string, body any) chan result {
		ch := make(chan result, 1)
		go func() {
			var info wire.WorkInfo
			code, err := a.api(http.MethodPost, path, body, &info)
			ch <- result{code, err, info}
		}()
		return ch
	}
	canceled := call("/v1/cancel", wire.CancelRequest{ID: 5})
	waited := call("/v1/wait", wire.WaitRequest{ID: 5})
	for range 2 {
		<-started
	}
	// A new head, with a later term, answers; the agent abandons the calls
	// in flight: the read is sent again, the change is not.
	nh := newFakeHead(t, psk, "new-head", 2)
	nh.handle(wire.MethodWait, func(context.Context, *wire.Request) (any, error) {
		return wire.WorkInfo{ID: 5, State: "Completed", Ended: true}, nil
	})
	wiretest.Connect(t, nh.node, old.node)
	if err := a.host.Connect(context.Background(), nh.node.Host.Peerstore().PeerInfo(nh.node.Host.ID())); err != nil {
		t.Fatal(err)
	}
	r := <-waited
	if r.err != nil || !r.info.Ended {
		t.Errorf("wait across the head change: %d %v %+v", r.code, r.err, r.info)
	}
	r = <-canceled
	if r.code != http.StatusServiceUnavailable || r.err == nil || !strings.Contains(r.err.Error(), "may or may not have been applied") {
		t.Errorf("cancel across the head change: %d %v", r.code, r.err)
	}
}

func TestAgentWithoutHead(t *testing.T) {
	psk := wiretest.Key(t)
	fh := newFakeHead(t, psk, "fake-head", 1)
	cfg := workerConfig(t, psk, fh)
	// The join address leads nowhere: a port nobody listens on.
	cfg.Join = []string{"/ip4/127.0.0.1/tcp/1/p2p/" + fh.node.Host.ID().String()}
	a := startAgent(t, cfg)
	code, err := a.api(http.MethodPost, "/v1/jobs", wire.ListRequest{}, &wire.WorkList{})
	if code != http.StatusServiceUnavailable || err == nil || !strings.Contains(err.Error(), "no head elected yet") {
		t.Errorf("jobs without a head: %d %v", code, err)
	}
	var id wire.IDInfo
	wiretest.Eventually(t, "the join error", func() bool {
		_, err := a.api(http.MethodGet, "/v1/id", nil, &id)
		return err == nil && id.JoinError != ""
	})
}

// TestDevAgent runs a one-node cluster: the agent runs the real head
// server in process and its own work.
func TestDevAgent(t *testing.T) {
	dir, err := os.MkdirTemp("", "ducc-dev-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := DevConfig(dir)
	cfg.Node = "dev1"
	cfg.Heartbeat = units.Duration(100 * time.Millisecond)
	cfg.Elect = 100 * time.Millisecond
	cfg.Memory = units.Size(4 << 30)
	a := startAgent(t, cfg)
	var st wire.StatusInfo
	wiretest.Eventually(t, "the node to be up", func() bool {
		_, err := a.api(http.MethodPost, "/v1/status", struct{}{}, &st)
		return err == nil && st.NodesUp == 1
	})
	if st.Head != "dev1" || st.RaftState != "Leader" || st.Agent != "dev1" {
		t.Errorf("status %+v", st)
	}
	var id wire.IDInfo
	if _, err := a.api(http.MethodGet, "/v1/id", nil, &id); err != nil || id.Raft != "Leader" || !id.HeadEligible {
		t.Errorf("id %v %+v", err, id)
	}
	// `ducc run`: the head places the process on this node, whose agent
	// runs it and streams its output.
	evs := a.events(t, http.MethodPost, "/v1/run/attach", wire.RunRequest{Path: "/bin/sh", Args: []string{"-c", "echo from-dev; exit 4"}, Memory: 256 << 20, LogDir: logDir(t)})
	if len(evs) == 0 || evs[0].ID == 0 {
		t.Fatalf("attach events %+v", evs)
	}
	last := evs[len(evs)-1]
	if last.Work == nil || last.Work.ExitCode != 4 || !strings.Contains(output(evs), "from-dev") {
		t.Errorf("attach: output %q, last %+v", output(evs), last)
	}
	logs := a.events(t, http.MethodGet, "/v1/logs?id="+strconv.FormatUint(evs[0].ID, 10), nil)
	if !strings.Contains(output(logs), "from-dev") {
		t.Errorf("logs: %+v", logs)
	}
	if code, _ := a.api(http.MethodGet, "/v1/logs?id=x", nil, &struct{}{}); code != http.StatusBadRequest {
		t.Errorf("logs of a bad id: %d", code)
	}
	if b, err := os.ReadFile(filepath.Join(dir, webURLFile)); err != nil || !strings.HasPrefix(string(b), "http://127.0.0.1:") {
		t.Errorf("web url %q %v", b, err)
	}
}

// TestAgentStopsAWorkerThatPrintsAnOverlongLine: a stream worker that
// prints a line over 4 MiB has the item it holds failed with a reason the
// user sees, and its process stopped; the items the agent had buffered
// are not handed to it. A result over 64 KiB is an item error.
func TestAgentStopsAWorkerThatPrintsAnOverlongLine(t *testing.T) {
	psk := wiretest.Key(t)
	fh := newFakeHead(t, psk, "fake-head", 1)
	items := []wire.WorkItem{{Index: 0, Item: "big"}, {Index: 1, Item: "small"}, {Index: 2, Item: "huge"}, {Index: 3, Item: "never"}}
	var outcomes []wire.ItemOutcome
	handed := false
	fh.handle(wire.MethodExchange, func(_ context.Context, req *wire.Request) (any, error) {
		var r wire.ExchangeRequest
		if err := req.DecodeBody(&r); err != nil {
			return nil, err
		}
		fh.record(func() { outcomes = append(outcomes, r.Outcomes...) })
		if !handed && r.Want > 0 {
			handed = true
			return wire.ExchangeReply{Items: items}, nil
		}
		return wire.ExchangeReply{}, nil
	})
	a := startAgent(t, workerConfig(t, psk, fh))
	self := a.peerID(t)
	const worker = `echo '{"ready": true}'
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id":"\([^"]*\)".*/\1/')
  case "$line" in
  *'"item":"big"'*) printf '{"id": "%s", "ok": true, "result": "' "$id"; head -c 70000 /dev/zero | tr '\0' x; printf '"}\n' ;;
  *'"item":"huge"'*) head -c 5000000 /dev/zero | tr '\0' x; echo ;;
  *) printf '{"id": "%s", "ok": true, "result": 1}\n' "$id" ;;
  esac
done`
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 1, Procs: []wire.ProcSpec{{
		ID: "2.1", WorkID: 2, Kind: "JP", User: currentUser(t), UID: uint32(os.Getuid()), GID: uint32(os.Getgid()),
		Path: "/bin/sh", Args: []string{"-c", worker}, LogDir: logDir(t), MemoryLimit: 256 << 20,
		Protocol: wire.ProtocolStream, Pipelines: 1, GraceMS: 100,
	}}})
	fh.waitFor("the end of the worker", func() bool {
		r, ok := fh.lastReport("2.1")
		return ok && r.Ended()
	})
	fh.mu.Lock()
	defer fh.mu.Unlock()
	got := map[int]wire.ItemOutcome{}
	for _, o := range outcomes {
		got[o.Index] = o
	}
	if o := got[0]; o.OK || o.Error != "result of 70002 bytes exceeds 64 KiB" {
		t.Errorf("item 0 (a 70 KB result): ok %v, error %q, result of %d bytes", o.OK, o.Error, len(o.Result))
	}
	if o := got[1]; !o.OK || o.Result != "1" {
		t.Errorf("item 1: %+v", o)
	}
	if o := got[2]; o.OK || !strings.Contains(o.Error, "a line of more than 4 MiB") {
		t.Errorf("item 2 (a 5 MB line): %+v", o)
	}
	if o, ok := got[3]; ok {
		t.Errorf("item 3 was handed to the stopped worker: %+v", o)
	}
}

// TestAgentRemovesItsCgroupRoot checks that an agent whose processes have
// all ended and been acknowledged leaves no cgroup behind when it stops.
func TestAgentRemovesItsCgroupRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (cgroups)")
	}
	psk := wiretest.Key(t)
	fh := newFakeHead(t, psk, "fake-head", 1)
	cfg := workerConfig(t, psk, fh)
	root := filepath.Join("/sys/fs/cgroup/memory", CgroupRoot(cfg.DataDir)) // v1, hybrid
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		root = filepath.Join("/sys/fs/cgroup", CgroupRoot(cfg.DataDir)) // v2
	}
	t.Cleanup(func() { // runs after the agent stopped (cleanups run last first)
		if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the stopped agent left its cgroup root %s (%v)", root, err)
		}
	})
	a := startAgent(t, cfg)
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no cgroup root at %s (cgroups disabled?): %v", root, err)
	}
	self := a.peerID(t)
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 1, Procs: []wire.ProcSpec{{
		ID: "1.1", WorkID: 1, Kind: "POP", User: currentUser(t), UID: uint32(os.Getuid()), GID: uint32(os.Getgid()),
		Path: "/bin/true", LogDir: logDir(t), MemoryLimit: 64 << 20,
	}}})
	fh.waitFor("the exit of 1.1", func() bool {
		r, ok := fh.lastReport("1.1")
		return ok && r.State == wire.ProcExited
	})
	fh.push(t, self, wire.DesiredState{Node: "n1", Version: 2, Ack: []string{"1.1"}})
	waitForgotten(fh, "n1", "1.1", 2)
}

// waitForgotten waits for a heartbeat of node that answers desired state
// version and no longer holds process id (acknowledged and forgotten).
func waitForgotten(fh *fakeHead, node, id string, version uint64) {
	fh.waitFor("a heartbeat without "+id, func() bool {
		hb := fh.beats[node]
		if hb.DesiredVersion != version {
			return false
		}
		for _, p := range hb.Procs {
			if p.ID == id {
				return false
			}
		}
		return true
	})
}
