package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// Custom service pingers run here, on an agent, as ordinary short-lived
// processes started through proc (the head never forks): the head's Service
// Manager sends wire.MethodPingRun to the node of one of the service's
// instances, or runs it on its own node through RunPinger.

// RunPinger runs a custom pinger on node (peerID is its libp2p id): in this
// agent when node is this agent's, else through wire.MethodPingRun. It is
// the head's way to run pingers (head.Config.Pingers).
func (a *Agent) RunPinger(ctx context.Context, node, peerID string, req wire.PingRunRequest) (wire.PingRunReply, error) {
	if node == a.cfg.Node {
		return a.runPingerHere(ctx, req), nil
	}
	p, err := peer.Decode(peerID)
	if err != nil {
		return wire.PingRunReply{}, fmt.Errorf("node %s has bad peer id %q: %w", node, peerID, err)
	}
	var reply wire.PingRunReply
	if err := p2p.Call(ctx, a.host, p, wire.MethodPingRun, wire.Caller{Node: a.cfg.Node}, req, &reply); err != nil {
		return wire.PingRunReply{}, fmt.Errorf("running the pinger on node %s: %w", node, err)
	}
	return reply, nil
}

// handlePingRun answers wire.MethodPingRun (from the head).
func (a *Agent) handlePingRun(ctx context.Context, req *wire.Request) (any, error) {
	var r wire.PingRunRequest
	if err := req.DecodeBody(&r); err != nil {
		return nil, err
	}
	return a.runPingerHere(ctx, r), nil
}

// runPingerHere runs a custom pinger on this node. A pinger holds no
// GPUs: on a node with GPUs it sees none and is fenced from all of them.
func (a *Agent) runPingerHere(ctx context.Context, r wire.PingRunRequest) wire.PingRunReply {
	r.Env = a.gpus.gpuEnv(r.Env, r.User, nil)
	return runPinger(ctx, a.procs, r, a.gpus.fence(nil))
}

// runner is what runPinger needs of proc.Manager.
type runner interface {
	Run(ctx context.Context, rs proc.RunSpec) (proc.RunResult, error)
}

// runPinger runs a pinger once: the ping state as one JSON line on its
// standard input, its answer the last non-empty line of its standard
// output, as JSON. Whatever goes wrong is in the reply's Error, in words
// for the service's owner.
func runPinger(ctx context.Context, procs runner, r wire.PingRunRequest, fence *proc.GPUFence) wire.PingRunReply {
	fail := func(format string, args ...any) wire.PingRunReply {
		return wire.PingRunReply{Error: fmt.Sprintf(format, args...)}
	}
	// name is what messages call the pinger: "pinger /opt/ping.py", or
	// "Java pinger com.example.MyPing" (the head's Name).
	name := r.Name
	if name == "" {
		name = "pinger " + r.Path
	}
	timeout := time.Duration(r.TimeoutMS) * time.Millisecond
	if timeout <= 0 || r.Path == "" {
		return fail("pinger %q: no program or no timeout in the request", r.Path)
	}
	in, err := json.Marshal(r.State)
	if err != nil {
		return fail("%s: encoding the ping state: %v", name, err)
	}
	res, err := procs.Run(ctx, proc.RunSpec{
		Name: "ping-" + strconv.FormatUint(r.Service, 10),
		User: r.User, UID: r.UID, GID: r.GID, Groups: r.Groups,
		// The service's working directory need not exist on every node; the
		// shim looks for it as the user, not the agent as root.
		Path: r.Path, Args: r.Args, Env: r.Env, Dir: r.Dir, DirIfExists: true,
		Stdin: append(in, '\n'), MemoryLimit: r.MemoryLimit, Timeout: timeout,
		Umask:    parseUmask(r.Umask), // nil (0022) when the service has none
		GPUFence: fence,
	})
	var le *proc.LaunchError
	switch {
	case errors.As(err, &le):
		return fail("%s cannot start: %v", name, le)
	case err != nil:
		return fail("%s: %v", name, err)
	case res.TimedOut:
		return fail("%s did not answer within %s", name, timeout)
	case res.ExitCode != 0 || res.Signal != "" || res.OOMKilled:
		msg := fmt.Sprintf("%s: %s", name, res.Reason)
		if last := lastLine(string(res.Stderr)); last != "" {
			msg += ": " + last
		}
		return wire.PingRunReply{Error: msg}
	}
	line := lastLine(string(res.Stdout))
	var ans wire.PingAnswer
	if err := json.Unmarshal([]byte(line), &ans); err != nil {
		return fail("%s answered %q, not JSON like {\"alive\": true}: %v", name, truncate(line, 200), err)
	}
	return wire.PingRunReply{Answer: ans}
}

// parseUmask reads a umask of four octal digits as the head sends it
// (the umask key); nil when there is none or it is not one.
func parseUmask(s string) *int {
	if s == "" {
		return nil
	}
	u, err := strconv.ParseUint(s, 8, 32)
	if err != nil || u > 0o777 {
		return nil
	}
	umask := int(u)
	return &umask
}

// lastLine returns the last non-empty line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
