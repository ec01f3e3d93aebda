package sm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// maxPingOutput bounds what the built-in HTTP pinger reads of a reply.
const maxPingOutput = 64 << 10

// PingerMemoryLimit caps the memory of a custom pinger (its cgroup on the
// agent that runs it).
const PingerMemoryLimit = 256 << 20

// pingSlack is how much longer than a custom pinger's timeout the Service
// Manager waits for the agent's answer (starting the process, the network).
const pingSlack = 5 * time.Second

// PingRunner runs a custom pinger once on node ("" means the head's own
// node) and returns the agent's reply; an error means the agent could not
// be asked. Custom pingers never run in the head's process: an agent starts
// them through proc.
type PingRunner func(ctx context.Context, node string, req wire.PingRunRequest) (wire.PingRunReply, error)

// ping runs one ping: the custom pinger if there is one (on node, through
// Config.RunPinger), else the built-in pinger of the endpoint's kind.
func (m *Manager) ping(ctx context.Context, p Pinger, st wire.PingState, node string) (Ping, error) {
	if p.Java != nil {
		req, err := JavaRequest(p, st, m.cfg.PingerPaths)
		if err != nil {
			return Ping{}, err
		}
		return m.pingCustom(ctx, req, node)
	}
	if p.Exec != "" {
		return m.pingCustom(ctx, PingRequest(p, st), node)
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	kind, target, err := spec.ParseEndpoint(p.Endpoint)
	if err != nil {
		return Ping{}, err
	}
	switch kind {
	case spec.EndpointTCP:
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", target)
		if err != nil {
			return Ping{}, fmt.Errorf("tcp ping of %s: %w", target, err)
		}
		c.Close()
		return Ping{Alive: true, Healthy: true, Info: "accepting connections on " + target}, nil
	case spec.EndpointHTTP:
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return Ping{}, fmt.Errorf("http ping: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return Ping{}, fmt.Errorf("http ping: %w", err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxPingOutput))
		resp.Body.Close()
		ok := resp.StatusCode < 400
		return Ping{Alive: resp.StatusCode < 500, Healthy: ok, Info: "HTTP " + resp.Status}, nil
	}
	return Ping{}, fmt.Errorf("endpoint %s needs a custom pinger (service_ping_executable or service_ping_class)", p.Endpoint)
}

// pingCustom has an agent run a custom pinger (a command, or the JVM of a
// Java pinger) as the service's owner: the ping state as JSON on its
// standard input, one JSON answer on its standard output (the last
// non-empty line counts).
func (m *Manager) pingCustom(ctx context.Context, req wire.PingRunRequest, node string) (Ping, error) {
	name := req.Name
	if name == "" {
		name = "pinger " + req.Path
	}
	if m.cfg.RunPinger == nil {
		return Ping{}, fmt.Errorf("%s: no agent runs custom pingers for this head", name)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond+pingSlack)
	defer cancel()
	reply, err := m.cfg.RunPinger(ctx, node, req)
	if err != nil {
		return Ping{}, fmt.Errorf("%s: %w", name, err)
	}
	if reply.Error != "" {
		return Ping{}, errors.New(reply.Error)
	}
	a := reply.Answer
	healthy := a.Alive
	if a.Healthy != nil {
		healthy = *a.Healthy
	}
	return Ping{Alive: a.Alive, Healthy: healthy, Info: a.Info, Answer: &a}, nil
}

// PingRequest is what an agent needs to run a custom pinger once: the
// program, the service owner's identity and environment, the ping state, the
// timeout and the memory cap.
func PingRequest(p Pinger, st wire.PingState) wire.PingRunRequest {
	home := p.Home
	if home == "" {
		home = "/"
	}
	env := append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "USER=" + p.User, "LOGNAME=" + p.User,
		"DUCC_SERVICE_ID=" + strconv.FormatUint(p.Service, 10), "DUCC_SERVICE_ENDPOINT=" + p.Endpoint}, p.Env...)
	return wire.PingRunRequest{Service: p.Service, Path: p.Exec, Args: p.Args, User: p.User, UID: p.UID, GID: p.GID,
		Groups: p.Groups, Env: env, Dir: p.Dir, State: st, TimeoutMS: p.Timeout.Milliseconds(), MemoryLimit: PingerMemoryLimit,
		Umask: p.Umask}
}

// pingNode picks the node that runs a service's custom pinger: the node of
// its running instance with the lowest instance id (the pinger usually
// talks to the service, and this keeps it on one node while that instance
// runs), or "" (the head's own node) when none runs.
func pingNode(w *state.Work) string {
	node, best := "", -1
	for _, p := range w.Live() {
		if p.State == wire.ProcRunning && !p.Stop && p.Node != "" && (best < 0 || p.Instance < best) {
			node, best = p.Node, p.Instance
		}
	}
	return node
}
