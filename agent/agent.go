package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/cgroup"
	"github.com/ducc-project/ducc/feed"
	"github.com/ducc-project/ducc/gpu"
	"github.com/ducc-project/ducc/head/server"
	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// Agent is the node daemon.
type Agent struct {
	cfg     *Config
	log     *slog.Logger // with component=agent
	base    *slog.Logger // for the components the agent starts
	version string

	host   host.Host
	ps     *pubsub.PubSub
	hbT    *p2p.Topic[wire.Heartbeat]
	leadT  *p2p.Topic[wire.LeaderAnnounce]
	procs  *proc.Manager
	cg     *cgroup.Manager // the process manager's; removeCgroupRoot removes its root on the way out
	server *server.Server  // the head side, on a head-eligible agent
	inv    inventory
	lock   *os.File
	desire chan wire.DesiredState

	leader   *leaderTracker // the head this agent follows
	ledger   *ledger        // what heartbeats tell the head
	reports  *reporter      // process states on their way to the head (reportLoop)
	starting *busySet       // processes being started
	stopping *busySet       // processes being stopped
	streams  *feed.Streams  // the job streams: job processes fed, driver processes pumped
	obs      *agentObs      // metrics
	joiner   *joiner        // keeps us connected to the join peers
	inc      *incarnation   // the cluster incarnation followed
	bg       sync.WaitGroup // background stops and reports
	webKey   []byte         // signs and checks dashboard tokens (wire.WebTokenKey)

	// gpus are the node's GPUs and the GPU-slice watchdog (set in Run);
	// openGPUs discovers them through NVML (gpu.OpenHost; tests give a
	// fake).
	gpus     *gpuNode
	openGPUs func() (gpu.MemoryReader, gpu.Inventory)
}

// New prepares an agent: it takes the data-dir lock and loads identity and
// cluster key, but starts nothing until Run.
func New(cfg *Config, version string, logger *slog.Logger) (*Agent, error) {
	if err := cfg.CheckRunnable(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	inc := newIncarnation(cfg.DataDir)
	led := newLedger()
	led.inc = inc.current()
	a := &Agent{
		cfg: cfg, version: version, log: logger.With("component", "agent", "node", cfg.Node), lock: lock,
		base: logger.With("node", cfg.Node), obs: newAgentObs(version),
		desire: make(chan wire.DesiredState, 1), leader: newLeaderTracker(), ledger: led, reports: newReporter(),
		starting: newBusySet(), stopping: newBusySet(), inc: inc, openGPUs: gpu.OpenHost,
	}
	a.streams = feed.New(feed.Config{Node: cfg.Node, Host: streamHost{a}, Logger: a.base})
	return a, nil
}

// Run runs the agent until ctx ends. It never stops managed processes on
// the way out: they keep running and are re-adopted by the next agent.
func (a *Agent) Run(ctx context.Context) error {
	defer a.lock.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	id, err := p2p.LoadOrCreateIdentity(filepath.Join(a.cfg.DataDir, "identity.key"))
	if err != nil {
		return err
	}
	var psk []byte
	if a.cfg.Dev {
		psk, err = wire.LoadOrCreateClusterKey(a.cfg.ClusterKeyFile)
	} else {
		psk, err = wire.LoadClusterKey(a.cfg.ClusterKeyFile)
	}
	if err != nil {
		return fmt.Errorf("cluster key: %w", err)
	}
	a.webKey = wire.WebTokenKey(psk)
	a.host, err = p2p.NewHost(ctx, p2p.HostConfig{Identity: id, ClusterKey: psk, ListenAddrs: a.cfg.Listen, Logger: a.base})
	if err != nil {
		return err
	}
	defer a.host.Close()
	if a.joiner, err = newJoiner(a); err != nil {
		return err
	}

	if a.ps, err = p2p.NewPubSub(ctx, a.host, a.base); err != nil {
		return err
	}
	if a.hbT, err = p2p.JoinTopic[wire.Heartbeat](a.ps, wire.TopicHeartbeat, wire.MaxHeartbeatSize, a.base); err != nil {
		return err
	}
	if a.leadT, err = p2p.JoinTopic[wire.LeaderAnnounce](a.ps, wire.TopicLeader, wire.MaxAnnounceSize, a.base); err != nil {
		return err
	}

	if err := a.inv.init(a.cfg); err != nil {
		return err
	}
	defer a.inv.close()
	if a.gpus, err = discoverGPUs(a.cfg, a.base, a.openGPUs); err != nil {
		return err
	}
	defer a.gpus.close()
	if err := a.startProcs(ctx); err != nil {
		return err
	}
	defer a.removeCgroupRoot()
	defer a.procs.Close()
	defer a.bg.Wait()
	defer a.streams.Wait() // first: the streams stop processes through bg

	var wg sync.WaitGroup
	defer wg.Wait()
	if a.cfg.Head {
		a.server, err = server.New(server.Config{
			Host: a.host, Heartbeats: a.hbT, Leaders: a.leadT,
			DataDir: a.cfg.DataDir, BootstrapExpect: a.cfg.BootstrapExpect, BootstrapNew: a.cfg.BootstrapNew,
			Elect: a.cfg.Elect, Heartbeat: a.cfg.Heartbeat.D(),
			Node: a.cfg.Node, Version: a.version,
			Scheduler: a.cfg.Scheduler, Administrators: a.cfg.Administrators,
			NodeTimeout: a.cfg.NodeTimeout.D(), Metrics: a.obs.head, Pingers: a,
			FailoverGrace: a.cfg.FailoverGrace.D(), DeadServerCleanup: a.cfg.DeadServerCleanup.D(), MaxHeartbeatsPerSecond: a.cfg.MaxHeartbeatsPerSecond,
			WebTokenKey: a.webKey, WebTokenValidity: a.cfg.Web.TokenValidity.D(), ServiceMonitors: a.cfg.ServiceMonitors, DefaultBrokerURL: a.cfg.DefaultBrokerURL,
			Retention: a.cfg.Retention.Head(), DevLogs: a.cfg.Dev,
			FollowedLeader: func() peer.ID { p, _ := a.leader.get(); return p },
			LocalDesired:   func(ds wire.DesiredState) { a.leader.pushedBy(a.host.ID()); a.acceptDesired(ds) },
			Logger:         a.base,
		})
		if rse := (*server.RaftStateError)(nil); errors.As(err, &rse) {
			// The whole message, with the recovery options, is the
			// command's error (stderr); the log names the file.
			args := []any{"file", rse.Path, "problem", rse.Problem}
			if rse.Err != nil {
				args = append(args, "cause", rse.Err)
			}
			a.log.Error("refusing to start: the Raft state cannot be used", args...)
		}
		if err != nil {
			return err
		}
		defer func() {
			if err := a.server.Close(); err != nil {
				a.log.Warn("raft shutdown", "err", err)
			}
		}()
		wg.Add(1)
		go func() { defer wg.Done(); a.server.Run(ctx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); a.joiner.run(ctx) }()
	p2p.Serve(a.host, a.handleRPC, p2p.WithServeLogger(a.base))
	defer p2p.StopServing(a.host)
	a.host.SetStreamHandler(wire.ProtoLogs, a.serveLogStream)
	defer a.host.RemoveStreamHandler(wire.ProtoLogs)

	srv, err := a.serveAPI(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()
	stopWeb, err := a.serveWeb(ctx)
	if err != nil {
		return err
	}
	defer stopWeb()

	for _, f := range []func(context.Context){a.heartbeatLoop, a.reconcileLoop, a.followLeader, a.reportLoop} {
		wg.Add(1)
		go func(f func(context.Context)) { defer wg.Done(); f(ctx) }(f)
	}
	a.log.Info("agent ready", "socket", a.cfg.Socket, "data_dir", a.cfg.DataDir, "head_eligible", a.cfg.Head)
	<-ctx.Done()
	a.log.Info("agent stopping; managed processes keep running")
	return nil
}

// startProcs creates the process manager and re-adopts processes a
// previous agent left running.
func (a *Agent) startProcs(ctx context.Context) error {
	shim, err := proc.ShimCommand()
	if err != nil {
		return err
	}
	server, err := proc.ShimServerCommand()
	if err != nil {
		return err
	}
	var cg *cgroup.Manager
	if os.Geteuid() == 0 {
		cg, err = cgroup.New(CgroupRoot(a.cfg.DataDir), a.base)
		if err != nil {
			a.log.Warn("cgroups unavailable; memory caps are NOT enforced", "err", err)
			cg = cgroup.NewDisabled(a.base)
		}
	} else {
		a.log.Warn("not running as root: cgroups disabled, memory caps are NOT enforced, processes run as this user")
		cg = cgroup.NewDisabled(a.base)
	}
	a.cg = cg
	a.procs, err = proc.NewManager(proc.Config{
		DataDir: a.cfg.DataDir, ShimCommand: shim, ShimServerCommand: server, Cgroups: cg, Logger: a.base,
		OnExit: a.onExit,
	})
	if err != nil {
		return fmt.Errorf("process manager: %w", err)
	}
	a.log.Info("process shim", "command", server)
	adopted, err := a.procs.Adopt(ctx)
	if err != nil {
		return fmt.Errorf("re-adopt processes: %w", err)
	}
	for _, st := range adopted {
		a.log.Info("re-adopted process", "proc", st.ID, "pid", st.PID, "state", string(st.State))
	}
	return nil
}

// removeCgroupRoot removes the agent's root cgroup on the way out when no
// process group is left under it, so that agents that come and go (dev
// clusters, tests: each data directory has its own root) leave nothing
// behind. Processes that outlive the agent keep their groups, and the
// root with them, for the next agent to adopt.
func (a *Agent) removeCgroupRoot() {
	if a.cg == nil || !a.cg.Enabled() {
		return
	}
	if err := a.cg.RemoveRoot(); err != nil {
		a.log.Debug("cgroup root kept", "err", err)
	}
}

// onExit records an ended process and reports it to the head at once.
func (a *Agent) onExit(st proc.Status) {
	if a.inc.leftover(st) {
		// The head never knew it: nothing to report (a report would
		// end the current incarnation's process of the same id).
		a.log.Info("a process of an earlier cluster incarnation ended", "proc", st.ID, "its_incarnation", st.Incarnation, "reason", st.Reason)
		return
	}
	a.obs.agent.ProcEnded(st.OOMKills)
	ps := toWire(st, a.cfg.Node)
	a.gpus.markEnded(&ps)
	a.streams.StopFeeder(st.ID)
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		a.driverExited(&ps) // a driver's last items go first
		a.ledger.ended(ps)
		a.reports.add(ps)
	}()
}

// report sends process states to the head; heartbeats repeat them until
// the head acknowledges, so a failure here loses nothing.
func (a *Agent) report(ctx context.Context, ps []wire.ProcStatus) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := a.callHead(ctx, wire.MethodReport, wire.Caller{Node: a.cfg.Node}, wire.Report{Node: a.cfg.Node, Procs: ps}, &wire.Empty{})
	if err != nil {
		a.log.Debug("report failed; the next heartbeat repeats it", "err", err)
	}
}

// errNoHead is returned when no head is known.
var errNoHead = wire.Errorf(wire.CodeUnreachable, "no head elected yet; the cluster may be starting (retry in a few seconds)")

// How long callHead waits for a head across a failover.
const (
	failoverWait = 8 * time.Second
	noHeadWait   = 3 * time.Second
)

// callHead calls the head. When the head is gone or unknown it waits for
// the next one and retries, but only while the request cannot have run:
// nobody is the head, the old head could not be reached, or the peer
// answered that it is not the head.
//
// A call in flight when another head is announced is abandoned: the old
// head may be cut off and never answer. Reads are then retried on the new
// head; a change may or may not have been applied, and the caller is told
// so.
func (a *Agent) callHead(ctx context.Context, method string, c wire.Caller, req, resp any) error {
	start := time.Now()
	for {
		_, changedCh := a.leader.get()
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-changedCh:
				cancel()
			case <-cctx.Done():
			}
		}()
		err := a.callHeadOnce(cctx, method, c, req, resp)
		headChanged := cctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if headChanged {
			if m, _ := wire.LookupMethod(method); !m.ReadOnly {
				return wire.Errorf(wire.CodeUnreachable, "the head changed while it handled this %s request; it may or may not have been applied: check (e.g. 'ducc jobs') before retrying", method)
			}
			continue
		}
		limit := failoverWait
		switch {
		case errors.Is(err, errNoHead):
			limit = noHeadWait
		case errors.Is(err, wire.ErrNotDelivered), wire.IsNotHead(err):
		default:
			return err
		}
		if time.Since(start) > limit {
			return err
		}
		// Wait until a different head is announced (or a short while).
		select {
		case <-ctx.Done():
			return err
		case <-changedCh:
		case <-time.After(time.Second):
		}
	}
}

// callHeadOnce calls the head once, in process when this agent is the head.
func (a *Agent) callHeadOnce(ctx context.Context, method string, c wire.Caller, req, resp any) error {
	if a.server != nil && a.server.Leading() {
		return a.server.Call(ctx, method, c, req, resp)
	}
	leader, _ := a.leader.get()
	if leader == "" || leader == a.host.ID() {
		if err := a.writeProblem(); err != nil {
			return err
		}
		if a.joiner != nil {
			if err := a.joiner.err(); err != nil {
				return wire.Errorf(wire.CodeUnreachable, "%v: %v", errNoHead, err)
			}
		}
		return errNoHead
	}
	return p2p.Call(ctx, a.host, leader, method, c, req, resp)
}

// handleRPC answers RPCs from other agents: the methods the head sends
// to agents, and, when this agent runs the head, the head's methods.
func (a *Agent) handleRPC(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
	if m, ok := wire.LookupMethod(req.Method); ok && m.Callers&wire.FromHead != 0 {
		return a.handleFromHead(ctx, from, req)
	}
	if a.server != nil {
		return a.server.Handle(ctx, from, req)
	}
	return nil, wire.NotHead(a.cfg.Node)
}

// handleFromHead answers the methods the head sends to agents
// (wire.FromHead in the method table).
func (a *Agent) handleFromHead(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
	switch req.Method {
	case wire.MethodDesired:
		var ds wire.DesiredState
		if err := req.DecodeBody(&ds); err != nil {
			return nil, err
		}
		if ds.Node != a.cfg.Node {
			// A head sends each node its own state; one for another node
			// came from a forged heartbeat's peer id (docs/decisions.md,
			// "Unsigned gossip") and would stop this node's processes.
			return nil, wire.Errorf(wire.CodeUsage, "desired state for node %q sent to node %q", ds.Node, a.cfg.Node)
		}
		a.leader.pushedBy(from)
		a.acceptDesired(ds)
		return wire.Empty{}, nil
	case wire.MethodPingRun:
		return a.handlePingRun(ctx, req)
	}
	return nil, wire.Errorf(wire.CodeUsage, "agents do not handle %q", req.Method)
}

// CgroupRoot names the cgroup root of the agent with data directory
// dataDir (in each controller's hierarchy): "ducc-" plus a hash of the
// data dir, so that several agents on one machine (dev clusters, tests)
// never share process cgroups.
func CgroupRoot(dataDir string) string {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	sum := sha256.Sum256([]byte(abs))
	return "ducc-" + hex.EncodeToString(sum[:4])
}
