package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"

	"github.com/ducc-project/ducc/cgroup"
	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// The agent tests start proc's shim by running the test binary itself
// with this variable set (no TestMain, so that other test files may have
// one).
const testShimEnv = "DUCC_AGENT_TEST_SHIM"

func init() {
	if os.Getenv(testShimEnv) == "1" {
		os.Exit(proc.RunShim(os.Args[1:]))
	}
}

// fakeProcs answers Run with res and err and records the spec.
type fakeProcs struct {
	res  proc.RunResult
	err  error
	spec proc.RunSpec
}

func (f *fakeProcs) Run(_ context.Context, rs proc.RunSpec) (proc.RunResult, error) {
	f.spec = rs
	return f.res, f.err
}

func pingReq() wire.PingRunRequest {
	return wire.PingRunRequest{Service: 7, Path: "/usr/bin/pinger", Args: []string{"-v"}, User: "alice", UID: 1000, GID: 1000,
		Env: []string{"HOME=/home/alice"}, Dir: "/nonexistent-dir", TimeoutMS: 5000, MemoryLimit: 256 << 20, Umask: "0027",
		State: wire.PingState{Service: 7, Endpoint: "CUSTOM:x", Instances: []int{0}, Active: []int{0}, StartedAt: []int64{1}, References: []uint64{}}}
}

func TestRunPinger(t *testing.T) {
	yes := true
	tests := []struct {
		name   string
		procs  fakeProcs
		answer wire.PingAnswer
		err    string
	}{
		{name: "answer", procs: fakeProcs{res: proc.RunResult{Stdout: []byte("starting\n{\"alive\": true, \"healthy\": true, \"info\": \"ok\"}\n\n")}},
			answer: wire.PingAnswer{Alive: true, Healthy: &yes, Info: "ok"}},
		{name: "not json", procs: fakeProcs{res: proc.RunResult{Stdout: []byte("fine\n")}},
			err: `pinger /usr/bin/pinger answered "fine", not JSON like {"alive": true}: invalid character 'i' in literal false (expecting 'a')`},
		{name: "no output", procs: fakeProcs{res: proc.RunResult{}},
			err: `pinger /usr/bin/pinger answered "", not JSON like {"alive": true}: unexpected end of JSON input`},
		{name: "timeout", procs: fakeProcs{res: proc.RunResult{TimedOut: true, ExitCode: -1, Signal: "SIGKILL", Stdout: []byte(`{"alive": true}`)}},
			err: "pinger /usr/bin/pinger did not answer within 5s"},
		{name: "exit code and stderr", procs: fakeProcs{res: proc.RunResult{ExitCode: 2, Reason: "exited with code 2", Stderr: []byte("Traceback\n  ...\nConnectionRefusedError: [Errno 111]\n")}},
			err: "pinger /usr/bin/pinger: exited with code 2: ConnectionRefusedError: [Errno 111]"},
		{name: "memory cap", procs: fakeProcs{res: proc.RunResult{ExitCode: -1, Signal: "SIGKILL", OOMKilled: true, Reason: "exceeded its memory limit of 256 MiB"}},
			err: "pinger /usr/bin/pinger: exceeded its memory limit of 256 MiB"},
		{name: "cannot start", procs: fakeProcs{err: &proc.LaunchError{Reason: "exec: /usr/bin/pinger: no such file or directory"}},
			err: "pinger /usr/bin/pinger cannot start: exec: /usr/bin/pinger: no such file or directory"},
		{name: "agent trouble", procs: fakeProcs{err: proc.ErrClosed},
			err: "pinger /usr/bin/pinger: process manager closed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reply := runPinger(context.Background(), &tc.procs, pingReq(), nil)
			if reply.Error != tc.err {
				t.Fatalf("error %q, want %q", reply.Error, tc.err)
			}
			got, _ := json.Marshal(reply.Answer)
			want, _ := json.Marshal(tc.answer)
			if string(got) != string(want) {
				t.Fatalf("answer %s, want %s", got, want)
			}
			sp := tc.procs.spec
			state, _ := json.Marshal(pingReq().State)
			if sp.Name != "ping-7" || sp.Path != "/usr/bin/pinger" || sp.User != "alice" || sp.UID != 1000 || sp.Dir != "/nonexistent-dir" || !sp.DirIfExists ||
				sp.Timeout != 5*time.Second || sp.MemoryLimit != 256<<20 || string(sp.Stdin) != string(state)+"\n" ||
				sp.Umask == nil || *sp.Umask != 0o027 {
				t.Fatalf("ran %+v", sp)
			}
		})
	}
	// A Java pinger is named by its class, not by "java".
	java := pingReq()
	java.Path, java.Name = "java", "Java pinger a.Hangs"
	reply := runPinger(context.Background(), &fakeProcs{res: proc.RunResult{ExitCode: 3, Reason: "exited with code 3",
		Stderr: []byte("ducc-pinger: a.Hangs.getStatistics() did not return within 5000 ms\n")}}, java, nil)
	if want := "Java pinger a.Hangs: exited with code 3: ducc-pinger: a.Hangs.getStatistics() did not return within 5000 ms"; reply.Error != want {
		t.Errorf("Java pinger: %q, want %q", reply.Error, want)
	}
	if reply := runPinger(context.Background(), &fakeProcs{}, wire.PingRunRequest{Path: "/x"}, nil); !strings.Contains(reply.Error, "no timeout") {
		t.Errorf("a request without a timeout: %+v", reply)
	}
	// A service registered without a umask: the pinger gets 0022 from the shim.
	noUmask := pingReq()
	noUmask.Umask = ""
	var f fakeProcs
	runPinger(context.Background(), &f, noUmask, nil)
	if f.spec.GPUFence != nil {
		t.Errorf("a pinger on a node without GPUs is fenced: %+v", f.spec.GPUFence)
	}
	if runPinger(context.Background(), &f, pingReq(), &proc.GPUFence{}); f.spec.GPUFence == nil || len(f.spec.GPUFence.Allowed) != 0 {
		t.Errorf("a pinger on a node with GPUs is not fenced from all of them: %+v", f.spec.GPUFence)
	}
	runPinger(context.Background(), &f, noUmask, nil)
	if f.spec.Umask != nil {
		t.Errorf("no umask in the request ran with %o", *f.spec.Umask)
	}
}

func TestParseUmask(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int // -1: nil
	}{{"0077", 0o077}, {"0022", 0o022}, {"0000", 0}, {"", -1}, {"0999", -1}, {"1777", -1}, {"x", -1}} {
		got := parseUmask(tc.in)
		if (got == nil) != (tc.want < 0) || (got != nil && *got != tc.want) {
			t.Errorf("parseUmask(%q) = %v, want %o", tc.in, got, tc.want)
		}
	}
}

// TestPingRunOnAgent runs a real pinger through a real process manager, as
// another user: on another node's agent (ping.run over libp2p, as the head
// sends it) and on the head's own node.
func TestPingRunOnAgent(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	if _, _, _, err := proc.LookupUser("ducctest"); err != nil {
		if out, err := exec.Command("useradd", "-M", "-s", "/usr/sbin/nologin", "ducctest").CombinedOutput(); err != nil {
			t.Skipf("cannot create user ducctest: %v %s", err, out)
		}
	}
	uid, gid, _, err := proc.LookupUser("ducctest")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cg, err := cgroup.New(fmt.Sprintf("ducc-agent-test-%d", os.Getpid()), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cg.RemoveRoot(); err != nil {
			t.Errorf("a run left its cgroup: %v", err)
		}
	})
	m, err := proc.NewManager(proc.Config{DataDir: t.TempDir(), ShimCommand: []string{os.Args[0]}, ShimEnv: []string{testShimEnv + "=1"}, Cgroups: cg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	psk, err := wire.GenerateClusterKey()
	if err != nil {
		t.Fatal(err)
	}
	newHost := func() host.Host {
		h, err := p2p.NewHost(context.Background(), p2p.HostConfig{ClusterKey: psk, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	worker := &Agent{cfg: &Config{Node: "n1"}, procs: m, host: newHost()}
	p2p.Serve(worker.host, worker.handleRPC)
	t.Cleanup(func() { p2p.StopServing(worker.host) })
	head := &Agent{cfg: &Config{Node: "head"}, host: newHost()}
	head.host.Peerstore().AddAddrs(worker.host.ID(), worker.host.Addrs(), time.Hour)

	req := pingReq()
	req.Path, req.Args = "/bin/sh", []string{"-c", `read state; echo "{\"alive\": true, \"info\": \"uid $(id -u) pwd $(pwd) read ${#state} umask $(umask)\"}"`}
	req.UID, req.GID, req.User, req.Dir = uid, gid, "ducctest", "/tmp"
	state, _ := json.Marshal(req.State)
	want := fmt.Sprintf("uid %d pwd /tmp read %d umask 0027", uid, len(state))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := head.RunPinger(ctx, "n1", worker.host.ID().String(), req)
	if err != nil || r.Error != "" || !r.Answer.Alive || r.Answer.Info != want {
		t.Fatalf("ping.run on another node: %+v %v, want info %q", r, err, want)
	}
	r, err = worker.RunPinger(ctx, "n1", "", req)
	if err != nil || r.Error != "" || r.Answer.Info != want {
		t.Fatalf("RunPinger on its own node: %+v %v", r, err)
	}

	// At the timeout the pinger's process group is killed.
	req.Args, req.TimeoutMS = []string{"-c", "sleep 300"}, 500
	if r, err := head.RunPinger(ctx, "n1", worker.host.ID().String(), req); err != nil || r.Error != "pinger /bin/sh did not answer within 500ms" {
		t.Fatalf("RunPinger: %+v %v", r, err)
	}
	if _, err := head.RunPinger(ctx, "n2", "not-a-peer", req); err == nil || !strings.Contains(err.Error(), "bad peer id") {
		t.Fatalf("RunPinger to a bad peer id: %v", err)
	}
}
