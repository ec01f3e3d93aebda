package head

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/head/jd"
	"github.com/ducc-project/ducc/head/orch"
	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/sm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/web"
	"github.com/ducc-project/ducc/wire"
)

// Config configures the head of one leadership term.
type Config struct {
	FSM   *state.FSM
	Apply state.Applier
	Raft  *raft.Raft

	Node    string // node name of this agent
	Peer    string // libp2p peer id of this agent
	Version string

	Push           orch.Pusher
	Pingers        PingRunner // runs custom service pingers on agents
	Scheduler      *rm.Config
	Administrators []string
	NodeTimeout    time.Duration
	Metrics        *web.HeadMetrics // nil-safe
	Now            func() time.Time
	Logger         *slog.Logger

	// FailoverGrace is the time every node has, from the start of the
	// term, to send its first heartbeat to this head (NodeTimeout if zero
	// or shorter).
	FailoverGrace time.Duration
	// Voters lists the members of the head group for Status (nil: none).
	Voters func() []wire.VoterInfo
	// Snapshots describes the Raft snapshots for Status (nil: nothing).
	Snapshots func() wire.SnapshotInfo
	// Heartbeat is the agents' configured heartbeat interval and
	// MaxHeartbeatsPerSecond the intake the head stretches it to keep
	// (orch.Config).
	Heartbeat              time.Duration
	MaxHeartbeatsPerSecond int
	// Retention says how long finished work, results and accounting
	// records are kept (defaults for the times left zero).
	Retention Retention
	// DefaultBrokerURL is the cluster's UIMA-AS broker, what
	// ${DefaultBrokerURL} in service endpoints and dependencies stands for
	// (head.default_broker_url; "": none, and such endpoints are refused).
	DefaultBrokerURL string
	// ReleaseMemory returns freed memory to the system after purges
	// (nil: debug.FreeOSMemory; retain says when).
	ReleaseMemory func()
	// PingerPaths are where the Java pingers' jars and the registered
	// pingers are; nil: spec.FindPingerPaths (beside the running binary,
	// /etc/ducc/service_monitors), with ServiceMonitors, the agent's
	// head.service_monitors, as the registered pingers' folder if set.
	PingerPaths     *spec.PingerPaths
	ServiceMonitors string
	// DevLogs marks a dev cluster (`ducc agent --dev`): work that names no
	// log directory logs under ~/ducc/logs/dev-<incarnation>/ rather than
	// DUCC's ~/ducc/logs/, since every dev cluster's ids start at 1
	// (defaultLogDir).
	DevLogs bool
}

// Head is the cluster's brain for one leadership term: it answers the
// RPCs agents forward, folds heartbeats in, and runs the orchestrator.
type Head struct {
	schedMu sync.RWMutex // guards cfg.Scheduler
	cfg     Config
	log     *slog.Logger
	orch    *orch.Orchestrator
	jd      *jd.Driver
	sm      *sm.Manager
	charts  charts

	// admitVisit, when set (by tests), is told of each admission check
	// a submission visits.
	admitVisit func(kind wire.WorkKind, check string)
}

// New returns a head; Run starts it.
func New(cfg Config) *Head {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Scheduler == nil {
		cfg.Scheduler = rm.DefaultConfig()
	}
	cfg.Retention = cfg.Retention.WithDefaults()
	// A configuration applied with `ducc admin reconfigure` wins over the
	// file this agent started with.
	var applied []byte
	cfg.FSM.View(func(v *state.View) { applied = v.SchedulerConfig() })
	if applied != nil {
		if sc, err := rm.ParseConfig(applied); err == nil {
			cfg.Scheduler = sc
		} else {
			cfg.Logger.Error("the reconfigured scheduler config in the Raft log does not parse; using the config file", "err", err)
		}
	}
	if cfg.PingerPaths == nil {
		p := spec.FindPingerPaths()
		if cfg.ServiceMonitors != "" {
			p.Monitors = cfg.ServiceMonitors
		}
		cfg.PingerPaths = &p
	}
	h := &Head{cfg: cfg, log: cfg.Logger.With("component", "head")}
	h.jd = jd.New(cfg.FSM, cfg.Apply, cfg.Now, cfg.Logger)
	h.jd.OnItems = cfg.Metrics.ItemsDone
	h.sm = sm.New(sm.Config{FSM: cfg.FSM, Apply: cfg.Apply, Now: cfg.Now, Logger: cfg.Logger,
		Trigger: func() { h.orch.Trigger() }, RunPinger: h.runPinger, PingerPaths: *cfg.PingerPaths})
	h.orch = orch.New(orch.Config{
		FSM:       cfg.FSM,
		Apply:     cfg.Apply,
		Push:      cfg.Push,
		Scheduler: cfg.Scheduler,
		Demand:    h.jd.Demand,
		Wanted:    h.sm.Wanted,
		Metrics:   cfg.Metrics,
		ProcEnded: h.jd.ProcGone,
		Tick: func(ctx context.Context, now time.Time) {
			h.jd.Tick(ctx, now)
			h.sm.Tick(ctx, now)
		},
		Now:         cfg.Now,
		Logger:      cfg.Logger,
		Cycle:       cfg.Scheduler.Cycle.D(),
		MinInterval: cfg.Scheduler.MinInterval.D(),
		NodeTimeout: cfg.NodeTimeout,
		Grace:       cfg.Scheduler.Preemption.KillWait.D(),

		FailoverGrace: cfg.FailoverGrace,
		Heartbeat:     cfg.Heartbeat, MaxHeartbeatsPerSecond: cfg.MaxHeartbeatsPerSecond,
	})
	return h
}

// Run runs the head until ctx ends.
func (h *Head) Run(ctx context.Context) {
	// This agent exports the cluster-wide series while its head runs.
	defer h.cfg.Metrics.ServeCluster(h.clusterMetrics)()
	h.nameIncarnation(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { h.retain(ctx) })
	wg.Go(func() { h.sampleCharts(ctx) })
	h.orch.Run(ctx)
	h.sm.Wait()
	wg.Wait()
}

// Heartbeat folds one agent heartbeat in. The work ids it reports are
// folded in first: once the orchestrator knows the node (and pushes it
// its desired state, on which the node's agent lets its users submit:
// agent.awaitNodeKnown), no new id repeats one the node runs.
func (h *Head) Heartbeat(ctx context.Context, hb wire.Heartbeat, peer string) {
	h.raiseIDFloor(ctx, hb.Node, hb.Procs, hb.Leftovers)
	h.orch.Heartbeat(ctx, hb, peer)
}

// HeartbeatInterval is the heartbeat interval the head asks agents to use
// (it grows with the cluster; orch.Orchestrator.HeartbeatInterval).
func (h *Head) HeartbeatInterval() time.Duration { return h.orch.HeartbeatInterval() }

// sched returns the scheduler configuration in force.
func (h *Head) sched() *rm.Config {
	h.schedMu.RLock()
	defer h.schedMu.RUnlock()
	return h.cfg.Scheduler
}

// Report folds an agent's process report in.
func (h *Head) Report(ctx context.Context, r wire.Report) (wire.Empty, error) {
	h.raiseIDFloor(ctx, r.Node, r.Procs, nil)
	h.orch.Report(ctx, r.Node, r.Procs)
	return wire.Empty{}, nil
}
